package geo_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/roadevents/roadevents/shared/geo"
)

// metresPerDegree is one degree of a great circle on the sphere of geo.EarthRadius.
const metresPerDegree = math.Pi * geo.EarthRadius / 180

func TestDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		a, b   geo.Point
		want   float64
		within float64 // absolute tolerance, metres
	}{
		{"Paris to London", geo.Point{Lat: 48.8566, Lon: 2.3522}, geo.Point{Lat: 51.5074, Lon: -0.1278}, 343_500, 343_500 * 0.005},
		{"one degree of latitude", geo.Point{Lat: 45, Lon: 7}, geo.Point{Lat: 46, Lon: 7}, 111_195, 1},
		{"same point", geo.Point{Lat: 12.3, Lon: 45.6}, geo.Point{Lat: 12.3, Lon: 45.6}, 0, 0},
		{"across the antimeridian the short way", geo.Point{Lat: 0, Lon: 179.99}, geo.Point{Lat: 0, Lon: -179.99}, 2_224, 1},
		{"lon 180 and -180 are one meridian", geo.Point{Lat: 10, Lon: 180}, geo.Point{Lat: 10, Lon: -180}, 0, 1e-6},
		{"over the pole on opposite longitudes", geo.Point{Lat: 89.9999, Lon: 0}, geo.Point{Lat: 89.9999, Lon: 180}, 22.24, 0.01},
		{"any longitude at the pole", geo.Point{Lat: 90, Lon: 0}, geo.Point{Lat: 90, Lon: 123}, 0, 1e-6},
		{"antipodes", geo.Point{Lat: 0, Lon: 0}, geo.Point{Lat: 0, Lon: 180}, math.Pi * geo.EarthRadius, 1e-3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := geo.Distance(tt.a, tt.b)
			if math.Abs(got-tt.want) > tt.within {
				t.Errorf("Distance(%v, %v) = %.3f m; want %.3f ± %.3f", tt.a, tt.b, got, tt.want, tt.within)
			}
			if back := geo.Distance(tt.b, tt.a); back != got {
				t.Errorf("Distance is not symmetric: %v one way, %v the other", got, back)
			}
		})
	}
}

