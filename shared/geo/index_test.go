package geo_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/geo"
)

// maxQueryRadius is max_query_radius_m of docs/api.md §8.
const maxQueryRadius = 9780.0

// TestCoverProperty is the area index's correctness requirement (docs/api.md §4.1 rule 3): every
// event whose extent is within r of the query point is stored under at least one cell the query
// reads. Query points are drawn worldwide with the antimeridian, the poles and the pentagons
// over-represented; extents are points, long segments passing inside the circle with their vertices
// far outside, random LineStrings (judged by DistanceToExtent, as the query handler judges them),
// and points just outside. It also checks the other way: a cell the query reads never holds an
// extent farther than the padded radius plus that cell's width.
func TestCoverProperty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		res       int
		maxRadius float64
		cases     int
	}{
		{"default level, radii up to the maximum", geo.DefaultLevel, maxQueryRadius, 1500},
		// At level 9 a cell (edge ~ 175 m) is smaller than the sample spacing, so whole cells
		// the line crosses go unindexed: only the cover's padding keeps the property.
		{"level 9, cells finer than the sample spacing", 9, 1500, 200},
		{"level 5, coarse cells", 5, maxQueryRadius, 200},
		// At level 11 (edge ~ 25 m) a segment grazing a small circle between two samples meets
		// no cell of the circle itself: the padding alone finds it.
		{"level 11, cells far finer than the sample spacing", 11, 200, 400},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(42, uint64(i)))
			pentagons, err := h3.Pentagons(tt.res)
			if err != nil {
				t.Fatalf("h3.Pentagons(%d): %v", tt.res, err)
			}
			within := 0
			for n := range tt.cases {
				center := randomPoint(rng)
				if n%25 == 0 { // a pentagon's centre, where H3 is most irregular
					ll, err := pentagons[rng.IntN(len(pentagons))].LatLng()
					if err != nil {
						t.Fatalf("pentagon centre: %v", err)
					}
					center = geo.Point{Lat: ll.Lat, Lon: ll.Lng}
				}
				r := tt.maxRadius * rng.Float64()
				if n%10 == 0 {
					r = 1 + 50*rng.Float64() // tiny circles, smaller than any cell
				}
				r = max(r, 0.5)
				cover, err := geo.CoverCircle(center, r, tt.res)
				if err != nil {
					t.Fatalf("CoverCircle(%v, %v, %d): %v", center, r, tt.res, err)
				}
				kind, extent := randomExtent(rng, center, r)
				cells, err := geo.IndexCells(extent, tt.res)
				if err != nil {
					t.Fatalf("IndexCells(%v, %d): %v", extent, tt.res, err)
				}
				d := geo.DistanceToExtent(center, extent)
				desc := fmt.Sprintf("case %d (%s): centre %v, radius %.1f m, extent at %.2f m: %v", n, kind, center, r, d, extent)

				switch kind {
				case "point inside", "segment through the circle", "segment grazing the circle":
					// The generator put a point of the extent within r; the distance must see it.
					if d > r+1e-3 {
						t.Errorf("%s: DistanceToExtent = %.3f; want <= radius", desc, d)
					}
				case "point just outside":
					// Not required to be found; the exact distance must reject it.
					if d <= r {
						t.Errorf("%s: DistanceToExtent = %.3f; want > radius", desc, d)
					}
				}
				if d <= r {
					within++
					if !intersects(cover, cells) {
						t.Errorf("%s: none of the %d index cells %v is among the %d cells read %v", desc, len(cells), cells, len(cover), cover)
					}
				}
				// Tightness: a read cell holds a sample of the extent, and comes within the padded
				// radius of the centre, so the extent is within that plus the cell's width.
				for _, c := range cells {
					if _, found := slices.BinarySearch(cover, c); found {
						if limit := r + geo.SampleSpacing/2 + 1 + cellDiameter(t, c); d > limit {
							t.Errorf("%s: cell %s is read but the extent is %.1f m away, beyond %.1f m", desc, c, d, limit)
						}
					}
				}
			}
			// The test only means something if most extents were inside their circle.
			if within < tt.cases/2 {
				t.Errorf("only %d of %d extents were within their radius; want at least half", within, tt.cases)
			}
		})
	}
}

