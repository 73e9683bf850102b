package eventstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// After a restart, WarmCache loads the area index into the empty cache, so that the first
// queries are answered from memory as the later ones are, with the same answers as a store
// that reads the table (docs/performance.md §5).
func TestWarmCacheAnswersFirstQueriesFromMemory(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	ctx := context.Background()
	opts := eventstore.Options{IDKey: testIDKey, Clock: tab.Clock, CacheBytes: 64 << 20, SoleWriter: true}
	before, err := eventstore.New(tab.Table, opts)
	if err != nil {
		t.Fatal(err)
	}
	center := geo.Point{Lat: 45.76, Lon: 4.84}
	r := rand.New(rand.NewPCG(4, 4))
	for range 300 {
		p := roundPoint(destination(center, r.Float64()*360, r.Float64()*20000))
		if _, _, err := before.Publish(ctx, liveCaller, event.EventIn{Type: "congestion", Lat: p.Lat, Lon: p.Lon}); err != nil {
			t.Fatal(err)
		}
	}

	counted := &countingTable{Table: tab.Table}
	restarted, err := eventstore.New(counted, opts) // a new process: its cache is empty
	if err != nil {
		t.Fatal(err)
	}
	plain, err := eventstore.New(tab.Table, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	warmed, err := restarted.WarmCache(ctx)
	if err != nil || warmed.Partitions == 0 {
		t.Fatalf("WarmCache = %+v, %v; want partitions loaded, nil", warmed, err)
	}
	// The covers' geometry is computed for the cells within two rings of every partition, so
	// that the first query at a place does not compute it (geo.WarmParents).
	if want := cellsNearPartitions(t, tab.Table); warmed.Cells != want {
		t.Errorf("WarmCache computed the cover geometry of %d cells; want the %d within two rings of the partitions", warmed.Cells, want)
	}
	counted.reads.Store(0)
	for i := range 20 {
		q := eventstore.AreaQuery{Center: roundPoint(destination(center, float64(i)*18, float64(i)*900)), Radius: 1000 + float64(i)*400}
		got, err := restarted.Area(ctx, liveCaller, q)
		if err != nil {
			t.Fatal(err)
		}
		// A partition that holds nothing is not in the table to be warmed: its first read
		// finds nothing, which costs no decoding.
		if n := counted.reads.Load(); n != 0 {
			t.Errorf("query %d after warming read %d index items from the table; want all from the cache", i, n)
		}
		want, err := plain.Area(ctx, liveCaller, q)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := string(got.AppendJSON(nil)), string(want.AppendJSON(nil)); g != w {
			t.Errorf("query %d after warming answers\n%s\nwant (read from the table)\n%s", i, g, w)
		}
	}

	// Without a cache, or on a table that cannot list its partitions, it does nothing.
	if w, err := plain.WarmCache(ctx); w != (eventstore.Warmed{}) || err != nil {
		t.Errorf("WarmCache without a cache = %+v, %v; want nothing, nil", w, err)
	}
	wrapped, err := eventstore.New(tab, opts) // tables.Table hides the lister
	if err != nil {
		t.Fatal(err)
	}
	if w, err := wrapped.WarmCache(ctx); w != (eventstore.Warmed{}) || err != nil {
		t.Errorf("WarmCache on a table without Partitions = %+v, %v; want nothing, nil", w, err)
	}
}

// cellsNearPartitions returns how many cells at CoarseLevel lie within two rings of the area
// partitions of tab.
func cellsNearPartitions(t *testing.T, tab store.Table) int {
	t.Helper()
	pks, err := tab.(store.PartitionLister).Partitions(context.Background(), "area#")
	if err != nil {
		t.Fatal(err)
	}
	near := map[h3.Cell]bool{}
	for _, pk := range pks {
		c, err := geo.ParseCell(strings.TrimPrefix(pk, "area#"))
		if err != nil {
			t.Fatal(err)
		}
		disk, err := h3.GridDisk(c, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range disk {
			near[d] = true
		}
	}
	return len(near)
}

// countingTable counts the items its Queries return and its write calls (each one round trip
// to DynamoDB, one commit and sync on the embedded store), and lists partitions as its table
// does.
type countingTable struct {
	store.Table
	reads, writes atomic.Int64
}

func (c *countingTable) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	items, err := c.Table.Query(ctx, q)
	c.reads.Add(int64(len(items)))
	return items, err
}

func (c *countingTable) Partitions(ctx context.Context, prefix string) ([]string, error) {
	l, ok := c.Table.(store.PartitionLister)
	if !ok {
		return nil, errors.New("countingTable: the table cannot list its partitions")
	}
	return l.Partitions(ctx, prefix)
}

func (c *countingTable) Put(ctx context.Context, it store.Item, cond store.Condition) error {
	c.writes.Add(1)
	return c.Table.Put(ctx, it, cond)
}

func (c *countingTable) TransactWrite(ctx context.Context, ops []store.Op) error {
	c.writes.Add(1)
	return c.Table.TransactWrite(ctx, ops)
}

func (c *countingTable) Update(ctx context.Context, k store.Key, u store.Update, cond store.Condition) (store.Item, error) {
	c.writes.Add(1)
	return c.Table.Update(ctx, k, u, cond)
}

func (c *countingTable) Delete(ctx context.Context, k store.Key, cond store.Condition) error {
	c.writes.Add(1)
	return c.Table.Delete(ctx, k, cond)
}
