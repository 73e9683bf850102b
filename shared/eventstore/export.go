package eventstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// OmittedHeader counts the events an export left out because its format has no word for
// their type (docs/interop.md §7).
const OmittedHeader = "Roadevents-Omitted"

// exportFormats describes each export route (docs/interop.md §7).
var exportFormats = []struct {
	format      interop.Format
	operationID string
	summary     string
}{
	{interop.CIFS, "exportCIFS", "Active events as a Waze CIFS feed (JSON)"},
	{interop.WZDx, "exportWZDx", "Active roadworks as a WZDx 4.2 work zone feed (GeoJSON)"},
	{interop.TDx, "exportTDx", "Active incidents as a TDx 1.1 road incident feed (GeoJSON)"},
	{interop.DATEX2, "exportDATEX2", "Active events as a DATEX II v3 SRTI situation publication (JSON)"},
}

// exportRoutes are GET /v1/exports/{format}: the area query of GET /v1/events, or a bounding
// box, rendered in an open-data format, metered as a read, with an ETag over the events so
// that a poller's If-None-Match costs no document.
func exportRoutes(h *handlers, maxRadius, defaultRadius float64) []httpapi.Route {
	var routes []httpapi.Route
	for _, f := range exportFormats {
		routes = append(routes, httpapi.Route{
			Method: http.MethodGet, Path: "/v1/exports/" + string(f.format), OperationID: f.operationID,
			Tags: []string{"exports"}, Security: []httpapi.Security{httpapi.SecurityAPIKey},
			Summary: f.summary,
			Description: "The active events GET /v1/events would return for the same circle, or those of a bounding box, " +
				"in the format (docs/interop.md). Events of types the format cannot express are left out and counted in the " +
				OmittedHeader + " header. The ETag covers the events: send it back in If-None-Match and an unchanged " +
				"answer is 304 with no body.",
			Params: []schema.Param{
				schema.Query("lat", schema.Number().Range(-90, 90)).Describe("Latitude of the centre; with lon, instead of bbox."),
				schema.Query("lon", schema.Number().Range(-180, 180)).Describe("Longitude of the centre; with lat, instead of bbox."),
				schema.Query("radius", schema.Number().GreaterThan(0).Max(maxRadius).WithDefault(defaultRadius)).
					Describe("Metres around lat/lon; at most max_query_radius_m."),
				schema.Query("bbox", schema.String()).
					Describe("min_lon,min_lat,max_lon,max_lat instead of lat/lon; its half diagonal at most max_query_radius_m."),
				schema.Query("type", schema.Array(schema.Enum(taxonomy.IDs()...))).Describe("Keep these types only; repeatable."),
				schema.Query("min_confidence", schema.Number().Range(0, 1).WithDefault(0.0)).Describe("Keep events at least this confident."),
			},
			Responses: map[int]httpapi.Response{
				http.StatusOK: {Description: "The document.", Schema: schema.Object(), ContentType: f.format.ContentType(), Headers: []httpapi.Header{
					{Name: "ETag", Description: "Names the events of the answer."},
					{Name: OmittedHeader, Description: "Events left out: the format has no code for their type."},
				}},
				http.StatusNotModified: {Description: "The events are those of the ETag sent in If-None-Match."},
			},
			Handler: httpapi.HandlerFunc(h.export(f.format, maxRadius)),
		})
	}
	return routes
}

func (h *handlers) export(f interop.Format, maxRadius float64) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		c, err := callerOf(r)
		if err != nil {
			return err
		}
		p := httpapi.Params(r)
		q, box, err := exportArea(p, maxRadius)
		if err != nil {
			return err
		}
		h.meter.Count(r.Context(), c.Org, c.Environment, metering.Reads)
		res, err := h.store.Area(r.Context(), c, q)
		if err != nil {
			return err
		}
		defer res.Release()
		sum := sha256.New()
		fmt.Fprintf(sum, "%s\n", f)
		events := make([]event.EventPublic, 0, len(res.Events))
		for _, e := range res.Events {
			var ev event.EventPublic
			js := e.JSON()
			if err := json.Unmarshal(js, &ev); err != nil {
				return fmt.Errorf("events: export %s: %w", e.ID, err)
			}
			if box != nil && !box.holds(&ev) {
				continue
			}
			sum.Write(js)
			events = append(events, ev)
		}
		etag := `"` + hex.EncodeToString(sum.Sum(nil)[:16]) + `"`
		w.Header().Set("ETag", etag)
		// The answer depends on the key (its environment) and changes with the network.
		w.Header().Set("Cache-Control", "private, no-cache")
		w.Header().Set("Vary", "Authorization")
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
		pub := h.publisher
		pub.Now = h.clock.Now()
		body, omitted, err := interop.Render(f, events, pub)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", f.ContentType())
		w.Header().Set(OmittedHeader, strconv.Itoa(omitted))
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, err = w.Write(body)
		return err
	}
}

