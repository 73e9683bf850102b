package alerts

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
)

// ring builds a closed ring from lon, lat pairs.
func ring(lonLat ...float64) []geo.Point {
	var out []geo.Point
	for i := 0; i+1 < len(lonLat); i += 2 {
		out = append(out, geo.Point{Lon: lonLat[i], Lat: lonLat[i+1]})
	}
	return append(out, out[0])
}

func circle(lat, lon, r float64) Area { return Area{Circle: &Circle{geo.Point{Lat: lat, Lon: lon}, r}} }

// docs/webhooks.md §5: an area is a circle of 10 m to 100 km, or a polygon of 3 to 256
// positions, closed, in range, not crossing itself, spanning less than 180° of longitude; a
// refusal names the position at fault.
func TestAreaCheck(t *testing.T) {
	big := make([]geo.Point, 0, MaxVertices+2)
	for i := range MaxVertices {
		a := float64(i) / MaxVertices * 6.283
		big = append(big, geo.Point{Lat: 50 + 0.1*math.Sin(a), Lon: 8 + 0.1*math.Cos(a)})
	}
	tooBig := append(append([]geo.Point{}, big...), geo.Point{Lat: 50.05, Lon: 8.2}, big[0])
	notClosed := ring(8, 50, 8.1, 50, 8.1, 50.1)
	notClosed[3] = geo.Point{Lat: 50.1, Lon: 8}
	for _, tc := range []struct {
		name  string
		area  Area
		index int
		want  string // part of the message; empty when the area is good
	}{
		{"circle", circle(50, 8, 5000), 0, ""},
		{"circle too small", circle(50, 8, 9), -1, "radius of 10 to 100000"},
		{"circle too big", circle(50, 8, 100_001), -1, "radius"},
		{"centre out of range", circle(91, 8, 500), -1, "centre in range"},
		{"triangle", Area{Polygon: ring(8, 50, 8.1, 50, 8.1, 50.1)}, 0, ""},
		{"256 vertices", Area{Polygon: append(big, big[0])}, 0, ""},
		{"257 vertices", Area{Polygon: tooBig}, -1, "4 to 257 positions"},
		{"two vertices", Area{Polygon: ring(8, 50, 8.1, 50)}, -1, "4 to 257"},
		{"not closed", Area{Polygon: notClosed}, 3, "end at the position it starts"},
		{"latitude out of range", Area{Polygon: ring(8, 50, 8.1, 95, 8.1, 50.1)}, 1, "out of range"},
		{"repeated position", Area{Polygon: ring(8, 50, 8.1, 50, 8.1, 50, 8.1, 50.1)}, 2, "repeats"},
		{"bow tie", Area{Polygon: ring(8, 50, 8.1, 50.1, 8.1, 50, 8, 50.1)}, 2, "crosses itself"},
		{"spike touching an edge", Area{Polygon: ring(8, 50, 8.2, 50, 8.2, 50.2, 8.1, 50, 8, 50.2)}, 2, "crosses itself"},
		{"across the antimeridian", Area{Polygon: ring(179, 10, -179, 10, -179, 11, 179, 11)}, -1, "antimeridian"},
		{"a line", Area{Polygon: ring(8, 50, 9, 51, 10, 52)}, -1, "no area"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.area.Check()
			switch {
			case tc.want == "" && p != nil:
				t.Fatalf("refused: %+v", p)
			case tc.want != "" && p == nil:
				t.Fatalf("accepted; want %q", tc.want)
			case p != nil && (p.Index != tc.index || !strings.Contains(p.Msg, tc.want)):
				t.Fatalf("problem %+v; want at %d, saying %q", p, tc.index, tc.want)
			}
		})
	}
}

func pt(lat, lon float64) geo.Point { return geo.Point{Lat: lat, Lon: lon} }

// docs/webhooks.md §5: an event is in an area when its point is, or when part of its line is:
// a position inside, or an edge crossing the boundary; a concave polygon's notch is outside.
func TestAreaTouches(t *testing.T) {
	// A U open to the north: the notch between lon 8.1 and 8.2 above lat 50.1 is outside.
	u := Area{Polygon: ring(8, 50, 8.3, 50, 8.3, 50.3, 8.2, 50.3, 8.2, 50.1, 8.1, 50.1, 8.1, 50.3, 8, 50.3)}
	c := circle(50, 8, 1000)
	for _, tc := range []struct {
		name   string
		area   Area
		extent []geo.Point
		want   bool
	}{
		{"point in circle", c, []geo.Point{geo.Destination(pt(50, 8), 45, 990)}, true},
		{"point past the circle", c, []geo.Point{geo.Destination(pt(50, 8), 45, 1010)}, false},
		{"line through the circle, ends outside", c, []geo.Point{pt(49.98, 8), pt(50.02, 8)}, true},
		{"line beside the circle", c, []geo.Point{pt(49.98, 8.02), pt(50.02, 8.02)}, false},
		{"point in the U", u, []geo.Point{pt(50.05, 8.15)}, true},
		{"point in the notch", u, []geo.Point{pt(50.2, 8.15)}, false},
		{"point on the boundary", u, []geo.Point{pt(50, 8.15)}, true},
		{"line across an arm, ends outside", u, []geo.Point{pt(50.2, 7.9), pt(50.2, 8.15)}, true},
		{"line within the notch", u, []geo.Point{pt(50.2, 8.12), pt(50.25, 8.18)}, false},
		{"point far away", u, []geo.Point{pt(-33, 151)}, false},
	} {
		if got := tc.area.Touches(tc.extent); got != tc.want {
			t.Errorf("%s: Touches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The index's boxes never lose a match: for random rules and events, Matching finds exactly
// the rules whose Matches says yes.
func TestIndexFindsWhatMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var rules []Rule
	for i := range 300 {
		lat, lon := -80+160*rng.Float64(), -179+358*rng.Float64()
		r := Rule{ID: string(rune('a' + i%26)), Environment: "live", Enabled: true}
		if i%2 == 0 {
			r.Area = circle(lat, lon, MinRadiusM+rng.Float64()*MaxRadiusM)
		} else {
			d := 0.01 + rng.Float64()
			r.Area = Area{Polygon: ring(lon, lat, lon+d, lat, lon+d/2, lat+d)}
		}
		if r.Area.Check() != nil {
			continue
		}
		rules = append(rules, r)
	}
	x := NewIndex(rules)
	matches := 0
	for range 3000 {
		r := rules[rng.IntN(len(rules))]
		var at geo.Point
		if r.Area.Circle != nil {
			at = geo.Destination(r.Area.Circle.Center, rng.Float64()*360, rng.Float64()*r.Area.Circle.RadiusM*1.3)
		} else {
			at = pt(r.Area.Polygon[0].Lat+rng.Float64()*1.2-0.1, r.Area.Polygon[0].Lon+rng.Float64()*1.2-0.1)
		}
		ev := event.Event{Status: event.StatusActive, Environment: "live", Lat: at.Lat, Lon: at.Lon}
		var want []string
		for _, r := range rules {
			if r.Matches(ev) {
				want = append(want, r.ID)
			}
		}
		var got []string
		for _, r := range x.Matching(ev) {
			got = append(got, r.ID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("event at %v: index found %v, every rule checked finds %v", at, got, want)
		}
		matches += len(want)
	}
	if matches < 1000 {
		t.Fatalf("only %d matches in 3000 events: the test does not exercise the index", matches)
	}
}
