// Package app assembles the route groups into one API (ARCHITECTURE.md, "Lambdas and route
// groups"). main.go mounts every group; each Lambda mounts its own group through the same
// constructors, so a route that works locally works on Lambda, and /openapi.json always
// describes every group, whichever process serves it.
package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/meta"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
)

// Group names a route group: one Lambda each on AWS.
type Group string

// The route groups of ARCHITECTURE.md.
const (
	GroupMeta        Group = "meta"
	GroupEvents      Group = "events"
	GroupConsoleAuth Group = "console-auth"
	// GroupStream is GET /v1/stream, served by the long-lived processes only (streamer/ and
	// main.go): a Lambda cannot flush a response (STYLE.md guideline 6). Its tickets
	// (POST /v1/stream/tickets) are in GroupEvents (ARCHITECTURE.md, route groups).
	GroupStream Group = "stream"
	// GroupConsoleOrgs is organisations, members, invitations, audit, keys, usage and vitality.
	GroupConsoleOrgs Group = "console-orgs"
	// GroupBilling is plans, the billing summary, checkout, portal and the Stripe webhook.
	GroupBilling Group = "billing"
)

// AllGroups lists every group, in the order they are mounted.
var AllGroups = []Group{GroupMeta, GroupEvents, GroupConsoleAuth, GroupConsoleOrgs, GroupBilling, GroupStream}

// Deps is what the route groups are built from.
type Deps struct {
	Config config.Config
	// Build identifies the running build (GET /health).
	Build  string
	Table  store.Table
	Clock  clock.Clock
	Logger *slog.Logger
	// Keys authenticates the API keys of /v1 (apikey.Middleware); one on Table when nil.
	// main passes its own so that it can Wait for its last_used_at writes on shutdown.
	Keys *apikey.Keys
	// Meter counts usage (spec 1). When nil, a meter on Table without a background flush is
	// made, which only keeps counts in memory: a process that serves traffic passes its own
	// and closes it on shutdown.
	Meter *metering.Meter
	// Mailer sends the console's e-mail (OpenMailer builds it from the configuration). When
	// nil, sending fails and the console cannot sign anyone in.
	Mailer mail.Mailer
	// Sealer encrypts TOTP secrets at rest (OpenSealer). When nil, one is made from
	// Config.Console.SealKey, or from a random key.
	Sealer seal.Sealer
	// Hub routes the table's changes to the streams of GET /v1/stream; the process that
	// serves GroupStream runs it on its store's feed (stream.Hub.Run) and drains it on
	// shutdown. Without one the route is only documented, and answers 503.
	Hub *stream.Hub
	// StreamTimers make each stream's keepalive and end-of-life timers; real ones when nil.
	StreamTimers stream.Timers
	// PlanCaps gives the live-key and seat caps of a plan to the console's organisations
	// (orgs.Options.Caps; plans.Catalogue.Caps fits); nil gives every plan the Free plan's.
	PlanCaps func(planID string) (liveKeyCap, seatCap int)
}

// API is a built service: the routes of some groups, served, and the document of all groups.
type API struct {
	served *httpapi.API
	doc    *httpapi.API
	// billing runs the overage job (Billing), which is no route.
	billing *billing.Service
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
	if d.Keys == nil {
		d.Keys = apikey.New(d.Table, apikey.Options{Clock: d.Clock, Logger: d.Logger})
	}
	if d.Meter == nil {
		d.Meter = metering.New(d.Table, metering.Options{Clock: d.Clock, Logger: d.Logger, FlushInterval: -1})
	}
	// The plans of the configuration decide the caps of the organisations (contract 3).
	catalogue := plans.New(d.Config.Billing)
	if d.PlanCaps == nil {
		d.PlanCaps = catalogue.Caps
	}
	// The limits document serves the level the area index is read at (contract 2), whatever
	// the configuration says.
	d.Config.Limits.QueryLevel = eventstore.QueryLevel
	if len(d.Config.EventIDKey) == 0 {
		d.Config.EventIDKey = make([]byte, 32)
		rand.Read(d.Config.EventIDKey)
		if servesGroup(groups, GroupEvents) {
			d.Logger.Warn("no event id key configured (ROADEVENTS_EVENT_ID_KEY): using a random one, " +
				"so ids derived from client_event_id change when this process restarts")
		}
	}
	evs, err := eventstore.New(d.Table, eventstore.Options{
		IDKey:             d.Config.EventIDKey,
		Ceiling:           ratelimit.NewSignals(d.Table),
		Clock:             d.Clock,
		Logger:            d.Logger,
		MaxEventsPerQuery: d.Config.Limits.MaxEventsPerQuery,
		MaxRadius:         d.Config.Limits.MaxQueryRadiusM,
		CacheBytes:        areaCacheBytes(d.Config.Store),
	})
	if err != nil {
		// Only a key shorter than config accepts gets here: a wiring mistake, which must stop
		// the program at start rather than serve publishes with guessable ids.
		panic(fmt.Sprintf("service: %v", err))
	}
	a := &API{}
	// console-orgs: the TOTP hook of consoleauth writes in the audit log of every organisation
	// of the user (contract 3), so the identity is built with a hook on the organisations,
	// which are built from the identity right after.
	var og *orgs.Service
	onTOTP := func(ctx context.Context, u consoleauth.User, action string) {
		if og != nil {
			og.RecordUserAction(ctx, u, action)
		}
	}
	auth := newConsoleAuth(d, servesGroup(groups, GroupConsoleAuth), onTOTP)
	og = newOrgs(d, auth, servesGroup(groups, GroupConsoleOrgs))
	b := built{
		events:  evs,
		auth:    auth,
		orgs:    og,
		billing: newBilling(d, og, catalogue, servesGroup(groups, GroupBilling)),
		tickets: stream.NewTickets(d.Table, stream.TicketOptions{Clock: d.Clock}),
	}
	a.billing = b.billing
	a.doc = newHTTPAPI(d, b)
	a.doc.Handle(routes(d, a, b, AllGroups...)...)
	a.served = a.doc
	if !sameGroups(groups, AllGroups) {
		a.served = newHTTPAPI(d, b)
		a.served.Handle(routes(d, a, b, groups...)...)
	}
	return a
}

