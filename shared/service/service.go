// Package service assembles the route groups into one API (ARCHITECTURE.md, "Lambdas and route
// groups"). main.go mounts every group; each Lambda mounts its own group through the same
// constructors, so a route that works locally works on Lambda, and /openapi.json always
// describes every group, whichever process serves it.
package service

import (
	"log/slog"
	"net/http"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/meta"
	"github.com/roadevents/roadevents/shared/store"
)

// Group names a route group: one Lambda each on AWS.
type Group string

// The route groups of ARCHITECTURE.md that exist so far.
const (
	GroupMeta Group = "meta"
)

// AllGroups lists every group, in the order they are mounted.
var AllGroups = []Group{GroupMeta}

// Deps is what the route groups are built from.
type Deps struct {
	Config config.Config
	// Build identifies the running build (GET /health).
	Build  string
	Table  store.Table
	Clock  clock.Clock
	Logger *slog.Logger
}

// API is a built service: the routes of some groups, served, and the document of all groups.
type API struct {
	served *httpapi.API
	doc    *httpapi.API
}

// New builds an API serving groups (all of them when none are named).
func New(d Deps, groups ...Group) *API {
	if len(groups) == 0 {
		groups = AllGroups
	}
	if d.Clock == nil {
		d.Clock = clock.System
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	a := &API{}
	a.doc = newHTTPAPI(d)
	a.doc.Handle(routes(d, a, AllGroups...)...)
	a.served = a.doc
	if !sameGroups(groups, AllGroups) {
		a.served = newHTTPAPI(d)
		a.served.Handle(routes(d, a, groups...)...)
	}
	return a
}

// Handler serves the API's routes.
func (a *API) Handler() http.Handler { return a.served.Handler() }

// Routes returns the routes served.
func (a *API) Routes() []httpapi.Route { return a.served.Routes() }

// OpenAPI returns the document describing every group.
func (a *API) OpenAPI() []byte { return a.doc.OpenAPI() }

func newHTTPAPI(d Deps) *httpapi.API {
	return httpapi.New(httpapi.Config{
		Logger:      d.Logger,
		Clock:       d.Clock,
		CORSOrigins: d.Config.CORSOrigins,
		Description: "Real-time, short-lived road hazard events shared between organisations, " +
			"and the console where organisations manage themselves.",
	})
}

func routes(d Deps, a *API, groups ...Group) []httpapi.Route {
	var out []httpapi.Route
	for _, g := range groups {
		switch g {
		case GroupMeta:
			out = append(out, meta.Routes(meta.Deps{
				Build:      d.Build,
				ConsoleURL: d.Config.ConsoleURL,
				Limits:     d.Config.Limits,
				OpenAPI:    a.OpenAPI,
			})...)
		}
	}
	return out
}

func sameGroups(a, b []Group) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
