package stream

import (
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
)

// NewDecoder returns the Decoder of the table's change feed for the event items of the store
// that owns them: isEvent recognises an event item's key and decode reads its stored form
// (eventstore.IsEventItem and eventstore.DecodeEvent). Only the storage layer knows the stored form;
// which delta a change emits is decided here, from the two events (Classify).
func NewDecoder(isEvent func(store.Key) bool, decode func(store.Item) (event.Event, error)) Decoder {
	return keyedDecoder{wants: isEvent, DecoderFunc: func(ch store.Change) (EventChange, bool, error) {
		// A removal emits nothing: TTL deletion is natural expiry, which sends no delta
		// (docs/api.md §6 rule 4), and the service deletes no active event.
		if !isEvent(ch.Key) || ch.Kind == store.ChangeRemove || ch.New == nil {
			return EventChange{}, false, nil
		}
		after, err := decode(ch.New)
		if err != nil {
			return EventChange{}, false, fmt.Errorf("decode new image of %s: %w", ch.Key, err)
		}
		var before *event.Event
		if ch.Old != nil {
			b, err := decode(ch.Old)
			if err != nil {
				return EventChange{}, false, fmt.Errorf("decode old image of %s: %w", ch.Key, err)
			}
			before = &b
		}
		kind, ok := Classify(before, after)
		if !ok {
			return EventChange{}, false, nil
		}
		if kind == KindCreated {
			before = nil
		}
		return EventChange{Kind: kind, Before: before, After: after}, true, nil
	}}
}

// keyedDecoder is a Decoder that is also a KeyFilter.
type keyedDecoder struct {
	wants func(store.Key) bool
	DecoderFunc
}

// Wants reports whether k is the key of a record the decoder reads (an event item).
func (d keyedDecoder) Wants(k store.Key) bool { return d.wants(k) }

var _ KeyFilter = keyedDecoder{}

// WithRevocations returns dec also reading the revocations of API keys from the feed
// (RevocationDecoder): isKey recognises the key of the item a revocation writes, so that the
// feed keeps such records, and revoked tells which key a change revokes, if any
// (apikey.IsLookupItem and apikey.Revoked).
func WithRevocations(dec Decoder, isKey func(store.Key) bool, revoked func(store.Change) (string, bool)) Decoder {
	return revocationDecoder{Decoder: dec, isKey: isKey, revoked: revoked}
}

type revocationDecoder struct {
	Decoder
	isKey   func(store.Key) bool
	revoked func(store.Change) (string, bool)
}

func (d revocationDecoder) Wants(k store.Key) bool {
	if d.isKey(k) {
		return true
	}
	kf, ok := d.Decoder.(KeyFilter)
	return !ok || kf.Wants(k)
}

func (d revocationDecoder) Revoked(ch store.Change) (string, bool) { return d.revoked(ch) }

var (
	_ KeyFilter         = revocationDecoder{}
	_ RevocationDecoder = revocationDecoder{}
)

// Classify says which delta a write of an event emits (docs/api.md §10.2 (Stream)), from the event
// as stored before the write (nil when there was none) and after it; ok is false when the
// write emits none.
//
//   - created: the event was published (no item before, or a fresh event, version 1, in the
//     place of an older one that the table had not deleted yet);
//   - ended: it left active by a write (deny quorum, merge, invalidation); natural expiry is
//     no write and emits nothing (docs/api.md §6 rule 4);
//   - updated: the publisher revised it (docs/api.md §6 rule 5: updated_at moves);
//   - signal: a signal changed the tallies or the expiry (a repeated signal writes nothing);
//   - nothing for an event that was already over, or a write no subscriber can see.
func Classify(before *event.Event, after event.Event) (Kind, bool) {
	if before == nil || after.Version == 1 && before.Version != 1 {
		return KindCreated, after.Status == event.StatusActive
	}
	if before.Status != event.StatusActive {
		return "", false
	}
	switch {
	case after.Status != event.StatusActive:
		return KindEnded, true
	case !sameTime(before.UpdatedAt, after.UpdatedAt):
		return KindUpdated, true
	case before.ConfirmCount != after.ConfirmCount || before.DenyCount != after.DenyCount ||
		!before.ExpiresAt.Equal(after.ExpiresAt):
		return KindSignal, true
	}
	return "", false
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
