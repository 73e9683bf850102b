package embedded_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/store/storetest"
)

// epoch is where the fake clocks of these tests start.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// openHarness opens a fresh store in a temporary directory, with its own fake clock and no
// background sweeper (the tests run Sweep themselves).
func openHarness(tb testing.TB) storetest.Harness {
	tb.Helper()
	clk := clock.NewFake(epoch)
	s := openStore(tb, filepath.Join(tb.TempDir(), "store.db"), embedded.Options{Clock: clk, SweepInterval: -1})
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
