package eventstore

import (
	"fmt"
	"math"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/memo"
)

// partitionCovers keeps the partitions that queries read through the area cache, by the cell
// at FineLevel of the query's centre and its radius rounded up to coverStep. With the cache a
// query reads whole partitions, so it needs only their list, not the fine cover that names
// them: that cover, computed afresh for every query, was a tenth of a 1 000 m query's CPU in
// the server (docs/performance.md §4), while a city's queries keep coming back to the same few
// thousand cells.
//
// The partitions kept for a cell serve any centre in it: they are those of a circle around the
// cell's centre, widened by the cell's reach (every point of the cell is within reach of its
// centre, so a circle around any of them lies inside the widened one). Their distances are
// lowered by that reach, so that they stay lower bounds from any centre in the cell.
type partitionCovers struct {
	m *memo.Map[coverKey, cover]
}

type coverKey struct {
	cell  h3.Cell // the centre's cell at FineLevel
	steps int32   // the radius in coverStep, rounded up
}

const (
	// coverStep is the step radii are rounded up to: requests at 990, 1 000 and 1 020 m share
	// a cover, a few metres wider than each needs, whose extra partitions the query's own
	// distance bounds set aside.
	coverStep = 50.0
	// maxCovers bounds the map; a full map is emptied and refilled. A 50 km city holds about
	// 3 400 cells at FineLevel, so two radii in common use fit, at about 200 bytes each.
	maxCovers = 1 << 14
)

func newPartitionCovers() *partitionCovers {
	return &partitionCovers{m: memo.New[coverKey, cover](maxCovers)}
}

// get returns the partitions at CoarseLevel holding every extent within radius metres of
// center, nearest first, with a lower bound of the distance from center to each. The cover is
// shared: the caller must not change it.
func (pc *partitionCovers) get(center geo.Point, radius float64) (cover, error) {
	cell, err := h3.LatLngToCell(h3.NewLatLng(center.Lat, center.Lon), FineLevel)
	if err != nil {
		return cover{}, fmt.Errorf("cell of %v at level %d: %w", center, FineLevel, err)
	}
	key := coverKey{cell: cell, steps: int32(math.Ceil(radius / coverStep))}
	if cov, ok := pc.m.Get(key); ok {
		return cov, nil
	}
	mid, reach, err := geo.CellReach(cell)
	if err != nil {
		return cover{}, err
	}
	parts, dist, err := geo.CoverParents(mid, float64(key.steps)*coverStep+reach, CoarseLevel, FineLevel)
	if err != nil {
		return cover{}, fmt.Errorf("cover of %.0f m at level %d: %w", radius, CoarseLevel, err)
	}
	for i := range dist {
		dist[i] = max(0, dist[i]-reach)
	}
	cov := cover{level: CoarseLevel, cells: parts, dist: dist}
	pc.m.Put(key, cov)
	return cov, nil
}