// randomExtent returns an extent near the circle (center, r) and what kind it is.
func randomExtent(rng *rand.Rand, center geo.Point, r float64) (string, []geo.Point) {
	switch rng.IntN(6) {
	case 0:
		return "point inside", []geo.Point{destination(center, rng.Float64()*360, r*rng.Float64())}
	case 1:
		return "point just outside", []geo.Point{destination(center, rng.Float64()*360, r+0.5+300*rng.Float64())}
	case 2, 3:
		// A segment through a point q inside the circle, its ends 1 to 30 km beyond the circle,
		// inside a LineString whose other vertices wander farther away.
		q := destination(center, rng.Float64()*360, r*rng.Float64())
		bearing := rng.Float64() * 360
		ahead := destination(q, bearing, r+1000+29_000*rng.Float64())
		behind := destination(q, bearing+180, r+1000+29_000*rng.Float64())
		line := []geo.Point{behind, ahead}
		for range rng.IntN(3) {
			line = append([]geo.Point{destination(line[0], rng.Float64()*360, 5000+20_000*rng.Float64())}, line...)
		}
		for range rng.IntN(3) {
			line = append(line, destination(line[len(line)-1], rng.Float64()*360, 5000+20_000*rng.Float64()))
		}
		return "segment through the circle", line
	case 4:
		// A long segment tangent to the circle just inside its edge: it enters the circle over
		// a short chord that may fall between two samples.
		q := destination(center, rng.Float64()*360, r*(0.97+0.03*rng.Float64()))
		tangent := initialBearing(q, center) + 90
		return "segment grazing the circle", []geo.Point{
			destination(q, tangent, 1000+20_000*rng.Float64()),
			destination(q, tangent+180, 1000+20_000*rng.Float64()),
		}
	default:
		// A random walk starting somewhere within 3r + 2 km; the distance decides.
		start := destination(center, rng.Float64()*360, (3*r+2000)*rng.Float64())
		line := []geo.Point{start}
		for range 1 + rng.IntN(7) {
			line = append(line, destination(line[len(line)-1], rng.Float64()*360, 100+15_000*rng.Float64()))
		}
		return "random LineString", line
	}
}

// initialBearing is the bearing in degrees at a of the great circle from a to b.
func initialBearing(a, b geo.Point) float64 {
	lat1, lat2, dLon := a.Lat*rad, b.Lat*rad, (b.Lon-a.Lon)*rad
	y := math.Sin(dLon) * math.Cos(lat2)
	x := math.Cos(lat1)*math.Sin(lat2) - math.Sin(lat1)*math.Cos(lat2)*math.Cos(dLon)
	return math.Atan2(y, x) / rad
}

func intersects(sortedCover, cells []h3.Cell) bool {
	for _, c := range cells {
		if _, found := slices.BinarySearch(sortedCover, c); found {
			return true
		}
	}
	return false
}

// cellDiameter is the largest distance between two vertices of c.
func cellDiameter(t *testing.T, c h3.Cell) float64 {
	t.Helper()
	b, err := h3.CellToBoundary(c)
	if err != nil {
		t.Fatalf("CellToBoundary(%s): %v", c, err)
	}
	var d float64
	for _, u := range b {
		for _, v := range b {
			d = max(d, geo.Distance(geo.Point{Lat: u.Lat, Lon: u.Lng}, geo.Point{Lat: v.Lat, Lon: v.Lng}))
		}
	}
	return d
}

