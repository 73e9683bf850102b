// Package geo is the pure geometry of the service: great-circle distances from a query point to
// an event's extent (a point or a LineString), the H3 cells an extent is indexed under, the H3
// cells a query circle must read, and the coordinate rounding applied on write. It does no I/O.
//
// All geometry is on a sphere of mean Earth radius and is computed with unit vectors, not with
// longitude arithmetic, so the antimeridian and the poles need no special cases: a segment from
// lon 179.99 to lon -179.99 is the 2 km one, the short way round.
package geo

import (
	"math"
	"unsafe"
)

// EarthRadius is the mean Earth radius in metres (IUGG R1), the radius every distance here uses.
const EarthRadius = 6371008.8

// Point is a position in decimal degrees. Latitude comes first here; the GeoJSON wire order
// ([lon, lat]) is the HTTP layer's concern.
type Point struct {
	Lat, Lon float64
}

// Valid reports whether p is a finite position with latitude in -90..90 and longitude in
// -180..180, the ranges of docs/api.md §2.2.
func (p Point) Valid() bool {
	return p.Lat >= -90 && p.Lat <= 90 && p.Lon >= -180 && p.Lon <= 180
}

// Distance returns the great-circle distance in metres between a and b (haversine formula on a
// sphere of EarthRadius).
func Distance(a, b Point) float64 {
	lat1, lat2 := a.Lat*degToRad, b.Lat*degToRad
	dLat := lat2 - lat1
	dLon := (b.Lon - a.Lon) * degToRad
	h := sq(math.Sin(dLat/2)) + math.Cos(lat1)*math.Cos(lat2)*sq(math.Sin(dLon/2))
	// Clamp: rounding can push h a hair above 1 for antipodal points, and Asin would return NaN.
	return 2 * EarthRadius * math.Asin(math.Sqrt(min(h, 1)))
}

// DistanceToExtent returns the distance in metres from p to the nearest point of an event's
// extent: a single point, or a LineString whose segments are great-circle arcs. The nearest
// point may lie anywhere on a segment, not only at a vertex (docs/api.md §4.1 rule 3: distance is
// measured to the event's full extent, so a long segment containing the point is returned).
// An empty extent is infinitely far away. Points are expected to be Valid.
func DistanceToExtent(p Point, extent []Point) float64 {
	if len(extent) == 0 {
		return math.Inf(1)
	}
	pv := toVec(p)
	a := toVec(extent[0])
	best := angle(pv, a)
	for _, q := range extent[1:] {
		b := toVec(q)
		best = min(best, newArc(a, b).angleTo(pv))
		a = b
	}
	return best * EarthRadius
}

// Path is an extent prepared for many distance measures: the great circle of each segment is
// computed once rather than on every DistanceToExtent. A query measures the same cached
// LineStrings again and again, and their segments were most of the exact distances' cost.
type Path struct {
	start vec
	arcs  []arc
}

// NewPath prepares a non-empty extent.
func NewPath(extent []Point) *Path {
	p := &Path{start: toVec(extent[0]), arcs: make([]arc, 0, len(extent)-1)}
	a := p.start
	for _, q := range extent[1:] {
		b := toVec(q)
		p.arcs = append(p.arcs, newArc(a, b))
		a = b
	}
	return p
}

// Distance is DistanceToExtent(q, the extent), to the bit: the same operations on the same
// values (TestPathDistanceIsDistanceToExtent).
func (p *Path) Distance(q Point) float64 {
	pv := toVec(q)
	best := angle(pv, p.start)
	for _, g := range p.arcs {
		best = min(best, g.angleTo(pv))
	}
	return best * EarthRadius
}

// Bytes is roughly the memory a Path holds, for caches that count theirs.
func (p *Path) Bytes() int64 {
	return int64(unsafe.Sizeof(*p)) + int64(len(p.arcs))*int64(unsafe.Sizeof(arc{}))
}

// Unit is a position as a unit vector in Earth-centred Cartesian coordinates. The squared
// chord between two of them grows with their distance and takes no trigonometry, so many
// positions can be compared with one distance at the cost of a sine (ChordSquared): an area
// query sets most of its candidates aside that way before measuring any exactly.
type Unit struct{ X, Y, Z float64 }

// Unit returns p as a unit vector.
func (p Point) Unit() Unit {
	v := toVec(p)
	return Unit{v.x, v.y, v.z}
}

// ChordSquared returns the squared length of the chord between u and w, on the unit sphere.
func (u Unit) ChordSquared(w Unit) float64 {
	dx, dy, dz := u.X-w.X, u.Y-w.Y, u.Z-w.Z
	return dx*dx + dy*dy + dz*dz
}

// ChordMetres returns the length in metres of the chord between u and w on the Earth's
// sphere: never longer than their great-circle distance, so a lower bound of it that takes
// no trigonometry.
func (u Unit) ChordMetres(w Unit) float64 { return math.Sqrt(u.ChordSquared(w)) * EarthRadius }

// ChordSquared returns the squared chord, on the unit sphere, of a great-circle distance of
// metres: two positions are farther apart than metres exactly when their Unit.ChordSquared
// is larger, up to rounding (callers compare with a distance a metre longer, which rounding
// cannot undo). From half the Earth's circumference on it is +Inf: nothing is farther.
func ChordSquared(metres float64) float64 {
	a := max(metres, 0) / EarthRadius
	if a >= math.Pi {
		return math.Inf(1)
	}
	return sq(2 * math.Sin(a/2))
}

// ChordBound returns an upper bound of ChordSquared(metres) that takes no trigonometry: a
// chord is never longer than its arc. It exceeds ChordSquared by a relative a²/12 for an
// angle a, 2e-7 at 10 km: a filter that uses it lets through a hair more, never less.
func ChordBound(metres float64) float64 {
	return sq(max(metres, 0) / EarthRadius)
}

