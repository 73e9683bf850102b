package eventstore

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/geo"
)

// The area index is kept at two H3 resolutions (see the package doc, "Area index", for the
// measurements behind them).
const (
	// FineLevel serves small radii, the default 1000 m among them: there a query reads the
	// fewest items. It is the query_level of GET /v1/meta/limits.
	FineLevel = 8
	// CoarseLevel serves radii whose fine cover would need more than MaxLookups reads, up to
	// the widest query of docs/api.md §8 (9780 m).
	CoarseLevel = 6
)

// QueryLevel is the H3 resolution GET /v1/meta/limits reports as query_level (docs/api.md §10.2):
// the fine level, which a query of the default radius reads.
const QueryLevel = FineLevel

// levels lists the index levels, finest first: a query takes the first whose cover needs at
// most MaxLookups reads.
var levels = []int{FineLevel, CoarseLevel}

// MaxLookups bounds the cells a query reads when some level allows it: the lookup budget of
// the load targets (docs/performance.md §1), one table Query per cell. A level is chosen by
// cells, not partitions: a sandbox credential, which is served both environments (docs/api.md §1),
// reads two partitions per cell rather than falling back to cells seven times larger for its
// 1000 m queries.
const MaxLookups = 20

// MaxIndexCells bounds the index cells of one extent, over both levels. Every change of an
// event is one transaction of at most store.MaxTransactOps operations: the event item, a vote,
// and one put or delete per cell. A revision that moves an extent to somewhere entirely new
// deletes every old cell and puts every new one, so 1 + 2*49 = 99 fits whatever the old and the
// new extent are. 49 cells is a straight segment of about 20 km (measured: 20 km takes 33 cells
// on average, 45 at most; 30 km takes 48 on average, 66 at most), which the longest queues a
// fleet reports stay under; a longer extent is refused with 422 (ErrExtentTooLarge) rather than
// indexed in several transactions that a failure could leave half done, serving stale copies.
const MaxIndexCells = 49

// ErrExtentTooLarge is returned (in an *ExtentError) by Publish and Revise for an extent that
// would be indexed under more than MaxIndexCells cells; the HTTP layer answers 422 value_error
// at ["body","geometry"].
var ErrExtentTooLarge = errors.New("events: extent spans too many area index cells")

// ExtentError describes an extent refused with ErrExtentTooLarge.
type ExtentError struct {
	// Cells is how many cells the extent needed when the count passed MaxIndexCells (a lower
	// bound: counting stops there).
	Cells int
	// Length is the extent's length in metres.
	Length float64
}

// Error describes the refusal.
func (e *ExtentError) Error() string {
	return fmt.Sprintf("%v: over %d cells (%d counted), %.0f m", ErrExtentTooLarge, MaxIndexCells, e.Cells, e.Length)
}

// Unwrap makes errors.Is(err, ErrExtentTooLarge) true.
func (e *ExtentError) Unwrap() error { return ErrExtentTooLarge }

// indexCells returns the cells, at every level, under which an extent is indexed, as
// canonical strings, sorted, and those of FineLevel as cells (the merge guards derive from
// them). geo.IndexCells samples the extent so that a padded cover always meets it (docs/api.md
// §4.1 rule 3: a long segment passing the query point is found).
func indexCells(extent []geo.Point) (all []string, fine []h3.Cell, err error) {
	for _, res := range levels {
		cells, err := geo.IndexCells(extent, res)
		if errors.Is(err, geo.ErrExtentTooLong) {
			return nil, nil, &ExtentError{Cells: len(all), Length: geo.Length(extent)}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("index cells at level %d: %w", res, err)
		}
		if res == FineLevel {
			fine = cells
		}
		for _, c := range cells {
			all = append(all, geo.CellString(c))
		}
		if len(all) > MaxIndexCells {
			return nil, nil, &ExtentError{Cells: len(all), Length: geo.Length(extent)}
		}
	}
	slices.Sort(all)
	return all, fine, nil
}

// cover is the set of cells a query reads.
type cover struct {
	level int
	cells []h3.Cell
}

// coverFor returns the cover of a query of radius metres around center at the finest level
// whose cover has at most MaxLookups cells; when no level fits, the coarsest. A level whose
// cover is certainly too large (estimated from the average cell area at more than twice the
// budget) is not even computed, because computing a cover costs time in proportion to its
// cells.
func coverFor(center geo.Point, radius float64) (cover, error) {
	for i, res := range levels {
		last := i == len(levels)-1
		if !last && estimateCells(radius, res) > 2*MaxLookups {
			continue
		}
		cells, err := geo.CoverCircle(center, radius, res)
		if err != nil {
			return cover{}, fmt.Errorf("cover of %.0f m at level %d: %w", radius, res, err)
		}
		if last || len(cells) <= MaxLookups {
			return cover{level: res, cells: cells}, nil
		}
	}
	panic("unreachable: the last level always returns")
}

// estimateCells is the number of cells of resolution res a cover of radius metres takes on
// average: the padded circle, widened by one average edge, over the average cell area.
func estimateCells(radius float64, res int) float64 {
	edge, err1 := h3.HexagonEdgeLengthAvgM(res)
	area, err2 := h3.HexagonAreaAvgM2(res)
	if err1 != nil || err2 != nil || area <= 0 {
		return 0 // compute the cover rather than guess
	}
	r := radius + geo.SampleSpacing/2 + edge
	return math.Pi * r * r / area
}
