package embedded_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/store/storetest"
)

// epoch is where the fake clocks of these tests start.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// openHarness opens a fresh store in a temporary directory, with its own fake clock and no
// background sweeper (the tests run Sweep themselves).
func openHarness(tb testing.TB) storetest.Harness { return openHarnessWith(tb, embedded.Options{}) }

// openHarnessWith is openHarness with opts, on a fake clock and without the sweeper.
func openHarnessWith(tb testing.TB, opts embedded.Options) storetest.Harness {
	tb.Helper()
	clk := clock.NewFake(epoch)
	opts.Clock, opts.SweepInterval = clk, -1
	s := openStore(tb, filepath.Join(tb.TempDir(), "store.db"), opts)
	return storetest.Harness{Table: s, Feed: s, Clock: clk, Sweep: s.Sweep}
}

func openStore(tb testing.TB, path string, opts embedded.Options) *embedded.Store {
	tb.Helper()
	s, err := embedded.Open(path, opts)
	if err != nil {
		tb.Fatalf("Open(%s) = %v; want nil", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close = %v; want nil", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Harness { return openHarness(t) })
}

func TestSweep(t *testing.T) {
	t.Parallel()
	storetest.RunSweep(t, func(t *testing.T) storetest.Harness { return openHarness(t) })
}

func BenchmarkEmbedded(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) storetest.Harness { return openHarness(b) })
}

// TestConformanceFlushingEveryCommit runs the suite with the table file written after every
// commit, so that reads meet items in every place they can be: the live layer, the layer being
// written, and the file.
func TestConformanceFlushingEveryCommit(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		return openHarnessWith(t, embedded.Options{FlushBytes: 1})
	})
}

// TestReadsNeverMissAcknowledgedWrites races writers, readers and flushes after every commit:
// a write is visible to Get and Query as soon as Put returns, and a partition that only grows
// never reads smaller, wherever its items are (live layer, the layer being flushed, the file).
func TestReadsNeverMissAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 4, 150
	s := openStore(t, filepath.Join(t.TempDir(), "store.db"), embedded.Options{SweepInterval: -1, FlushBytes: 1})
	ctx := t.Context()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				k := store.Key{PK: "grow", SK: fmt.Sprintf("%d-%04d", w, i)}
				if err := s.Put(ctx, store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK, "n": int64(i)}, store.Condition{}); err != nil {
					t.Errorf("Put(%s) = %v; want nil", k, err)
					return
				}
				if _, err := s.Get(ctx, k); err != nil {
					t.Errorf("Get(%s) right after its Put = %v; want the item", k, err)
					return
				}
				got, err := s.Query(ctx, store.Query{PK: "grow", Prefix: fmt.Sprintf("%d-", w)})
				if err != nil || len(got) != i+1 {
					t.Errorf("Query of writer %d after %d Puts = %d items, %v; want %d", w, i+1, len(got), err, i+1)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.Query(ctx, store.Query{PK: "grow"})
				if err != nil || len(got) < last {
					t.Errorf("Query = %d items, %v; an earlier one had %d", len(got), err, last)
					return
				}
				last = len(got)
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	got, err := s.Query(ctx, store.Query{PK: "grow"})
	if err != nil || len(got) != writers*perWriter {
		t.Fatalf("final Query = %d items, %v; want %d", len(got), err, writers*perWriter)
	}
}
