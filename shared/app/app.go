// Package app assembles the route groups of shared/routetable into one API (docs/architecture.md
// §4). main.go mounts every group and streamer/ the stream, both through daemon.Run. Each group
// is built by a package of its own (shared/app/metagroup, eventsgroup, consoleauthgroup,
// consoleorgsgroup, billinggroup), which its Lambda function mounts alone through
// shared/app/lambdaapp, so a route that works locally works on Lambda and a function links only
// its own group. /openapi.json always describes every group, whichever process serves it: the
// meta function serves the copy shared/app/openapidoc generates from Document. Each group serves
// exactly its rows of the route table (the package's tests check it), which the CDK stack wires
// without building the API. New returns an error rather than panicking; what it fills in for an
// empty field of Deps is documented there, and logged when it changes behaviour.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app/billinggroup"
	"github.com/roadevents/roadevents/shared/app/consoleauthgroup"
	"github.com/roadevents/roadevents/shared/app/consoleorgsgroup"
	"github.com/roadevents/roadevents/shared/app/eventsgroup"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/metagroup"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feedpoll"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/webhookfeed"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// Deps is what the route groups are built from. Table, Keys and Meter are required: the
// process that serves the routes owns them and finishes their writes when it stops
// (daemon.Process, a Lambda function), which it could not do for ones New made. Every other field says
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
	// Mailer sends the console's e-mail (tenants.OpenMailer builds it from the configuration). When
	// nil, sending fails, and New logs that the console can sign no one in.
	Mailer mail.Mailer
	// Sealer encrypts TOTP secrets at rest (tenants.OpenSealer). When nil, AES-GCM under
	// Config.Console.SealKey, or under a random key, which New logs.
	Sealer seal.Sealer
	// Hub routes the table's changes to the streams of GET /v1/stream; the process that
	// serves GroupStream runs it on its store's feed (stream.Hub.Run) and drains it on
	// shutdown. Without one the route is only documented, and answers 503.
	Hub *stream.Hub
	// Turns carries webhook deliveries' turns as on AWS (tenants.OpenTurns); nil keeps them in
	// the table, as go run . does.
	Turns webhooks.Sender
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
	// events warms its area cache (WarmAreaCache), which is no route either.
	events *eventstore.Store
	// feeds polls the organisations' feeds into events (Feeds).
	feeds *feedpoll.Poller
	// hooks makes and sends webhook deliveries (Webhooks).
	hooks    *webhookfeed.Producer
	dispatch *webhooks.Dispatcher
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
	// The limits document serves the level the area index is read at (docs/api.md §10.2), whatever
	// the configuration says.
	d.Config.Limits.QueryLevel = eventstore.QueryLevel
	td := tenants.Deps{
		Base:  groupapi.Base{Config: d.Config, Build: d.Build, Clock: d.Clock, Logger: d.Logger},
		Table: d.Table, Keys: d.Keys, Meter: d.Meter, Mailer: d.Mailer, Sealer: d.Sealer, PlanCaps: d.PlanCaps,
		Turns: d.Turns,
	}
	// Every group is built from the constructors its own function uses (docs/architecture.md
	// §4), here on services built once for all of them.
	t, err := tenants.New(td, groups...)
	if err != nil {
		return nil, err
	}
	ledger, err := tenants.NewLedger(td)
	if err != nil {
		return nil, err
	}
	evs, err := eventsgroup.NewStore(td, ledger, t.Orgs, slices.Contains(groups, routetable.GroupEvents))
	if err != nil {
		return nil, err
	}
	var billed routetable.Group // the group whose view of billing's configuration is logged
	switch {
	case slices.Contains(groups, routetable.GroupBilling):
		billed = routetable.GroupBilling
	case slices.Contains(groups, routetable.GroupConsoleOrgs):
		billed = routetable.GroupConsoleOrgs
	case slices.Contains(groups, routetable.GroupConsoleAuth):
		billed = routetable.GroupConsoleAuth
	}
	bill, err := billinggroup.NewService(td, t.Orgs, billed)
	if err != nil {
		return nil, err
	}
	b := built{
		deps:    td,
		tenants: t,
		events:  evs,
		ledger:  ledger,
		billing: bill,
		tickets: eventsgroup.NewTickets(td),
		hub:     d.Hub,
		timers:  d.StreamTimers,
	}
	a := &API{billing: bill, events: evs, feeds: eventsgroup.NewPoller(td, evs, t.Orgs),
		hooks: eventsgroup.NewProducer(td, t), dispatch: consoleorgsgroup.NewDispatcher(td, t)}
	a.doc = groupapi.NewAPI(td.Base, t.Middleware(d.Keys, b.tickets)...)
	a.doc.Handle(a.routes(b, routetable.All...)...)
	a.served = a.doc
	if !slices.Equal(groups, routetable.All) {
		a.served = groupapi.NewAPI(td.Base, t.Middleware(d.Keys, b.tickets)...)
		a.served.Handle(a.routes(b, groups...)...)
	}
	return a, nil
}

