package geo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/memo"
)

// DefaultLevel is the H3 resolution of the area index (docs/api.md §10.2, limits document
// "query_level"). At 7 a cell is about 5 km² (edge about 1.4 km): a 1 km query reads 1 to 6
// cells and the widest query (9780 m, docs/api.md §8) 84 to 121 (measured over thousands of random
// centres and the 12 pentagons), while a straight 50 km congestion segment is stored under 19
// to 43 cells.
const DefaultLevel = 7

// SampleSpacing is the largest distance in metres between consecutive samples when an extent's
// segments are densified for indexing. CoverCircle pads its radius by half of it, which is what
// makes the sampled index exact (see IndexCells).
const SampleSpacing = 200.0

// coverSlack widens the cover by one metre more than the sampling needs, so that floating-point
// error in cell boundaries and distances (micrometres) can never drop a cell on the edge.
const coverSlack = 1.0

// MaxExtentLength is the longest extent, in metres, IndexCells accepts. It is a bound on work
// (MaxExtentLength/SampleSpacing samples), not a rule of docs/api.md, which limits points (2..512)
// but not length; the events package decides what it accepts below it.
const MaxExtentLength = 1_000_000.0

// MaxCoverCells bounds the cells CoverCircle visits, so a radius the caller failed to validate
// cannot make it walk the globe (res 7 has 98 million cells). The widest query of docs/api.md §8
// needs at most about 120 at DefaultLevel; 20,000 is a radius of about 180 km there.
const MaxCoverCells = 20_000

// Errors returned by the index functions; match them with errors.Is.
var (
	// ErrInvalidPoint is returned for a coordinate that is not finite or out of range (docs/api.md
	// §2.2).
	ErrInvalidPoint = errors.New("geo: invalid point")
	// ErrInvalidResolution is returned for an H3 resolution outside 0..15.
	ErrInvalidResolution = errors.New("geo: invalid H3 resolution")
	// ErrInvalidRadius is returned for a radius that is negative or not finite.
	ErrInvalidRadius = errors.New("geo: invalid radius")
	// ErrEmptyExtent is returned when an extent has no point.
	ErrEmptyExtent = errors.New("geo: empty extent")
	// ErrExtentTooLong is returned when an extent is longer than MaxExtentLength.
	ErrExtentTooLong = errors.New("geo: extent too long to index")
	// ErrCoverTooLarge is returned when a circle needs more than MaxCoverCells cells.
	ErrCoverTooLarge = errors.New("geo: circle covers too many cells")
	// ErrInvalidCell is returned by ParseCell for text that is not a canonical H3 cell.
	ErrInvalidCell = errors.New("geo: invalid cell")
)

// IndexCells returns the distinct H3 cells at resolution res under which an extent (a point or
// a LineString) is stored in the area index, sorted.
//
// Each segment is densified along its great circle so consecutive samples are at most
// SampleSpacing apart, and the cells of the samples (vertices included) are returned. Every
// point of the extent is then within SampleSpacing/2 of a sample, and CoverCircle pads its
// radius by that much, so an extent within r of a query point always has a cell in the query's
// cover (docs/api.md §4.1 rule 3: a long segment passing the point is found even when its vertices
// are far away). The cells are not necessarily every cell the line crosses at fine resolutions;
// they are the ones the padded cover is guaranteed to meet.
func IndexCells(extent []Point, res int) ([]h3.Cell, error) {
	if err := checkResolution(res); err != nil {
		return nil, err
	}
	if len(extent) == 0 {
		return nil, ErrEmptyExtent
	}
	for i, p := range extent {
		if !p.Valid() {
			return nil, fmt.Errorf("extent point %d %v: %w", i, p, ErrInvalidPoint)
		}
	}
	if l := Length(extent); l > MaxExtentLength {
		return nil, fmt.Errorf("extent of %.0f m, limit %.0f m: %w", l, MaxExtentLength, ErrExtentTooLong)
	}

	cells := make([]h3.Cell, 0, len(extent))
	add := func(v vec) error {
		p := v.point()
		c, err := h3.LatLngToCell(h3.NewLatLng(p.Lat, p.Lon), res)
		if err != nil {
			return fmt.Errorf("cell of %v at resolution %d: %w", p, res, err)
		}
		// Consecutive samples mostly share a cell; skipping repeats here keeps the slice short.
		if n := len(cells); n == 0 || cells[n-1] != c {
			cells = append(cells, c)
		}
		return nil
	}

	a := toVec(extent[0])
	if err := add(a); err != nil {
		return nil, err
	}
	step := SampleSpacing / EarthRadius
	for _, q := range extent[1:] {
		b := toVec(q)
		g := newArc(a, b)
		n := int(math.Ceil(g.span / step))
		for i := 1; i < n; i++ {
			if err := add(g.at(g.span * float64(i) / float64(n))); err != nil {
				return nil, err
			}
		}
		// The vertex itself, exactly, rather than the arc's recomputed end.
		if err := add(b); err != nil {
			return nil, err
		}
		a = b
	}
	slices.Sort(cells)
	return slices.Compact(cells), nil
}

