// Package consoleauthgroup is the console-auth route group (docs/architecture.md §4):
// /console/auth/*, signing in by e-mailed code and TOTP, recovery codes, the profile and
// signing out.
package consoleauthgroup

import (
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/consoleaccount"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/routetable"
)

// New builds the group on its own, for its function.
func New(d tenants.Deps) (*groupapi.Group, error) {
	t, err := tenants.New(d, routetable.GroupConsoleAuth)
	if err != nil {
		return nil, err
	}
	api := groupapi.NewAPI(d.Base, t.Middleware(d.Keys, nil)...)
	api.Handle(Routes(d, t)...)
	return &groupapi.Group{API: api}, nil
}

// Routes returns the group's routes on the identity and organisations of t: signing in, the
// profile, and the export of a person's data (which reads their organisations).
func Routes(d tenants.Deps, t *tenants.Tenants) []httpapi.Route {
	routes := consoleauth.Routes(t.Auth)
	routes = append(routes, consoleaccount.Routes(consoleaccount.Deps{Auth: t.Auth, Orgs: t.Orgs, Clock: d.Clock})...)
	return groupapi.Private(groupapi.ReadsTable(routes))
}
