package event

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors of an idempotent publish (docs/api.md §4.1 rule 1, §7: 409). Match them with errors.Is.
var (
	// ErrReplayDiffers is returned when a client_event_id is published again with different
	// content; the wrapping error names the first differing field.
	ErrReplayDiffers = errors.New("event: client_event_id reused with different content")
	// ErrOtherEnvironment is returned when a client_event_id already names an event of the other
	// environment (docs/api.md §7; docs/api.md §10.2: the id does not depend on the environment).
	ErrOtherEnvironment = errors.New("event: client_event_id already used in the other environment")
)

// CheckReplay decides a publish whose id (DerivedID) is already stored: nil for a faithful
// replay (answer 200 with the stored event), otherwise ErrOtherEnvironment or
// ErrReplayDiffers (answer 409). An id held by another organisation can only be a hash
// collision and is refused as differing content.
func CheckReplay(stored Event, in EventIn, org, env string) error {
	if stored.Org != org {
		return fmt.Errorf("%w: the id belongs to another organisation", ErrReplayDiffers)
	}
	if stored.Environment != env {
		return fmt.Errorf("%w: stored in %s, published in %s", ErrOtherEnvironment, stored.Environment, env)
	}
	if field, differs := FirstDifference(stored, in); differs {
		return fmt.Errorf("%w: %s differs", ErrReplayDiffers, field)
	}
	return nil
}

// FirstDifference compares a publication with the stored event's original content, field by field
// in EventIn's order, after normalisation (docs/api.md §10.2: "identical content" covers every
// EventIn field, reporter_token included). It returns the JSON name of the first field that
// differs. Revisions made since do not count: the original publication is what a retry resends.
func FirstDifference(stored Event, in EventIn) (field string, differs bool) {
	a, b := stored.published(), in.Normalize()
	switch {
	case a.Type != b.Type:
		return "type", true
	case !equalPtr(a.Subtype, b.Subtype):
		return "subtype", true
	case a.Lat != b.Lat:
		return "lat", true
	case a.Lon != b.Lon:
		return "lon", true
	case !equalGeometry(a.Geometry, b.Geometry):
		return "geometry", true
	case !equalPtr(a.Heading, b.Heading):
		return "heading", true
	case !equalPtr(a.RoadRef, b.RoadRef):
		return "road_ref", true
	case !equalPtr(a.Severity, b.Severity):
		return "severity", true
	case !equalPtr(a.Description, b.Description):
		return "description", true
	case !equalTime(a.OccurredAt, b.OccurredAt):
		return "occurred_at", true
	case !equalPtr(a.ClientEventID, b.ClientEventID):
		return "client_event_id", true
	case !equalPtr(a.ReporterToken, b.ReporterToken):
		return "reporter_token", true
	}
	return "", false
}

// published returns the content an event was published with; for a record without it (an
// imported one) the current fields stand in.
func (e Event) published() EventIn {
	if e.Published != nil {
		return e.Published.Normalize()
	}
	return EventIn{
		Type: e.Type, Subtype: e.Subtype, Lat: e.Lat, Lon: e.Lon, Geometry: e.Geometry,
		Heading: e.Heading, RoadRef: e.RoadRef, Severity: e.Severity, Description: e.Description,
		OccurredAt: e.OccurredAt, ClientEventID: e.ClientEventID, ReporterToken: e.ReporterToken,
	}.Normalize()
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func equalGeometry(a, b *LineString) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.Coordinates, b.Coordinates)
}