// TestDistanceToExtent checks docs/api.md §4.1 rule 3: distance is measured to the event's full
// extent, any point of any segment, not only to its vertices.
func TestDistanceToExtent(t *testing.T) {
	t.Parallel()
	equator := []geo.Point{{Lat: 0, Lon: 0}, {Lat: 0, Lon: 1}}
	// 30 m north of the equator at lon 10, beside the third segment of a line whose first point
	// is 50 km away and whose nearest vertex is 55 km away.
	thirty := geo.Point{Lat: 30 / metresPerDegree, Lon: 10}
	detour := []geo.Point{{Lat: 0.45, Lon: 10}, {Lat: 0.45, Lon: 9.5}, {Lat: 0, Lon: 9.5}, {Lat: 0, Lon: 10.5}, {Lat: 0.3, Lon: 10.5}}
	tests := []struct {
		name   string
		p      geo.Point
		extent []geo.Point
		want   float64
		within float64
	}{
		{"single point", geo.Point{Lat: 45, Lon: 7}, []geo.Point{{Lat: 46, Lon: 7}}, 111_195, 1},
		{"on the segment", geo.Point{Lat: 0, Lon: 0.5}, equator, 0, 1e-6},
		{"on a vertex", geo.Point{Lat: 0, Lon: 1}, equator, 0, 1e-6},
		{"beside the middle of the segment", geo.Point{Lat: 0.01, Lon: 0.5}, equator, 0.01 * metresPerDegree, 1e-3},
		{"beyond the end, in line", geo.Point{Lat: 0, Lon: 1.01}, equator, 0.01 * metresPerDegree, 1e-3},
		{"before the start, in line", geo.Point{Lat: 0, Lon: -0.02}, equator, 0.02 * metresPerDegree, 1e-3},
		{"beyond the end, off line", geo.Point{Lat: 0.01, Lon: 1.01}, equator, geo.Distance(geo.Point{Lat: 0.01, Lon: 1.01}, geo.Point{Lat: 0, Lon: 1}), 1e-3},
		{"far vertices, third segment passes 30 m away", thirty, detour, 30, 0.01},
		{"segment across the antimeridian passes through lon 180", geo.Point{Lat: 0, Lon: 180}, []geo.Point{{Lat: 0, Lon: 179.9}, {Lat: 0, Lon: -179.9}}, 0, 1e-6},
		{"segment across the antimeridian seen from lon -180", geo.Point{Lat: 0.001, Lon: -180}, []geo.Point{{Lat: 0, Lon: 179.9}, {Lat: 0, Lon: -179.9}}, 0.001 * metresPerDegree, 1e-3},
		{"segment across the antimeridian does not go the long way", geo.Point{Lat: 0, Lon: 0}, []geo.Point{{Lat: 0, Lon: 179.9}, {Lat: 0, Lon: -179.9}}, 179.9 * metresPerDegree, 1},
		{"segment over the pole passes through it", geo.Point{Lat: 90, Lon: 45}, []geo.Point{{Lat: 89.9, Lon: 0}, {Lat: 89.9, Lon: 180}}, 0, 1e-3},
		{"segment over the pole seen from the side", geo.Point{Lat: 89.95, Lon: 90}, []geo.Point{{Lat: 89.9, Lon: 0}, {Lat: 89.9, Lon: 180}}, 0.05 * metresPerDegree, 1e-2},
		{"repeated vertex is a point", geo.Point{Lat: 1, Lon: 1}, []geo.Point{{Lat: 1, Lon: 1.01}, {Lat: 1, Lon: 1.01}}, geo.Distance(geo.Point{Lat: 1, Lon: 1}, geo.Point{Lat: 1, Lon: 1.01}), 1e-3},
		{"empty extent is infinitely far", geo.Point{Lat: 1, Lon: 1}, nil, math.Inf(1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := geo.DistanceToExtent(tt.p, tt.extent)
			if !(math.Abs(got-tt.want) <= tt.within) && got != tt.want {
				t.Errorf("DistanceToExtent(%v, %v) = %.4f m; want %.4f ± %g", tt.p, tt.extent, got, tt.want, tt.within)
			}
		})
	}
}

// TestDistanceToExtentNearParallel checks segments nearly parallel to the direction of the
// point, where cross-track arithmetic is most fragile, against brute force over samples.
func TestDistanceToExtentNearParallel(t *testing.T) {
	t.Parallel()
	seg := []geo.Point{{Lat: 0, Lon: 0}, {Lat: 0.0001, Lon: 1}}
	for _, p := range []geo.Point{
		{Lat: 0.00005, Lon: 0.5},     // on it, nearly
		{Lat: 0.0006, Lon: 0.5},      // 55 m beside it
		{Lat: 0.000001, Lon: -0.001}, // just before its start, almost in line
		{Lat: 0.0001, Lon: 1.0005},   // just after its end, almost in line
	} {
		got := geo.DistanceToExtent(p, seg)
		want := bruteDistance(p, seg, 100_000)
		if math.Abs(got-want) > 1 {
			t.Errorf("DistanceToExtent(%v, %v) = %.3f m; want %.3f (brute force)", p, seg, got, want)
		}
	}
}

// TestDistanceToExtentAgainstBruteForce compares the cross-track computation with the minimum
// over densely interpolated points, for random short segments anywhere on Earth, the poles and
// the antimeridian included.
func TestDistanceToExtentAgainstBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 1))
	for i := range 150 {
		a := randomPoint(rng)
		b := destination(a, rng.Float64()*360, rng.Float64()*20_000)
		p := destination(a, rng.Float64()*360, rng.Float64()*30_000)
		seg := []geo.Point{a, b}
		got := geo.DistanceToExtent(p, seg)
		// 20,000 samples over at most 20 km: the true minimum is within 0.5 m of the sampled one.
		want := bruteDistance(p, seg, 20_000)
		if got > want+1e-6 || want-got > 0.5 {
			t.Errorf("case %d: DistanceToExtent(%v, %v) = %.3f m; want %.3f (brute force)", i, p, seg, got, want)
		}
	}
}