// embeddedAreaCache is the memory the events store may keep decoded area index partitions in
// on the embedded store. The 100 000-event city takes 270 MB at both levels (161 MB
// at level 8, 107 at level 6: BenchmarkQuery's city, warmed with a larger limit). At 256 MB
// the cache evicted at random, and a load that alternated radii kept refilling partitions
// from the table: the 1 000 m rate fell from 4 400/s to 2 500/s after each 9 780 m run.
// Twice the city leaves room for its growth; the live heap stays within daemon.MemoryLimit.
const embeddedAreaCache = 512 << 20

// areaCacheBytes decides the events store's cache (eventstore.Options.CacheBytes). Only the
// embedded store has a single writing process (its file is locked while it is open), which
// the cache needs to stay exact; processes sharing a DynamoDB table read it every time.
func areaCacheBytes(kind config.Store) int64 {
	if kind == config.StoreEmbedded {
		return embeddedAreaCache
	}
	return 0
}

// built holds what New builds once for both the served API and the document.
type built struct {
	events *eventstore.Store
	auth   *consoleauth.Service
	// orgs is the console-orgs group: organisations, members, invitations, keys, audit.
	orgs *orgs.Service
	// billing is the billing group: plans, summary, checkout, portal, Stripe webhook.
	billing *billing.Service
	// tickets mints stream tickets (GroupEvents) and verifies them for apikey.Middleware on
	// GET /v1/stream (spec 5 stream ticket rules).
	tickets *stream.Tickets
}

func servesGroup(groups []Group, g Group) bool {
	for _, x := range groups {
		if x == g {
			return true
		}
	}
	return false
}

// Handler serves the API's routes.
func (a *API) Handler() http.Handler { return a.served.Handler() }

// Routes returns the routes served.
func (a *API) Routes() []httpapi.Route { return a.served.Routes() }

// OpenAPI returns the document describing every group.
func (a *API) OpenAPI() []byte { return a.doc.OpenAPI() }

func newHTTPAPI(d Deps, b built) *httpapi.API {
	return httpapi.New(httpapi.Config{
		Logger:      d.Logger,
		Clock:       d.Clock,
		CORSOrigins: d.Config.CORSOrigins,
		// API keys on every /v1 route that declares them (spec 5); other routes pass.
		// Session and temp tokens on every /console route that declares them (spec 4.2, 5).
		Middleware: []httpapi.RouteMiddleware{
			apikey.Middleware(d.Keys, apikey.MiddlewareOptions{Tickets: b.tickets}),
			consoleauth.Middleware(b.auth),
			// Membership of /console/orgs/{org_id}/... routes of every group, after the
			// session and before validation: a non-member gets 404, never 422 (spec 4.3).
			orgs.MembershipMiddleware(b.orgs),
		},
		Description: "Real-time, short-lived road hazard events shared between organisations, " +
			"and the console where organisations manage themselves.",
	})
}

func routes(d Deps, a *API, b built, groups ...Group) []httpapi.Route {
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
		case GroupMeta:
			out = append(out, meta.Routes(meta.Deps{
				Build:      d.Build,
				ConsoleURL: d.Config.ConsoleURL,
				Limits:     d.Config.Limits,
				OpenAPI:    a.OpenAPI,
			})...)
		case GroupConsoleAuth:
			out = append(out, consoleauth.Routes(b.auth)...)
		case GroupConsoleOrgs:
			out = append(out, orgs.Routes(b.orgs)...)
			out = append(out, consoleusage.Routes(consoleusage.Deps{Orgs: b.orgs, Meter: d.Meter, Keys: d.Keys, Clock: d.Clock})...)
		case GroupBilling:
			out = append(out, billing.Routes(b.billing)...)
		case GroupEvents:
			out = append(out, eventstore.Routes(eventstore.Deps{
				Store:     b.events,
				Meter:     d.Meter,
				Clock:     d.Clock,
				MaxRadius: d.Config.Limits.MaxQueryRadiusM,
			})...)
			out = append(out, stream.TicketRoutes(streams)...)
		case GroupStream:
			out = append(out, stream.Routes(streams)...)
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
