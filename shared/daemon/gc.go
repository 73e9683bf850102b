package daemon

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"

	"github.com/roadevents/roadevents/shared/sysmem"
)

// Garbage collection of a long-running server process, unless the operator set GOGC or
// GOMEMLIMIT (docs/performance.md §7). Two things are derived instead of fixed:
//
//   - from the data, the collector's setting: after every collection the heap may grow by as
//     much as is live (Go's GOGC=100), but by at least HeadroomFloor. A small live heap at
//     GOGC=100 made the collector run many times a second under publishing, slowing the store's
//     single committer; a fixed GOGC=400 let a large live heap grow to five times its size.
//   - from the machine, the memory limit: MemoryShare of the memory the process may use (its
//     cgroup's limit, else the machine's), past which the collector runs as often as it must
//     rather than let the kernel kill the process.
const (
	// HeadroomFloor is the least the heap may grow between collections.
	HeadroomFloor = 128 << 20
	// MemoryShare is the part of the available memory the memory limit is set to, in percent.
	MemoryShare = 75
)

// TuneGC starts the collector tuning above unless getenv gives GOGC or GOMEMLIMIT (the runtime
// applies those itself), and reports whether it did. Stop ends the tuning (tests).
func TuneGC(getenv func(string) string) (stop func(), tuned bool) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}, false
	}
	if total := sysmem.Available(os.ReadFile); total > 0 {
		debug.SetMemoryLimit(int64(total / 100 * MemoryShare))
	}
	t := &gcTuner{}
	t.adjust()
	t.arm()
	return func() { t.stopped.Store(true) }, true
}

// GCPercent is the collector setting that lets a heap of live bytes grow by max(live,
// HeadroomFloor) before the next collection.
func GCPercent(live uint64) int {
	if live == 0 || live >= HeadroomFloor {
		return 100
	}
	return int((HeadroomFloor*100 + live - 1) / live)
}

// gcTuner sets GCPercent for the live heap after every collection: a cleanup attached to an
// unreachable sentinel runs once the collector has found it unreachable, then arms a new one.
type gcTuner struct{ stopped atomic.Bool }

type gcSentinel struct{ _ [16]byte } // not a tiny allocation, so that it is freed on its own

func (t *gcTuner) arm() {
	runtime.AddCleanup(new(gcSentinel), func(t *gcTuner) {
		if !t.stopped.Load() {
			t.adjust()
			t.arm()
		}
	}, t)
}

func (t *gcTuner) adjust() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		debug.SetGCPercent(GCPercent(sample[0].Value.Uint64()))
	}
}