func TestDistanceToExtentAntipodalVertices(t *testing.T) {
	t.Parallel()
	// Every great circle joins antipodes, so the segment is ambiguous; whichever one is taken,
	// the result must be a real distance, zero at the ends, and never more than a quarter of a
	// great circle (the farthest any point can be from a great circle).
	seg := []geo.Point{{Lat: 0, Lon: 0}, {Lat: 0, Lon: 180}}
	for _, p := range []geo.Point{{Lat: 0, Lon: 0}, {Lat: 0, Lon: 180}, {Lat: 0, Lon: 90}, {Lat: 45, Lon: -60}, {Lat: 90, Lon: 0}} {
		got := geo.DistanceToExtent(p, seg)
		if math.IsNaN(got) || got < 0 || got > math.Pi/2*geo.EarthRadius+1e-6 {
			t.Errorf("DistanceToExtent(%v, antipodal segment) = %v; want a distance in [0, quarter circle]", p, got)
		}
	}
	for _, end := range seg {
		if got := geo.DistanceToExtent(end, seg); got > 1e-6 {
			t.Errorf("DistanceToExtent(%v, antipodal segment) = %v; want 0 at its own vertex", end, got)
		}
	}
}

func TestLength(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		extent []geo.Point
		want   float64
	}{
		{"point", []geo.Point{{Lat: 1, Lon: 1}}, 0},
		{"two degrees along the equator in two segments", []geo.Point{{Lat: 0, Lon: -1}, {Lat: 0, Lon: 0}, {Lat: 0, Lon: 1}}, 2 * metresPerDegree},
		{"across the antimeridian", []geo.Point{{Lat: 0, Lon: 179.99}, {Lat: 0, Lon: -179.99}}, 0.02 * metresPerDegree},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := geo.Length(tt.extent); math.Abs(got-tt.want) > 1e-3 {
				t.Errorf("Length(%v) = %.4f; want %.4f", tt.extent, got, tt.want)
			}
		})
	}
}

func TestPointValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    geo.Point
		want bool
	}{
		{"corner of the range", geo.Point{Lat: -90, Lon: 180}, true},
		{"ordinary", geo.Point{Lat: 48.85, Lon: 2.35}, true},
		{"latitude above 90", geo.Point{Lat: 90.00001, Lon: 0}, false},
		{"longitude below -180", geo.Point{Lat: 0, Lon: -180.00001}, false},
		{"NaN", geo.Point{Lat: math.NaN(), Lon: 0}, false},
		{"infinite", geo.Point{Lat: 0, Lon: math.Inf(1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.p.Valid(); got != tt.want {
				t.Errorf("%v.Valid() = %v; want %v", tt.p, got, tt.want)
			}
		})
	}
}

// --- helpers shared by the tests of this package, written independently of the package's own
// vector geometry (textbook latitude/longitude formulas) so they can serve as oracles.

const rad = math.Pi / 180

// destination returns the point dist metres from p along the initial bearing (degrees).
func destination(p geo.Point, bearing, dist float64) geo.Point {
	d := dist / geo.EarthRadius
	lat1, lon1, th := p.Lat*rad, p.Lon*rad, bearing*rad
	sinLat2 := math.Sin(lat1)*math.Cos(d) + math.Cos(lat1)*math.Sin(d)*math.Cos(th)
	lat2 := math.Asin(max(-1, min(1, sinLat2)))
	lon2 := lon1 + math.Atan2(math.Sin(th)*math.Sin(d)*math.Cos(lat1), math.Cos(d)-math.Sin(lat1)*sinLat2)
	lon := math.Mod(lon2/rad+540, 360) - 180
	return geo.Point{Lat: lat2 / rad, Lon: lon}
}