// bbox is a bounding box in degrees (no antimeridian crossing).
type bbox struct{ minLon, minLat, maxLon, maxLat float64 }

// holds tells whether a position of the event's extent lies in the box. A long segment that
// crosses the box with no position inside it is not found (docs/interop.md §7).
func (b *bbox) holds(ev *event.EventPublic) bool {
	in := func(lat, lon float64) bool {
		return lat >= b.minLat && lat <= b.maxLat && lon >= b.minLon && lon <= b.maxLon
	}
	if in(ev.Lat, ev.Lon) {
		return true
	}
	if ev.Geometry != nil {
		for _, c := range ev.Geometry.Coordinates {
			if in(c[1], c[0]) {
				return true
			}
		}
	}
	return false
}

// exportArea reads the query of an export: lat and lon (with radius), or bbox, whose circle
// around its centre through its corners is the area read.
func exportArea(p schema.Values, maxRadius float64) (AreaQuery, *bbox, error) {
	q := AreaQuery{Types: p.Strings("type"), MinConfidence: p.Float("min_confidence"), Eventual: true}
	hasPoint := p.Has("lat") || p.Has("lon")
	if !p.Has("bbox") {
		for _, name := range []string{"lat", "lon"} {
			if !p.Has(name) {
				return q, nil, schema.Errors{{Type: schema.ErrMissing, Loc: schema.Loc("query", name),
					Msg: "Field required (or give bbox instead of lat and lon)", Input: nil}}
			}
		}
		q.Center, q.Radius = pointOf(p.Float("lat"), p.Float("lon")), p.Float("radius")
		return q, nil, nil
	}
	raw := p.String("bbox")
	if hasPoint {
		return q, nil, schema.Errors{schema.ValueError(schema.Loc("query", "bbox"), "give bbox or lat and lon, not both", raw)}
	}
	b, ok := parseBBox(raw)
	if !ok {
		return q, nil, schema.Errors{schema.ValueError(schema.Loc("query", "bbox"),
			"bbox must be four numbers min_lon,min_lat,max_lon,max_lat with min below max, within -180..180 and -90..90", raw)}
	}
	q.Center = geo.Point{Lat: (b.minLat + b.maxLat) / 2, Lon: (b.minLon + b.maxLon) / 2}
	for _, corner := range []geo.Point{{Lat: b.minLat, Lon: b.minLon}, {Lat: b.minLat, Lon: b.maxLon}, {Lat: b.maxLat, Lon: b.minLon}, {Lat: b.maxLat, Lon: b.maxLon}} {
		q.Radius = math.Max(q.Radius, geo.Distance(q.Center, corner))
	}
	if q.Radius > maxRadius {
		return q, nil, schema.Errors{schema.ValueError(schema.Loc("query", "bbox"),
			fmt.Sprintf("bbox is too large: its half diagonal is %.0f m, above max_query_radius_m (%.0f)", q.Radius, maxRadius), raw)}
	}
	return q, &b, nil
}

func parseBBox(s string) (bbox, bool) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return bbox{}, false
	}
	var v [4]float64
	for i, part := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return bbox{}, false
		}
		v[i] = f
	}
	b := bbox{v[0], v[1], v[2], v[3]}
	ok := b.minLon >= -180 && b.maxLon <= 180 && b.minLat >= -90 && b.maxLat <= 90 && b.minLon < b.maxLon && b.minLat < b.maxLat
	return b, ok
}
