// Package consoleorgsgroup is the console-orgs route group (docs/architecture.md §4):
// organisations, members, invitations, the audit log, API keys, usage, vitality, the
// publisher reputation and the feed registry.
package consoleorgsgroup

import (
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/consolefeeds"
	"github.com/roadevents/roadevents/shared/consolereputation"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
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
	api.Handle(Routes(d, t.Orgs, ledger)...)
	return &groupapi.Group{API: api}, nil
}

// Routes returns the group's routes on the organisations og and the reputation ledger.
func Routes(d tenants.Deps, og *orgs.Service, ledger *reputation.Ledger) []httpapi.Route {
	routes := orgs.Routes(og)
	routes = append(routes, consoleusage.Routes(consoleusage.Deps{Orgs: og, Meter: d.Meter, Keys: d.Keys, Clock: d.Clock})...)
	routes = append(routes, consolereputation.Routes(consolereputation.Deps{Orgs: og, Standings: ledger})...)
	routes = append(routes, consolefeeds.Routes(og, feeds.NewRegistry(d.Table, og.Audit(), d.Clock))...)
	return groupapi.Private(groupapi.ReadsTable(routes))
}