// TestCoverSize checks that the widest query (docs/api.md §8: 9780 m) reads a sensible number of
// cells at the default level, wherever it is.
//
// Bound: every read cell comes within R = 9780 + 100 + 1 m of the centre, so lies within
// R + D of it, D being the widest cell diameter at level 7 (3.1 km measured over 3,000 random
// covers and every pentagon); cells do not overlap, and the smallest level-7 cell among those
// covers is 2.6 km² (a pentagon), so at most π(R+D)²/2.6 km² ≈ 204 cells can be read. The
// measured maximum is 121, next to a pentagon; elsewhere 84 to 118.
func TestCoverSize(t *testing.T) {
	t.Parallel()
	const bound = 204
	pentagons, err := h3.Pentagons(geo.DefaultLevel)
	if err != nil {
		t.Fatalf("h3.Pentagons: %v", err)
	}
	pll, err := pentagons[0].LatLng()
	if err != nil {
		t.Fatalf("pentagon centre: %v", err)
	}
	tests := []struct {
		name   string
		center geo.Point
	}{
		{"Paris", geo.Point{Lat: 48.8566, Lon: 2.3522}},
		{"equator on the antimeridian", geo.Point{Lat: 0, Lon: 180}},
		{"north pole", geo.Point{Lat: 90, Lon: 0}},
		{"near the south pole", geo.Point{Lat: -89.95, Lon: 45}},
		{"pentagon centre", geo.Point{Lat: pll.Lat, Lon: pll.Lng}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cover, err := geo.CoverCircle(tt.center, maxQueryRadius, geo.DefaultLevel)
			if err != nil {
				t.Fatalf("CoverCircle(%v, %v): %v", tt.center, maxQueryRadius, err)
			}
			if len(cover) > bound {
				t.Errorf("CoverCircle(%v, %v) has %d cells; want at most %d", tt.center, maxQueryRadius, len(cover), bound)
			}
			// Same argument, with this cover's own cells: their total area cannot exceed the
			// spherical cap of radius R + D around the centre.
			var area, diameter float64
			for _, c := range cover {
				a, err := h3.CellAreaM2(c)
				if err != nil {
					t.Fatalf("CellAreaM2(%s): %v", c, err)
				}
				area += a
				diameter = max(diameter, cellDiameter(t, c))
			}
			reach := (maxQueryRadius + geo.SampleSpacing/2 + 1 + diameter) / geo.EarthRadius
			capArea := 2 * math.Pi * geo.EarthRadius * geo.EarthRadius * (1 - math.Cos(reach))
			if area > capArea {
				t.Errorf("cells read cover %.1f km²; want at most the %.1f km² they can reach", area/1e6, capArea/1e6)
			}
			origin, err := h3.LatLngToCell(h3.NewLatLng(tt.center.Lat, tt.center.Lon), geo.DefaultLevel)
			if err != nil {
				t.Fatalf("LatLngToCell: %v", err)
			}
			if _, found := slices.BinarySearch(cover, origin); !found {
				t.Errorf("cover of %v lacks the cell %s that holds the centre", tt.center, origin)
			}
			if !slices.IsSorted(cover) || len(slices.Compact(slices.Clone(cover))) != len(cover) {
				t.Errorf("cover of %v is not sorted and distinct: %v", tt.center, cover)
			}
		})
	}
}

