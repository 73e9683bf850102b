package event

import (
	"time"

	"github.com/roadevents/roadevents/shared/geo"
)

// FormatTime renders a timestamp the one way the service sends them (docs/api.md §9 rule 6, §10.1):
// RFC 3339 in UTC with a Z suffix, fractional seconds only when there are any.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// formatTimePtr is FormatTime for an optional timestamp.
func formatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := FormatTime(*t)
	return &s
}

// Normalize returns in as it is stored (docs/api.md §2.2): lat, lon and every geometry position
// rounded to 5 decimals, occurred_at in UTC, the geometry's type set. The result shares no
// memory with in, so the caller may keep using it.
func (in EventIn) Normalize() EventIn {
	out := in
	out.Subtype = clonePtr(in.Subtype)
	out.Lat, out.Lon = geo.Round5(in.Lat), geo.Round5(in.Lon)
	out.Geometry = in.Geometry.normalize()
	out.Heading = clonePtr(in.Heading)
	out.RoadRef = clonePtr(in.RoadRef)
	out.Severity = clonePtr(in.Severity)
	out.Description = clonePtr(in.Description)
	out.OccurredAt = utcPtr(in.OccurredAt)
	out.ClientEventID = clonePtr(in.ClientEventID)
	out.ReporterToken = clonePtr(in.ReporterToken)
	return out
}

// Normalize returns in as it is applied: coordinates rounded to 5 decimals (docs/api.md §2.2).
func (in RevisionIn) Normalize() RevisionIn {
	return RevisionIn{
		Lat:      geo.Round5(in.Lat),
		Lon:      geo.Round5(in.Lon),
		Geometry: in.Geometry.normalize(),
		Severity: clonePtr(in.Severity),
		Subtype:  clonePtr(in.Subtype),
	}
}

// Position returns the reporter position rounded to 5 decimals, or nil unless both lat and
// lon were given.
func (in SignalIn) Position() *geo.Point {
	if in.Lat == nil || in.Lon == nil {
		return nil
	}
	return &geo.Point{Lat: geo.Round5(*in.Lat), Lon: geo.Round5(*in.Lon)}
}

// normalize returns a rounded copy of g with its type set; nil stays nil.
func (g *LineString) normalize() *LineString {
	if g == nil {
		return nil
	}
	out := &LineString{Type: GeometryType, Coordinates: make([][2]float64, len(g.Coordinates))}
	for i, p := range g.Coordinates {
		out.Coordinates[i] = [2]float64{geo.Round5(p[0]), geo.Round5(p[1])}
	}
	return out
}

// clone returns a deep copy of g; nil stays nil.
func (g *LineString) clone() *LineString {
	if g == nil {
		return nil
	}
	return &LineString{Type: g.Type, Coordinates: append([][2]float64(nil), g.Coordinates...)}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
