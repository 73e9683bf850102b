package daemon

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Returning a burst's memory (docs/performance.md §7). The collector lets the heap grow to
// twice what is live, and a burst of writes makes what is live larger for a while (the
// store's pending commits, a flush's page buffers): after 100 000 publishes the process kept
// 700 MiB of heap for 160 MiB live, for good, since a process at rest allocates nothing and so
// never collects again. Once the process goes quiet, a settler collects and hands the heap it
// does not use back to the operating system. It runs in every server process (Run), whatever
// the collector's setting.
const (
	// settleTick is how often the settler looks.
	settleTick = 250 * time.Millisecond
	// quietAllocs is what the process may allocate within one tick and still be quiet: a
	// server at rest allocates some kilobytes a second (timers, the webhook producer's polls),
	// one answering queries megabytes.
	quietAllocs = 1 << 20
	// settleExcess is how much the process must have allocated since the last release, and
	// how much more than is live the heap must hold, for a release to be worth its cost: two
	// collections and returning memory take tens of milliseconds of CPU.
	settleExcess = 64 << 20
	// restExcess is what the process must have allocated since the last release for the
	// store's coming to rest to be worth one: a release often comes on the first quiet tick
	// after a burst, before the store's last flush, whose page buffers, and the commits it
	// frees, are then tens of MiB that no further burst may come to collect.
	restExcess = 8 << 20
)

// release collects twice, then returns the free heap. What sits in a sync.Pool survives one
// collection: bbolt keeps a flush's page buffers there, 90 MB after a burst of publishes.
func release() {
	runtime.GC()
	debug.FreeOSMemory()
}

// heapReading is what the settler reads of the runtime.
type heapReading struct {
	allocs uint64 // bytes allocated since the process started
	// held is the heap memory a collection and returning memory could shrink to what is
	// live: objects, dead ones included, and wholly free pages not yet returned. Free slots
	// in pages that also hold live objects are not counted: nothing can return them.
	held uint64
	live uint64 // bytes live after the last collection
}

// settler decides, tick after tick, when to return memory: on a quiet tick, after at least
// settleExcess was allocated since it last did if the heap holds that much more than was
// live, or after restExcess if the store has come to rest since (Rest). A release thus never
// follows a release without allocations in between, nor comes while the process is busy.
type settler struct {
	read     func() heapReading
	release  func()
	allocs   uint64 // at the last tick
	released uint64 // allocs after the last release
	rest     atomic.Bool
}

func newSettler() *settler {
	s := &settler{read: readHeap, release: release}
	s.allocs = s.read().allocs
	s.released = s.allocs
	return s
}

// Rest tells the settler that the store has written what it held in memory (the embedded
// store's OnRest). The settler cannot see it by itself: the commits the flush freed are
// garbage no collection has found yet, and a process at rest allocates nothing, so nothing
// collects.
func (s *settler) Rest() { s.rest.Store(true) }

func (s *settler) tick() {
	r := s.read()
	quiet := r.allocs-s.allocs < quietAllocs
	s.allocs = r.allocs
	since := r.allocs - s.released
	if quiet && ((since >= settleExcess && r.held > r.live+settleExcess) || (since >= restExcess && s.rest.Load())) {
		s.rest.Store(false)
		s.release()
		s.allocs = s.read().allocs
		s.released = s.allocs
	}
}

// run ticks until ctx ends.
func (s *settler) run(ctx context.Context) {
	t := time.NewTicker(settleTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.tick()
		}
	}
}

var heapMetrics = []string{
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/live:bytes",
}

func readHeap() heapReading {
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	return heapReading{allocs: v(0), held: v(1) + v(2), live: v(3)}
}