func TestCoverCircleSameAcrossTheAntimeridian(t *testing.T) {
	t.Parallel()
	east, err := geo.CoverCircle(geo.Point{Lat: -16.5, Lon: 180}, 5000, geo.DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	west, err := geo.CoverCircle(geo.Point{Lat: -16.5, Lon: -180}, 5000, geo.DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(east, west) {
		t.Errorf("cover at lon 180 = %v; want the same as at lon -180 = %v", east, west)
	}
	// The circle straddles the meridian, so cells on both sides must be read.
	var sides [2]bool
	for _, c := range east {
		ll, err := c.LatLng()
		if err != nil {
			t.Fatal(err)
		}
		sides[boolIndex(ll.Lng > 0)] = true
	}
	if !sides[0] || !sides[1] {
		t.Errorf("cover at the antimeridian reads cells on one side only: %v", east)
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestCoverCircleGrowsWithRadius(t *testing.T) {
	t.Parallel()
	center := geo.Point{Lat: 59.33, Lon: 18.06}
	var prev []h3.Cell
	for _, r := range []float64{0, 10, 500, 1000, 3000, maxQueryRadius} {
		cover, err := geo.CoverCircle(center, r, geo.DefaultLevel)
		if err != nil {
			t.Fatalf("CoverCircle(%v, %v): %v", center, r, err)
		}
		for _, c := range prev {
			if _, found := slices.BinarySearch(cover, c); !found {
				t.Errorf("cover at radius %v lacks cell %s read at a smaller radius", r, c)
			}
		}
		prev = cover
	}
}

func TestCoverCircleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		center geo.Point
		radius float64
		res    int
		want   error
	}{
		{"latitude out of range", geo.Point{Lat: 91, Lon: 0}, 1000, 7, geo.ErrInvalidPoint},
		{"NaN longitude", geo.Point{Lat: 0, Lon: math.NaN()}, 1000, 7, geo.ErrInvalidPoint},
		{"negative radius", geo.Point{}, -1, 7, geo.ErrInvalidRadius},
		{"NaN radius", geo.Point{}, math.NaN(), 7, geo.ErrInvalidRadius},
		{"infinite radius", geo.Point{}, math.Inf(1), 7, geo.ErrInvalidRadius},
		{"resolution below 0", geo.Point{}, 1000, -1, geo.ErrInvalidResolution},
		{"resolution above 15", geo.Point{}, 1000, 16, geo.ErrInvalidResolution},
		{"radius that would walk a continent", geo.Point{Lat: 45, Lon: 5}, 1_000_000, 7, geo.ErrCoverTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cells, err := geo.CoverCircle(tt.center, tt.radius, tt.res)
			if !errors.Is(err, tt.want) {
				t.Errorf("CoverCircle(%v, %v, %d) error = %v; want %v", tt.center, tt.radius, tt.res, err, tt.want)
			}
			if cells != nil {
				t.Errorf("CoverCircle returned %d cells with an error; want none", len(cells))
			}
		})
	}
}

func TestIndexCells(t *testing.T) {
	t.Parallel()
	single := geo.Point{Lat: 48.8566, Lon: 2.3522}
	want, err := h3.LatLngToCell(h3.NewLatLng(single.Lat, single.Lon), geo.DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	got, err := geo.IndexCells([]geo.Point{single}, geo.DefaultLevel)
	if err != nil {
		t.Fatalf("IndexCells(point): %v", err)
	}
	if !slices.Equal(got, []h3.Cell{want}) {
		t.Errorf("IndexCells(%v) = %v; want [%s]", single, got, want)
	}

	// A 20 km segment along a parallel: its cells are distinct, sorted, and every cell holding
	// a point of it, checked every 10 m, is within a sample's reach of an indexed cell's cover.
	line := []geo.Point{{Lat: 45, Lon: 5}, {Lat: 45, Lon: 5.254}}
	cells, err := geo.IndexCells(line, geo.DefaultLevel)
	if err != nil {
		t.Fatalf("IndexCells(line): %v", err)
	}
	if !slices.IsSorted(cells) || len(slices.Compact(slices.Clone(cells))) != len(cells) {
		t.Errorf("IndexCells(line) = %v; want sorted and distinct", cells)
	}
	// At level 7 (edge ~1.4 km) 200 m samples miss no cell the line crosses but the odd corner;
	// a 20 km line crosses roughly 20/1.2 to 20/0.9 cells.
	if n := len(cells); n < 12 || n > 40 {
		t.Errorf("IndexCells(20 km line) has %d cells; want 12..40", n)
	}
	for _, end := range line {
		c, err := h3.LatLngToCell(h3.NewLatLng(end.Lat, end.Lon), geo.DefaultLevel)
		if err != nil {
			t.Fatal(err)
		}
		if _, found := slices.BinarySearch(cells, c); !found {
			t.Errorf("IndexCells(line) lacks the cell %s of its vertex %v", c, end)
		}
	}
}

func TestIndexCellsAcrossTheAntimeridian(t *testing.T) {
	t.Parallel()
	// 2.2 km the short way: a handful of cells, not a band around the world.
	cells, err := geo.IndexCells([]geo.Point{{Lat: 0, Lon: 179.99}, {Lat: 0, Lon: -179.99}}, geo.DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) > 5 {
		t.Errorf("IndexCells(2 km antimeridian segment) has %d cells %v; want at most 5", len(cells), cells)
	}
}

func TestIndexCellsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		extent []geo.Point
		res    int
		want   error
	}{
		{"empty", nil, 7, geo.ErrEmptyExtent},
		{"latitude out of range", []geo.Point{{Lat: 0, Lon: 0}, {Lat: 95, Lon: 0}}, 7, geo.ErrInvalidPoint},
		{"NaN", []geo.Point{{Lat: math.NaN(), Lon: 0}}, 7, geo.ErrInvalidPoint},
		{"resolution above 15", []geo.Point{{Lat: 0, Lon: 0}}, 16, geo.ErrInvalidResolution},
		{"longer than the limit", []geo.Point{{Lat: 0, Lon: 0}, {Lat: 0, Lon: 10}}, 7, geo.ErrExtentTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cells, err := geo.IndexCells(tt.extent, tt.res)
			if !errors.Is(err, tt.want) {
				t.Errorf("IndexCells(%v, %d) error = %v; want %v", tt.extent, tt.res, err, tt.want)
			}
			if cells != nil {
				t.Errorf("IndexCells returned %d cells with an error; want none", len(cells))
			}
		})
	}
}

