// Package eventsgroup is the events route group (docs/architecture.md §4): publishing,
// querying, revising, closing and signalling events, their evidence, the open-data exports, and
// minting stream tickets. The events store it builds also serves the stream's snapshots; its
// scheduled job polls the organisations' feeds into it.
package eventsgroup

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleroad"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feedpoll"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/sysmem"
	"github.com/roadevents/roadevents/shared/verdict"
	"github.com/roadevents/roadevents/shared/webhookfeed"
)

// New builds the group on its own, for its function.
func New(d tenants.Deps) (*groupapi.Group, error) {
	t, err := tenants.New(d, routetable.GroupEvents)
	if err != nil {
		return nil, err
	}
	ledger, err := tenants.NewLedger(d)
	if err != nil {
		return nil, err
	}
	evs, err := NewStore(d, ledger, t.Orgs, true)
	if err != nil {
		return nil, err
	}
	tickets := NewTickets(d)
	api := groupapi.NewAPI(d.Base, t.Middleware(d.Keys, tickets)...)
	api.Handle(Routes(d, evs, ledger, tickets, t.Orgs)...)
	poller := NewPoller(d, evs, t.Orgs)
	// On AWS a schedule invokes the function every minute for a pass (docs/interop.md §13).
	pass := func(ctx context.Context) error {
		n, err := poller.Pass(ctx)
		d.Logger.Info("feeds: poll pass", "feeds", n)
		return err
	}
	// On AWS the table's stream invokes the function with its changes, which make the webhook
	// deliveries (docs/webhooks.md §3).
	return &groupapi.Group{API: api, Scheduled: pass, Stream: NewProducer(d, t).HandleStream}, nil
}

// NewProducer builds the producer of webhook deliveries from the table's changes
// (docs/webhooks.md §1, §5).
func NewProducer(d tenants.Deps, t *tenants.Tenants) *webhookfeed.Producer {
	return &webhookfeed.Producer{Table: d.Table, Endpoints: tenants.NewEndpoints(d, t), Queue: tenants.NewDeliveries(d),
		Rules: alerts.NewRules(d.Table, t.Orgs.Audit(), d.Clock), Clock: d.Clock, Logger: d.Logger}
}

// NewPoller builds the poller of the organisations' feeds, importing into evs
// (docs/interop.md §13).
func NewPoller(d tenants.Deps, evs *eventstore.Store, og *orgs.Service) *feedpoll.Poller {
	return &feedpoll.Poller{
		Registry: feeds.NewRegistry(d.Table, og.Audit(), d.Clock),
		Fetcher:  feeds.NewFetcher(feeds.Options{AllowPrivate: d.Config.Feeds.AllowPrivate}),
		Importer: evs,
		Clock:    d.Clock,
		Logger:   d.Logger,
	}
}

// NewTickets builds the stream tickets the group mints, which GET /v1/stream verifies
// (docs/api.md §5 stream ticket rules).
func NewTickets(d tenants.Deps) *stream.Tickets {
	return stream.NewTickets(d.Table, stream.TicketOptions{Clock: d.Clock, Keys: d.Keys})
}

// Routes returns the group's routes on the events store evs: the /v1 routes, and the console's
// Road routes, which serve the same operations to the organisations' members (og).
func Routes(d tenants.Deps, evs *eventstore.Store, ledger *reputation.Ledger, tickets *stream.Tickets, og *orgs.Service) []httpapi.Route {
	routes := eventstore.Routes(eventstore.Deps{
		Store:       evs,
		Meter:       d.Meter,
		Clock:       d.Clock,
		MaxRadius:   d.Config.Limits.MaxQueryRadiusM,
		Reputations: ledger,
		Publisher:   interop.Publisher{Name: d.Config.Export.Publisher, Country: d.Config.Export.Country},
	})
	routes = append(routes, stream.TicketRoutes(stream.Deps{
		Tickets:   tickets,
		Meter:     d.Meter,
		Clock:     d.Clock,
		Logger:    d.Logger,
		MaxRadius: d.Config.Limits.MaxQueryRadiusM,
	})...)
	routes = append(routes, groupapi.Private(consoleroad.Routes(consoleroad.Deps{
		Orgs: og, V1: routes, Store: evs, Meter: d.Meter, Clock: d.Clock,
	}))...)
	return groupapi.ReadsTable(routes)
}

