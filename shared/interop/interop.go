// Package interop renders road events in the open-data formats of the field: Waze CIFS,
// WZDx 4.2 work zones, TDx 1.1 incidents and the DATEX II v3 SRTI profile in JSON
// (docs/interop.md). It is pure: events in, a document out. Each format says what it can; an
// event of a type the format has no word for is left out and counted.
package interop

import (
	"fmt"
	"math"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
)

// Format is an open-data format the service exports.
type Format string

// The formats (docs/interop.md §1).
const (
	CIFS   Format = "cifs"
	WZDx   Format = "wzdx"
	TDx    Format = "tdx"
	DATEX2 Format = "datex2"
)

// Formats lists every format, in the order of docs/interop.md.
var Formats = []Format{CIFS, WZDx, TDx, DATEX2}

// ContentType is the media type of a document in f.
func (f Format) ContentType() string {
	if f == WZDx || f == TDx {
		return "application/geo+json"
	}
	return "application/json"
}

// SourceID names the service as a data source: WZDx/TDx data_source_id, DATEX II
// nationalIdentifier.
const SourceID = "roadevents"

// Publisher says who produces a document: the deployment, and when.
type Publisher struct {
	// Name is the publishing organisation's name (WZDx/TDx feed_info.publisher).
	Name string
	// Country is DATEX II's publicationCreator country, two letters.
	Country string
	// Now is the document's time (feed_info.update_date, publicationTime).
	Now time.Time
}

// Render writes events in format f, in their order, leaving out those of types f cannot say;
// it returns the document and how many it left out.
func Render(f Format, events []event.EventPublic, p Publisher) ([]byte, int, error) {
	switch f {
	case CIFS:
		return renderCIFS(events)
	case WZDx, TDx:
		return renderGeoJSON(f, events, p)
	case DATEX2:
		return renderDATEX(events, p)
	}
	return nil, 0, fmt.Errorf("interop: unknown format %q", f)
}

// pointLine is the length in metres of the line drawn for a point event: every format wants at
// least two positions (docs/interop.md §3).
const pointLine = 50

// line returns the event's extent as positions in the direction of travel, first upstream. A
// LineString goes out as stored; a point is drawn as a line of pointLine metres that ends at
// it, coming from upstream along heading (from the south when there is none, and the event
// is then for both directions).
func line(ev *event.EventPublic) []geo.Point {
	if hasLine(ev) {
		pts := make([]geo.Point, len(ev.Geometry.Coordinates))
		for i, c := range ev.Geometry.Coordinates {
			pts[i] = geo.Point{Lat: c[1], Lon: c[0]}
		}
		return pts
	}
	at := geo.Point{Lat: ev.Lat, Lon: ev.Lon}
	travel := 0.0
	if ev.Heading != nil {
		travel = float64(*ev.Heading)
	}
	from := geo.Destination(at, travel+180, pointLine)
	return []geo.Point{{Lat: geo.Round5(from.Lat), Lon: geo.Round5(from.Lon)}, at}
}

// hasLine tells whether the event has a LineString of its own.
func hasLine(ev *event.EventPublic) bool {
	return ev.Geometry != nil && len(ev.Geometry.Coordinates) >= 2
}

// cardinal is WZDx/TDx's direction of a heading, in 90° sectors centred on north, east,
// south and west; "unknown" without one.
func cardinal(heading *int) string {
	if heading == nil {
		return "unknown"
	}
	return [...]string{"northbound", "eastbound", "southbound", "westbound"}[int(math.Floor(float64(*heading+45)/90))%4]
}

// start is when the event began: occurred_at when the publisher said, else when it was stored.
func start(ev *event.EventPublic) string {
	if ev.OccurredAt != nil {
		return *ev.OccurredAt
	}
	return ev.CreatedAt
}

// version is when the event last changed: its last revision, else its creation.
func version(ev *event.EventPublic) string {
	if ev.UpdatedAt != nil {
		return *ev.UpdatedAt
	}
	return ev.CreatedAt
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
