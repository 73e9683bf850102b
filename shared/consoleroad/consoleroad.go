// Package consoleroad serves the console's Road page (docs/console.md §5): the network's events
// around a point, one event and its evidence, the organisation's own active events, closing and
// revising them, and stream tickets, to a signed-in member of the organisation rather than to an
// API key, so that no key is ever in the browser. Each route is the /v1 route of the same
// operation served as the organisation in the environment the query names: the same answers,
// the same rules, and metered as that organisation's reads, tickets and changes are
// (docs/api.md §1). Members read; owners close and revise. A caller who is not a member gets
// 404 (docs/api.md §4.3).
package consoleroad

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
)

// Deps are what the routes are built from.
type Deps struct {
	Orgs orgs.Accessor
	// V1 are the events group's /v1 routes, which the console's are served by.
	V1    []httpapi.Route
	Store *eventstore.Store
	Meter eventstore.Meter
	Clock clock.Clock
}

// environment names the network the console reads as: the organisation's live or sandbox
// events, as a key of that environment would (a sandbox read also sees live events).
var environment = schema.Query("environment", schema.Enum(event.EnvironmentLive, event.EnvironmentSandbox).WithDefault(event.EnvironmentLive)).
	Describe("The environment read as, as by a key of it: live reads live events; sandbox reads live and sandbox events, and changes sandbox ones.")

// mirrors are the /v1 operations the console serves, with their console path and who may call
// them.
var mirrors = []struct {
	v1, operation, path string
	owner               bool
}{
	{"listEvents", "listOrgAreaEvents", "/console/orgs/{org_id}/events", false},
	{"getEvent", "getOrgEvent", "/console/orgs/{org_id}/events/{event_id}", false},
	{"getEventEvidence", "getOrgEventEvidence", "/console/orgs/{org_id}/events/{event_id}/evidence", false},
	{"reviseEvent", "reviseOrgEvent", "/console/orgs/{org_id}/events/{event_id}/revisions", true},
	{"closeEvent", "closeOrgEvent", "/console/orgs/{org_id}/events/{event_id}/close", true},
	{"mintStreamTicket", "mintOrgStreamTicket", "/console/orgs/{org_id}/stream/tickets", false},
}

// Routes returns the console's Road routes, for the events group.
func Routes(d Deps) []httpapi.Route {
	if d.Clock == nil {
		d.Clock = clock.System
	}
	tags := []string{"console road"}
	session := []httpapi.Security{httpapi.SecuritySession}
	errs := orgs.CallerErrors
	var routes []httpapi.Route
	for _, m := range mirrors {
		i := slices.IndexFunc(d.V1, func(r httpapi.Route) bool { return r.OperationID == m.v1 })
		if i < 0 {
			panic(fmt.Sprintf("consoleroad: no /v1 operation %s to serve %s", m.v1, m.path))
		}
		v1 := d.V1[i]
		rt := v1
		rt.Path, rt.OperationID, rt.Tags, rt.Security = m.path, m.operation, tags, session
		rt.Summary = v1.Summary + " (console)"
		who := "any member"
		if m.owner {
			who = "owners only"
		}
		rt.Description = fmt.Sprintf("%s, served as the organisation in the environment named, to %s: the answers and rules "+
			"of %s %s, metered alike.", v1.Summary, who, v1.Method, v1.Path)
		rt.Params = append([]schema.Param{orgs.OrgIDParam}, append(slices.Clone(v1.Params), environment)...)
		rt.Responses = mapsWith(v1.Responses, http.StatusNotFound, orgs.NotMemberResponse)
		if m.owner {
			rt.Responses[http.StatusForbidden] = orgs.OwnerOnlyResponse
		}
		rt.Errors = errs.With(v1.Errors...)
		rt.NoStore = true
		rt.Handler = asOrganisation(d.Orgs, m.owner, v1.Handler)
		routes = append(routes, rt)
	}
	own := ownEvents{d}
	routes = append(routes, httpapi.Route{
		Method: http.MethodGet, Path: "/console/orgs/{org_id}/own-events", OperationID: "listOwnEvents", Tags: tags, Security: session,
		Summary: "The organisation's own active events, newest first",
		Description: fmt.Sprintf("Every event the organisation published in the environment that is active now, at most %d, "+
			"newest first; metered as one read. Any member.", eventstore.MaxOwn),
		Params: []schema.Param{orgs.OrgIDParam, environment},
		Responses: map[int]httpapi.Response{
			http.StatusOK:       httpapi.JSONResponse("Active events, newest first; possibly empty.", schema.Array(event.EventPublicSchema)),
			http.StatusNotFound: orgs.NotMemberResponse,
		},
		Errors: errs, NoStore: true,
		Handler: httpapi.JSON(http.StatusOK, own.list),
	})
	return routes
}

// asOrganisation serves next as the caller's organisation in the environment of the query,
// once the caller is known to be a member (an owner, when owner is set).
func asOrganisation(a orgs.Accessor, owner bool, next http.Handler) http.Handler {
	return httpapi.Before(next, func(r *http.Request) (*http.Request, error) {
		org, _, err := orgs.CallerIn(r, a, owner)
		if err != nil {
			return nil, err
		}
		p := apikey.Principal{OrgID: org, Environment: httpapi.Params(r).String("environment")}
		return r.WithContext(apikey.WithPrincipal(r.Context(), p)), nil
	})
}

type ownEvents struct{ d Deps }

func (o ownEvents) list(r *httpapi.Request[httpapi.NoBody]) ([]event.EventPublic, error) {
	org, _, err := orgs.CallerIn(r.HTTP, o.d.Orgs, false)
	if err != nil {
		return nil, err
	}
	env := r.Params.String("environment")
	o.d.Meter.Count(r.Context(), org, env, metering.Reads)
	evs, err := o.d.Store.Own(r.Context(), org, env)
	now := o.d.Clock.Now()
	out := make([]event.EventPublic, len(evs))
	for i, ev := range evs {
		out[i] = ev.Public(now)
	}
	return out, err
}

// mapsWith returns a copy of m with k set to v.
func mapsWith[K comparable, V any](m map[K]V, k K, v V) map[K]V {
	out := make(map[K]V, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}