// NewStore builds the events store on d with the reputation rule's judge (docs/network.md §2):
// the store tells the judge of each deny end, and the judge reads ledger, invalidates through
// the store, writes in the organisations' audit log and e-mails their owners (without a
// mailer the verdicts are carried out and their e-mails fail, logged). Without an event id key
// the store uses a random one, which it logs when the group is served: ids derived from
// client_event_id would change with each process.
func NewStore(d tenants.Deps, ledger *reputation.Ledger, og *orgs.Service, serving bool) (*eventstore.Store, error) {
	idKey := d.Config.EventIDKey
	if len(idKey) == 0 {
		idKey = make([]byte, 32)
		rand.Read(idKey)
		if serving {
			d.Logger.Warn("no event id key configured (ROADEVENTS_EVENT_ID_KEY): using a random one, " +
				"so ids derived from client_event_id change when this process restarts")
		}
	}
	var evs *eventstore.Store
	judge, err := verdict.New(verdict.Deps{
		Events: invalidateFunc(func(ctx context.Context, org, env string, since time.Time, reason string) (int, error) {
			return evs.InvalidateOrg(ctx, org, env, since, reason)
		}),
		Audit: og.Audit(), Standings: ledger, Owners: og, Mailer: d.Mail(),
		ConsoleURL: d.Config.ConsoleURL, Logger: d.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("eventsgroup: %w", err)
	}
	evs, err = eventstore.New(d.Table, eventstore.Options{
		IDKey:             idKey,
		Ceiling:           ratelimit.NewSignals(d.Table),
		Clock:             d.Clock,
		Logger:            d.Logger,
		MaxEventsPerQuery: d.Config.Limits.MaxEventsPerQuery,
		MaxRadius:         d.Config.Limits.MaxQueryRadiusM,
		CacheBytes:        areaCacheBytes(d.Config.Store),
		SoleWriter:        soleWriter(d.Config.Store),
		ListApart:         d.Config.Store == config.StoreDynamoDB, // docs/operations.md §5
		Judge:             judge,
	})
	if err != nil {
		return nil, fmt.Errorf("eventsgroup: %w", err)
	}
	return evs, nil
}

// invalidateFunc is a function as a verdict.Invalidator: the judge is built before the events
// store it invalidates through, since the store is built with the judge.
type invalidateFunc func(ctx context.Context, org, env string, since time.Time, reason string) (int, error)

// InvalidateOrg calls f.
func (f invalidateFunc) InvalidateOrg(ctx context.Context, org, env string, since time.Time, reason string) (int, error) {
	return f(ctx, org, env, since, reason)
}

// The memory the events store may keep decoded area index partitions in on the embedded
// store: a quarter of what the process may use (the collector's limit is three quarters,
// docs/performance.md §7), and at least minAreaCache, twice what the benchmark city takes at
// both levels, so that a load alternating radii does not keep evicting and refilling
// partitions. A fixed 512 MB was too little for a city five times denser: at 400 000 events
// with their LineStrings the cache evicted, every publish's duplicate search read its
// partition back from the file, and publishing fell from 6 000 a second to under 100
// (docs/performance.md §5).
const (
	minAreaCache   = 512 << 20
	areaCacheShare = 4 // one part in
)

// areaCacheBytes decides the events store's cache (eventstore.Options.CacheBytes). Only the
// embedded store has a single writing process (its file is locked while it is open), which
// the cache needs to stay exact; processes sharing a DynamoDB table read it every time.
func areaCacheBytes(kind config.Store) int64 {
	if !soleWriter(kind) {
		return 0
	}
	return max(minAreaCache, int64(sysmem.Available(os.ReadFile)/areaCacheShare))
}

// soleWriter tells whether the process is its table's only writer (eventstore.Options.SoleWriter):
// the embedded store, whose file is locked while it is open.
func soleWriter(kind config.Store) bool {
	return kind == config.StoreEmbedded
}
