package interop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

var publisher = interop.Publisher{Name: "Road events network", Country: "EU",
	Now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}

func ptr[T any](v T) *T { return &v }

// sample is one event of every type, half with a heading, one with a line, one sandbox.
func sample() []event.EventPublic {
	var out []event.EventPublic
	for i, typ := range taxonomy.IDs() {
		ev := event.EventPublic{
			EventID: "ev_" + strings.Repeat(string(rune('a'+i)), 26), SchemaVersion: 1, Type: typ,
			Lat: geo.Round5(48.1 + float64(i)/100), Lon: 11.5, CreatedAt: "2026-11-27T11:00:00.123456789Z",
			ExpiresAt: "2026-11-27T13:00:00.123456789Z", SourceKind: "publisher", Status: "active",
			Verification: "unverified", Confidence: 0.6, Environment: "live",
		}
		if i%2 == 0 {
			ev.Heading = ptr(i * 29 % 360)
		}
		out = append(out, ev)
	}
	out[0].Severity, out[0].RoadRef, out[0].Description = ptr("high"), ptr("A9"), ptr("two cars, right lane")
	out[0].Verification = "confirmed"
	out[3].Subtype = ptr("gusts")                                                                                                      // weather_hazard
	out[4].Geometry = &event.LineString{Type: "LineString", Coordinates: [][2]float64{{11.5, 48.14}, {11.51, 48.145}, {11.52, 48.15}}} // congestion
	out[12].Subtype, out[12].Environment = ptr("mobile_crew"), "sandbox"                                                               // roadworks
	return out
}

// The types each format says (docs/interop.md §2), the others left out and counted.
var says = map[interop.Format][]string{
	interop.CIFS: {"accident", "stopped_vehicle", "object_on_road", "weather_hazard", "congestion", "road_damage",
		"police_check", "road_closure", "infrastructure_fault", "roadworks"},
	interop.WZDx:   {"roadworks"},
	interop.TDx:    {"accident", "stopped_vehicle", "weather_hazard"}, // weather: gusts only
	interop.DATEX2: {"accident", "stopped_vehicle", "object_on_road", "weather_hazard", "wrong_way_vehicle", "people_on_road", "roadworks"},
}