// CoverCircle returns, sorted, every H3 cell at resolution res that comes within
// radiusM + SampleSpacing/2 of center (plus a metre of slack for rounding): the cells a query
// or a stream subscription of that radius must read so that no extent within radiusM is missed
// (see IndexCells for why the padding makes this exact).
//
// The cells are found by flood fill from the cell containing center, keeping a cell when its
// boundary polygon (great-circle edges, as H3 cells are on the sphere) comes within the padded
// radius. This needs no estimate of cell sizes, and is exact at pentagons, the poles and the
// antimeridian: the geodesic from center to any point within the radius only passes through
// cells within the radius, each a neighbour of the last, so the kept cells are connected and
// the fill reaches all of them.
func CoverCircle(center Point, radiusM float64, res int) ([]h3.Cell, error) {
	if err := checkResolution(res); err != nil {
		return nil, err
	}
	if !center.Valid() {
		return nil, fmt.Errorf("cover centre %v: %w", center, ErrInvalidPoint)
	}
	if !(radiusM >= 0) || math.IsInf(radiusM, 0) {
		return nil, fmt.Errorf("cover radius %v: %w", radiusM, ErrInvalidRadius)
	}
	limit := (radiusM + SampleSpacing/2 + coverSlack) / EarthRadius

	origin, err := h3.LatLngToCell(h3.NewLatLng(center.Lat, center.Lon), res)
	if err != nil {
		return nil, fmt.Errorf("cell of %v at resolution %d: %w", center, res, err)
	}
	return coverFrom(origin, toVec(center), limit, res, radiusM, true)
}

// seenSets keeps the covers' sets of visited cells between covers: grown afresh, a 1000 m
// cover's set went through four sizes, a quarter of the cover's time (docs/performance.md
// §4). A set that grew past maxPooledSeen is left to the collector, so that clearing it does
// not cost every later cover.
var seenSets = sync.Pool{New: func() any { return map[h3.Cell]bool{} }}

const maxPooledSeen = 256

func takeSeen() map[h3.Cell]bool { return seenSets.Get().(map[h3.Cell]bool) }

func putSeen(seen map[h3.Cell]bool) {
	if len(seen) <= maxPooledSeen {
		clear(seen)
		seenSets.Put(seen)
	}
}

// boundSlack is the margin, in radians, by which coverFrom's bounds must decide a cell for it
// to skip the exact distance: far above the arithmetic's error, far below the cover's metre
// of slack (about 1.6e-7 rad).
const boundSlack = 1e-9

// coverFrom is CoverCircle's flood fill from origin, keeping the cells whose boundary comes
// within limit radians of cv. With bounds, a cell is decided from the distance dc to its
// centre when that settles it: the boundary is at most dc minus the cell's inner radius away
// (cv is outside every cell but origin, so the geodesic to the centre crosses the boundary,
// at least the inner radius from the centre) and at least dc minus its reach (every boundary
// point is within reach of the centre). The exact distance, six arcs, is computed only
// between the two, a band as wide as reach minus inner radius, 13 % of a hexagon's
// reach. The cells kept are the same either way (TestCoverBoundsChangeNothing).
func coverFrom(origin h3.Cell, cv vec, limit float64, res int, radiusM float64, bounds bool) ([]h3.Cell, error) {
	seen := takeSeen()
	defer putSeen(seen)
	seen[origin] = true
	queue := []h3.Cell{origin} // cells kept and not yet expanded
	var cover []h3.Cell
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		cover = append(cover, c)
		if len(cover) > MaxCoverCells {
			return nil, fmt.Errorf("radius %.0f m at resolution %d: %w", radiusM, res, ErrCoverTooLarge)
		}
		ring, err := cells.ring(c)
		if err != nil {
			return nil, err
		}
		for _, nb := range ring {
			if seen[nb] {
				continue
			}
			seen[nb] = true
			if bounds {
				sh, err := cells.shape(nb)
				if err != nil {
					return nil, err
				}
				dc := angle(cv, sh.center)
				if dc-sh.reach > limit+boundSlack {
					continue
				}
				if dc-sh.inner < limit-boundSlack {
					queue = append(queue, nb)
					continue
				}
			}
			// The origin holds the centre, so any other cell has the centre outside it and its
			// distance to the centre is the distance to its boundary.
			d, err := angleToBoundary(cv, nb)
			if err != nil {
				return nil, err
			}
			if d <= limit {
				queue = append(queue, nb)
			}
		}
	}
	slices.Sort(cover)
	return cover, nil
}

// DistanceToBoundary returns the distance in metres from p to the nearest point of cell c's
// boundary: for p outside c, the distance to c. Cell shapes come from the cache CoverCircle
// fills, so this takes no call into H3 for the cells of a recent cover.
func DistanceToBoundary(p Point, c h3.Cell) (float64, error) {
	a, err := angleToBoundary(toVec(p), c)
	return a * EarthRadius, err
}

