package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
)

// Record is one upstream record read as our event (docs/interop.md §9).
type Record struct {
	// UpstreamID is the record's id in its feed, stable over its life.
	UpstreamID string
	// In is the event as it would be published: type, subtype, point, line, heading, road,
	// severity, description.
	In event.EventIn
	// Start and End are the upstream validity; zero when the feed gives none.
	Start, End time.Time
	// Updated is when the feed last changed the record; zero when it does not say.
	Updated time.Time
}

// ErrDocument is a document that is not one of its format at all (not JSON, or not its
// shape): nothing in it can be read.
var ErrDocument = errors.New("interop: not a document of the format")

// Parse reads the records of a document in format f. A record that cannot be read as one of
// our events (an unknown type, no id, an unusable position) is skipped and counted; only a
// document that is not of the format at all is an error.
func Parse(f Format, doc []byte) ([]Record, int, error) {
	switch f {
	case CIFS:
		return parseCIFS(doc)
	case WZDx, TDx:
		return parseGeoJSON(f, doc)
	case DATEX2:
		return parseDATEX(doc)
	}
	return nil, 0, fmt.Errorf("interop: unknown format %q", f)
}

// ours is one of our types and its subtype ("" for none).
type ours struct{ Type, Subtype string }

// cifsTypes reads CIFS codes: the subtype's meaning where we have one, else the type's.
var cifsTypes = map[string]ours{
	"ACCIDENT":                           {"accident", ""},
	"ACCIDENT_MINOR":                     {"accident", ""},
	"ACCIDENT_MAJOR":                     {"accident", ""},
	"JAM":                                {"congestion", ""},
	"JAM_MODERATE_TRAFFIC":               {"congestion", "slow_traffic"},
	"JAM_HEAVY_TRAFFIC":                  {"congestion", ""},
	"JAM_STAND_STILL_TRAFFIC":            {"congestion", "stationary_traffic"},
	"POLICE":                             {"police_check", ""},
	"POLICE_VISIBLE":                     {"police_check", ""},
	"ROAD_CLOSED":                        {"road_closure", "road"},
	"ROAD_CLOSED_HAZARD":                 {"road_closure", "road"},
	"ROAD_CLOSED_CONSTRUCTION":           {"road_closure", "road"},
	"ROAD_CLOSED_EVENT":                  {"road_closure", "road"},
	"HAZARD":                             {"object_on_road", ""},
	"HAZARD_ON_ROAD":                     {"object_on_road", ""},
	"HAZARD_ON_ROAD_OBJECT":              {"object_on_road", "debris"},
	"HAZARD_ON_SHOULDER_ANIMALS":         {"object_on_road", "animal"},
	"HAZARD_ON_ROAD_CAR_STOPPED":         {"stopped_vehicle", "in_lane"},
	"HAZARD_ON_SHOULDER_CAR_STOPPED":     {"stopped_vehicle", "on_hard_shoulder"},
	"HAZARD_ON_ROAD_POT_HOLE":            {"road_damage", "pothole"},
	"HAZARD_ON_ROAD_ICE":                 {"weather_hazard", "black_ice"},
	"HAZARD_WEATHER":                     {"weather_hazard", ""},
	"HAZARD_WEATHER_FOG":                 {"weather_hazard", "fog_bank"},
	"HAZARD_WEATHER_FLOOD":               {"weather_hazard", "aquaplaning"},
	"HAZARD_WEATHER_HAIL":                {"weather_hazard", "hail"},
	"HAZARD_WEATHER_HEAVY_SNOW":          {"weather_hazard", "snow"},
	"HAZARD_ON_ROAD_LANE_CLOSED":         {"road_closure", "lane"},
	"HAZARD_ON_ROAD_TRAFFIC_LIGHT_FAULT": {"infrastructure_fault", "signal_failure"},
	"HAZARD_ON_SHOULDER_MISSING_SIGN":    {"infrastructure_fault", "missing_sign"},
	"HAZARD_ON_ROAD_CONSTRUCTION":        {"roadworks", ""},
}

