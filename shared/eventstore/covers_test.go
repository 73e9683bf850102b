package eventstore

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/roadevents/roadevents/shared/geo"
)

// A cover kept for a cell serves every centre in the cell and every radius up to its step: it
// holds each partition the query's own cover holds (geo.CoverParents from the true centre),
// and its distance to each is no more than the query's own lower bound. Centres are drawn
// anywhere, near the poles and the antimeridian too, and several queries share a cell, so
// that the second and later ones are served what the first one kept.
func TestPartitionCoversServeTheWholeCell(t *testing.T) {
	t.Parallel()
	pc := newPartitionCovers()
	r := rand.New(rand.NewPCG(30, 30))
	radii := []float64{1, 200, 999, 1000, 1001, 2500, 9780}
	hits := 0
	for i := range 3000 {
		var center geo.Point
		if i%10 == 0 {
			center = geo.Point{Lat: r.Float64()*180 - 90, Lon: r.Float64()*360 - 180}
		} else {
			// Near an earlier centre: mostly in the same cell at FineLevel, whose cover is kept.
			center = geo.Point{Lat: 48.1 + r.Float64()*0.02, Lon: 11.5 + r.Float64()*0.03}
		}
		radius := radii[r.IntN(len(radii))]
		before := pc.m.Len()
		got, err := pc.get(center, radius)
		if err != nil {
			t.Fatalf("get(%v, %v): %v", center, radius, err)
		}
		if pc.m.Len() == before {
			hits++
		}
		want, wantDist, err := geo.CoverParents(center, radius, CoarseLevel, FineLevel)
		if err != nil {
			t.Fatal(err)
		}
		if got.level != CoarseLevel || len(got.cells) != len(got.dist) {
			t.Fatalf("get(%v, %v): level %d, %d cells, %d distances; want level %d and a distance per cell",
				center, radius, got.level, len(got.cells), len(got.dist), CoarseLevel)
		}
		if !slices.IsSorted(got.dist) {
			t.Fatalf("get(%v, %v): distances %v; want nearest first", center, radius, got.dist)
		}
		for j, p := range want {
			k := slices.Index(got.cells, p)
			if k < 0 {
				t.Fatalf("get(%v, %v) lacks partition %s, %.0f m away, of the query's own cover", center, radius, p, wantDist[j])
			}
			if got.dist[k] > wantDist[j]+1e-6 || math.IsNaN(got.dist[k]) {
				t.Fatalf("get(%v, %v): partition %s at %.3f m; want at most the query's own lower bound %.3f m",
					center, radius, p, got.dist[k], wantDist[j])
			}
		}
	}
	if hits < 1000 {
		t.Errorf("%d of 3000 queries served a kept cover; want most of those sharing cells", hits)
	}
}
