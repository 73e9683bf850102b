// Package webhookfeed turns the table's change feed into webhook deliveries
// (docs/webhooks.md §1): it reads what happened to each event from the entries of its history
// as they are written (a confirmation or denial counted, another source merged in, a close, a
// verdict, a deny quorum), from a publication merged at once, and from the expiry of its area
// index items (an event that expired on its own), and enqueues one delivery per
// endpoint of the event's organisation that subscribed to that kind. It reads the feed after
// the write is committed, so no delivery ever delays a publish or a signal, and it keeps its
// place in the feed in the table, so that a process that stops loses nothing: on start it
// reads on from there, and a change read twice makes the same delivery, stored once.
package webhookfeed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// Body is a delivery's JSON body (docs/webhooks.md §1).
type Body struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	CreatedAt   time.Time `json:"created_at"`
	Environment string    `json:"environment"`
	Data        struct {
		Event event.EventPublic `json:"event"`
	} `json:"data"`
}

// Producer makes the deliveries of the changes it is given.
type Producer struct {
	Table     store.Table
	Endpoints *webhooks.Endpoints
	Queue     *webhooks.Queue
	Clock     clock.Clock
	// Logger is slog.Default() when nil.
	Logger *slog.Logger
}

// Kinds returns the kinds of delivery change makes, with the id of the event they are about;
// none for a change that is no such news.
func Kinds(ch store.Change) (eventID string, kinds []string, err error) {
	if ch.Kind == store.ChangeRemove && ch.Expired {
		// An area index item expires with its event: an event that reached its expiry active.
		if id, ok := eventstore.AreaEventID(ch.Key); ok {
			return id, []string{webhooks.KindExpired}, nil
		}
	}
	if ch.New == nil {
		return "", nil, nil
	}
	if eventstore.IsEventItem(ch.Key) {
		// A publication merged at once into a report already there has no entry of its own.
		if ch.Kind != store.ChangeInsert {
			return "", nil, nil
		}
		ev, err := eventstore.DecodeEvent(ch.New)
		if err != nil || ev.Status != event.StatusMerged {
			return "", nil, err
		}
		return ev.ID, []string{webhooks.KindMerged}, nil
	}
	if ch.Kind != store.ChangeInsert {
		return "", nil, nil
	}
	id, e, ok, err := eventstore.DecodeEntry(ch.New)
	if !ok || err != nil {
		return "", nil, err
	}
	switch e.Kind {
	case event.EntrySignal:
		if e.Action == event.ActionConfirm {
			kinds = append(kinds, webhooks.KindConfirmed)
		} else {
			kinds = append(kinds, webhooks.KindDenied)
		}
	case event.EntryDuplicate, event.EntryMerged:
		kinds = append(kinds, webhooks.KindMerged)
	case event.EntryClosed, event.EntryInvalidated:
		return id, []string{webhooks.KindEnded}, nil
	}
	// A deny quorum ends the event with the signal that reached it.
	if e.Ended && e.Kind == event.EntrySignal {
		kinds = append(kinds, webhooks.KindEnded)
	}
	return id, kinds, nil
}