func render(t *testing.T, f interop.Format, evs []event.EventPublic) (map[string]any, int) {
	t.Helper()
	body, omitted, err := interop.Render(f, evs, publisher)
	if err != nil {
		t.Fatalf("Render(%s) = %v", f, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("Render(%s) is not JSON: %v\n%s", f, err, body)
	}
	return doc, omitted
}

// docs/interop.md §2: each format carries the types it has a word for, in the events' order,
// and counts the rest.
func TestRenderKeepsWhatTheFormatSays(t *testing.T) {
	t.Parallel()
	evs := sample()
	for _, f := range interop.Formats {
		doc, omitted := render(t, f, evs)
		var got []string
		for _, id := range exportedIDs(f, doc) {
			for _, ev := range evs {
				if ev.EventID == id {
					got = append(got, ev.Type)
				}
			}
		}
		if !slices.Equal(got, says[f]) || omitted != len(evs)-len(says[f]) {
			t.Errorf("%s carries %v and leaves out %d; want %v and %d", f, got, omitted, says[f], len(evs)-len(says[f]))
		}
	}
}

// exportedIDs reads the event ids of a document, in order.
func exportedIDs(f interop.Format, doc map[string]any) []string {
	var ids []string
	switch f {
	case interop.CIFS:
		for _, it := range doc["incidents"].([]any) {
			ids = append(ids, it.(map[string]any)["incident"].(map[string]any)["id"].(string))
		}
	case interop.WZDx, interop.TDx:
		for _, ft := range doc["features"].([]any) {
			ids = append(ids, ft.(map[string]any)["id"].(string))
		}
	case interop.DATEX2:
		for _, s := range datexSituations(doc) {
			ids = append(ids, s["idG"].(string))
		}
	}
	return ids
}

func datexSituations(doc map[string]any) []map[string]any {
	var out []map[string]any
	for _, s := range doc["payload"].(map[string]any)["sitSituationPublication"].(map[string]any)["situation"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

// WZDx 4.2 and TDx 1.1 exports validate against the formats' published JSON Schemas
// (testdata/SOURCES.md), an empty feed too.
func TestGeoJSONFeedsValidate(t *testing.T) {
	t.Parallel()
	for f, root := range map[interop.Format]string{
		interop.WZDx: "https://raw.githubusercontent.com/usdot-jpo-ode/wzdx/main/schemas/4.2/WorkZoneFeed.json",
		interop.TDx:  "https://raw.githubusercontent.com/usdot-jpo-ode/TDx/main/schemas/1.1/RoadIncidentFeed.json",
	} {
		sch := compile(t, root)
		for _, evs := range [][]event.EventPublic{sample(), nil} {
			body, _, err := interop.Render(f, evs, publisher)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("%s export does not validate: %v\n%s", f, err, body)
			}
		}
	}
}

// compile loads the schemas of testdata under their own ids, and short GeoJSON geometry
// schemas of ours (RFC 7946) under geojson.org's addresses, and compiles root.
func compile(t *testing.T, root string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.AddResource(doc.(map[string]any)["$id"].(string), doc); err != nil {
			t.Fatal(err)
		}
	}
	position := map[string]any{"type": "array", "minItems": 2, "items": map[string]any{"type": "number"}}
	for name, minItems := range map[string]int{"LineString": 2, "MultiPoint": 0} {
		c.AddResource("https://geojson.org/schema/"+name+".json", map[string]any{
			"type": "object", "required": []any{"type", "coordinates"},
			"properties": map[string]any{
				"type":        map[string]any{"enum": []any{name}},
				"coordinates": map[string]any{"type": "array", "minItems": minItems, "items": position},
			},
		})
	}
	c.AddResource("https://geojson.org/schema/Point.json", map[string]any{
		"type": "object", "required": []any{"type", "coordinates"},
		"properties": map[string]any{"type": map[string]any{"enum": []any{"Point"}}, "coordinates": position},
	})
	sch, err := c.Compile(root)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// docs/interop.md §5: GeoJSON positions are [lon, lat], first upstream; a point event is a
// 50 m line ending at its point, coming from upstream along its heading; a line goes out as
// stored; direction is the heading's quarter.
func TestGeoJSONGeometryAndDirection(t *testing.T) {
	t.Parallel()
	evs := sample()
	doc, _ := render(t, interop.TDx, evs)
	for _, ft := range doc["features"].([]any) {
		f := ft.(map[string]any)
		ev := find(evs, f["id"].(string))
		coords := f["geometry"].(map[string]any)["coordinates"].([]any)
		last := coords[len(coords)-1].([]any)
		first := coords[0].([]any)
		at := geo.Point{Lat: ev.Lat, Lon: ev.Lon}
		end := geo.Point{Lat: last[1].(float64), Lon: last[0].(float64)}
		from := geo.Point{Lat: first[1].(float64), Lon: first[0].(float64)}
		if end != at || math.Abs(geo.Distance(from, at)-50) > 1 {
			t.Errorf("%s (%s): line %v; want 50 m ending at its point [%v, %v]", ev.EventID, ev.Type, coords, ev.Lon, ev.Lat)
		}
		dir := f["properties"].(map[string]any)["core_details"].(map[string]any)["direction"]
		if ev.Heading == nil {
			if dir != "unknown" {
				t.Errorf("%s: direction %v without a heading; want unknown", ev.EventID, dir)
			}
			continue
		}
		if b := geo.Bearing(from, at); math.Abs(math.Remainder(b-float64(*ev.Heading), 360)) > 0.5 {
			t.Errorf("%s: line runs %v°; want along the heading %d", ev.EventID, b, *ev.Heading)
		}
		if want := []string{"northbound", "eastbound", "southbound", "westbound"}[((*ev.Heading+45)/90)%4]; dir != want {
			t.Errorf("%s: direction %v for heading %d; want %s", ev.EventID, dir, *ev.Heading, want)
		}
	}
}

func find(evs []event.EventPublic, id string) event.EventPublic {
	for _, ev := range evs {
		if ev.EventID == id {
			return ev
		}
	}
	return event.EventPublic{}
}

// The CIFS rules, from Waze's published schema and documentation (docs/interop.md §4): every
// incident has id, type (one of six), polyline (at least two "lat lon" pairs, latitude first),
// street, starttime and endtime (ISO 8601 with an offset, end after start) and direction.
func TestCIFSFollowsTheSchema(t *testing.T) {
	t.Parallel()
	evs := sample()
	doc, _ := render(t, interop.CIFS, evs)
	types := []string{"ROAD_CLOSED", "ACCIDENT", "HAZARD", "POLICE", "JAM", "CHIT_CHAT"}
	number := regexp.MustCompile(`^-?\d+(\.\d+)?$`)
	for _, it := range doc["incidents"].([]any) {
		inc := it.(map[string]any)["incident"].(map[string]any)
		for _, field := range []string{"id", "type", "polyline", "street", "starttime", "endtime", "direction"} {
			if _, ok := inc[field].(string); !ok {
				t.Errorf("incident %v: %s missing", inc["id"], field)
			}
		}
		if !slices.Contains(types, inc["type"].(string)) {
			t.Errorf("incident %v: type %v", inc["id"], inc["type"])
		}
		if inc["direction"] != "ONE_DIRECTION" && inc["direction"] != "BOTH_DIRECTIONS" {
			t.Errorf("incident %v: direction %v", inc["id"], inc["direction"])
		}
		parts := strings.Fields(inc["polyline"].(string))
		if len(parts) < 4 || len(parts)%2 != 0 {
			t.Fatalf("incident %v: polyline %q; want at least two lat lon pairs", inc["id"], inc["polyline"])
		}
		for _, p := range parts {
			if !number.MatchString(p) {
				t.Errorf("incident %v: polyline value %q", inc["id"], p)
			}
		}
		// The event's own point: a line's first position, a drawn point line's last.
		ev := find(evs, inc["id"].(string))
		last := len(parts) - 2
		at := last
		if ev.Geometry != nil {
			at = 0
		}
		lat, _ := strconv.ParseFloat(parts[at], 64)
		lon, _ := strconv.ParseFloat(parts[at+1], 64)
		if lat != ev.Lat || lon != ev.Lon {
			t.Errorf("incident %v: polyline %q has %v %v where the event's point %v %v should be, latitude first", inc["id"], inc["polyline"], lat, lon, ev.Lat, ev.Lon)
		}
		if parts[0] == parts[last] && parts[1] == parts[last+1] {
			t.Errorf("incident %v: polyline %q has one distinct point", inc["id"], inc["polyline"])
		}
		start, err1 := time.Parse(time.RFC3339, inc["starttime"].(string))
		end, err2 := time.Parse(time.RFC3339, inc["endtime"].(string))
		if err1 != nil || err2 != nil || !end.After(start) {
			t.Errorf("incident %v: %v to %v; want ISO 8601 times with offsets, end after start", inc["id"], inc["starttime"], inc["endtime"])
		}
	}
	// A severe accident is a major one.
	if inc := doc["incidents"].([]any)[0].(map[string]any)["incident"].(map[string]any); inc["subtype"] != "ACCIDENT_MAJOR" {
		t.Errorf("high-severity accident subtype %v; want ACCIDENT_MAJOR", inc["subtype"])
	}
}

// The DATEX II rules, from the v3 JSON Schema and the SRTI profile (docs/interop.md §6): the
// payload names its model base version and holds a situation publication (lang, publication
// time, creator with country and national identifier); each situation has idG, header
// information and one record; each record is keyed by an SRTI class and has idG, versionG,
// creation and version times, probability of occurrence, validity, a point with coordinates,
// and its class's type member with a value of that class's enumeration. Bearing is our heading.
func TestDATEXFollowsTheSchema(t *testing.T) {
	t.Parallel()
	classes := map[string][]string{ // class → its type member's values in the SRTI profile
		"sitAccident":                     {"accident", "accidentInvolvingHeavyLorries", "accidentInvolvingPublicTransport"},
		"sitVehicleObstruction":           {"brokenDownVehicle", "dangerousSlowMovingVehicle", "vehicleOnFire", "vehicleInDifficulty", "vehicleOnWrongCarriageway"},
		"sitGeneralObstruction":           {"childrenOnRoadway", "clearanceWork", "cyclistsOnRoadway", "objectOnTheRoad", "obstructionOnTheRoad", "peopleOnRoadway", "rescueAndRecoveryWork", "shedLoad", "unprotectedAccidentArea"},
		"sitAnimalPresenceObstruction":    {"animalsOnTheRoad", "herdOfAnimalsOnTheRoad", "largeAnimalsOnTheRoad"},
		"sitEnvironmentalObstruction":     {"avalanches", "fallenTrees", "flooding", "landslips", "rockfalls", "seriousFire"},
		"sitWeatherRelatedRoadConditions": {"blackIce", "ice", "icyPatches", "slippery", "snowDrifts", "surfaceWater"},
		"sitPoorEnvironmentConditions":    {"blowingSnow", "crosswinds", "denseFog", "fog", "hail", "heavyRain", "heavySnowfall", "lowSunGlare", "patchyFog", "smokeHazard", "stormForceWinds", "strongWinds", "thunderstorms", "visibilityReduced"},
		"sitMaintenanceWorks":             {"maintenanceWork", "roadMarkingWork", "snowploughsInUse"},
	}
	evs := sample()
	doc, _ := render(t, interop.DATEX2, evs)
	payload := doc["payload"].(map[string]any)
	pub, _ := payload["sitSituationPublication"].(map[string]any)
	if payload["modelBaseVersionG"] != "3" || pub == nil || pub["lang"] == nil || pub["publicationTime"] == nil {
		t.Fatalf("payload %v; want modelBaseVersionG 3 and a publication with lang and time", payload)
	}
	if c := pub["publicationCreator"].(map[string]any); c["country"] != "EU" || c["nationalIdentifier"] != "roadevents" {
		t.Errorf("publicationCreator %v", c)
	}
	for _, s := range datexSituations(doc) {
		records := s["situationRecord"].([]any)
		header := s["headerInformation"].(map[string]any)["informationStatus"].(map[string]any)["value"]
		ev := find(evs, s["idG"].(string))
		if want := map[string]string{"live": "real", "sandbox": "test"}[ev.Environment]; header != want || len(records) != 1 {
			t.Fatalf("situation %v: status %v, %d records; want %s, 1", s["idG"], header, len(records), want)
		}
		rec := records[0].(map[string]any)
		if len(rec) != 1 {
			t.Fatalf("record %v: want one class key", rec)
		}
		for class, body := range rec {
			r := body.(map[string]any)
			values, ok := classes[class]
			if !ok {
				t.Errorf("%s: class %s is not an SRTI record", ev.EventID, class)
				continue
			}
			for _, field := range []string{"idG", "versionG", "situationRecordCreationTime", "situationRecordVersionTime", "probabilityOfOccurrence", "validity", "locationReference"} {
				if r[field] == nil {
					t.Errorf("%s %s: %s missing", ev.EventID, class, field)
				}
			}
			if p := r["probabilityOfOccurrence"].(map[string]any)["value"]; !slices.Contains([]any{"certain", "probable", "riskOf"}, p) {
				t.Errorf("%s: probabilityOfOccurrence %v", ev.EventID, p)
			}
			v := r["validity"].(map[string]any)
			if v["validityStatus"].(map[string]any)["value"] != "definedByValidityTimeSpec" ||
				v["validityTimeSpecification"].(map[string]any)["overallStartTime"] == nil {
				t.Errorf("%s: validity %v", ev.EventID, v)
			}
			found := 0
			for member, val := range r {
				if !strings.HasSuffix(member, "Type") {
					continue
				}
				if list, ok := val.([]any); ok {
					val = list[0]
				}
				if !slices.Contains(values, val.(map[string]any)["value"].(string)) {
					t.Errorf("%s %s: %s %v is not among %v", ev.EventID, class, member, val, values)
				}
				found++
			}
			if found != 1 {
				t.Errorf("%s %s: %d type members; want 1", ev.EventID, class, found)
			}
			loc := r["locationReference"].(map[string]any)
			if linear, ok := loc["locLinearLocation"].(map[string]any); ok {
				posList := linear["gmlLineString"].(map[string]any)["posList"].(string)
				display := linear["coordinatesForDisplay"].(map[string]any)
				if ev.Geometry == nil || !regexp.MustCompile(`^[-+]?[0-9]*\.?[0-9]+(\s[-+]?[0-9]*\.?[0-9]+){3,}$`).MatchString(posList) ||
					display["latitude"] != ev.Lat || display["longitude"] != ev.Lon {
					t.Errorf("%s: linear location %v; want a line event's posList and its point for display", ev.EventID, linear)
				}
				continue
			}
			point := loc["locPointLocation"].(map[string]any)["pointByCoordinates"].(map[string]any)
			coords := point["pointCoordinates"].(map[string]any)
			if coords["latitude"] != ev.Lat || coords["longitude"] != ev.Lon {
				t.Errorf("%s: coordinates %v; want %v %v", ev.EventID, coords, ev.Lat, ev.Lon)
			}
			if b, ok := point["bearing"].(float64); ev.Heading != nil && (!ok || int(b) != *ev.Heading) || ev.Heading == nil && ok {
				t.Errorf("%s: bearing %v; want the heading %v", ev.EventID, point["bearing"], ev.Heading)
			}
		}
	}
}

// Rendering is deterministic: the same events give the same bytes (the export's ETag relies
// on the events, and pollers compare documents).
func TestRenderIsDeterministic(t *testing.T) {
	t.Parallel()
	for _, f := range interop.Formats {
		a, _, _ := interop.Render(f, sample(), publisher)
		b, _, _ := interop.Render(f, sample(), publisher)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two renderings differ", f)
		}
	}
}

// BenchmarkRender500 renders 500 events, a mix of every type, in each format:
//
//	go test -run '^$' -bench Render500 ./shared/interop
func BenchmarkRender500(b *testing.B) {
	var evs []event.EventPublic
	for len(evs) < 500 {
		evs = append(evs, sample()...)
	}
	evs = evs[:500]
	for _, f := range interop.Formats {
		b.Run(string(f), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := interop.Render(f, evs, publisher); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// docs/interop.md §9: a document we export reads back as the same events: for each format,
// every event it carries comes back with its type, point, line and validity (to the second),
// keyed by its id.
func TestExportReadsBack(t *testing.T) {
	t.Parallel()
	evs := sample()
	for _, f := range interop.Formats {
		body, _, err := interop.Render(f, evs, publisher)
		if err != nil {
			t.Fatal(err)
		}
		recs, skipped, err := interop.Parse(f, body)
		if err != nil || skipped != 0 || len(recs) != len(says[f]) {
			t.Fatalf("%s: read %d records, skipped %d, err %v; want %d, none skipped", f, len(recs), skipped, err, len(says[f]))
		}
		for _, rec := range recs {
			ev := find(evs, rec.UpstreamID)
			if rec.In.Type != ev.Type || rec.In.Lat != ev.Lat || rec.In.Lon != ev.Lon {
				t.Errorf("%s %s: read %s at %v %v; want %s at %v %v", f, ev.EventID, rec.In.Type, rec.In.Lat, rec.In.Lon, ev.Type, ev.Lat, ev.Lon)
			}
			if (rec.In.Geometry == nil) != (ev.Geometry == nil) || rec.In.Geometry != nil && !slices.Equal(rec.In.Geometry.Coordinates, ev.Geometry.Coordinates) {
				t.Errorf("%s %s: read line %v; want %v", f, ev.EventID, rec.In.Geometry, ev.Geometry)
			}
			start, _ := time.Parse(time.RFC3339, "2026-11-27T11:00:00Z")
			end, _ := time.Parse(time.RFC3339, "2026-11-27T13:00:00Z")
			if !rec.Start.Equal(start) || !rec.End.Equal(end) {
				t.Errorf("%s %s: valid %v to %v; want %v to %v", f, ev.EventID, rec.Start, rec.End, start, end)
			}
			if ev.Heading != nil && ev.Geometry == nil && f != interop.WZDx && f != interop.TDx {
				if rec.In.Heading == nil || math.Abs(math.Remainder(float64(*rec.In.Heading-*ev.Heading), 360)) > 2 {
					t.Errorf("%s %s: heading read %v; want about %d", f, ev.EventID, rec.In.Heading, *ev.Heading)
				}
			}
		}
	}
}

// docs/interop.md §9: bad data never breaks a document: records that cannot be ours are
// skipped and counted, the others read; a document not of the format is an error.
func TestParseSkipsWhatItCannotRead(t *testing.T) {
	t.Parallel()
	cifs := `{"incidents":[
	 {"incident":{"id":"a1","type":"ACCIDENT","polyline":"48.1 11.5 48.1004 11.5","street":"B2","starttime":"2026-11-27T10:00:00+01:00","direction":"ONE_DIRECTION"}},
	 {"incident":{"id":"a2","type":"CHIT_CHAT","polyline":"48.1 11.5 48.1004 11.5"}},
	 {"incident":{"id":"","type":"ACCIDENT","polyline":"48.1 11.5 48.1004 11.5"}},
	 {"incident":{"id":"a4","type":"JAM","polyline":"48.1 11.5 91 11.5"}},
	 {"incident":{"id":"a5","type":"JAM","polyline":"48.1 11.5 48.2"}},
	 {"incident":{"id":"a6","type":"ROAD_CLOSED","subtype":"ROAD_CLOSED_HAZARD","polyline":"48.1 11.5 48.11 11.5 48.12 11.51","description":"bridge"}}]}`
	recs, skipped, err := interop.Parse(interop.CIFS, []byte(cifs))
	if err != nil || skipped != 4 || len(recs) != 2 {
		t.Fatalf("read %d, skipped %d, err %v; want 2 read, 4 skipped", len(recs), skipped, err)
	}
	if r := recs[0]; r.UpstreamID != "a1" || r.In.Type != "accident" || r.In.Lat != 48.1004 || r.In.Heading == nil || *r.In.Heading != 0 ||
		r.In.RoadRef == nil || *r.In.RoadRef != "B2" || !r.Start.Equal(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)) || !r.End.IsZero() {
		t.Errorf("first record %+v; want a northbound accident at its polyline's end on B2 from 09:00 UTC, no end", r)
	}
	if r := recs[1]; r.In.Type != "road_closure" || r.In.Geometry == nil || len(r.In.Geometry.Coordinates) != 3 || r.In.Lat != 48.1 {
		t.Errorf("second record %+v; want a closure along its 3-point line", r)
	}
	// One record of the wrong shape spoils no other, in any format; a line needs two
	// positions; a point needs both coordinates.
	for f, doc := range map[interop.Format]string{
		interop.CIFS: `{"incidents":[{"incident":{"id":7,"type":"ACCIDENT","polyline":"48.1 11.5 48.1004 11.5"}},
			{"incident":{"id":"one","type":"ACCIDENT","polyline":"48.1 11.5"}},
			{"incident":{"id":"ok","type":"ACCIDENT","polyline":"48.1 11.5 48.1004 11.5"}}]}`,
		interop.WZDx: `{"type":"FeatureCollection","features":[
			{"id":"pt","type":"Feature","properties":{"core_details":{"event_type":"work-zone"}},"geometry":{"type":"Point","coordinates":[11.5,48.1]}},
			{"id":"names","type":"Feature","properties":{"core_details":{"event_type":"work-zone","road_names":"A9"}},"geometry":{"type":"LineString","coordinates":[[11.5,48.1],[11.5,48.11]]}},
			{"id":"one","type":"Feature","properties":{"core_details":{"event_type":"work-zone"}},"geometry":{"type":"LineString","coordinates":[[11.5,48.1]]}},
			{"id":"ok","type":"Feature","properties":{"core_details":{"event_type":"work-zone"}},"geometry":{"type":"LineString","coordinates":[[11.5,48.1],[11.5,48.11]]}}]}`,
		interop.DATEX2: `{"payload":{"sitSituationPublication":{"situation":[{"situationRecord":[
			{"sitAccident":{"idG":"nowhere","locationReference":{"locPointLocation":{"pointByCoordinates":{"bearing":90}}}}},
			{"sitAccident":{"idG":"text","locationReference":{"locPointLocation":{"pointByCoordinates":{"pointCoordinates":{"latitude":"48.1","longitude":11.5}}}}}},
			{"sitAccident":{"idG":"one","locationReference":{"locLinearLocation":{"gmlLineString":{"posList":"48.1 11.5"}}}}},
			{"sitAccident":{"idG":"ok","locationReference":{"locPointLocation":{"pointByCoordinates":{"pointCoordinates":{"latitude":48.1,"longitude":11.5}}}}}}]}]}}}`,
	} {
		recs, skipped, err := interop.Parse(f, []byte(doc))
		if err != nil || len(recs) != 1 || recs[0].UpstreamID != "ok" || skipped != strings.Count(doc, `"id`)-1 {
			t.Errorf("%s: read %+v, skipped %d, err %v; want only the record ok read, the others skipped", f, recs, skipped, err)
		}
	}
	for _, f := range interop.Formats {
		for _, doc := range []string{"not json", `{"something":"else"}`, `[]`} {
			if _, _, err := interop.Parse(f, []byte(doc)); !errors.Is(err, interop.ErrDocument) {
				t.Errorf("Parse(%s, %q) = %v; want ErrDocument", f, doc, err)
			}
		}
	}
}