// Document returns the OpenAPI document of every group under the default configuration
// (config.Default()), built on table, which building the routes does not read: the document
// shared/app/openapidoc holds for the meta function.
func Document(table store.Table) ([]byte, error) {
	api, err := New(Deps{
		Config: config.Default(), Table: table,
		Logger: slog.New(slog.DiscardHandler),
		Keys:   apikey.New(table, apikey.Options{}),
		Meter:  metering.New(table, metering.Options{FlushInterval: -1}),
	})
	if err != nil {
		return nil, err
	}
	return api.OpenAPI(), nil
}

// built holds what New builds once for both the served API and the document.
type built struct {
	deps    tenants.Deps
	tenants *tenants.Tenants
	events  *eventstore.Store
	// ledger reads publishers' standings: the evidence document's band, the quality panel.
	ledger *reputation.Ledger
	// billing is the billing group: plans, summary, checkout, portal, Stripe webhook.
	billing *billing.Service
	// tickets mints stream tickets (GroupEvents) and verifies them for apikey.Middleware on
	// GET /v1/stream (docs/api.md §5 stream ticket rules).
	tickets *stream.Tickets
	hub     *stream.Hub
	timers  stream.Timers
}

// WarmAreaCache loads the area index into the events store's cache, on the embedded store
// (eventstore.Store.WarmCache): `go run .` runs it in the background when it starts, so that
// the first queries after a restart are as fast as the later ones.
func (a *API) WarmAreaCache(ctx context.Context) (eventstore.Warmed, error) {
	return a.events.WarmCache(ctx)
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

// Webhooks returns the producer of webhook deliveries and their dispatcher, for the process
// to run where the table's feed can be read on from a recorded place (docs/webhooks.md §3).
func (a *API) Webhooks() (*webhookfeed.Producer, *webhooks.Dispatcher) { return a.hooks, a.dispatch }

// Feeds returns the poller of the organisations' feeds, for the process to run on its schedule
// (docs/interop.md §13).
func (a *API) Feeds() *feedpoll.Poller { return a.feeds }

// Billing returns the billing service, for the overage job (billing.Service.ReportOverage),
// which no route runs: main.go's hourly ticker does, as the billing function's scheduled
// invocations do on AWS.
func (a *API) Billing() *billing.Service { return a.billing }

func (a *API) routes(b built, groups ...routetable.Group) []httpapi.Route {
	d := b.deps
	var out []httpapi.Route
	for _, g := range groups {
		switch g {
		case routetable.GroupMeta:
			out = append(out, metagroup.Routes(d.Base, a.OpenAPI)...)
		case routetable.GroupConsoleAuth:
			out = append(out, consoleauthgroup.Routes(d, b.tenants, b.billing)...)
		case routetable.GroupConsoleOrgs:
			out = append(out, consoleorgsgroup.Routes(d, b.tenants, b.ledger, b.billing)...)
		case routetable.GroupBilling:
			out = append(out, billinggroup.Routes(b.billing)...)
		case routetable.GroupEvents:
			out = append(out, eventsgroup.Routes(d, b.events, b.ledger, b.tickets, b.tenants.Orgs)...)
		case routetable.GroupStream:
			out = append(out, groupapi.ReadsTable(stream.Routes(stream.Deps{
				Hub:       b.hub,
				Snapshots: stream.EventsSnapshots(b.events),
				Tickets:   b.tickets,
				Meter:     d.Meter,
				Clock:     d.Clock,
				Timers:    b.timers,
				Logger:    d.Logger,
				MaxRadius: d.Config.Limits.MaxQueryRadiusM,
			}))...)
		}
	}
	return out
}
