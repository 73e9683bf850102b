package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// earthRadius is the mean Earth radius in metres, the one shared/geo measures with, so that
// the generator's "metres" are the server's.
const earthRadius = 6371008.8

// square is the area the city covers: a square of Side metres centred on (Lat, Lon), small
// enough that an equirectangular projection around the centre is exact to a few metres.
type square struct {
	Lat, Lon float64
	Side     float64 // metres
}

// at returns the point dx metres east and dy metres north of the centre.
func (s square) at(dx, dy float64) (lat, lon float64) {
	lat = s.Lat + dy/earthRadius*180/math.Pi
	lon = s.Lon + dx/(earthRadius*math.Cos(s.Lat*math.Pi/180))*180/math.Pi
	return lat, lon
}

// random returns a point drawn uniformly over the square.
func (s square) random(r *rand.Rand) (lat, lon float64) {
	return s.at((r.Float64()-0.5)*s.Side, (r.Float64()-0.5)*s.Side)
}

// contains tells whether (lat, lon) is inside the square, with slack metres of tolerance.
func (s square) contains(lat, lon, slack float64) bool {
	dy := (lat - s.Lat) * math.Pi / 180 * earthRadius
	dx := (lon - s.Lon) * math.Pi / 180 * earthRadius * math.Cos(s.Lat*math.Pi/180)
	h := s.Side/2 + slack
	return math.Abs(dx) <= h && math.Abs(dy) <= h
}

// eventIn is the POST /v1/events body (docs/api.md §2.2); absent optional fields are left out.
type eventIn struct {
	Type          string      `json:"type"`
	Subtype       string      `json:"subtype,omitempty"`
	Lat           float64     `json:"lat"`
	Lon           float64     `json:"lon"`
	Geometry      *lineString `json:"geometry,omitempty"`
	Heading       *int        `json:"heading,omitempty"`
	RoadRef       string      `json:"road_ref,omitempty"`
	Severity      string      `json:"severity,omitempty"`
	Description   string      `json:"description,omitempty"`
	OccurredAt    string      `json:"occurred_at,omitempty"`
	ClientEventID string      `json:"client_event_id"`
	ReporterToken string      `json:"reporter_token,omitempty"`
}

// lineString is a GeoJSON LineString: positions are [lon, lat] (docs/api.md §2.2).
type lineString struct {
	Type        string       `json:"type"`
	Coordinates [][2]float64 `json:"coordinates"`
}

// weighted is a type and its share of the city's events.
type weighted struct {
	Type   string
	Weight float64
}

// Point and segment events: a rough mix of what fleets report in a large city on a weekday.
// Segments are the types that naturally have an extent (docs/api.md §2.1: congestion "usually a
// segment with geometry").
var (
	pointTypes = []weighted{
		{"stopped_vehicle", 16}, {"object_on_road", 14}, {"road_damage", 14}, {"speed_camera", 12},
		{"accident", 10}, {"police_check", 9}, {"congestion", 8}, {"weather_hazard", 5},
		{"roadworks", 4}, {"people_on_road", 3}, {"infrastructure_fault", 3}, {"road_closure", 1.5},
		{"wrong_way_vehicle", 0.5},
	}
	lineTypes = []weighted{
		{"congestion", 60}, {"roadworks", 15}, {"road_closure", 15}, {"weather_hazard", 10},
	}
	roadRefs   = []string{"A1", "A3", "A4", "A6", "A13", "A14", "A86", "N13", "N104", "N118", "D7", "D910", "D920", "BP"}
	severities = []string{"low", "medium", "high"}
	// descriptions per type; any is at most 280 characters (docs/api.md §8).
	descriptions = map[string][]string{
		"accident":             {"Two cars collided, right lane blocked", "Rear-end collision, emergency services on site", "Motorcycle down on the slip road"},
		"stopped_vehicle":      {"Broken-down van on the hard shoulder", "Car stopped in the left lane, hazard lights on", "Lorry with a flat tyre"},
		"object_on_road":       {"Tyre debris across two lanes", "Lost load: wooden pallets", "Deer on the carriageway"},
		"weather_hazard":       {"Black ice on the bridge", "Dense fog, visibility under 50 m", "Standing water in the underpass"},
		"congestion":           {"Queue from the junction", "Stop-and-go traffic", "Slow traffic after an earlier accident"},
		"wrong_way_vehicle":    {"Car driving against traffic, reported by several drivers"},
		"road_damage":          {"Deep pothole in the right lane", "Broken surface after the roundabout", "Crash barrier bent into the lane"},
		"people_on_road":       {"Pedestrian walking along the hard shoulder", "Cyclists on the expressway"},
		"police_check":         {"Checkpoint at the exit", "Officers with a hand-held radar"},
		"speed_camera":         {"Mobile camera car parked on the verge", "Average-speed section starts here"},
		"road_closure":         {"Slip road closed", "Left lane closed by the police"},
		"infrastructure_fault": {"Traffic lights out at the crossroads", "Speed limit sign turned away"},
		"roadworks":            {"Mobile crew repairing the barrier", "Emergency dig after a water main burst"},
	}
)

// city generates the events of a load test. Event i is a pure function of (seed, i), so a
// run can be repeated exactly whatever the order in which the clients send them.
type city struct {
	Area      square
	LineShare float64             // share of events with a LineString extent
	Subtypes  map[string][]string // the server's taxonomy (GET /v1/meta/taxonomy)
	Seed      uint64
	RunID     string // makes client_event_id unique across runs on one store
	Now       func() time.Time

	points, lines []weighted // the weighted types the taxonomy knows
}

