package geo

import (
	"errors"
	"testing"

	"github.com/uber/h3-go/v4"
)

// After WarmParents, the cover of a 1 000 m query kept for any cell of the warmed partitions
// (a circle around the cell's centre, widened by its reach, eventstore's kept covers) asks H3
// for nothing more: every cell it reaches, their neighbours and their descendants' overhangs
// are kept, so the first query at a place after a restart is as fast as the next one
// (docs/performance.md §5). Not parallel: the caches are the package's, and a parallel test
// filling them could empty them under this one.
func TestWarmParentsKeepsWhatACoverReads(t *testing.T) {
	const res, sub = 6, 8
	// Two neighbouring partitions somewhere no other test of the package goes.
	a, err := h3.LatLngToCell(h3.NewLatLng(-42.88, 147.33), res)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := h3.GridDisk(a, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := ring[1]
	n, err := WarmParents([]h3.Cell{a, b}, sub)
	if err != nil {
		t.Fatal(err)
	}
	union := map[h3.Cell]bool{}
	for _, c := range []h3.Cell{a, b} {
		disk, err := h3.GridDisk(c, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range disk {
			union[d] = true
		}
	}
	if n != len(union) {
		t.Errorf("WarmParents kept %d cells; want the %d within two rings of the two", n, len(union))
	}

	// The circles eventstore keeps a cover for: around each cell at sub of the two partitions,
	// widened by the cell's reach. CellReach keeps the fine cells' shapes, so it runs before the
	// caches are counted.
	type circle struct {
		mid   Point
		reach float64
	}
	var circles []circle
	for _, c := range []h3.Cell{a, b} {
		kids, err := c.Children(sub)
		if err != nil {
			t.Fatal(err)
		}
		for _, kid := range kids {
			mid, reach, err := CellReach(kid)
			if err != nil {
				t.Fatal(err)
			}
			circles = append(circles, circle{mid, reach})
		}
	}

	shapes, rings, overs := cells.shapes.Len(), cells.rings.Len(), overhangs.m.Len()
	for _, c := range circles {
		if _, _, err := CoverParents(c.mid, 1000+c.reach, res, sub); err != nil {
			t.Fatal(err)
		}
	}
	covers := len(circles)
	if g1, g2, g3 := cells.shapes.Len(), cells.rings.Len(), overhangs.m.Len(); g1 != shapes || g2 != rings || g3 != overs {
		t.Errorf("%d covers after warming computed %d shapes, %d neighbour lists and %d overhangs; want none",
			covers, g1-shapes, g2-rings, g3-overs)
	}
}

// WarmParents refuses what no cover could use: an invalid cell, descendants coarser than it.
func TestWarmParentsRefusesBadInput(t *testing.T) {
	t.Parallel()
	cell, err := h3.LatLngToCell(h3.NewLatLng(48.85, 2.35), 6)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cs   []h3.Cell
		sub  int
	}{
		{"not a cell", []h3.Cell{0}, 8},
		{"descendants coarser than the cell", []h3.Cell{cell}, 5},
		{"no such resolution", []h3.Cell{cell}, 16},
	} {
		if _, err := WarmParents(tc.cs, tc.sub); !errors.Is(err, ErrInvalidCell) && !errors.Is(err, ErrInvalidResolution) {
			t.Errorf("%s: WarmParents = %v; want ErrInvalidCell or ErrInvalidResolution", tc.name, err)
		}
	}
}
