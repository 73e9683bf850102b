package eventstore

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/uber/h3-go/v4"
	"golang.org/x/sync/errgroup"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
)

// warmShare is the part of the area cache's limit WarmCache fills, in percent: the rest stays
// for the partitions queries and writes bring in, so that warming evicts nothing.
const warmShare = 75

// WarmCache reads the area index partitions of a table that can list them
// (store.PartitionLister: the embedded store) into the area cache, until the cache holds
// warmShare of its limit. After a restart the cache is empty, and the first query of each
// partition read and decoded all of it: with 500 000 events, 22 to 62 ms against 1 to 2 ms for
// the same queries once cached (docs/performance.md §5). A server warms it in the background
// when it starts; a query that comes first reads the table as before, and the cache's tickets
// keep the two from storing an older partition over a newer one. Beside the partitions it
// computes the geometry that the queries' covers read of their cells (geo.WarmParents), which
// cost the first query at each place several milliseconds. It returns what it warmed; without
// a cache or a lister it does nothing.
func (s *Store) WarmCache(ctx context.Context) (Warmed, error) {
	lister, ok := s.table.(store.PartitionLister)
	if s.cache == nil || !ok {
		return Warmed{}, nil
	}
	pks, err := lister.Partitions(ctx, areaPrefix)
	if err != nil {
		return Warmed{}, fmt.Errorf("warm area cache: %w", err)
	}
	// Reading and decoding a partition is CPU work: one reader per core (docs/performance.md §5).
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	var w Warmed
	g.Go(func() (err error) {
		w.Cells, err = geo.WarmParents(partitionCells(pks), FineLevel)
		return err
	})
	var loaded atomic.Int64
	for _, pk := range pks {
		if gctx.Err() != nil || s.cache.size.Load() >= s.cache.limit/100*warmShare {
			break
		}
		g.Go(func() error {
			n, err := s.warmPartition(gctx, pk)
			loaded.Add(int64(n))
			return err
		})
	}
	err = g.Wait()
	w.Partitions = int(loaded.Load())
	return w, err
}

// Warmed is what WarmCache warmed: the partitions it loaded into the area cache, and the cells
// at CoarseLevel whose cover geometry it computed (geo.WarmParents).
type Warmed struct {
	Partitions int
	Cells      int
}

// partitionCells returns the cells of the area partitions pks; a key that names no cell is
// left out, as it holds nothing a query reads.
func partitionCells(pks []string) []h3.Cell {
	cells := make([]h3.Cell, 0, len(pks))
	for _, pk := range pks {
		if c, err := geo.ParseCell(strings.TrimPrefix(pk, areaPrefix)); err == nil {
			cells = append(cells, c)
		}
	}
	return cells
}

// warmPartition loads partition pk into the cache unless it is there, and returns 1 if it
// loaded it.
func (s *Store) warmPartition(ctx context.Context, pk string) (int, error) {
	hit, t := s.cache.view(pk, s.clock.Now().UnixNano(), func([]group) {})
	if hit {
		return 0, nil
	}
	items, err := s.table.Query(ctx, areaRead{pk: pk}.query(false))
	if err != nil {
		return 0, fmt.Errorf("warm area cache: read %s: %w", pk, err)
	}
	recs, _ := cacheRecords(items, true) // a record that cannot be read is left out, as by readAreas
	s.cache.fill(t, recs)
	return 1, nil
}