// Handle enqueues the deliveries of ch and returns how many. Handling a change again
// enqueues nothing new.
func (p *Producer) Handle(ctx context.Context, ch store.Change) (int, error) {
	id, kinds, err := Kinds(ch)
	if err != nil || len(kinds) == 0 {
		return 0, err
	}
	it, err := p.Table.Get(ctx, eventstore.EventKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil // gone already: its retention ended
	}
	if err != nil {
		return 0, fmt.Errorf("webhookfeed: read event %s: %w", id, err)
	}
	ev, err := eventstore.DecodeEvent(it)
	if err != nil {
		return 0, err
	}
	at := ch.At
	if slices.Equal(kinds, []string{webhooks.KindExpired}) {
		// Only an event still active when its time ran out expired on its own (an ended one
		// removes its index items itself); each of its index items says so, and the delivery,
		// of its expiry, is made once.
		if ev.Status != event.StatusActive || ev.ExpiresAt.After(p.Clock.Now()) {
			return 0, nil
		}
		at = ev.ExpiresAt
	}
	endpoints, err := p.Endpoints.List(ctx, ev.Org)
	if err != nil {
		return 0, err
	}
	now, made := p.Clock.Now(), 0
	for _, ep := range endpoints {
		for _, kind := range kinds {
			if !ep.Enabled || !slices.Contains(ep.Kinds, kind) {
				continue
			}
			source := ch.Key.String() + "#" + kind
			if kind == webhooks.KindExpired {
				source = ev.ID + "#" + kind
			}
			d := webhooks.Delivery{ID: webhooks.DeliveryID(at, source, ep.ID), Org: ev.Org, Endpoint: ep.ID, Kind: kind, CreatedAt: now}
			b := Body{ID: d.ID, Kind: kind, CreatedAt: now.UTC(), Environment: ev.Environment}
			b.Data.Event = ev.Public(now)
			if d.Body, err = json.Marshal(b); err != nil {
				return made, err
			}
			if err := p.Queue.Enqueue(ctx, d); err != nil {
				return made, err
			}
			made++
		}
	}
	return made, nil
}

// The producer's place in the feed, kept in the table.
var checkpointKey = store.Key{PK: "webhookfeed#checkpoint", SK: "position"}

const attrPosition = "position"

// recordEvery is how often the producer records its place while it reads changes that make
// no delivery; after one that makes deliveries it records it at once.
const recordEvery = 5 * time.Second

// Run follows feed from the position it last recorded (its end, the first time) until ctx
// ends, handling each change and recording its position after it. A change it cannot handle
// is retried, so that none is skipped; when the feed no longer holds the recorded position
// (the process was stopped longer than the feed keeps changes), it reads on from the end and
// logs the gap.
func (p *Producer) Run(ctx context.Context, feed store.Replayer) error {
	pos, err := p.position(ctx)
	if err != nil {
		return err
	}
	if pos == 0 {
		// The first start: from the feed's end, recorded at once, so that a process stopped
		// before its first delivery reads on from here too.
		if pos, err = feed.Last(ctx); err != nil {
			return fmt.Errorf("webhookfeed: read the feed's end: %w", err)
		}
		if err := p.record(ctx, pos); err != nil {
			return err
		}
	}
	cur, err := feed.FollowAfter(ctx, pos)
	if errors.Is(err, store.ErrReplay) {
		p.logger().Warn("webhookfeed: the feed no longer holds the changes after the recorded position; deliveries of the gap are lost",
			"position", pos)
		cur, err = feed.Follow(ctx)
	}
	if err != nil {
		return fmt.Errorf("webhookfeed: follow the feed: %w", err)
	}
	defer cur.Close()
	var recorded time.Time
	for {
		ch, err := cur.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("webhookfeed: read the feed: %w", err)
		}
		if ch.Key == checkpointKey {
			continue // its own record of its place
		}
		made := 0
		for attempt := 0; ; attempt++ {
			if made, err = p.Handle(ctx, ch); err == nil || ctx.Err() != nil {
				break
			}
			p.logger().Warn("webhookfeed: a change could not be handled; retrying", "key", ch.Key.String(), "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(min(attempt+1, 30)) * time.Second):
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		n, err := strconv.ParseUint(ch.Seq, 10, 64)
		if err != nil || made == 0 && time.Since(recorded) < recordEvery {
			continue
		}
		if err := p.record(ctx, n); err != nil {
			p.logger().Warn("webhookfeed: the position could not be recorded; changes since the last one are read again at start", "err", err)
		}
		recorded = time.Now()
	}
}

func (p *Producer) record(ctx context.Context, pos uint64) error {
	_, err := p.Table.Update(ctx, checkpointKey, store.Update{Set: map[string]any{attrPosition: int64(pos)}}, store.Condition{})
	if err != nil {
		return fmt.Errorf("webhookfeed: record the position: %w", err)
	}
	return nil
}

func (p *Producer) position(ctx context.Context) (uint64, error) {
	it, err := p.Table.Get(ctx, checkpointKey)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("webhookfeed: read the recorded position: %w", err)
	}
	return uint64(it.Int(attrPosition)), nil
}

func (p *Producer) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}
