package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
)

// Close ends the caller's own event early on its word (docs/network.md §3: a cleared crash):
// it becomes expired with expires_at now, leaves the area index, and the stream sends its
// "ended". The access rules are a revision's: ErrNotFound (unknown, or not served to the
// caller), ErrNotPublisher and ErrOtherNetwork (403), an *OverError (409: over already).
func (s *Store) Close(ctx context.Context, c Caller, id string) (event.Event, error) {
	return s.end(ctx, id, c.mayRevise, (*event.Event).Close, event.Entry{Kind: event.EntryClosed})
}

// end ends event id with apply (an ending of package event), and records entry, completed
// with the moment and the expiry, in its history; check (nil for none) decides first whether
// the caller may.
func (s *Store) end(ctx context.Context, id string, check func(event.Event) error, apply func(*event.Event, time.Time) error, entry event.Entry) (event.Event, error) {
	if !event.ValidID(id) {
		return event.Event{}, fmt.Errorf("event id %q: %w", id, ErrNotFound)
	}
	defer s.lock(id)()
	for attempt := 1; ; attempt++ {
		ev, cells, err := s.load(ctx, id)
		if err != nil {
			return event.Event{}, err
		}
		if check != nil {
			if err := check(ev); err != nil {
				return event.Event{}, fmt.Errorf("end %s: %w", id, err)
			}
		}
		now := s.clock.Now()
		read := ev.Version
		entry.At, entry.ExpiresBefore, entry.Ended = now.UTC(), ev.ExpiresAt, true
		if err := apply(&ev, now); err != nil {
			return event.Event{}, overError(err, ev, now)
		}
		entry.ExpiresAfter = ev.ExpiresAt
		ops, err := s.changeOps(ev, store.IfEqual(attrVersion, read), cells, nil, nil, now)
		if err != nil {
			return event.Event{}, err
		}
		eop, err := s.entryOp(ev, entry)
		if err != nil {
			return event.Event{}, err
		}
		if err := s.commit(ctx, append(ops, eop), attempt); err != nil {
			if errors.Is(err, errRetry) {
				continue
			}
			return event.Event{}, fmt.Errorf("end %s: %w", id, err)
		}
		return ev, nil
	}
}

// InvalidateOrg invalidates every active event org published in env at or after since (the zero
// time: every one), with reason, and returns how many it invalidated (docs/network.md §2): each
// becomes invalidated and the stream sends its "ended". It reads
// the organisation's list of events back to the longest life a type allows. The list may name
// an event that does not exist, or one listed again when its publish was retried (publishOnce):
// each event's own organisation, environment and creation time decide.
func (s *Store) InvalidateOrg(ctx context.Context, org, env string, since time.Time, reason string) (int, error) {
	now := s.clock.Now()
	from := now.Add(-ceiling("")) // the longest life a type allows
	if since.After(from) {
		from = since
	}
	listed := func(ev event.Event) error {
		if ev.Org != org || ev.Environment != env || ev.CreatedAt.Before(from) {
			return errNotListed
		}
		return nil
	}
	n := 0
	for day := from.UTC().Truncate(24 * time.Hour); !day.After(now); day = day.AddDate(0, 0, 1) {
		items, err := s.table.Query(ctx, store.Query{PK: orgPartition(org, env, day), From: fmt.Sprintf("%020d", from.UnixNano()), To: "~"})
		if err != nil {
			return n, fmt.Errorf("list events of %s in %s: %w", org, env, err)
		}
		for _, it := range items {
			_, id, _ := strings.Cut(it.String(store.AttrSK), "#")
			_, err := s.end(ctx, id, listed, (*event.Event).Invalidate, event.Entry{Kind: event.EntryInvalidated, Reason: reason})
			switch {
			case err == nil:
				n++
			case errors.Is(err, event.ErrOver), errors.Is(err, ErrNotFound), errors.Is(err, errNotListed):
				// Over already, gone, or not one of the events asked for.
			default:
				return n, err
			}
		}
	}
	return n, nil
}

// errNotListed is an event of an organisation's list that a verdict does not concern.
var errNotListed = errors.New("events: not one of the organisation's events since the verdict's start")

// mayRevise tells whether the caller may change ev as its publisher (docs/api.md §4.1 rule 5):
// ErrNotFound for an event of a network it is not served, ErrNotPublisher for another
// organisation's, ErrOtherNetwork for its own under the other environment's credential.
func (c Caller) mayRevise(ev event.Event) error {
	switch {
	case !c.sees(ev.Environment):
		return fmt.Errorf("%s of %s for a %s caller: %w", ev.ID, ev.Environment, c.Environment, ErrNotFound)
	case ev.Org != c.Org:
		return ErrNotPublisher
	case ev.Environment != c.Environment:
		return fmt.Errorf("%s of %s with a %s credential: %w", ev.ID, ev.Environment, c.Environment, ErrOtherNetwork)
	}
	return nil
}