func parseCIFS(doc []byte) ([]Record, int, error) {
	var feed struct {
		Incidents []json.RawMessage `json:"incidents"`
	}
	if err := json.Unmarshal(doc, &feed); err != nil || feed.Incidents == nil {
		return nil, 0, fmt.Errorf("%w: CIFS JSON wants {\"incidents\": [...]}", ErrDocument)
	}
	var out []Record
	skipped := 0
	for _, raw := range feed.Incidents {
		// Each record is read on its own, so that one of the wrong shape spoils no other.
		var it struct {
			Incident *struct {
				ID, Type, Subtype, Polyline, Street, Direction, Description string
				StartTime                                                   string `json:"starttime"`
				EndTime                                                     string `json:"endtime"`
				UpdateTime                                                  string `json:"updatetime"`
			} `json:"incident"`
		}
		if json.Unmarshal(raw, &it) != nil || it.Incident == nil || it.Incident.ID == "" {
			skipped++
			continue
		}
		inc := it.Incident
		code, ok := cifsTypes[inc.Subtype]
		if !ok || inc.Subtype == "" {
			code, ok = cifsTypes[inc.Type]
		}
		pts, okLine := parseLatLonList(inc.Polyline)
		if !ok || !okLine {
			skipped++
			continue
		}
		rec := Record{UpstreamID: inc.ID, In: eventIn(code, pts, inc.Direction != "BOTH_DIRECTIONS")}
		if inc.Subtype == "ACCIDENT_MAJOR" {
			rec.In.Severity = ptr("high")
		}
		rec.In.RoadRef, rec.In.Description = text(inc.Street, 32), text(inc.Description, 280)
		rec.Start, rec.End, rec.Updated = parseTime(inc.StartTime), parseTime(inc.EndTime), parseTime(inc.UpdateTime)
		out = append(out, rec)
	}
	return out, skipped, nil
}

// tdxTypes reads TDx incident types; a work zone of WZDx is roadworks.
var tdxTypes = map[string]ours{
	"crash/crash":          {"accident", ""},
	"crash/injury":         {"accident", ""},
	"crash/incident":       {"stopped_vehicle", ""},
	"crash/spill":          {"object_on_road", "lost_cargo"},
	"wind/gusts":           {"weather_hazard", "gusts"},
	"wind/strong":          {"weather_hazard", "gusts"},
	"wind/crosswinds":      {"weather_hazard", "gusts"},
	"disaster/flood-flash": {"weather_hazard", "aquaplaning"},
}

// feature is a WZDx or TDx feature, as far as it is read.
type feature struct {
	ID         any `json:"id"`
	Properties struct {
		CoreDetails struct {
			EventType   string   `json:"event_type"`
			RoadNames   []string `json:"road_names"`
			Direction   string   `json:"direction"`
			Description string   `json:"description"`
			UpdateDate  string   `json:"update_date"`
		} `json:"core_details"`
		TypesOfIncident []struct {
			Category string `json:"incident_category"`
			Type     string `json:"incident_type"`
		} `json:"types_of_incident"`
		StartDate     string `json:"start_date"`
		EndDate       string `json:"end_date"`
		WorkZoneType  string `json:"work_zone_type"`
		VehicleImpact string `json:"vehicle_impact"`
	} `json:"properties"`
	Geometry struct {
		Type        string       `json:"type"`
		Coordinates [][2]float64 `json:"coordinates"`
	} `json:"geometry"`
}