// Length returns the length in metres of an extent along its great-circle segments; a single
// point has length 0. Callers use it to bound the size of what they index.
func Length(extent []Point) float64 {
	var sum float64
	for i := 1; i < len(extent); i++ {
		sum += angle(toVec(extent[i-1]), toVec(extent[i]))
	}
	return sum * EarthRadius
}

const degToRad = math.Pi / 180

func sq(x float64) float64 { return x * x }

// vec is a point on the unit sphere in Earth-centred Cartesian coordinates.
type vec struct{ x, y, z float64 }

func toVec(p Point) vec {
	lat, lon := p.Lat*degToRad, p.Lon*degToRad
	cl := math.Cos(lat)
	return vec{cl * math.Cos(lon), cl * math.Sin(lon), math.Sin(lat)}
}

func (v vec) point() Point {
	return Point{
		Lat: math.Atan2(v.z, math.Hypot(v.x, v.y)) / degToRad,
		Lon: math.Atan2(v.y, v.x) / degToRad,
	}
}

func (v vec) dot(w vec) float64 { return v.x*w.x + v.y*w.y + v.z*w.z }

func (v vec) cross(w vec) vec {
	return vec{v.y*w.z - v.z*w.y, v.z*w.x - v.x*w.z, v.x*w.y - v.y*w.x}
}

func (v vec) norm() float64 { return math.Sqrt(v.dot(v)) }

func (v vec) scale(k float64) vec { return vec{v.x * k, v.y * k, v.z * k} }

func (v vec) add(w vec) vec { return vec{v.x + w.x, v.y + w.y, v.z + w.z} }

// angle returns the central angle between unit vectors u and v. atan2 of the cross and dot
// products stays accurate for tiny and near-antipodal angles, where acos and asin do not.
func angle(u, v vec) float64 {
	return math.Atan2(u.cross(v).norm(), u.dot(v))
}

// degenerateSine is the |a×b| below which two vertices are treated as the same point or as
// exactly antipodal: 1e-12 rad is about 6 µm, far below the 1 m coordinate precision of docs/api.md
// §8.
const degenerateSine = 1e-12

// arc is the great-circle segment from a, turning towards dir, over span radians. A point on it
// at angle t in [0, span] is a·cos t + dir·sin t. Distance and sampling share this one
// parametrisation, so the index samples exactly the segments the distance measures.
type arc struct {
	a, b, dir, normal vec
	span              float64
}

func newArc(a, b vec) arc {
	n := a.cross(b)
	s := n.norm()
	c := a.dot(b)
	if s < degenerateSine {
		if c > 0 {
			// Repeated vertex: a zero-length segment.
			return arc{a: a, b: b, span: 0}
		}
		// Antipodal vertices: every great circle through a joins them, so the "short way" is
		// undefined. Pick one deterministically (through the poles, or the prime meridian's
		// plane when a is a pole) so that distance and index agree.
		axis := vec{0, 0, 1}
		if math.Abs(a.z) > 0.9 {
			axis = vec{1, 0, 0}
		}
		n = a.cross(axis)
		s = n.norm()
	}
	normal := n.scale(1 / s)
	return arc{a: a, b: b, dir: normal.cross(a), normal: normal, span: math.Atan2(s, c)}
}

// at returns the point of the arc at angle t from its start.
func (g arc) at(t float64) vec {
	return g.a.scale(math.Cos(t)).add(g.dir.scale(math.Sin(t)))
}

// angleTo returns the central angle from p to the nearest point of the arc: the cross-track
// angle when p's projection on the great circle falls within the arc (along-track angle in
// [0, span]), otherwise the angle to the nearer end. For arcs up to a half circle the distance
// along the great circle has a single minimum, so the nearer end is right outside the span.
func (g arc) angleTo(p vec) float64 {
	if g.span == 0 {
		return angle(p, g.a)
	}
	along := math.Atan2(p.dot(g.dir), p.dot(g.a))
	if along >= 0 && along <= g.span {
		cross := p.dot(g.normal)
		inPlane := math.Hypot(p.dot(g.a), p.dot(g.dir))
		return math.Atan2(math.Abs(cross), inPlane)
	}
	return min(angle(p, g.a), angle(p, g.b))
}

// Destination returns the point metres from p along the initial bearing (degrees clockwise
// from north) on a great circle. The open-data formats draw a point event as a short line
// (docs/interop.md §3).
func Destination(p Point, bearing, metres float64) Point {
	lat1, lon1 := p.Lat*degToRad, p.Lon*degToRad
	theta, delta := bearing*degToRad, metres/EarthRadius
	lat2 := math.Asin(math.Sin(lat1)*math.Cos(delta) + math.Cos(lat1)*math.Sin(delta)*math.Cos(theta))
	lon2 := lon1 + math.Atan2(math.Sin(theta)*math.Sin(delta)*math.Cos(lat1), math.Cos(delta)-math.Sin(lat1)*math.Sin(lat2))
	lon := math.Mod(lon2/degToRad+540, 360) - 180
	return Point{Lat: lat2 / degToRad, Lon: lon}
}

// Bearing returns the initial bearing from a to b, in degrees clockwise from north, 0 to 360.
func Bearing(a, b Point) float64 {
	lat1, lat2 := a.Lat*degToRad, b.Lat*degToRad
	dLon := (b.Lon - a.Lon) * degToRad
	y := math.Sin(dLon) * math.Cos(lat2)
	x := math.Cos(lat1)*math.Sin(lat2) - math.Sin(lat1)*math.Cos(lat2)*math.Cos(dLon)
	return math.Mod(math.Atan2(y, x)/degToRad+360, 360)
}