// interpolate returns the point a fraction f of the way from a to b on their great circle.
func interpolate(a, b geo.Point, f float64) geo.Point {
	d := geo.Distance(a, b) / geo.EarthRadius
	if d == 0 {
		return a
	}
	A := math.Sin((1-f)*d) / math.Sin(d)
	B := math.Sin(f*d) / math.Sin(d)
	lat1, lon1, lat2, lon2 := a.Lat*rad, a.Lon*rad, b.Lat*rad, b.Lon*rad
	x := A*math.Cos(lat1)*math.Cos(lon1) + B*math.Cos(lat2)*math.Cos(lon2)
	y := A*math.Cos(lat1)*math.Sin(lon1) + B*math.Cos(lat2)*math.Sin(lon2)
	z := A*math.Sin(lat1) + B*math.Sin(lat2)
	return geo.Point{Lat: math.Atan2(z, math.Hypot(x, y)) / rad, Lon: math.Atan2(y, x) / rad}
}

// bruteDistance is the minimum distance from p to n+1 evenly spaced points of each segment.
func bruteDistance(p geo.Point, extent []geo.Point, n int) float64 {
	best := geo.Distance(p, extent[0])
	for i := 1; i < len(extent); i++ {
		for k := 0; k <= n; k++ {
			best = min(best, geo.Distance(p, interpolate(extent[i-1], extent[i], float64(k)/float64(n))))
		}
	}
	return best
}

// randomPoint draws a point uniformly over the sphere, or a hard place a fifth of the time:
// the antimeridian, or within a degree of a pole.
func randomPoint(rng *rand.Rand) geo.Point {
	switch rng.IntN(10) {
	case 0:
		return geo.Point{Lat: rng.Float64()*170 - 85, Lon: []float64{180, -180, 179.999, -179.999}[rng.IntN(4)]}
	case 1:
		lat := 89 + rng.Float64()
		if rng.IntN(2) == 0 {
			lat = -lat
		}
		return geo.Point{Lat: lat, Lon: rng.Float64()*360 - 180}
	default:
		return geo.Point{Lat: math.Asin(2*rng.Float64()-1) / rad, Lon: rng.Float64()*360 - 180}
	}
}

// A prepared Path measures exactly what DistanceToExtent measures, to the bit, for extents
// anywhere (across the antimeridian, over the poles, with repeated and antipodal vertices).
func TestPathDistanceIsDistanceToExtent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 2))
	randomPoint := func() geo.Point { return geo.Point{Lat: rng.Float64()*180 - 90, Lon: rng.Float64()*360 - 180} }
	extents := [][]geo.Point{
		{{Lat: 0, Lon: 179.99}, {Lat: 0, Lon: -179.99}},
		{{Lat: 89.9, Lon: 0}, {Lat: 89.9, Lon: 180}},
		{{Lat: 10, Lon: 10}, {Lat: 10, Lon: 10}, {Lat: 10.01, Lon: 10}},
		{{Lat: 0, Lon: 0}, {Lat: 0, Lon: 180}},
	}
	for range 300 {
		base := randomPoint()
		ext := []geo.Point{base}
		for range rng.IntN(8) {
			ext = append(ext, geo.Point{Lat: max(-90, min(90, base.Lat+rng.NormFloat64()*0.05)), Lon: base.Lon + rng.NormFloat64()*0.05})
		}
		extents = append(extents, ext)
	}
	for _, ext := range extents {
		path := geo.NewPath(ext)
		for range 20 {
			q := randomPoint()
			if rng.IntN(2) == 0 {
				q = geo.Point{Lat: max(-90, min(90, ext[0].Lat+rng.NormFloat64()*0.02)), Lon: ext[0].Lon + rng.NormFloat64()*0.02}
			}
			if got, want := path.Distance(q), geo.DistanceToExtent(q, ext); got != want {
				t.Fatalf("extent %v from %v: Path.Distance %v, DistanceToExtent %v", ext, q, got, want)
			}
		}
	}
}

