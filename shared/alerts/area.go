package alerts

import (
	"fmt"
	"math"

	"github.com/roadevents/roadevents/shared/geo"
)

// Area limits (docs/webhooks.md §5).
const (
	MinRadiusM = 10
	MaxRadiusM = 100_000
	// MaxVertices bounds a polygon's ring, its closing position not counted.
	MaxVertices = 256
)

// Circle is the area within RadiusM metres of Center.
type Circle struct {
	Center  geo.Point
	RadiusM float64
}

// Area is where a rule listens: a circle, or a polygon whose ring is closed (its last point is
// its first). A polygon's edges are straight lines in longitude and latitude, as GeoJSON's
// are (RFC 7946 §3.1.1); a circle is measured on the sphere, as every distance of the service.
type Area struct {
	Circle  *Circle
	Polygon []geo.Point
}

// Problem is an area refused, at the position at fault: Index is the polygon position the
// message is about, or -1.
type Problem struct {
	Index int
	Msg   string
}

// Check returns what is wrong with a, or nil. The polygon rules: 3 to MaxVertices distinct
// positions, closed, each in range, spanning less than 180° of longitude (cut one that crosses
// the antimeridian into two rules), no edge of zero length, no two edges crossing or touching.
func (a Area) Check() *Problem {
	if a.Circle != nil {
		c := a.Circle
		if !c.Center.Valid() || c.RadiusM < MinRadiusM || c.RadiusM > MaxRadiusM || math.IsNaN(c.RadiusM) {
			return &Problem{-1, fmt.Sprintf("a circle needs a centre in range and a radius of %d to %d metres", MinRadiusM, MaxRadiusM)}
		}
		return nil
	}
	ring := a.Polygon
	n := len(ring) - 1 // distinct vertices
	if n < 3 || n > MaxVertices {
		return &Problem{-1, fmt.Sprintf("a polygon's ring has 4 to %d positions, the last repeating the first", MaxVertices+1)}
	}
	for i, p := range ring {
		if !p.Valid() {
			return &Problem{i, "the position is out of range: longitude -180 to 180, then latitude -90 to 90"}
		}
	}
	if ring[0] != ring[n] {
		return &Problem{n, "the ring must end at the position it starts from"}
	}
	b := boundsOf(ring)
	if b.maxLon-b.minLon >= 180 {
		return &Problem{-1, "a polygon must span less than 180 degrees of longitude; cut one that crosses the antimeridian into two rules"}
	}
	for i := 1; i <= n; i++ {
		if ring[i] == ring[i-1] {
			return &Problem{i, "the position repeats the one before it"}
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if j == i+1 || i == 0 && j == n-1 {
				continue // neighbours share a vertex
			}
			if segmentsMeet(ring[i], ring[i+1], ring[j], ring[j+1]) {
				return &Problem{j, fmt.Sprintf("the ring crosses itself: the edge from position %d meets the edge from position %d", j, i)}
			}
		}
	}
	if signedArea(ring) == 0 {
		return &Problem{-1, "the polygon has no area"}
	}
	return nil
}

// Touches reports whether an event's extent (a point, or a line of points) lies at least in
// part inside a: a point within it, or a line with a position inside or an edge crossing its
// boundary. a must have passed Check.
func (a Area) Touches(extent []geo.Point) bool {
	if len(extent) == 0 {
		return false
	}
	if a.Circle != nil {
		return geo.DistanceToExtent(a.Circle.Center, extent) <= a.Circle.RadiusM
	}
	for _, p := range extent {
		if inRing(a.Polygon, p) {
			return true
		}
	}
	for i := 1; i < len(extent); i++ {
		for j := 1; j < len(a.Polygon); j++ {
			if segmentsMeet(extent[i-1], extent[i], a.Polygon[j-1], a.Polygon[j]) {
				return true
			}
		}
	}
	return false
}

// bounds is a box of latitude and longitude.
type bounds struct{ minLat, maxLat, minLon, maxLon float64 }

func boundsOf(pts []geo.Point) bounds {
	b := bounds{math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)}
	for _, p := range pts {
		b.minLat, b.maxLat = min(b.minLat, p.Lat), max(b.maxLat, p.Lat)
		b.minLon, b.maxLon = min(b.minLon, p.Lon), max(b.maxLon, p.Lon)
	}
	return b
}

// metresPerDegree is the length of a degree of latitude on the service's sphere.
const metresPerDegree = geo.EarthRadius * math.Pi / 180

// box returns a box holding a, a little wide, so that a rule whose box misses an event's box
// cannot touch the event. A circle near a pole or the antimeridian takes every longitude.
func (a Area) box() bounds {
	if a.Circle == nil {
		return boundsOf(a.Polygon)
	}
	c := a.Circle
	dLat := c.RadiusM / metresPerDegree * 1.01
	b := bounds{c.Center.Lat - dLat, c.Center.Lat + dLat, -180, 180}
	if b.minLat > -89 && b.maxLat < 89 {
		dLon := dLat / math.Cos(max(math.Abs(b.minLat), math.Abs(b.maxLat))*math.Pi/180)
		if c.Center.Lon-dLon > -180 && c.Center.Lon+dLon < 180 {
			b.minLon, b.maxLon = c.Center.Lon-dLon, c.Center.Lon+dLon
		}
	}
	return b
}

func (b bounds) overlaps(o bounds) bool {
	return b.minLat <= o.maxLat && o.minLat <= b.maxLat && b.minLon <= o.maxLon && o.minLon <= b.maxLon
}

// inRing reports whether p is inside the closed ring or on its boundary (even-odd rule).
func inRing(ring []geo.Point, p geo.Point) bool {
	in := false
	for i := 1; i < len(ring); i++ {
		a, b := ring[i-1], ring[i]
		if onSegment(a, b, p) {
			return true
		}
		if (a.Lat > p.Lat) != (b.Lat > p.Lat) {
			lon := a.Lon + (p.Lat-a.Lat)/(b.Lat-a.Lat)*(b.Lon-a.Lon)
			if p.Lon < lon {
				in = !in
			}
		}
	}
	return in
}

// cross is the z of (b-a)×(c-a) in the longitude-latitude plane: its sign says on which side
// of the line ab the point c lies.
func cross(a, b, c geo.Point) float64 {
	return (b.Lon-a.Lon)*(c.Lat-a.Lat) - (b.Lat-a.Lat)*(c.Lon-a.Lon)
}

func onSegment(a, b, p geo.Point) bool {
	return cross(a, b, p) == 0 && min(a.Lon, b.Lon) <= p.Lon && p.Lon <= max(a.Lon, b.Lon) &&
		min(a.Lat, b.Lat) <= p.Lat && p.Lat <= max(a.Lat, b.Lat)
}

// segmentsMeet reports whether the segments ab and cd cross or touch.
func segmentsMeet(a, b, c, d geo.Point) bool {
	d1, d2 := cross(c, d, a), cross(c, d, b)
	d3, d4 := cross(a, b, c), cross(a, b, d)
	if (d1 > 0 && d2 < 0 || d1 < 0 && d2 > 0) && (d3 > 0 && d4 < 0 || d3 < 0 && d4 > 0) {
		return true
	}
	return onSegment(c, d, a) || onSegment(c, d, b) || onSegment(a, b, c) || onSegment(a, b, d)
}

// signedArea is twice the ring's area in square degrees, signed by its orientation.
func signedArea(ring []geo.Point) float64 {
	s := 0.0
	for i := 1; i < len(ring); i++ {
		s += ring[i-1].Lon*ring[i].Lat - ring[i].Lon*ring[i-1].Lat
	}
	return s
}
