package eventstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
)

// Reputations tells a publisher's reputation band (docs/network.md §2) for the evidence
// document; *reputation.Ledger is one.
type Reputations interface {
	Band(ctx context.Context, org, env string) (string, error)
}

// Evidence returns the evidence document of event id for the caller (docs/network.md §4),
// with the access rules of Get: ErrNotFound for an unknown event or one of a network the
// caller is not served. band is the publisher's reputation band.
func (s *Store) Evidence(ctx context.Context, c Caller, id string, bands Reputations) (event.Evidence, error) {
	ev, err := s.Get(ctx, c, id)
	if err != nil {
		return event.Evidence{}, err
	}
	pk := eventPrefix + ev.ID
	// The signal items: each reporter's votes, newest last, most with the entry of the change
	// they made (signalRecord).
	signalItems, err := s.table.Query(ctx, store.Query{PK: pk, Prefix: votePrefix})
	if err != nil {
		return event.Evidence{}, fmt.Errorf("read votes of %s: %w", id, err)
	}
	var (
		votes   []event.Vote
		history []historyEntry
	)
	for _, it := range signalItems {
		v, e, order, err := decodeSignal(it)
		if err != nil {
			return event.Evidence{}, err
		}
		if n := len(votes); n > 0 && votes[n-1].Reporter == v.Reporter {
			votes[n-1] = v // a newer vote of the same reporter
		} else {
			votes = append(votes, v)
		}
		if e != nil {
			history = append(history, historyEntry{order, *e})
		}
	}
	// The other changes; the newest that can be listed are enough.
	entryItems, err := s.table.Query(ctx, store.Query{PK: pk, Prefix: entryPrefix, Desc: true, Limit: event.MaxEvidenceEntries + 1})
	if err != nil {
		return event.Evidence{}, fmt.Errorf("read history of %s: %w", id, err)
	}
	for _, it := range entryItems {
		var e event.Entry
		if err := json.Unmarshal([]byte(it.String(attrData)), &e); err != nil {
			return event.Evidence{}, fmt.Errorf("decode history item %s: %w", it.Key(), err)
		}
		history = append(history, historyEntry{strings.TrimPrefix(it.String(store.AttrSK), entryPrefix), e})
	}
	slices.SortFunc(history, func(a, b historyEntry) int { return strings.Compare(a.order, b.order) })
	truncated := len(history) > event.MaxEvidenceEntries
	history = history[max(0, len(history)-event.MaxEvidenceEntries):]
	entries := make([]event.Entry, len(history))
	for i, h := range history {
		entries[i] = h.entry
	}
	band := event.BandUnknown
	if bands != nil {
		if band, err = bands.Band(ctx, ev.Org, ev.Environment); err != nil {
			return event.Evidence{}, fmt.Errorf("reputation of the publisher of %s: %w", id, err)
		}
	}
	return event.BuildEvidence(ev, votes, entries, truncated, c.Org, band, s.clock.Now()), nil
}

// historyEntry is an entry of an event's history and its place in it: time, then version, as
// fixed-width text.
type historyEntry struct {
	order string
	entry event.Entry
}
