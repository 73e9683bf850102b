package geo

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/memo"
)

// H3 cells do not nest exactly: the descendants of a cell (its children, their children...)
// cover about its area, but some reach beyond its boundary while the neighbours' descendants
// fill the gaps left inside. An index that stores its fine cells in the partition of their
// coarse parent (the area index, docs/architecture.md §2) must therefore read, for a circle,
// every coarse cell whose descendants come near the circle, not only those whose own boundary
// does, and may bound the distance to a partition only by its boundary's less that overhang
// (how far its descendants reach beyond it: at resolution 6 with descendants at 8, about 460 m
// at mid latitudes).

// CoverParents returns every cell at resolution res some descendant of which at resolution sub
// comes within radiusM + SampleSpacing/2 of center (plus a metre of slack), and possibly a few
// more, nearest first, with dist: for each, a lower bound of the distance in metres from center
// to its descendants (0 when center lies in the cell or in one of them, else the distance to the
// cell's boundary less its overhang). These are the partitions that hold every extent within
// radiusM of center when extents are indexed under their cells at sub (IndexCells), each in the
// partition of the cell's parent at res, as CoverCircle's cells at sub do.
//
// It is CoverCircle's flood fill with that bound in place of the distance to the boundary. The
// partitions that truly come within the radius are connected (the circle is, and partitions that
// touch are neighbours: their overhang is far smaller than a cell), and each passes the test, so
// the fill reaches all of them.
func CoverParents(center Point, radiusM float64, res, sub int) (parents []h3.Cell, dist []float64, err error) {
	if err := checkResolution(res); err != nil {
		return nil, nil, err
	}
	if err := checkResolution(sub); err != nil {
		return nil, nil, err
	}
	if sub < res {
		return nil, nil, fmt.Errorf("descendants at resolution %d of cells at %d: %w", sub, res, ErrInvalidResolution)
	}
	if !center.Valid() {
		return nil, nil, fmt.Errorf("cover centre %v: %w", center, ErrInvalidPoint)
	}
	if !(radiusM >= 0) || math.IsInf(radiusM, 0) {
		return nil, nil, fmt.Errorf("cover radius %v: %w", radiusM, ErrInvalidRadius)
	}
	limit := (radiusM + SampleSpacing/2 + coverSlack) / EarthRadius
	cv := toVec(center)
	origin, err := h3.LatLngToCell(h3.NewLatLng(center.Lat, center.Lon), res)
	if err != nil {
		return nil, nil, fmt.Errorf("cell of %v at resolution %d: %w", center, res, err)
	}
	own, err := h3.LatLngToCell(h3.NewLatLng(center.Lat, center.Lon), sub)
	if err != nil {
		return nil, nil, fmt.Errorf("cell of %v at resolution %d: %w", center, sub, err)
	}
	home, err := own.Parent(res) // its descendants hold the centre
	if err != nil {
		return nil, nil, fmt.Errorf("parent of %s at resolution %d: %w", own, res, err)
	}
	type found struct {
		cell  h3.Cell
		angle float64
	}
	seen := takeSeen()
	defer putSeen(seen)
	seen[origin], seen[home] = true, true
	queue := []found{{origin, 0}}
	if home != origin {
		queue = append(queue, found{home, 0})
	}
	var cover []found
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		cover = append(cover, f)
		if len(cover) > MaxCoverCells {
			return nil, nil, fmt.Errorf("radius %.0f m at resolution %d: %w", radiusM, res, ErrCoverTooLarge)
		}
		ring, err := cells.ring(f.cell)
		if err != nil {
			return nil, nil, err
		}
		for _, nb := range ring {
			if seen[nb] {
				continue
			}
			seen[nb] = true
			over, err := overhangs.get(nb, sub)
			if err != nil {
				return nil, nil, err
			}
			// Every boundary point is within reach of nb's centre, so the distance to the
			// boundary is at least the distance to the centre less reach: a cell that is far
			// by that bound is far, without its six exact arcs (as coverFrom's bounds do).
			sh, err := cells.shape(nb)
			if err != nil {
				return nil, nil, err
			}
			if angle(cv, sh.center)-sh.reach-over > limit+boundSlack {
				continue
			}
			// The centre lies outside nb (only origin holds it), so its distance to nb is its
			// distance to nb's boundary.
			d, err := angleToBoundary(cv, nb)
			if err != nil {
				return nil, nil, err
			}
			if d = max(0, d-over); d <= limit {
				queue = append(queue, found{nb, d})
			}
		}
	}
	slices.SortFunc(cover, func(a, b found) int {
		return cmp.Or(cmp.Compare(a.angle, b.angle), cmp.Compare(a.cell, b.cell))
	})
	parents, dist = make([]h3.Cell, len(cover)), make([]float64, len(cover))
	for i, f := range cover {
		parents[i], dist[i] = f.cell, f.angle*EarthRadius
	}
	return parents, dist, nil
}

