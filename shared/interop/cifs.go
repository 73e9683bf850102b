package interop

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
)

// cifsFeed is a Waze CIFS document in JSON (docs/interop.md §4).
type cifsFeed struct {
	Incidents []cifsEntry `json:"incidents"`
}

type cifsEntry struct {
	Incident cifsIncident `json:"incident"`
}

type cifsIncident struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Subtype     string `json:"subtype,omitempty"`
	Polyline    string `json:"polyline"`
	Street      string `json:"street"`
	Direction   string `json:"direction"`
	StartTime   string `json:"starttime"`
	EndTime     string `json:"endtime"`
	Description string `json:"description,omitempty"`
}

func renderCIFS(events []event.EventPublic) ([]byte, int, error) {
	feed := cifsFeed{Incidents: make([]cifsEntry, 0, len(events))}
	omitted := 0
	for i := range events {
		ev := &events[i]
		code, ok := lookup(cifsCodes, ev.Type, ev.Subtype)
		if !ok {
			omitted++
			continue
		}
		if ev.Type == "accident" && ev.Severity != nil && *ev.Severity == "high" {
			code.Subtype = "ACCIDENT_MAJOR"
		}
		direction := "BOTH_DIRECTIONS"
		if ev.Heading != nil {
			direction = "ONE_DIRECTION"
		}
		feed.Incidents = append(feed.Incidents, cifsEntry{cifsIncident{
			ID: ev.EventID, Type: code.Type, Subtype: code.Subtype,
			Polyline: polyline(ev), Street: deref(ev.RoadRef), Direction: direction,
			StartTime: seconds(start(ev)), EndTime: seconds(ev.ExpiresAt), Description: deref(ev.Description),
		}})
	}
	b, err := json.Marshal(feed)
	return b, omitted, err
}

// polyline is CIFS's line: "lat lon" pairs, latitude first, separated by spaces, in the
// direction of travel.
func polyline(ev *event.EventPublic) string { return latLonList(line(ev)) }

// latLonList writes positions as "lat lon lat lon ...", the order of CIFS and of GML in WGS 84.
func latLonList(pts []geo.Point) string {
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(p.Lat, 'f', -1, 64))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(p.Lon, 'f', -1, 64))
	}
	return b.String()
}

// seconds writes one of our times (RFC 3339, nanoseconds, UTC) to the second, the form every
// format's examples use; WZDx and TDx want UTC, and CIFS and DATEX II take its "Z" offset.
func seconds(s string) string {
	t := parseTime(s)
	if t.IsZero() {
		return s
	}
	return t.UTC().Format(time.RFC3339)
}
