package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/roadevents/roadevents/shared/store"
)

// RunBenchmarks measures the operations the service leans on, against the adapter that open
// returns (called once per benchmark, or once per round for the parallel one). Items are about
// the size of a road event (a dozen attributes, a few hundred bytes).
func RunBenchmarks(b *testing.B, open func(b *testing.B) Harness) {
	b.Run("Get", func(b *testing.B) {
		h, ctx := open(b), b.Context()
		k := store.Key{PK: uniquePrefix("bench"), SK: "item"}
		mustPut(b, h, benchItem(k))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Table.Get(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutIfNotExists", func(b *testing.B) {
		h, ctx := open(b), b.Context()
		pk := uniquePrefix("bench")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if err := h.Table.Put(ctx, benchItem(store.Key{PK: pk, SK: fmt.Sprint(i)}), store.IfNotExists()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutIfNotExistsParallel", func(b *testing.B) {
		// Many writers at once, as under load: shows whether the adapter groups commits.
		h, ctx := open(b), b.Context()
		pk := uniquePrefix("bench")
		var n atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				k := store.Key{PK: pk, SK: fmt.Sprint(n.Add(1))}
				if err := h.Table.Put(ctx, benchItem(k), store.IfNotExists()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("UpdateAdd", func(b *testing.B) {
		h, ctx := open(b), b.Context()
		k := store.Key{PK: uniquePrefix("bench"), SK: "counter"}
		u := store.Update{Add: map[string]int64{"n": 1}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Table.Update(ctx, k, u, store.Condition{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Query100", func(b *testing.B) {
		h, ctx := open(b), b.Context()
		keys := putBenchPartition(b, h, 100)
		q := store.Query{PK: keys[0].PK}
		b.ReportAllocs()
		for b.Loop() {
			items, err := h.Table.Query(ctx, q)
			if err != nil || len(items) != len(keys) {
				b.Fatalf("Query = %d items, %v; want %d", len(items), err, len(keys))
			}
		}
	})
	b.Run("Query10Desc", func(b *testing.B) {
		h, ctx := open(b), b.Context()
		keys := putBenchPartition(b, h, 100)
		q := store.Query{PK: keys[0].PK, Desc: true, Limit: 10}
		b.ReportAllocs()
		for b.Loop() {
			if items, err := h.Table.Query(ctx, q); err != nil || len(items) != 10 {
				b.Fatalf("Query = %d items, %v; want 10", len(items), err)
			}
		}
	})
	b.Run("BatchGet100", func(b *testing.B) {
		h, ctx := open(b), b.Context()
		keys := putBenchPartition(b, h, 100)
		b.ReportAllocs()
		for b.Loop() {
			if items, err := h.Table.BatchGet(ctx, keys); err != nil || len(items) != len(keys) {
				b.Fatalf("BatchGet = %d items, %v; want %d", len(items), err, len(keys))
			}
		}
	})
}

// benchItem is shaped like a stored road event.
func benchItem(k store.Key) store.Item {
	return store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK,
		"event_id":    "evt_01J9ZXYQ7W3M6T0V4B8N2K5P1R",
		"type":        "hazard.debris",
		"status":      "active",
		"lat":         52.520008,
		"lon":         13.404954,
		"radius_m":    int64(150),
		"confidence":  0.82,
		"signals":     int64(3),
		"cells":       []string{"891f1d4a5c3ffff", "891f1d4a5cbffff", "891f1d4a5d7ffff"},
		"note":        "Pallet on the right lane, partly blocking the shoulder.",
		"org":         "org_7HqZ0x",
		store.AttrTTL: int64(4102444800),
	}
}

func mustPut(b *testing.B, h Harness, it store.Item) {
	b.Helper()
	if err := h.Table.Put(context.Background(), it, store.Condition{}); err != nil {
		b.Fatal(err)
	}
}

// putBenchPartition writes n items in one new partition and returns their keys.
func putBenchPartition(b *testing.B, h Harness, n int) []store.Key {
	b.Helper()
	pk := uniquePrefix("bench")
	keys := make([]store.Key, n)
	ops := make([]store.Op, 0, store.MaxTransactOps)
	flush := func() {
		if len(ops) == 0 {
			return
		}
		if err := h.Table.TransactWrite(context.Background(), ops); err != nil {
			b.Fatal(err)
		}
		ops = ops[:0]
	}
	for i := range keys {
		keys[i] = store.Key{PK: pk, SK: fmt.Sprintf("%05d", i)}
		ops = append(ops, store.PutOp(benchItem(keys[i]), store.Condition{}))
		if len(ops) == store.MaxTransactOps {
			flush()
		}
	}
	flush()
	return keys
}
