package stream

import (
	"context"
	"slices"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
)

// Viewer is who watches a stream: the organisation and environment of the credential that
// opened it (docs/api.md §1: always derived server-side from the credential).
type Viewer struct {
	Org         string
	Environment string // event.EnvironmentLive or event.EnvironmentSandbox
	// Key is the id of the API key of the credential (the key itself, or the one that minted
	// the ticket): its revocation ends the stream (Hub.Revoke). Empty when unknown.
	Key string
}

// Sees reports whether the viewer is served events of environment env: a live credential
// live events only, a sandbox credential both (docs/api.md §1, §6 rule 6). An event without an
// environment is live (docs/api.md §2.3: environment defaults to live).
func (v Viewer) Sees(env string) bool {
	return env == event.EnvironmentLive || env == "" || v.Environment == event.EnvironmentSandbox
}

// Filter is what a subscriber watches (docs/api.md §6 rule 1): the same query as GET /v1/events.
type Filter struct {
	Center geo.Point
	// Radius in metres, more than 0 and at most max_query_radius_m.
	Radius float64
	// Types keeps events of these types only; empty keeps every type.
	Types []string
	// MinConfidence keeps events whose confidence is at least this (0..1).
	MinConfidence float64
}

// Matches reports whether an event of type typ with confidence conf and extent ext passes the
// filter, by the rules of the area query (docs/api.md §4.1 rule 3: distance to the full extent, at
// most the radius; confidence at least min_confidence; type among the types asked for).
func (f Filter) Matches(typ string, conf float64, ext []geo.Point) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, typ) {
		return false
	}
	if conf < f.MinConfidence {
		return false
	}
	return geo.DistanceToExtent(f.Center, ext) <= f.Radius
}

// SnapshotEvent is one event of a snapshot.
type SnapshotEvent struct {
	ID string
	// Version is the event's version (event.Event.Version) as the snapshot read it, or 0 when
	// the source does not know it. It lets the stream drop the deltas a snapshot already holds
	// (see Subscription.Prune).
	Version int64
	// JSON is the event's EventPublic as GET /v1/events sends it.
	JSON []byte
}

// Snapshotter reads the current state of a subscription: the events GET /v1/events returns
// for the same filter and viewer, nearest first, capped the same way (docs/api.md §10.2 (Stream)).
type Snapshotter interface {
	Snapshot(ctx context.Context, v Viewer, f Filter) ([]SnapshotEvent, error)
}

// SnapshotFunc adapts a function to Snapshotter.
type SnapshotFunc func(ctx context.Context, v Viewer, f Filter) ([]SnapshotEvent, error)

// Snapshot calls f.
func (f SnapshotFunc) Snapshot(ctx context.Context, v Viewer, fl Filter) ([]SnapshotEvent, error) {
	return f(ctx, v, fl)
}

var _ Snapshotter = SnapshotFunc(nil)

// Kind is the kind of an event delta (docs/api.md §10.2 (Stream)).
type Kind string

// The delta kinds of docs/api.md §10.2. Natural expiry and TTL removals emit none
// (docs/api.md §6 rule 4).
const (
	// KindCreated: the event was published.
	KindCreated Kind = "created"
	// KindUpdated: the publisher revised the event; the delta holds the new extent (docs/api.md §6
	// rule 5).
	KindUpdated Kind = "updated"
	// KindSignal: a signal changed the tallies, the confidence or the expiry.
	KindSignal Kind = "signal"
	// KindEnded: the event left active other than by natural expiry (deny quorum, merge,
	// invalidation); event.status says which.
	KindEnded Kind = "ended"
)

// EventChange is one change of an event, as the hub routes it: the kind of delta it emits,
// the event after the change, and the event before it (nil for KindCreated). Both sides are
// needed because a delta reaches the subscribers of the old or the new extent (docs/api.md §10.2).
type EventChange struct {
	Kind   Kind
	Before *event.Event
	After  event.Event
	// Position is the change's position in the feed when the feed is a store.Replayer (set by
	// the hub, not the decoder), else 0.
	Position uint64
}

// Decoder turns a record of the table's change feed into the change of an event it records.
// It returns ok false for a record that emits no delta: an item that is not an event, a
// removal (TTL or otherwise), a write that changed nothing a subscriber sees.
type Decoder interface {
	Decode(ch store.Change) (c EventChange, ok bool, err error)
}

// KeyFilter is implemented by a Decoder that can tell from a record's key alone that it
// ignores the record (NewDecoder's decoders do): Hub.Run then drops such records before the
// cheaper-than-decoding checks too, so the index items a publish writes beside its event
// item cost the hub one key comparison each.
type KeyFilter interface {
	Wants(k store.Key) bool
}

// RevocationDecoder is implemented by a Decoder that also recognises, in the change feed,
// the revocation of an API key (EventsDecoder's does): Hub.Run then ends the streams the key
// opened (Hub.Revoke). Its KeyFilter, if any, must want the records it reads.
type RevocationDecoder interface {
	Revoked(ch store.Change) (keyID string, ok bool)
}

// DecoderFunc adapts a function to Decoder.
type DecoderFunc func(ch store.Change) (EventChange, bool, error)

// Decode calls f.
func (f DecoderFunc) Decode(ch store.Change) (EventChange, bool, error) { return f(ch) }

var _ Decoder = DecoderFunc(nil)
