package eventstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
)

// MaxOwn bounds the list of an organisation's own active events (Own).
const MaxOwn = 1000

// Own returns the events org published in env that are active now, newest first, at most
// MaxOwn (the console's list beside its map, docs/console.md §4). It reads the organisation's
// list of events back to the longest life a type allows, then the events themselves.
func (s *Store) Own(ctx context.Context, org, env string) ([]event.Event, error) {
	now := s.clock.Now()
	from := now.Add(-ceiling(""))
	var keys []store.Key
	seen := map[string]bool{}
	for day := now.UTC().Truncate(oneDay); !day.Before(from.UTC().Truncate(oneDay)); day = day.AddDate(0, 0, -1) {
		items, err := s.table.Query(ctx, store.Query{PK: orgPartition(org, env, day), From: fmt.Sprintf("%020d", from.UnixNano()), To: "~", Desc: true})
		if err != nil {
			return nil, fmt.Errorf("list the events of %s in %s: %w", org, env, err)
		}
		for _, it := range items {
			_, id, _ := strings.Cut(it.String(store.AttrSK), "#")
			if !seen[id] && event.ValidID(id) {
				seen[id] = true
				keys = append(keys, EventKey(id))
			}
		}
	}
	var out []event.Event
	for chunk := range slices.Chunk(keys, 100) {
		items, err := s.table.BatchGet(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("read the events of %s: %w", org, err)
		}
		for _, it := range items {
			ev, err := DecodeEvent(it)
			if err != nil {
				return nil, err
			}
			// The list may name an event listed again by a retried publish, or another
			// organisation's: each event's own fields decide.
			if ev.Org == org && ev.Environment == env && ev.StatusAt(now) == event.StatusActive {
				out = append(out, ev)
			}
		}
	}
	slices.SortFunc(out, func(a, b event.Event) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if len(out) > MaxOwn {
		out = out[:MaxOwn]
	}
	return out, nil
}

const oneDay = 24 * time.Hour
