package eventstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Provenance says where imported events come from (docs/interop.md §11).
type Provenance struct {
	FeedID string
	// License is the feed's licence text, as its organisation registered it; none when empty.
	License string
	// Fetched is when the document was fetched.
	Fetched time.Time
}

// ImportOutcome says what Import did with a record.
type ImportOutcome int

const (
	// ImportUnchanged: the event already says what the record says.
	ImportUnchanged ImportOutcome = iota
	// ImportCreated: a new event.
	ImportCreated
	// ImportRevised: the record changed; the event was revised (an updated delta).
	ImportRevised
	// ImportOver: the network ended the event (merged, invalidated, denied or closed); the
	// record does not bring it back.
	ImportOver
)

// ErrRecordOver is a record whose validity ended already: the feed's event ends instead.
var ErrRecordOver = errors.New("eventstore: the record's validity has ended")

// FeedEventID is the id of the event of a feed's record: derived from the organisation, the
// feed and the record's id, so that a record is the same event at every poll. A
// client_event_id cannot hold "/", so no publication shares it.
func (s *Store) FeedEventID(org, feedID, upstreamID string) string {
	return event.DerivedID(s.idKey, org, "feed/"+feedID+"/"+upstreamID)
}

// Import stores a feed's record as an event of the caller (docs/interop.md §11): source_kind
// feed with its provenance, expiring when the record's validity ends (or after its type's
// lifetime when the record gives no end), never past its type's ceiling from creation. A new
// record is published, a changed one revised, an unchanged one left as it is; like any
// publication it merges into a report of the same hazard already on the network.
func (s *Store) Import(ctx context.Context, c Caller, p Provenance, rec interop.Record) (event.Event, ImportOutcome, error) {
	now := s.clock.Now()
	in := rec.In
	if !rec.Start.IsZero() && !rec.Start.After(now) {
		in.OccurredAt = &rec.Start
	}
	if err := in.Validate(now); err != nil {
		return event.Event{}, ImportUnchanged, fmt.Errorf("import %s: %w", rec.UpstreamID, err)
	}
	if !rec.End.IsZero() && !rec.End.After(now) {
		return event.Event{}, ImportUnchanged, fmt.Errorf("import %s: %w", rec.UpstreamID, ErrRecordOver)
	}
	id := s.FeedEventID(c.Org, p.FeedID, rec.UpstreamID)
	for attempt := 1; ; attempt++ {
		ev, outcome, err := s.importOnce(ctx, c, id, p, rec, in)
		if err == nil || !collided(err) {
			return ev, outcome, err
		}
		if err := s.again(ctx, attempt, err); err != nil {
			return event.Event{}, ImportUnchanged, fmt.Errorf("import %s: %w", id, err)
		}
	}
}

// importOnce makes one attempt at an import. A new event is published without the event's
// lock: its write is conditional on no event having the id, and a publication that merges
// takes the survivor's lock, which may be the same stripe. A revision holds the event's lock,
// as Revise does.
func (s *Store) importOnce(ctx context.Context, c Caller, id string, p Provenance, rec interop.Record, in event.EventIn) (event.Event, ImportOutcome, error) {
	now := s.clock.Now()
	stored, _, err := s.load(ctx, id)
	if errors.Is(err, ErrNotFound) {
		ev := event.New(in, c.Org, c.Environment, id, now)
		provenance(&ev, p, rec)
		ev.ExpiresAt = importExpiry(ev.Type, ev.CreatedAt, rec.End, now)
		ev, err := s.publishNew(ctx, ev, now)
		return ev, ImportCreated, err
	}
	if err != nil {
		return event.Event{}, ImportUnchanged, err
	}
	if stored.IsOver(now) {
		return stored, ImportOver, nil
	}
	in = in.Normalize()
	expires := importExpiry(stored.Type, stored.CreatedAt, rec.End, now)
	if t, _ := taxonomy.Lookup(stored.Type); rec.End.IsZero() && stored.ExpiresAt.After(now.Add(t.TTL/2)) {
		// A record without an end lives while its feed lists it: its lifetime is renewed once
		// half of it has passed, not at every poll.
		expires = stored.ExpiresAt
	}
	if sameImport(stored, in, rec, expires) {
		return stored, ImportUnchanged, nil
	}
	revision := event.RevisionIn{Lat: in.Lat, Lon: in.Lon, Geometry: in.Geometry, Severity: in.Severity, Subtype: in.Subtype}
	defer s.lock(id)()
	ev, err := s.reviseOnce(ctx, c, id, revision, func(ev *event.Event) {
		provenance(ev, p, rec)
		ev.ExpiresAt = expires
	})
	return ev, ImportRevised, err
}

// provenance marks ev as imported from p's feed.
func provenance(ev *event.Event, p Provenance, rec interop.Record) {
	ev.SourceKind = event.SourceFeed
	ev.FeedID = &p.FeedID
	ev.License = nil
	if p.License != "" {
		ev.License = &p.License
	}
	ev.UpstreamUpdatedAt = nil
	if !rec.Updated.IsZero() {
		updated := rec.Updated.UTC()
		ev.UpstreamUpdatedAt = &updated
	}
	fetched := p.Fetched.UTC()
	ev.FetchedAt = &fetched
}

// importExpiry is when an imported event leaves the map: the record's end, or its type's
// lifetime from now without one (renewed while the feed lists it), at most its type's ceiling
// from its creation.
func importExpiry(typ string, created, end, now time.Time) time.Time {
	t, _ := taxonomy.Lookup(typ)
	if end.IsZero() {
		end = now.Add(t.TTL)
	}
	if ceiling := created.Add(t.Ceiling); end.After(ceiling) {
		end = ceiling
	}
	return end.UTC()
}

// sameImport tells whether the stored event already says what the record says: its place,
// line, subtype, severity and expiry (to the second), and the record's upstream time.
func sameImport(ev event.Event, in event.EventIn, rec interop.Record, expires time.Time) bool {
	sameLine := (ev.Geometry == nil) == (in.Geometry == nil) &&
		(ev.Geometry == nil || slices.Equal(ev.Geometry.Coordinates, in.Geometry.Coordinates))
	sameUpdated := rec.Updated.IsZero() == (ev.UpstreamUpdatedAt == nil) &&
		(ev.UpstreamUpdatedAt == nil || ev.UpstreamUpdatedAt.Equal(rec.Updated))
	return ev.Lat == in.Lat && ev.Lon == in.Lon && sameLine && equalPtr(ev.Subtype, in.Subtype) &&
		equalPtr(ev.Severity, in.Severity) && ev.ExpiresAt.Truncate(time.Second).Equal(expires.Truncate(time.Second)) && sameUpdated
}

func equalPtr(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
