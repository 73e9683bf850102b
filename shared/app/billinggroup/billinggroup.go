// Package billinggroup is the billing route group (docs/architecture.md §4): plans, the billing
// summary, checkout, the billing portal and the Stripe webhook, and the hourly overage job
// (docs/console.md §3), which no route runs.
package billinggroup

import (
	"fmt"
	"strings"

	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/routetable"
)

// New builds the group on its own, for its function, whose scheduled invocations run one pass
// of the overage job (billing.Service.ReportOverage).
func New(d tenants.Deps) (*groupapi.Group, error) {
	t, err := tenants.New(d, routetable.GroupBilling)
	if err != nil {
		return nil, err
	}
	s, err := NewService(d, t.Orgs, routetable.GroupBilling)
	if err != nil {
		return nil, err
	}
	api := groupapi.NewAPI(d.Base, t.Middleware(d.Keys, nil)...)
	api.Handle(Routes(s)...)
	return &groupapi.Group{API: api, Scheduled: s.ReportOverage}, nil
}

// Routes returns the group's routes on the billing service s. The plans are the
// configuration's: listing them reads no table.
func Routes(s *billing.Service) []httpapi.Route {
	return groupapi.Private(groupapi.ReadsTable(billing.Routes(s), "listPlans"))
}

// NewService builds the billing service on the organisations og. Billing is on only with a
// Stripe key (docs/api.md §10.4); the key never leaves the Stripe adapter. A configuration
// that leaves part of billing off is logged as it concerns the group that is served: the
// billing group, or a console group, whose deletion of an organisation (by an owner, or
// with the account of its only member) deletes its Stripe customer (docs/privacy.md §6); for
// any other group, nothing is.
func NewService(d tenants.Deps, og *orgs.Service, serving routetable.Group) (*billing.Service, error) {
	cfg := d.Config.Billing
	var provider billing.Provider
	if cfg.Configured() {
		provider = billing.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIBase, nil)
	}
	consoleURL := d.Config.ConsoleURL
	if consoleURL != "" && !strings.HasSuffix(consoleURL, "/") {
		consoleURL += "/"
	}
	if (serving == routetable.GroupConsoleOrgs || serving == routetable.GroupConsoleAuth) && !cfg.Configured() {
		d.Logger.Info("billing is off (no STRIPE_SECRET_KEY): an organisation that has a Stripe customer cannot be deleted (503)")
	}
	if serving == routetable.GroupBilling {
		switch {
		case !cfg.Configured():
			d.Logger.Info("billing is off (no STRIPE_SECRET_KEY): checkout and portal answer 503")
		case cfg.StripeWebhookSecret == "":
			d.Logger.Warn("no STRIPE_WEBHOOK_SECRET: Stripe's webhooks are refused, so subscriptions never reach the plans")
		case consoleURL == "":
			d.Logger.Warn("no console address (ROADEVENTS_CONSOLE_URL): checkout and portal have no page to return to and answer 503")
		}
	}
	s, err := billing.New(d.Table, billing.Options{
		Orgs: og, Audit: og.Audit(), Meter: d.Meter, Plans: plans.New(cfg), Provider: provider,
		WebhookSecret: cfg.StripeWebhookSecret, ConsoleURL: consoleURL,
		Clock: d.Clock, Logger: d.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("billinggroup: %w", err)
	}
	return s, nil
}
