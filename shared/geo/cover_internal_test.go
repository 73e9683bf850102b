package geo

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/uber/h3-go/v4"
)

// CoverCircle's bounds only skip work: over random centres of the whole sphere, the poles, the
// antimeridian and the pentagons, at both index levels and radii up to the maximum of docs/api.md
// §8, the cover with them is the cover without them.
func TestCoverBoundsChangeNothing(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 6))
	centres := []Point{{90, 0}, {-90, 0}, {0, 180}, {0, -180}, {89.99, 179.99}, {-45, -179.999}, {48.137, 11.575}}
	for _, res := range []int{6, 8} {
		pentagons, err := h3.Pentagons(res)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pentagons {
			ll, err := h3.CellToLatLng(p)
			if err != nil {
				t.Fatal(err)
			}
			centres = append(centres, Point{ll.Lat, ll.Lng})
		}
	}
	for range 400 {
		centres = append(centres, Point{Lat: rng.Float64()*180 - 90, Lon: rng.Float64()*360 - 180})
	}
	compared := 0
	for _, c := range centres {
		for _, res := range []int{6, 8} {
			for _, radius := range []float64{0, 30, 1000, 2500, 9780} {
				origin, err := h3.LatLngToCell(h3.NewLatLng(c.Lat, c.Lon), res)
				if err != nil {
					t.Fatal(err)
				}
				limit := (radius + SampleSpacing/2 + coverSlack) / EarthRadius
				fast, errFast := coverFrom(origin, toVec(c), limit, res, radius, true)
				exact, errExact := coverFrom(origin, toVec(c), limit, res, radius, false)
				if (errFast == nil) != (errExact == nil) || !slices.Equal(fast, exact) {
					t.Fatalf("cover of %v, %v m, level %d: with bounds %d cells (%v), without %d cells (%v)",
						c, radius, res, len(fast), errFast, len(exact), errExact)
				}
				compared++
			}
		}
	}
	t.Logf("%d covers compared", compared)
}