// WarmParents computes what CoverParents reads of the cells within two rings of each of cs, at
// their resolution (their shapes, neighbours and overhangs at sub), and keeps it. Cold, the
// first cover around a place costs H3's boundaries of every cell it reaches and of their
// descendants: a 1 000 m cover at resolution 6 took 1 to 9 ms the first time against 12 to 52 µs
// once its cells were kept (docs/performance.md §5). Two rings hold the fill of a circle as wide
// as a cell around any point of cs, the reach of a cover kept per cell. It keeps at most half of
// what the caches hold, so that warming never empties them, and returns the cells it keeps.
func WarmParents(cs []h3.Cell, sub int) (int, error) {
	if err := checkResolution(sub); err != nil {
		return 0, err
	}
	seen := map[h3.Cell]bool{}
	for _, c := range cs {
		if !c.IsValid() || c.Resolution() > sub {
			return len(seen), fmt.Errorf("warm cover of cell %x with descendants at resolution %d: %w", uint64(c), sub, ErrInvalidCell)
		}
		disk, err := h3.GridDisk(c, 2)
		if err != nil {
			return len(seen), fmt.Errorf("cells near %s: %w", c, err)
		}
		for _, nb := range disk {
			if seen[nb] {
				continue
			}
			if len(seen) >= maxCachedCells/2 {
				return len(seen), nil
			}
			seen[nb] = true
			if _, err := cells.ring(nb); err != nil {
				return len(seen), err
			}
			if _, err := cells.shape(nb); err != nil {
				return len(seen), err
			}
			if _, err := overhangs.get(nb, sub); err != nil {
				return len(seen), err
			}
		}
	}
	return len(seen), nil
}

// overhangCache keeps the overhang of the cells asked for: computing one takes the boundaries of
// a cell's descendants from H3 (49 of them two resolutions down), a third of a millisecond, and
// a city's queries keep asking for the same few hundred cells.
type overhangCache struct {
	m *memo.Map[overhangKey, float64]
}

type overhangKey struct {
	c   h3.Cell
	sub int
}

var overhangs = &overhangCache{m: memo.New[overhangKey, float64](maxCachedCells)}

// get returns the overhang of c's descendants at sub, as a central angle. The descendants are
// convex polygons, and the distance to c (convex too) is largest at a vertex, so the vertices
// that lie outside c decide it.
func (oc *overhangCache) get(c h3.Cell, sub int) (float64, error) {
	k := overhangKey{c, sub}
	if a, ok := oc.m.Get(k); ok {
		return a, nil
	}
	kids, err := c.Children(sub)
	if err != nil {
		return 0, fmt.Errorf("descendants of %s at resolution %d: %w", c, sub, err)
	}
	res, a := c.Resolution(), 0.0
	for _, kid := range kids {
		boundary, err := kid.Boundary()
		if err != nil {
			return 0, fmt.Errorf("boundary of cell %s: %w", kid, err)
		}
		for _, ll := range boundary {
			in, err := h3.LatLngToCell(ll, res)
			if err != nil {
				return 0, fmt.Errorf("cell of %v at resolution %d: %w", ll, res, err)
			}
			if in == c {
				continue
			}
			d, err := angleToBoundary(toVec(Point{ll.Lat, ll.Lng}), c)
			if err != nil {
				return 0, err
			}
			a = max(a, d)
		}
	}
	oc.m.Put(k, a)
	return a, nil
}