// newCity returns a generator for the types the taxonomy knows. It fails when none of the
// generator's types is known, which means the server is not the one it was written for.
func newCity(area square, lineShare float64, subtypes map[string][]string, seed uint64, runID string, now func() time.Time) (*city, error) {
	c := &city{Area: area, LineShare: lineShare, Subtypes: subtypes, Seed: seed, RunID: runID, Now: now}
	c.points = known(pointTypes, subtypes)
	c.lines = known(lineTypes, subtypes)
	if len(c.points) == 0 || (lineShare > 0 && len(c.lines) == 0) {
		return nil, fmt.Errorf("loadgen: the server's taxonomy knows none of the generator's types")
	}
	return c, nil
}

func known(ws []weighted, subtypes map[string][]string) []weighted {
	var out []weighted
	for _, w := range ws {
		if _, ok := subtypes[w.Type]; ok {
			out = append(out, w)
		}
	}
	return out
}

// Line lengths, metres: "a few hundred metres to a few km", drawn log-uniformly so that short
// queues are more common than long ones.
const (
	minLineLength = 300.0
	maxLineLength = 5000.0
	minLinePoints = 2
	maxLinePoints = 20
)

// Event returns event i of the city.
func (c *city) Event(i int) eventIn {
	r := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	lat, lon := c.Area.random(r)
	e := eventIn{
		Lat: round5(lat), Lon: round5(lon),
		ClientEventID: c.RunID + "-" + strconv.Itoa(i),
	}
	heading := r.IntN(360)
	if r.Float64() < c.LineShare {
		e.Type = pick(r, c.lines)
		e.Geometry, heading = c.line(r, e.Lat, e.Lon)
	} else {
		e.Type = pick(r, c.points)
	}
	if subs := c.Subtypes[e.Type]; len(subs) > 0 && r.Float64() < 0.7 {
		e.Subtype = subs[r.IntN(len(subs))]
	}
	if r.Float64() < 0.9 {
		e.Heading = &heading
	}
	if r.Float64() < 0.6 {
		e.RoadRef = roadRefs[r.IntN(len(roadRefs))]
	}
	if r.Float64() < 0.8 {
		e.Severity = severities[r.IntN(len(severities))]
	}
	if d := descriptions[e.Type]; len(d) > 0 && r.Float64() < 0.5 {
		e.Description = d[r.IntN(len(d))]
	}
	if r.Float64() < 0.8 {
		ago := time.Duration(r.IntN(600)) * time.Second
		e.OccurredAt = c.Now().Add(-ago).UTC().Format(time.RFC3339)
	}
	if r.Float64() < 0.5 {
		e.ReporterToken = "veh-" + strconv.Itoa(r.IntN(5000))
	}
	return e
}

// line draws a road-like polyline from (lat, lon): a random bearing that drifts a little at
// each vertex. It returns the line and the bearing of its first segment, the direction of the
// drivers at risk (docs/api.md §2.2 heading rule).
func (c *city) line(r *rand.Rand, lat, lon float64) (*lineString, int) {
	n := minLinePoints + r.IntN(maxLinePoints-minLinePoints+1)
	length := minLineLength * math.Pow(maxLineLength/minLineLength, r.Float64())
	step := length / float64(n-1)
	bearing := r.Float64() * 360
	first := int(bearing) % 360
	coords := make([][2]float64, 0, n)
	// The first position is lat/lon exactly (docs/api.md §2.2: lat/lon must equal its first point).
	coords = append(coords, [2]float64{lon, lat})
	for len(coords) < n {
		lat, lon = destination(lat, lon, bearing, step)
		coords = append(coords, [2]float64{round5(lon), round5(lat)})
		bearing = math.Mod(bearing+r.NormFloat64()*15+360, 360)
	}
	return &lineString{Type: "LineString", Coordinates: coords}, first
}

// destination returns the point dist metres from (lat, lon) on the initial bearing (degrees),
// along a great circle.
func destination(lat, lon, bearing, dist float64) (float64, float64) {
	φ1, λ1, θ := lat*math.Pi/180, lon*math.Pi/180, bearing*math.Pi/180
	δ := dist / earthRadius
	φ2 := math.Asin(math.Sin(φ1)*math.Cos(δ) + math.Cos(φ1)*math.Sin(δ)*math.Cos(θ))
	λ2 := λ1 + math.Atan2(math.Sin(θ)*math.Sin(δ)*math.Cos(φ1), math.Cos(δ)-math.Sin(φ1)*math.Sin(φ2))
	return φ2 * 180 / math.Pi, λ2 * 180 / math.Pi
}

// round5 rounds to the 5 decimals the server keeps (docs/api.md §2.2), so that what is sent is what
// is stored and a line's first point stays equal to lat/lon.
func round5(v float64) float64 { return math.Round(v*1e5) / 1e5 }

func pick(r *rand.Rand, ws []weighted) string {
	total := 0.0
	for _, w := range ws {
		total += w.Weight
	}
	x := r.Float64() * total
	for _, w := range ws {
		if x < w.Weight {
			return w.Type
		}
		x -= w.Weight
	}
	return ws[len(ws)-1].Type
}
