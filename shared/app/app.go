// Package app assembles the route groups of shared/routetable into one API (docs/architecture.md
// §4). main.go mounts every group and streamer/ the stream, both through daemon.Run; each Lambda
// mounts its own group through the same constructors (NewLambda, StartLambda), so a route that
// works locally works on Lambda, and /openapi.json always describes every group, whichever process
// serves it. Each group serves exactly its rows of the route table (the package's tests check it),
// which the CDK stack wires without building the API. New returns an error rather than panicking;
// what it fills in for an empty field of Deps is documented there, and logged when it changes
// behaviour.
package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consolereputation"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/meta"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
)

// Deps is what the route groups are built from. Table, Keys and Meter are required: the
// process that serves the routes owns them and finishes their writes when it stops
// (daemon.Process, Lambda), which it could not do for ones New made. Every other field says
// what New uses when it is empty.
type Deps struct {
	Config config.Config
	// Build identifies the running build (GET /health).
	Build string
	// Table is the store of every group. Required.
	Table store.Table
	// Clock is clock.System when nil.
	Clock clock.Clock
	// Logger is slog.Default() when nil.
	Logger *slog.Logger
	// Keys authenticates the API keys of /v1 (apikey.Middleware). Required: its owner waits
	// for its last_used_at writes (apikey.Keys.Wait).
	Keys *apikey.Keys
	// Meter counts usage (docs/api.md §1). Required: its owner writes what it counted
	// (metering.Meter.Flush or Close).
	Meter *metering.Meter
	// Mailer sends the console's e-mail (OpenMailer builds it from the configuration). When
	// nil, sending fails, and New logs that the console can sign no one in.
	Mailer mail.Mailer
	// Sealer encrypts TOTP secrets at rest (OpenSealer). When nil, AES-GCM under
	// Config.Console.SealKey, or under a random key, which New logs.
	Sealer seal.Sealer
	// Hub routes the table's changes to the streams of GET /v1/stream; the process that
	// serves GroupStream runs it on its store's feed (stream.Hub.Run) and drains it on
	// shutdown. Without one the route is only documented, and answers 503.
	Hub *stream.Hub
	// StreamTimers make each stream's keepalive and end-of-life timers; real ones when nil.
	StreamTimers stream.Timers
	// PlanCaps gives the live-key and seat caps of a plan to the console's organisations
	// (orgs.Options.Caps). When nil, the caps of the plans of Config.Billing
	// (plans.Catalogue.Caps), as served; tests pass their own.
	PlanCaps func(planID string) (liveKeyCap, seatCap int)
}

// ErrMissingDependency is returned by New when a required field of Deps is empty.
var ErrMissingDependency = errors.New("app: missing dependency")

// API is a built service: the routes of some groups, served, and the document of all groups.
type API struct {
	served *httpapi.API
	doc    *httpapi.API
	// billing runs the overage job (Billing), which is no route.
	billing *billing.Service
}