// A chord compared with ChordSquared of a distance a metre longer (or shorter) says on which
// side of that distance two positions are, at every scale from metres to the antipodes: the
// area query sets candidates aside on it without measuring them (docs/api.md §4.1 rule 3).
func TestChordSquaredOrdersAsDistance(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 9))
	for i := range 200_000 {
		a := geo.Point{Lat: r.Float64()*180 - 90, Lon: r.Float64()*360 - 180}
		spread := math.Pow(10, -6+7*r.Float64()) // degrees: a few centimetres to anywhere
		b := geo.Point{Lat: max(-90, min(90, a.Lat+r.NormFloat64()*spread)), Lon: math.Mod(a.Lon+r.NormFloat64()*spread+540, 360) - 180}
		if i%1000 == 0 {
			b = geo.Point{Lat: -a.Lat, Lon: math.Mod(a.Lon+360, 360) - 180} // antipodal
		}
		d, c := geo.Distance(a, b), a.Unit().ChordSquared(b.Unit())
		if c > geo.ChordSquared(d+1) {
			t.Fatalf("%v to %v: %v m, yet a chord longer than %v m's", a, b, d, d+1)
		}
		if d > 1 && c <= geo.ChordSquared(d-1) {
			t.Fatalf("%v to %v: %v m, yet a chord no longer than %v m's", a, b, d, d-1)
		}
	}
	if got := geo.ChordSquared(math.Pi * geo.EarthRadius); !math.IsInf(got, 1) {
		t.Errorf("ChordSquared of half the circumference = %v; want +Inf (nothing is farther)", got)
	}
}

// ChordBound never falls below the chord of a distance, so a filter on it keeps all that
// ChordSquared would; ChordMetres is never longer than the distance, so it bounds a group's
// records from below (the area query's group and LineString filters, docs/api.md §4.1
// rule 3). Up to tens of kilometres ChordBound still sets aside what is a metre farther.
func TestChordBoundIsAnUpperBound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 13))
	for range 200_000 {
		a := geo.Point{Lat: r.Float64()*180 - 90, Lon: r.Float64()*360 - 180}
		spread := math.Pow(10, -6+7*r.Float64())
		b := geo.Point{Lat: max(-90, min(90, a.Lat+r.NormFloat64()*spread)), Lon: math.Mod(a.Lon+r.NormFloat64()*spread+540, 360) - 180}
		d, c := geo.Distance(a, b), a.Unit().ChordSquared(b.Unit())
		if c > geo.ChordBound(d+1) {
			t.Fatalf("%v to %v: %v m, yet a chord longer than ChordBound(%v)", a, b, d, d+1)
		}
		if m := a.Unit().ChordMetres(b.Unit()); m > d+1e-6 {
			t.Fatalf("%v to %v: a chord of %v m, longer than the distance %v m", a, b, m, d)
		}
		if d > 1 && d < 50_000 && c <= geo.ChordBound(d-1) {
			t.Fatalf("%v to %v: %v m, yet ChordBound(%v) does not set it aside", a, b, d, d-1)
		}
	}
}

// Destination and Bearing undo each other: a point 50 m along a bearing lies 50 m away, in
// that bearing, across the antimeridian too.
func TestDestinationAndBearing(t *testing.T) {
	t.Parallel()
	for _, p := range []geo.Point{{Lat: 48.137, Lon: 11.575}, {Lat: -33.9, Lon: 151.2}, {Lat: 0, Lon: 179.9999}, {Lat: 64.1, Lon: -21.9}} {
		for _, bearing := range []float64{0, 45, 90, 180, 271, 359} {
			q := geo.Destination(p, bearing, 50)
			if d := geo.Distance(p, q); math.Abs(d-50) > 0.01 {
				t.Errorf("Destination(%v, %v, 50) = %v, %.3f m away; want 50", p, bearing, q, d)
			}
			if b := geo.Bearing(p, q); math.Abs(math.Remainder(b-bearing, 360)) > 0.01 {
				t.Errorf("Bearing(%v, %v) = %.3f; want %v", p, q, b, bearing)
			}
			if !q.Valid() {
				t.Errorf("Destination(%v, %v, 50) = %v: not a valid position", p, bearing, q)
			}
		}
	}
}
