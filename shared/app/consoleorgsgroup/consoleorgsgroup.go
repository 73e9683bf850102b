// Package consoleorgsgroup is the console-orgs route group (docs/architecture.md §4):
// organisations, members, invitations, the audit log, API keys, usage, vitality, the
// publisher reputation, the feed registry and the webhook endpoints.
package consoleorgsgroup

import (
	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consolefeeds"
	"github.com/roadevents/roadevents/shared/consolereputation"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/consolewebhooks"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/webhooks"
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
	api.Handle(Routes(d, t, ledger)...)
	return &groupapi.Group{API: api}, nil
}

// Routes returns the group's routes on the organisations of t and the reputation ledger.
func Routes(d tenants.Deps, t *tenants.Tenants, ledger *reputation.Ledger) []httpapi.Route {
	og := t.Orgs
	routes := orgs.Routes(og)
	routes = append(routes, consoleusage.Routes(consoleusage.Deps{Orgs: og, Meter: d.Meter, Keys: d.Keys, Clock: d.Clock})...)
	routes = append(routes, consolereputation.Routes(consolereputation.Deps{Orgs: og, Standings: ledger})...)
	routes = append(routes, consolefeeds.Routes(og, feeds.NewRegistry(d.Table, og.Audit(), d.Clock))...)
	routes = append(routes, consolewebhooks.Routes(consolewebhooks.Deps{
		Orgs: og, Endpoints: NewEndpoints(d, t), Queue: webhooks.NewQueue(d.Table, d.Clock), Clock: d.Clock,
		Rules: alerts.NewRules(d.Table, og.Audit(), d.Clock),
		// Deliveries run in the process of the embedded store only, so far (docs/webhooks.md).
		Delivering: d.Config.Store == config.StoreEmbedded,
	})...)
	return groupapi.Private(groupapi.ReadsTable(routes))
}

// NewEndpoints returns the organisations' webhook endpoints, their secrets sealed with t's
// sealer and their changes in the audit log.
func NewEndpoints(d tenants.Deps, t *tenants.Tenants) *webhooks.Endpoints {
	return webhooks.NewEndpoints(d.Table, t.Orgs.Audit(), t.Sealer,
		webhooks.EndpointsOptions{Clock: d.Clock, PlainHTTP: d.Config.Webhooks.AllowPrivate})
}
