package service

import (
	"fmt"
	"strings"

	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
)

// newBilling builds the billing group on the organisations og and the plan catalogue.
// Billing is on only with a Stripe key (contract 4); the key never leaves the Stripe adapter.
func newBilling(d Deps, og *orgs.Service, catalogue *plans.Catalogue, serving bool) *billing.Service {
	cfg := d.Config.Billing
	var provider billing.Provider
	if cfg.Configured() {
		provider = billing.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIBase, nil)
	}
	consoleURL := d.Config.ConsoleURL
	if consoleURL != "" && !strings.HasSuffix(consoleURL, "/") {
		consoleURL += "/"
	}
	if serving {
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
		Orgs: og, Audit: og.Audit(), Meter: d.Meter, Plans: catalogue, Provider: provider,
		WebhookSecret: cfg.StripeWebhookSecret, ConsoleURL: consoleURL,
		Clock: d.Clock, Logger: d.Logger,
	})
	if err != nil {
		// Every option is filled in above: only a wiring mistake (no table) gets here.
		panic(fmt.Sprintf("service: %v", err))
	}
	return s
}