func TestParseCell(t *testing.T) {
	t.Parallel()
	cell, err := h3.LatLngToCell(h3.NewLatLng(48.8566, 2.3522), geo.DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	s := geo.CellString(cell)
	got, err := geo.ParseCell(s)
	if err != nil || got != cell {
		t.Errorf("ParseCell(CellString(%v)) = %v, %v; want %v, nil", cell, got, err, cell)
	}
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"not hexadecimal", "zz"},
		{"upper case, a second spelling of the same cell", fmt.Sprintf("%X", uint64(cell))},
		{"0x prefix", "0x" + s},
		{"leading zero", "0" + s},
		{"valid hexadecimal but not a cell", "8f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, err := geo.ParseCell(tt.in); !errors.Is(err, geo.ErrInvalidCell) {
				t.Errorf("ParseCell(%q) = %v, %v; want error %v", tt.in, got, err, geo.ErrInvalidCell)
			}
		})
	}
}

// DistanceToBoundary is the distance to the cell's boundary as DistanceToExtent measures it on
// the boundary ring: the area query orders the cells it reads by it and stops on it.
func TestDistanceToBoundary(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 13))
	for range 2000 {
		p := geo.Point{Lat: r.Float64()*170 - 85, Lon: r.Float64()*360 - 180}
		q := geo.Point{Lat: max(-90, min(90, p.Lat+r.NormFloat64()*0.2)), Lon: math.Mod(p.Lon+r.NormFloat64()*0.2+540, 360) - 180}
		res := []int{6, 8}[r.IntN(2)]
		c, err := h3.LatLngToCell(h3.NewLatLng(q.Lat, q.Lon), res)
		if err != nil {
			t.Fatal(err)
		}
		b, err := h3.CellToBoundary(c)
		if err != nil {
			t.Fatal(err)
		}
		ring := make([]geo.Point, 0, len(b)+1)
		for _, ll := range b {
			ring = append(ring, geo.Point{Lat: ll.Lat, Lon: ll.Lng})
		}
		ring = append(ring, ring[0])
		got, err := geo.DistanceToBoundary(p, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := geo.DistanceToExtent(p, ring); math.Abs(got-want) > 1e-6 {
			t.Fatalf("DistanceToBoundary(%v, %s) = %v; the boundary ring is %v away", p, c, got, want)
		}
	}
}

// Every point of a cell lies within CellReach of its centre: its vertices and points drawn
// inside it, at several resolutions, near the poles, the antimeridian and the pentagons too. A
// cover kept for a cell serves any centre in it on this promise.
func TestCellReachHoldsTheCell(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(12, 12))
	var cells []h3.Cell
	for range 300 {
		for _, res := range []int{6, 8} {
			c, err := h3.LatLngToCell(h3.NewLatLng(r.Float64()*180-90, r.Float64()*360-180), res)
			if err != nil {
				t.Fatal(err)
			}
			cells = append(cells, c)
		}
	}
	for _, res := range []int{6, 8} {
		pentagons, err := h3.Pentagons(res)
		if err != nil {
			t.Fatal(err)
		}
		cells = append(cells, pentagons...)
	}
	for _, c := range cells {
		mid, reach, err := geo.CellReach(c)
		if err != nil {
			t.Fatal(err)
		}
		boundary, err := h3.CellToBoundary(c)
		if err != nil {
			t.Fatal(err)
		}
		farthest := 0.0
		for _, v := range boundary {
			farthest = max(farthest, geo.Distance(mid, geo.Point{Lat: v.Lat, Lon: v.Lng}))
		}
		if reach < farthest || reach > farthest+2 {
			t.Fatalf("cell %s: reach %.2f m; want its farthest vertex's %.2f m and a metre of slack", c, reach, farthest)
		}
		for range 50 {
			p := geo.Destination(mid, r.Float64()*360, reach*1.2*r.Float64())
			in, err := h3.LatLngToCell(h3.NewLatLng(p.Lat, p.Lon), c.Resolution())
			if err != nil {
				t.Fatal(err)
			}
			if d := geo.Distance(mid, p); in == c && d > reach {
				t.Fatalf("cell %s: point %v inside it is %.2f m from the centre, beyond its reach %.2f m", c, p, d, reach)
			}
		}
	}
	if _, _, err := geo.CellReach(h3.Cell(1)); err == nil {
		t.Error("CellReach of an invalid cell: no error")
	}
}
