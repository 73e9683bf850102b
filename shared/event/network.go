package event

import (
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/geo"
)

// The network's own ways of ending an event, besides the deny quorum (docs/network.md): a
// duplicate merged into another source's report, a publisher closing its own event, and an
// operator's or the reputation rule's verdict on a publisher.

// MaxHeadingGap is the largest difference of headings, in degrees, between two reports of one
// hazard; a report without a heading is compatible with any (docs/network.md §1).
const MaxHeadingGap = 45

// Source names where an event came from, for the merge rule's "another source": the
// publishing organisation, or the upstream feed of an imported event.
func (e Event) Source() string {
	if e.SourceKind == SourceFeed && e.FeedID != nil {
		return "feed:" + *e.FeedID
	}
	return "org:" + e.Org
}

// SameHazard reports whether candidate, an active event, may be the hazard e reports, apart
// from distance (docs/network.md §1): same environment and type, a compatible subtype (equal,
// or either one absent), compatible headings (within MaxHeadingGap, or either one absent), and
// another source.
func (e Event) SameHazard(candidate Event) bool {
	return e.Environment == candidate.Environment &&
		e.Type == candidate.Type &&
		e.Source() != candidate.Source() &&
		(e.Subtype == nil || candidate.Subtype == nil || *e.Subtype == *candidate.Subtype) &&
		(e.Heading == nil || candidate.Heading == nil || headingGap(*e.Heading, *candidate.Heading) <= MaxHeadingGap)
}

// headingGap is the angle between two headings in degrees, 0..180.
func headingGap(a, b int) int {
	d := ((a-b)%360 + 360) % 360
	return min(d, 360-d)
}

// Point returns the event's position (its lat/lon, the first point of a geometry).
func (e Event) Point() geo.Point { return geo.Point{Lat: e.Lat, Lon: e.Lon} }

// MergeInto makes e, a report of the hazard survivor already reports, a duplicate of it at
// now: status merged, merged_into set, and expires_at now, the moment it left active. An event
// merged as it is published keeps version 1, so the stream sees it born over and sends no
// "created" delta (docs/api.md §10.2); an active event merged by a revision (which counted the
// version up) gets its "ended".
func (e *Event) MergeInto(survivor string, now time.Time) error {
	if err := e.end(StatusMerged, now, false); err != nil {
		return err
	}
	e.MergedInto = &survivor
	return nil
}

// Close ends e at now on its publisher's word (a cleared crash): status expired, expires_at
// now (docs/network.md §3).
func (e *Event) Close(now time.Time) error { return e.end(StatusExpired, now, true) }

// Invalidate ends e at now on a verdict about its publisher (docs/api.md §3: invalidated is a
// verdict, never the outcome of a signal).
func (e *Event) Invalidate(now time.Time) error { return e.end(StatusInvalidated, now, true) }

// end moves an active event to an over status at now, counting the version up with bump;
// ErrOver if it is over already.
func (e *Event) end(status string, now time.Time, bump bool) error {
	if e.IsOver(now) {
		return fmt.Errorf("%s %s: %w", status, e.ID, ErrOver)
	}
	now = now.UTC()
	e.Status = status
	e.ExpiresAt = now
	if bump {
		e.Version++
	}
	return nil
}

// Entry kinds: what changed an event, in its history (docs/network.md §4).
const (
	EntrySignal      = "signal"      // a confirmation or denial was counted
	EntryDuplicate   = "duplicate"   // another source's report was merged into this event
	EntryRevision    = "revision"    // the publisher restated the event
	EntryMerged      = "merged"      // a revision made this event a duplicate of another
	EntryClosed      = "closed"      // the publisher ended it
	EntryInvalidated = "invalidated" // a verdict about its publisher ended it
)

// Entry is one change in an event's history, kept beside it for the evidence document
// (docs/network.md §4). It records distances, never positions.
type Entry struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	// Action is the signal's action (EntrySignal), confirm for a merged duplicate.
	Action string `json:"action,omitempty"`
	// Reporter is the identity (Reporter) that signalled, or the organisation of a merged
	// duplicate. Stored for the tallies' sake; never served.
	Reporter string `json:"reporter,omitempty"`
	// Distance is from the reporter's position, or the duplicate's point, to the event's
	// extent at that moment, in metres; nil when the signal gave no position.
	Distance *float64 `json:"distance_m,omitempty"`
	// Duplicate is the event merged into this one (EntryDuplicate), or the event this one was
	// merged into (EntryMerged).
	Duplicate string `json:"duplicate,omitempty"`
	// ExpiresBefore and ExpiresAfter bracket the change's effect on expires_at.
	ExpiresBefore time.Time `json:"expires_before"`
	ExpiresAfter  time.Time `json:"expires_after"`
	// Ended is set when the change ended the event (deny quorum, merge, close, verdict).
	Ended bool `json:"ended,omitempty"`
	// Reason is a verdict's stated reason (EntryInvalidated).
	Reason string `json:"reason,omitempty"`
}