// New builds an API serving groups (all of them when none are named). It fails on a missing
// required dependency (ErrMissingDependency), an unknown group, or a dependency a group's
// constructor refuses, such as an event id key shorter than config accepts.
func New(d Deps, groups ...routetable.Group) (*API, error) {
	var missing string
	switch {
	case d.Table == nil:
		missing = "Table"
	case d.Keys == nil:
		missing = "Keys"
	case d.Meter == nil:
		missing = "Meter"
	}
	if missing != "" {
		return nil, fmt.Errorf("%w: Deps.%s", ErrMissingDependency, missing)
	}
	if len(groups) == 0 {
		groups = routetable.All
	}
	for _, g := range groups {
		if !slices.Contains(routetable.All, g) {
			return nil, fmt.Errorf("app: unknown route group %q", g)
		}
	}
	if d.Clock == nil {
		d.Clock = clock.System
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	// The plans of the configuration decide the caps of the organisations (docs/api.md §10.3).
	catalogue := plans.New(d.Config.Billing)
	if d.PlanCaps == nil {
		d.PlanCaps = catalogue.Caps
	}
	// The limits document serves the level the area index is read at (docs/api.md §10.2), whatever
	// the configuration says.
	d.Config.Limits.QueryLevel = eventstore.QueryLevel
	if len(d.Config.EventIDKey) == 0 {
		d.Config.EventIDKey = make([]byte, 32)
		rand.Read(d.Config.EventIDKey)
		if slices.Contains(groups, routetable.GroupEvents) {
			d.Logger.Warn("no event id key configured (ROADEVENTS_EVENT_ID_KEY): using a random one, " +
				"so ids derived from client_event_id change when this process restarts")
		}
	}
	// console-orgs: the TOTP hook of consoleauth writes in the audit log of every organisation
	// of the user (docs/api.md §10.3), so the identity is built with a hook on the organisations,
	// which are built from the identity right after.
	var og *orgs.Service
	onTOTP := func(ctx context.Context, u consoleauth.User, action string) {
		if og != nil {
			og.RecordUserAction(ctx, u, action)
		}
	}
	auth, err := newConsoleAuth(d, slices.Contains(groups, routetable.GroupConsoleAuth), onTOTP)
	if err != nil {
		return nil, err
	}
	if og, err = newOrgs(d, auth, slices.Contains(groups, routetable.GroupConsoleOrgs)); err != nil {
		return nil, err
	}
	// The reputation rule (docs/network.md §2): the events store tells the judge of each deny
	// end, and the judge invalidates through the store, which is built right after it.
	ledger, err := newLedger(d)
	if err != nil {
		return nil, err
	}
	var evs *eventstore.Store
	judge, err := newJudge(d, ledger, og, invalidateFunc(func(ctx context.Context, org, env string, since time.Time, reason string) (int, error) {
		return evs.InvalidateOrg(ctx, org, env, since, reason)
	}))
	if err != nil {
		return nil, err
	}
	evs, err = eventstore.New(d.Table, eventstore.Options{
		IDKey:             d.Config.EventIDKey,
		Ceiling:           ratelimit.NewSignals(d.Table),
		Clock:             d.Clock,
		Logger:            d.Logger,
		MaxEventsPerQuery: d.Config.Limits.MaxEventsPerQuery,
		MaxRadius:         d.Config.Limits.MaxQueryRadiusM,
		CacheBytes:        areaCacheBytes(d.Config.Store),
		SoleWriter:        soleWriter(d.Config.Store),
		Judge:             judge,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	bill, err := newBilling(d, og, catalogue, slices.Contains(groups, routetable.GroupBilling))
	if err != nil {
		return nil, err
	}
	b := built{
		events:  evs,
		ledger:  ledger,
		auth:    auth,
		orgs:    og,
		billing: bill,
		tickets: stream.NewTickets(d.Table, stream.TicketOptions{Clock: d.Clock, Keys: d.Keys}),
	}
	a := &API{billing: bill}
	a.doc = newHTTPAPI(d, b)
	a.doc.Handle(routes(d, a, b, routetable.All...)...)
	a.served = a.doc
	if !slices.Equal(groups, routetable.All) {
		a.served = newHTTPAPI(d, b)
		a.served.Handle(routes(d, a, b, groups...)...)
	}
	return a, nil
}

// embeddedAreaCache is the memory the events store may keep decoded area index partitions in
// on the embedded store: twice what the benchmark city takes at both levels, so that a load
// alternating radii does not keep evicting and refilling partitions, with room for growth; the
// live heap stays within daemon.MemoryLimit (docs/performance.md §5).
const embeddedAreaCache = 512 << 20

// areaCacheBytes decides the events store's cache (eventstore.Options.CacheBytes). Only the
// embedded store has a single writing process (its file is locked while it is open), which
// the cache needs to stay exact; processes sharing a DynamoDB table read it every time.
func areaCacheBytes(kind config.Store) int64 {
	if soleWriter(kind) {
		return embeddedAreaCache
	}
	return 0
}

// soleWriter tells whether the process is its table's only writer (eventstore.Options.SoleWriter):
// the embedded store, whose file is locked while it is open.
func soleWriter(kind config.Store) bool {
	return kind == config.StoreEmbedded
}

// built holds what New builds once for both the served API and the document.
type built struct {
	events *eventstore.Store
	// ledger reads publishers' standings: the evidence document's band, the quality panel.
	ledger *reputation.Ledger
	auth   *consoleauth.Service
	// orgs is the console-orgs group: organisations, members, invitations, keys, audit.
	orgs *orgs.Service
	// billing is the billing group: plans, summary, checkout, portal, Stripe webhook.
	billing *billing.Service
	// tickets mints stream tickets (GroupEvents) and verifies them for apikey.Middleware on
	// GET /v1/stream (docs/api.md §5 stream ticket rules).
	tickets *stream.Tickets
}

// Handler serves the API's routes.
func (a *API) Handler() http.Handler { return a.served.Handler() }

// Observe serves h, a handler mounted beside the API (the console's files), behind the
// API's request id, access log and panic recovery (httpapi.API.Observe).
func (a *API) Observe(h http.Handler) http.Handler { return a.served.Observe(h) }

// Routes returns the routes served.
func (a *API) Routes() []httpapi.Route { return a.served.Routes() }

// OpenAPI returns the document describing every group.
func (a *API) OpenAPI() []byte { return a.doc.OpenAPI() }

func newHTTPAPI(d Deps, b built) *httpapi.API {
	return httpapi.New(httpapi.Config{
		Logger:      d.Logger,
		Clock:       d.Clock,
		CORSOrigins: d.Config.CORSOrigins,
		// API keys on every /v1 route that declares them (docs/api.md §5); other routes pass.
		// Session and temp tokens on each /console route declaring them (docs/api.md §4.2, §5).
		Middleware: []httpapi.RouteMiddleware{
			apikey.Middleware(d.Keys, apikey.MiddlewareOptions{Tickets: b.tickets}),
			consoleauth.Middleware(b.auth),
			// Membership of /console/orgs/{org_id}/... routes of every group, after the
			// session and before validation: a non-member gets 404, never 422 (docs/api.md §4.3).
			orgs.MembershipMiddleware(b.orgs),
		},
		Description: "Real-time, short-lived road hazard events shared between organisations, " +
			"and the console where organisations manage themselves.",
		Tags: tags,
	})
}

// tags describe the groups of operations in the document, in the order a reader meets them.
var tags = []httpapi.Tag{
	{Name: "meta", Description: "What the service is, its health, this document, the event taxonomy and the limits. Open."},
	{Name: "events", Description: "Publish, query, revise, close and signal road events, and mint stream tickets. API key."},
	{Name: "stream", Description: "Live changes of the events around a point, as server-sent events. API key or stream ticket."},
	{Name: "console auth", Description: "Sign-in by e-mailed code and TOTP, recovery codes, the profile and sign-out."},
	{Name: "console organisations", Description: "Organisations, their members, invitations and audit log."},
	{Name: "console keys", Description: "The API keys of an organisation: issue, list and revoke."},
	{Name: "console usage", Description: "What an organisation's keys used, by day, and how alive its events are."},
	{Name: "console quality", Description: "How the network judges an organisation's reports."},
	{Name: "console billing", Description: "Plans, the billing summary, checkout, the billing portal and the payment provider's webhook."},
}

func routes(d Deps, a *API, b built, groups ...routetable.Group) []httpapi.Route {
	streams := stream.Deps{
		Hub:       d.Hub,
		Snapshots: stream.EventsSnapshots(b.events),
		Tickets:   b.tickets,
		Meter:     d.Meter,
		Clock:     d.Clock,
		Timers:    d.StreamTimers,
		Logger:    d.Logger,
		MaxRadius: d.Config.Limits.MaxQueryRadiusM,
	}
	var out []httpapi.Route
	for _, g := range groups {
		switch g {
		case routetable.GroupMeta:
			// The only group that never reads the table.
			out = append(out, meta.Routes(meta.Deps{
				Build:      d.Build,
				ConsoleURL: d.Config.ConsoleURL,
				Limits:     d.Config.Limits,
				OpenAPI:    a.OpenAPI,
			})...)
		case routetable.GroupConsoleAuth:
			out = append(out, private(readsTable(consoleauth.Routes(b.auth)))...)
		case routetable.GroupConsoleOrgs:
			out = append(out, private(readsTable(orgs.Routes(b.orgs)))...)
			out = append(out, private(readsTable(consoleusage.Routes(consoleusage.Deps{Orgs: b.orgs, Meter: d.Meter, Keys: d.Keys, Clock: d.Clock})))...)
			out = append(out, private(readsTable(consolereputation.Routes(consolereputation.Deps{Orgs: b.orgs, Standings: b.ledger})))...)
		case routetable.GroupBilling:
			out = append(out, private(readsTable(billing.Routes(b.billing)))...)
		case routetable.GroupEvents:
			out = append(out, readsTable(eventstore.Routes(eventstore.Deps{
				Store:       b.events,
				Meter:       d.Meter,
				Clock:       d.Clock,
				MaxRadius:   d.Config.Limits.MaxQueryRadiusM,
				Reputations: b.ledger,
			}))...)
			out = append(out, readsTable(stream.TicketRoutes(streams))...)
		case routetable.GroupStream:
			out = append(out, readsTable(stream.Routes(streams))...)
		}
	}
	return out
}

// private marks the console's routes NoStore (docs/api.md §11.3): their answers belong to one
// user, and many hold a credential (a session token, a TOTP secret, recovery codes, a new API
// key).
func private(routes []httpapi.Route) []httpapi.Route {
	for i := range routes {
		routes[i].NoStore = true
	}
	return routes
}

// tableFree names the operations of the groups given to readsTable that never read the
// table.
var tableFree = map[string]bool{"listPlans": true}

// readsTable declares on routes that read or write the table the 503 with Retry-After that
// answers a table briefly out of reach (httpapi.Unavailable, docs/operations.md §1); a route
// that declares a 503 of its own gets both in one description.
func readsTable(routes []httpapi.Route) []httpapi.Route {
	for i := range routes {
		if tableFree[routes[i].OperationID] {
			continue
		}
		rs := maps.Clone(routes[i].Responses)
		if rs == nil {
			rs = map[int]httpapi.Response{}
		}
		resp, own := rs[http.StatusServiceUnavailable]
		if !own {
			resp = httpapi.Unavailable
		} else {
			resp.Description += " Or: " + httpapi.Unavailable.Description
			if !slices.ContainsFunc(resp.Headers, func(h httpapi.Header) bool { return h.Name == httpapi.RetryAfter.Name }) {
				resp.Headers = append(slices.Clone(resp.Headers), httpapi.RetryAfter)
			}
		}
		rs[http.StatusServiceUnavailable] = resp
		routes[i].Responses = rs
	}
	return routes
}
