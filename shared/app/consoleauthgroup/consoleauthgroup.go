// Package consoleauthgroup is the console-auth route group (docs/architecture.md §4):
// /console/auth/*, signing in by e-mailed code and TOTP, recovery codes, the profile and
// signing out.
package consoleauthgroup

import (
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
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
	api.Handle(Routes(t.Auth)...)
	return &groupapi.Group{API: api}, nil
}

// Routes returns the group's routes on the identity auth.
func Routes(auth *consoleauth.Service) []httpapi.Route {
	return groupapi.Private(groupapi.ReadsTable(consoleauth.Routes(auth)))
}
