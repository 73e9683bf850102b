package geo_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/geo"
)

// TestCoverParentsHoldsTheFineCover: the partitions CoverParents returns hold every cell at the
// fine resolution that CoverCircle returns (so an area index kept in the partitions of its fine
// cells' parents finds every extent the fine cover finds, docs/api.md §4.1 rule 3), and the
// distance it gives each partition is no more than the distance to any of its fine cells (so a
// query reading partitions nearest first may stop on it). Centres are drawn worldwide, some on
// pentagons, where H3 nests least regularly.
func TestCoverParentsHoldsTheFineCover(t *testing.T) {
	t.Parallel()
	const res, sub = 6, 8
	rng := rand.New(rand.NewPCG(7, 7))
	pentagons, err := h3.Pentagons(res)
	if err != nil {
		t.Fatal(err)
	}
	for n := range 60 {
		center := randomPoint(rng)
		if n%10 == 0 {
			ll, err := pentagons[rng.IntN(len(pentagons))].LatLng()
			if err != nil {
				t.Fatal(err)
			}
			center = geo.Point{Lat: ll.Lat, Lon: ll.Lng}
		}
		r := []float64{300, 2500, maxQueryRadius}[n%3]
		parents, dist, err := geo.CoverParents(center, r, res, sub)
		if err != nil {
			t.Fatalf("CoverParents(%v, %v): %v", center, r, err)
		}
		if !slices.IsSorted(dist) {
			t.Errorf("CoverParents(%v, %v): distances %v not nearest first", center, r, dist)
		}
		fine, err := geo.CoverCircle(center, r, sub)
		if err != nil {
			t.Fatal(err)
		}
		nearest := map[h3.Cell]float64{} // parent -> distance to its nearest fine cell of the cover
		for _, c := range fine {
			p, err := c.Parent(res)
			if err != nil {
				t.Fatal(err)
			}
			d, err := geo.DistanceToBoundary(center, c)
			if err != nil {
				t.Fatal(err)
			}
			if own, _ := h3.LatLngToCell(h3.NewLatLng(center.Lat, center.Lon), sub); own == c {
				d = 0
			}
			if old, ok := nearest[p]; !ok || d < old {
				nearest[p] = d
			}
		}
		for p, d := range nearest {
			i := slices.Index(parents, p)
			if i < 0 {
				t.Errorf("centre %v, radius %v: fine cells under %s are in the cover, %s is not among %v", center, r, p, p, parents)
				continue
			}
			if dist[i] > d+1e-6 {
				t.Errorf("centre %v, radius %v: partition %s at %.1f m, but a fine cell of it is %.1f m away", center, r, p, dist[i], d)
			}
		}
	}
}