func parseGeoJSON(f Format, doc []byte) ([]Record, int, error) {
	var feed struct {
		Type     string            `json:"type"`
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(doc, &feed); err != nil || feed.Type != "FeatureCollection" {
		return nil, 0, fmt.Errorf("%w: a GeoJSON FeatureCollection of road events", ErrDocument)
	}
	var out []Record
	skipped := 0
	for _, raw := range feed.Features {
		// Each feature is read on its own, so that one of the wrong shape (a Point geometry,
		// a road name that is no list) spoils no other.
		var ft feature
		if json.Unmarshal(raw, &ft) != nil {
			skipped++
			continue
		}
		p := ft.Properties
		id, _ := ft.ID.(string)
		code, ok := ours{}, false
		switch {
		case f == WZDx && p.CoreDetails.EventType == "work-zone":
			code, ok = ours{"roadworks", ""}, true
			if p.WorkZoneType == "moving" {
				code.Subtype = "mobile_crew"
			}
		case f == TDx && p.CoreDetails.EventType == "incident":
			for _, t := range p.TypesOfIncident {
				if code, ok = tdxTypes[t.Category+"/"+t.Type]; ok {
					break
				}
			}
			if !ok && p.VehicleImpact == "all-lanes-closed" {
				code, ok = ours{"road_closure", "road"}, true
			}
		}
		var pts []geo.Point
		for _, c := range ft.Geometry.Coordinates {
			pts = append(pts, geo.Point{Lat: c[1], Lon: c[0]})
		}
		// A LineString has two positions at least (RFC 7946); WZDx's MultiPoint one or two.
		if id == "" || !ok || !validLine(pts) || (ft.Geometry.Type != "LineString" || len(pts) < 2) && ft.Geometry.Type != "MultiPoint" {
			skipped++
			continue
		}
		directed := p.CoreDetails.Direction != "" && p.CoreDetails.Direction != "unknown" && p.CoreDetails.Direction != "undefined"
		rec := Record{UpstreamID: id, In: eventIn(code, pts, directed)}
		if len(p.CoreDetails.RoadNames) > 0 && p.CoreDetails.RoadNames[0] != unnamedRoad {
			rec.In.RoadRef = text(p.CoreDetails.RoadNames[0], 32)
		}
		rec.In.Description = text(p.CoreDetails.Description, 280)
		rec.Start, rec.End, rec.Updated = parseTime(p.StartDate), parseTime(p.EndDate), parseTime(p.CoreDetails.UpdateDate)
		out = append(out, rec)
	}
	return out, skipped, nil
}

// datexTypes reads DATEX II records: class, then type value ("" for any other value).
var datexTypes = map[string]map[string]ours{
	"Accident": {"": {"accident", ""}},
	"VehicleObstruction": {
		"":                          {"stopped_vehicle", ""},
		"brokenDownVehicle":         {"stopped_vehicle", "breakdown"},
		"vehicleOnFire":             {"accident", "vehicle_fire"},
		"vehicleOnWrongCarriageway": {"wrong_way_vehicle", ""},
	},
	"GeneralObstruction": {
		"":                  {"object_on_road", ""},
		"shedLoad":          {"object_on_road", "lost_cargo"},
		"peopleOnRoadway":   {"people_on_road", ""},
		"childrenOnRoadway": {"people_on_road", "pedestrian"},
		"cyclistsOnRoadway": {"people_on_road", "cyclist"},
	},
	"AnimalPresenceObstruction": {"": {"object_on_road", "animal"}},
	"EnvironmentalObstruction": {
		"":            {"object_on_road", "landslide"},
		"fallenTrees": {"object_on_road", "debris"},
		"flooding":    {"weather_hazard", "aquaplaning"},
	},
	"WeatherRelatedRoadConditions": {
		"":             {"weather_hazard", ""},
		"blackIce":     {"weather_hazard", "black_ice"},
		"ice":          {"weather_hazard", "black_ice"},
		"icyPatches":   {"weather_hazard", "black_ice"},
		"surfaceWater": {"weather_hazard", "aquaplaning"},
		"snowDrifts":   {"weather_hazard", "snow"},
	},
	"PoorEnvironmentConditions": {
		"":                {"weather_hazard", ""},
		"fog":             {"weather_hazard", "fog_bank"},
		"denseFog":        {"weather_hazard", "fog_bank"},
		"patchyFog":       {"weather_hazard", "fog_bank"},
		"strongWinds":     {"weather_hazard", "gusts"},
		"crosswinds":      {"weather_hazard", "gusts"},
		"stormForceWinds": {"weather_hazard", "gusts"},
		"hail":            {"weather_hazard", "hail"},
		"heavySnowfall":   {"weather_hazard", "snow"},
		"blowingSnow":     {"weather_hazard", "snow"},
	},
	"MaintenanceWorks": {"": {"roadworks", ""}},
}

func parseDATEX(doc []byte) ([]Record, int, error) {
	type value struct {
		Value string `json:"value"`
	}
	var d struct {
		Payload *struct {
			Publication *struct {
				Situations []struct {
					Records []map[string]json.RawMessage `json:"situationRecord"`
				} `json:"situation"`
			} `json:"sitSituationPublication"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(doc, &d); err != nil || d.Payload == nil || d.Payload.Publication == nil {
		return nil, 0, fmt.Errorf("%w: DATEX II JSON wants payload.sitSituationPublication", ErrDocument)
	}
	var out []Record
	skipped := 0
	for _, s := range d.Payload.Publication.Situations {
		for _, keyed := range s.Records {
			for key, raw := range keyed {
				byValue, known := datexTypes[strings.TrimPrefix(key, "sit")]
				var r map[string]json.RawMessage
				if !known || json.Unmarshal(raw, &r) != nil {
					skipped++
					continue
				}
				var rec struct {
					ID       string `json:"idG"`
					Version  string `json:"situationRecordVersionTime"`
					Validity struct {
						Span struct {
							Start string `json:"overallStartTime"`
							End   string `json:"overallEndTime"`
						} `json:"validityTimeSpecification"`
					} `json:"validity"`
					Location struct {
						Point *struct {
							ByCoordinates struct {
								Bearing *float64                                `json:"bearing"`
								At      *struct{ Latitude, Longitude *float64 } `json:"pointCoordinates"`
							} `json:"pointByCoordinates"`
						} `json:"locPointLocation"`
						Linear *struct {
							Line struct {
								PosList string `json:"posList"`
							} `json:"gmlLineString"`
						} `json:"locLinearLocation"`
					} `json:"locationReference"`
				}
				if json.Unmarshal(raw, &rec) != nil {
					skipped++
					continue
				}
				code := byValue[""] // what a record of the class is when its value tells nothing finer
				for member, v := range r {
					if strings.HasSuffix(member, "Type") && member != "trafficConstrictionType" {
						var one value
						var list []value
						if json.Unmarshal(v, &one) != nil && json.Unmarshal(v, &list) == nil && len(list) > 0 {
							one = list[0]
						}
						if c, found := byValue[one.Value]; found {
							code = c
						}
					}
				}
				var pts []geo.Point
				var heading *int
				switch loc := rec.Location; {
				case loc.Linear != nil:
					pts, _ = parseLatLonList(loc.Linear.Line.PosList)
				case loc.Point != nil:
					// A point without both coordinates is no position (not 0, 0).
					at := loc.Point.ByCoordinates.At
					if at == nil || at.Latitude == nil || at.Longitude == nil {
						break
					}
					pts = []geo.Point{{Lat: *at.Latitude, Lon: *at.Longitude}}
					if b := loc.Point.ByCoordinates.Bearing; b != nil && *b >= 0 && *b < 360 {
						heading = ptr(int(*b))
					}
				}
				if rec.ID == "" || len(pts) == 0 || !validLine(pts) {
					skipped++
					continue
				}
				in := eventIn(code, pts, false)
				if len(pts) == 1 {
					in.Heading = heading
				}
				out = append(out, Record{UpstreamID: rec.ID, In: in,
					Start: parseTime(rec.Validity.Span.Start), End: parseTime(rec.Validity.Span.End), Updated: parseTime(rec.Version)})
			}
		}
	}
	return out, skipped, nil
}

// eventIn makes the event of a line read from a feed: a line of two positions at most
// pointLine (and a little) long is a point event at its end, heading along it when the feed
// gave a direction (the inverse of line); a longer one is the event's line, its point first.
func eventIn(code ours, pts []geo.Point, directed bool) event.EventIn {
	in := event.EventIn{Type: code.Type}
	if code.Subtype != "" {
		in.Subtype = ptr(code.Subtype)
	}
	if len(pts) == 1 || len(pts) == 2 && geo.Distance(pts[0], pts[1]) <= pointLine+10 {
		at := pts[len(pts)-1]
		in.Lat, in.Lon = geo.Round5(at.Lat), geo.Round5(at.Lon)
		if directed && len(pts) == 2 && pts[0] != pts[1] {
			in.Heading = ptr(int(geo.Bearing(pts[0], pts[1])+0.5) % 360)
		}
		return in
	}
	in.Lat, in.Lon = geo.Round5(pts[0].Lat), geo.Round5(pts[0].Lon)
	ls := &event.LineString{Type: "LineString"}
	for _, p := range pts {
		ls.Coordinates = append(ls.Coordinates, [2]float64{geo.Round5(p.Lon), geo.Round5(p.Lat)})
	}
	in.Geometry = ls
	return in
}

// validLine tells whether every position is a valid one and there are at most as many as a
// LineString of ours may hold.
func validLine(pts []geo.Point) bool {
	if len(pts) == 0 || len(pts) > 512 {
		return false
	}
	for _, p := range pts {
		if !p.Valid() {
			return false
		}
	}
	return true
}

// parseLatLonList reads "lat lon lat lon ..." (CIFS polylines, GML posLists): a line, so two
// positions at least.
func parseLatLonList(s string) ([]geo.Point, bool) {
	f := strings.Fields(s)
	if len(f) < 4 || len(f)%2 != 0 {
		return nil, false
	}
	pts := make([]geo.Point, 0, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		lat, err1 := strconv.ParseFloat(f[i], 64)
		lon, err2 := strconv.ParseFloat(f[i+1], 64)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		pts = append(pts, geo.Point{Lat: lat, Lon: lon})
	}
	return pts, validLine(pts)
}

// parseTime reads an RFC 3339 time; zero when absent or unreadable.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// text is s cut to at most n characters, or nil when empty.
func text(s string, n int) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n])
	}
	return &s
}

func ptr[T any](v T) *T { return &v }
