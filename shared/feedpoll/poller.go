// Package feedpoll polls the organisations' feeds into their events (docs/interop.md §12,
// §13): Sync polls one feed once through the events store, and a Poller makes passes over the
// feeds the registry (package feeds) says are due. It lives apart from the registry, which the
// console's function serves without linking the events store.
package feedpoll

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feeds"
)

// Poller limits.
const (
	// Parallel is how many feeds one pass polls at once.
	Parallel = 4
	// Tick is how often the in-process poller looks for due feeds (go run .); on AWS a schedule
	// invokes a pass every minute (docs/operations.md §5).
	Tick = 15 * time.Second
	// passMargin is what a pass keeps of its deadline: it claims no feed once less is left,
	// so that a Lambda does not stop in the middle of a poll.
	passMargin = 45 * time.Second
)

// Poller polls the feeds that are due (docs/interop.md §13): each once, its state and
// health recorded, a deleted one's events ended.
type Poller struct {
	Registry *feeds.Registry
	Fetcher  *feeds.Fetcher
	Importer Importer
	Clock    clock.Clock
	// Logger is slog.Default() when nil.
	Logger *slog.Logger
}

// Pass polls every feed due now, Parallel at a time, and returns how many it polled. Feeds
// another poller holds are left to it. An error is the table's: the feeds not polled are
// due at the next pass.
func (p *Poller) Pass(ctx context.Context) (int, error) {
	due, err := p.Registry.Due(ctx, p.Clock.Now())
	if err != nil {
		return 0, err
	}
	var g errgroup.Group
	g.SetLimit(Parallel)
	var polled atomic.Int64
	for _, f := range due {
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < passMargin {
			break
		}
		g.Go(func() error {
			ok, err := p.one(ctx, f)
			if ok {
				polled.Add(1)
			}
			return err
		})
	}
	err = g.Wait()
	return int(polled.Load()), err
}

// Run makes a pass at every tick until ctx ends, logging what fails: the in-process
// schedule of go run ..
func (p *Poller) Run(ctx context.Context, tick <-chan time.Time) {
	for {
		if _, err := p.Pass(ctx); err != nil && ctx.Err() == nil {
			p.logger().Warn("feeds: a poll pass failed; its feeds are due at the next", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// one polls f, if it can claim it; false when another poller has it.
func (p *Poller) one(ctx context.Context, f feeds.Registered) (bool, error) {
	now := p.Clock.Now()
	ok, err := p.Registry.Claim(ctx, f, now)
	if !ok || err != nil {
		return false, err
	}
	st, err := p.Registry.LoadState(ctx, f)
	if err != nil {
		return false, err
	}
	if f.Deleted {
		return true, p.retire(ctx, f, st)
	}
	st, h := Sync(ctx, p.Fetcher, p.Importer, now, f.Feed, st)
	if h.Err != "" {
		p.logger().Info("feeds: a poll read nothing", "org", f.Org, "feed", f.ID, "err", h.Err)
	}
	return true, p.Registry.Record(ctx, f, st, h)
}

// retire ends the events of a deleted feed's records, then forgets the feed.
func (p *Poller) retire(ctx context.Context, f feeds.Registered, st feeds.State) error {
	c := eventstore.Caller{Org: f.Org, Environment: f.Environment}
	for id := range st.Known {
		_, err := p.Importer.Close(ctx, c, id)
		if err != nil && !errors.Is(err, event.ErrOver) && !errors.Is(err, eventstore.ErrNotFound) {
			return err
		}
	}
	return p.Registry.Forget(ctx, f)
}

func (p *Poller) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}
