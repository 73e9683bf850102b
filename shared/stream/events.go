package stream

import (
	"context"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/eventstore"
)

// EventsSnapshots reads snapshots from the events store: the very query of GET /v1/events
// (eventstore.Store.Area), so a snapshot holds what that route returns for the same filter and
// credential: active events of the networks the viewer is served, nearest first, at most
// 500 (docs/api.md §10.2 (Stream)).
func EventsSnapshots(st *eventstore.Store) Snapshotter {
	return SnapshotFunc(func(ctx context.Context, v Viewer, f Filter) ([]SnapshotEvent, error) {
		res, err := st.Area(ctx, eventstore.Caller{Org: v.Org, Environment: v.Environment}, eventstore.AreaQuery{
			Center:        f.Center,
			Radius:        f.Radius,
			Types:         f.Types,
			MinConfidence: f.MinConfidence,
		})
		if err != nil {
			return nil, err
		}
		defer res.Release()
		out := make([]SnapshotEvent, len(res.Events))
		for i := range res.Events {
			e := &res.Events[i]
			// The area query does not report versions, so every delta queued while the
			// snapshot was read is sent after it: at worst a client briefly sees a state
			// the snapshot already superseded, then the newer one.
			out[i] = SnapshotEvent{ID: e.ID, JSON: e.JSON()}
		}
		return out, nil
	})
}

// EventsDecoder decodes the event items of the events store from the table's change feed,
// and the revocations of API keys, which end the streams they opened.
func EventsDecoder() Decoder {
	return WithRevocations(NewDecoder(eventstore.IsEventItem, eventstore.DecodeEvent), apikey.IsLookupItem, apikey.Revoked)
}