// CellReach returns the centre of cell c and a distance in metres within which every point of
// c lies from it: the reach to its farthest vertex (a cell is convex, so no point of it is
// farther), plus a metre of slack for rounding.
func CellReach(c h3.Cell) (Point, float64, error) {
	if !c.IsValid() {
		return Point{}, 0, fmt.Errorf("cell %x: %w", uint64(c), ErrInvalidCell)
	}
	sh, err := cells.shape(c)
	if err != nil {
		return Point{}, 0, err
	}
	ll, err := h3.CellToLatLng(c)
	if err != nil {
		return Point{}, 0, fmt.Errorf("centre of cell %s: %w", c, err)
	}
	return Point{ll.Lat, ll.Lng}, sh.reach*EarthRadius + coverSlack, nil
}

// angleToBoundary returns the central angle from p to the nearest point of cell c's boundary.
func angleToBoundary(p vec, c h3.Cell) (float64, error) {
	sh, err := cells.shape(c)
	if err != nil {
		return 0, err
	}
	best := math.Inf(1)
	for _, e := range sh.edges {
		best = min(best, e.angleTo(p))
	}
	return best, nil
}

// cellShape is what CoverCircle needs of a cell: its boundary's great-circle edges, its centre,
// its reach, the largest angle from the centre to a vertex, which bounds the angle to any
// boundary point (the angle from a point along a great-circle arc shorter than a half circle
// is largest at an end), and its inner radius, the angle from the centre to the nearest
// boundary point.
type cellShape struct {
	edges  []arc
	center vec
	reach  float64
	inner  float64
}

// maxCachedCells bounds each of cellCache's maps; a full map is emptied and refilled. A city's
// queries keep revisiting a few thousand cells (a 50 km square holds about 3,400 cells of
// resolution 8), so this holds them all at about 12 MB.
const maxCachedCells = 1 << 14

// cellCache keeps the edges and the neighbours of the cells CoverCircle visits. Both come from
// H3 through cgo and never change, and a cover asks for them again and again: at resolution 8
// a 1000 m cover visits about 40 cells, and computing their boundaries was most of its time
// (docs/performance.md §4); with the cache it is mostly arithmetic.
type cellCache struct {
	shapes *memo.Map[h3.Cell, *cellShape]
	rings  *memo.Map[h3.Cell, []h3.Cell]
}

var cells = &cellCache{shapes: memo.New[h3.Cell, *cellShape](maxCachedCells), rings: memo.New[h3.Cell, []h3.Cell](maxCachedCells)}

// shape returns c's edges, centre, reach and inner radius.
func (cc *cellCache) shape(c h3.Cell) (*cellShape, error) {
	if sh, ok := cc.shapes.Get(c); ok {
		return sh, nil
	}
	boundary, err := h3.CellToBoundary(c)
	if err != nil {
		return nil, fmt.Errorf("boundary of cell %s: %w", c, err)
	}
	if len(boundary) == 0 {
		return nil, fmt.Errorf("boundary of cell %s: no vertices: %w", c, ErrInvalidCell)
	}
	ll, err := h3.CellToLatLng(c)
	if err != nil {
		return nil, fmt.Errorf("centre of cell %s: %w", c, err)
	}
	sh := &cellShape{edges: make([]arc, 0, len(boundary)), center: toVec(Point{ll.Lat, ll.Lng})}
	prev := toVec(Point{boundary[len(boundary)-1].Lat, boundary[len(boundary)-1].Lng})
	for _, ll := range boundary {
		v := toVec(Point{ll.Lat, ll.Lng})
		sh.edges = append(sh.edges, newArc(prev, v))
		sh.reach = max(sh.reach, angle(sh.center, v))
		prev = v
	}
	sh.inner = math.Inf(1)
	for _, e := range sh.edges {
		sh.inner = min(sh.inner, e.angleTo(sh.center))
	}
	cc.shapes.Put(c, sh)
	return sh, nil
}

// ring returns c and its neighbours (h3.GridDisk of radius 1). The caller must not modify it.
func (cc *cellCache) ring(c h3.Cell) ([]h3.Cell, error) {
	if r, ok := cc.rings.Get(c); ok {
		return r, nil
	}
	r, err := h3.GridDisk(c, 1)
	if err != nil {
		return nil, fmt.Errorf("neighbours of cell %s: %w", c, err)
	}
	cc.rings.Put(c, r)
	return r, nil
}

func checkResolution(res int) error {
	if res < 0 || res > h3.MaxResolution {
		return fmt.Errorf("resolution %d: %w", res, ErrInvalidResolution)
	}
	return nil
}

// CellString returns the canonical text of a cell (lower-case hexadecimal, as H3 prints it),
// the form the area index keys and the stream hub use.
func CellString(c h3.Cell) string {
	return c.String()
}

// ParseCell reads the canonical text of a cell back. Unlike h3.IndexFromString, which returns
// 0 on bad input, it rejects anything that is not a valid cell in canonical form, so one cell
// has exactly one key.
func ParseCell(s string) (h3.Cell, error) {
	u, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("cell %q: %w", s, ErrInvalidCell)
	}
	c := h3.Cell(u)
	if !c.IsValid() || c.String() != s {
		return 0, fmt.Errorf("cell %q: %w", s, ErrInvalidCell)
	}
	return c, nil
}
