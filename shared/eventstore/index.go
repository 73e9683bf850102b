package eventstore

import (
	"errors"
	"fmt"
	"math"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/geo"
)

// The area index keeps an extent under its cells at FineLevel, each in the partition of the
// cell's parent at CoarseLevel (areaKey; see the package doc, "Area index", for the measurements
// behind the levels).
const (
	// FineLevel serves small radii, the default 1000 m among them: such a query reads the cells
	// of its cover, each a prefix of its partition. It is the query_level of
	// GET /v1/meta/limits.
	FineLevel = 8
	// CoarseLevel is the level of the partitions, two above FineLevel (areaDigits). Radii whose
	// fine cover would need more than MaxLookups cells, up to the widest query of docs/api.md §8
	// (9780 m), read whole partitions.
	CoarseLevel = 6
)

// QueryLevel is the H3 resolution GET /v1/meta/limits reports as query_level (docs/api.md §10.2):
// the fine level, which a query of the default radius reads.
const QueryLevel = FineLevel

// MaxLookups bounds the cells of a query at FineLevel, which reads them in at most as many table
// Queries (consecutive cells of a partition are read in one): the lookup budget of the load
// targets (docs/performance.md §1). A wider query reads partitions at CoarseLevel.
const MaxLookups = 20

// MaxIndexCells bounds the cells of one extent, counted at FineLevel and at CoarseLevel: the
// limit of docs/api.md §2.2, about 20 km (measured: 20 km takes 33 cells on average, 45 at most;
// 30 km takes 48 on average, 66 at most), which the longest queues a fleet reports stay under.
// Only the cells at FineLevel hold index items, and every change of an event is one transaction
// of at most store.MaxTransactOps operations: a revision that moves an extent to somewhere
// entirely new deletes every old item and puts every new one, well within 100 operations. A
// longer extent is refused with 422 (ErrExtentTooLarge) rather than indexed in several
// transactions that a failure could leave half done, serving stale copies.
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

// indexCells returns the cells at FineLevel under which an extent is indexed, sorted.
// geo.IndexCells samples the extent so that a padded cover always meets it (docs/api.md §4.1
// rule 3: a long segment passing the query point is found). The cells at CoarseLevel are only
// counted, for the limit (MaxIndexCells).
func indexCells(extent []geo.Point) ([]h3.Cell, error) {
	fine, err := geo.IndexCells(extent, FineLevel)
	if errors.Is(err, geo.ErrExtentTooLong) {
		return nil, &ExtentError{Cells: MaxIndexCells + 1, Length: geo.Length(extent)}
	}
	if err != nil {
		return nil, fmt.Errorf("index cells at level %d: %w", FineLevel, err)
	}
	coarse, err := geo.IndexCells(extent, CoarseLevel)
	if err != nil {
		return nil, fmt.Errorf("index cells at level %d: %w", CoarseLevel, err)
	}
	if n := len(fine) + len(coarse); n > MaxIndexCells {
		return nil, &ExtentError{Cells: n, Length: geo.Length(extent)}
	}
	return fine, nil
}

// cover is what a query reads: cells at FineLevel, or partitions at CoarseLevel, nearest first
// with a lower bound of the distance to each (dist, for the early stop of matcher.complete).
type cover struct {
	level int
	cells []h3.Cell
	dist  []float64 // CoarseLevel only
}

// coverFor returns the cover of a query of radius metres around center: the cells at FineLevel
// when at most MaxLookups of them are needed, else the partitions at CoarseLevel. The fine cover
// is not even computed when it is certainly too large (estimated from the average cell area at
// more than twice the budget), because computing a cover costs time in proportion to its cells.
func coverFor(center geo.Point, radius float64) (cover, error) {
	if estimateCells(radius, FineLevel) <= 2*MaxLookups {
		cells, err := geo.CoverCircle(center, radius, FineLevel)
		if err != nil {
			return cover{}, fmt.Errorf("cover of %.0f m at level %d: %w", radius, FineLevel, err)
		}
		if len(cells) <= MaxLookups {
			return cover{level: FineLevel, cells: cells}, nil
		}
	}
	parts, dist, err := geo.CoverParents(center, radius, CoarseLevel, FineLevel)
	if err != nil {
		return cover{}, fmt.Errorf("cover of %.0f m at level %d: %w", radius, CoarseLevel, err)
	}
	return cover{level: CoarseLevel, cells: parts, dist: dist}, nil
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
