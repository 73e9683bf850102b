package eventstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
	voteItems, err := s.table.Query(ctx, store.Query{PK: pk, Prefix: votePrefix})
	if err != nil {
		return event.Evidence{}, fmt.Errorf("read votes of %s: %w", id, err)
	}
	votes := make([]event.Vote, 0, len(voteItems))
	for _, it := range voteItems {
		v, err := decodeVote(it)
		if err != nil {
			return event.Evidence{}, err
		}
		votes = append(votes, v)
	}
	entryItems, err := s.table.Query(ctx, store.Query{PK: pk, Prefix: entryPrefix, Desc: true, Limit: event.MaxEvidenceEntries + 1})
	if err != nil {
		return event.Evidence{}, fmt.Errorf("read history of %s: %w", id, err)
	}
	truncated := len(entryItems) > event.MaxEvidenceEntries
	entryItems = entryItems[:min(len(entryItems), event.MaxEvidenceEntries)]
	history := make([]event.Entry, 0, len(entryItems))
	for _, it := range slices.Backward(entryItems) {
		var e event.Entry
		if err := json.Unmarshal([]byte(it.String(attrData)), &e); err != nil {
			return event.Evidence{}, fmt.Errorf("decode history item %s: %w", it.Key(), err)
		}
		history = append(history, e)
	}
	band := event.BandUnknown
	if bands != nil {
		if band, err = bands.Band(ctx, ev.Org, ev.Environment); err != nil {
			return event.Evidence{}, fmt.Errorf("reputation of the publisher of %s: %w", id, err)
		}
	}
	return event.BuildEvidence(ev, votes, history, truncated, c.Org, band, s.clock.Now()), nil
}
