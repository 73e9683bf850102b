// Package consoleauthgroup is the console-auth route group (docs/architecture.md §4):
// /console/auth/*, signing in by e-mailed code and TOTP, recovery codes, the profile and
// signing out.
package consoleauthgroup

import (
	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/app/billinggroup"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/consoleaccount"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/erasure"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/routetable"
)

// New builds the group on its own, for its function.
func New(d tenants.Deps) (*groupapi.Group, error) {
	t, err := tenants.New(d, routetable.GroupConsoleAuth)
	if err != nil {
		return nil, err
	}
	bill, err := billinggroup.NewService(d, t.Orgs, routetable.GroupConsoleAuth)
	if err != nil {
		return nil, err
	}
	api := groupapi.NewAPI(d.Base, t.Middleware(d.Keys, nil)...)
	api.Handle(Routes(d, t, bill)...)
	return &groupapi.Group{API: api}, nil
}

// Routes returns the group's routes on the identity and organisations of t: signing in, the
// profile, the export of a person's data (which reads their organisations), and the erasure
// of their account (which leaves them, and deletes those they alone are in, billing bill's
// customer with them).
func Routes(d tenants.Deps, t *tenants.Tenants, bill *billing.Service) []httpapi.Route {
	routes := consoleauth.Routes(t.Auth)
	routes = append(routes, consoleaccount.Routes(consoleaccount.Deps{Auth: t.Auth, Orgs: t.Orgs, Clock: d.Clock})...)
	routes = append(routes, erasure.AccountRoutes(erasure.New(t.Auth, t.Orgs, d.Keys,
		feeds.NewRegistry(d.Table, t.Orgs.Audit(), d.Clock), alerts.NewRules(d.Table, t.Orgs.Audit(), d.Clock),
		tenants.NewEndpoints(d, t), bill, d.Logger))...)
	return groupapi.Private(groupapi.ReadsTable(routes))
}
