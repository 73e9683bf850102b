// Package consoleorgsgroup is the console-orgs route group (docs/architecture.md §4):
// organisations, members, invitations, the audit log, API keys, usage, vitality, the
// publisher reputation, the feed registry and the webhook endpoints.
package consoleorgsgroup

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/app/billinggroup"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/consolefeeds"
	"github.com/roadevents/roadevents/shared/consolereputation"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/consolewebhooks"
	"github.com/roadevents/roadevents/shared/erasure"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/webhooks"
	"github.com/roadevents/roadevents/shared/webhooks/sqsturns"
)

// New builds the group on its own, for its function.
func New(d tenants.Deps) (*groupapi.Group, error) {
	t, err := tenants.New(d, routetable.GroupConsoleOrgs)
	if err != nil {
		return nil, err
	}
	ledger, err := tenants.NewLedger(d)
	if err != nil {
		return nil, err
	}
	api := groupapi.NewAPI(d.Base, t.Middleware(d.Keys, nil)...)
	bill, err := billinggroup.NewService(d, t.Orgs, routetable.GroupConsoleOrgs)
	if err != nil {
		return nil, err
	}
	api.Handle(Routes(d, t, ledger, bill)...)
	// On AWS the webhook turns' queue invokes the function with the turns that are due
	// (docs/webhooks.md §3).
	dispatcher := NewDispatcher(d, t)
	turns := func(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
		return sqsturns.Handle(ctx, dispatcher, ev)
	}
	return &groupapi.Group{API: api, Queue: turns}, nil
}

// NewDispatcher builds the dispatcher of the webhook deliveries (docs/webhooks.md §3).
func NewDispatcher(d tenants.Deps, t *tenants.Tenants) *webhooks.Dispatcher {
	return webhooks.NewDispatcher(tenants.NewDeliveries(d), tenants.NewEndpoints(d, t), webhooks.DispatcherOptions{
		AllowPrivate: d.Config.Webhooks.AllowPrivate, Clock: d.Clock, Logger: d.Logger})
}

// Routes returns the group's routes on the organisations of t and the reputation ledger.
func Routes(d tenants.Deps, t *tenants.Tenants, ledger *reputation.Ledger, bill *billing.Service) []httpapi.Route {
	og := t.Orgs
	routes := orgs.Routes(og)
	routes = append(routes, consoleusage.Routes(consoleusage.Deps{Orgs: og, Meter: d.Meter, Keys: d.Keys, Clock: d.Clock})...)
	routes = append(routes, consolereputation.Routes(consolereputation.Deps{Orgs: og, Standings: ledger})...)
	registry := feeds.NewRegistry(d.Table, og.Audit(), d.Clock)
	endpoints := tenants.NewEndpoints(d, t)
	rules := alerts.NewRules(d.Table, og.Audit(), d.Clock)
	routes = append(routes, consolefeeds.Routes(og, registry)...)
	routes = append(routes, consolewebhooks.Routes(consolewebhooks.Deps{
		Orgs: og, Endpoints: endpoints, Queue: tenants.NewDeliveries(d), Clock: d.Clock,
		Rules: rules, Delivering: tenants.Delivering(d),
	})...)
	routes = append(routes, erasure.OrgRoutes(erasure.New(t.Auth, og, d.Keys, registry, rules, endpoints, bill, d.Logger))...)
	return groupapi.Private(groupapi.ReadsTable(routes))
}
