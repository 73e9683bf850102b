package daemon

import (
	"runtime"
	"testing"
)

// A burst's heap goes back to the operating system on the first quiet tick, once only, and
// never while the process is busy, holds little more than is live, or has allocated little
// since the last release (docs/performance.md §7).
func TestSettlerReturnsABurstsHeapOnceQuiet(t *testing.T) {
	const mib = 1 << 20
	var now heapReading
	releases := 0
	s := &settler{
		read: func() heapReading { return now },
		release: func() {
			releases++
			now.held = now.live // what a collection and returning memory leave
		},
	}
	step := func(allocated, held, live uint64) {
		t.Helper()
		now.allocs += allocated
		now.held, now.live = held, live
		s.tick()
	}
	want := func(n int, why string) {
		t.Helper()
		if releases != n {
			t.Fatalf("%s: released %d times; want %d", why, releases, n)
		}
	}

	step(500*mib, 700*mib, 300*mib) // publishing: busy
	step(200*mib, 700*mib, 300*mib)
	want(0, "while the process allocates hundreds of MiB a tick")
	step(100<<10, 700*mib, 160*mib)
	want(1, "on the first quiet tick after the burst, 540 MiB over live")

	// The release found less free than hoped (a store still held the burst's commits when
	// it ran): a second collection would find no more until something is allocated.
	step(100<<10, 300*mib, 160*mib)
	step(0, 300*mib, 160*mib)
	want(1, "at rest, with nothing allocated since the release")

	step(30*mib, 230*mib, 160*mib)  // queries: the heap grows towards its goal, busy
	step(100<<10, 230*mib, 160*mib) // quiet, only 30 MiB allocated since the release
	want(1, "after 30 MiB of allocations")
	step(40*mib, 200*mib, 160*mib)
	step(100<<10, 200*mib, 160*mib) // quiet, 70 MiB allocated, but only 40 MiB over live
	want(1, "with 40 MiB over live")
	step(100*mib, 300*mib, 160*mib)
	step(100<<10, 300*mib, 160*mib) // quiet after a second burst
	want(2, "after a second burst")

	// A store at rest: its flush freed 200 MiB that the last collection still counted live.
	step(300*mib, 500*mib, 450*mib)
	s.Rest()
	step(20*mib, 500*mib, 450*mib)
	want(2, "while the process is busy, though the store is at rest")
	step(100<<10, 500*mib, 450*mib)
	want(3, "on the first quiet tick after the store came to rest")
	s.Rest() // a trickle of writes: each comes to rest, with little allocated in between
	step(100<<10, now.held, now.live)
	want(3, "at rest again with nothing allocated since the release")

	// The release came on the first quiet tick after a burst, before the store's last flush,
	// which then made 40 MiB of page buffers and freed the commits it wrote.
	step(300*mib, 600*mib, 300*mib)
	step(100<<10, 600*mib, 300*mib)
	want(4, "on the first quiet tick after a third burst")
	step(40*mib, 250*mib, 200*mib)
	s.Rest()
	step(100<<10, 250*mib, 200*mib)
	want(5, "once the store came to rest after its last flush, 40 MiB allocated since the release")
}

// readHeap reads the runtime's figures the settler decides by.
func TestReadHeapReadsTheRuntime(t *testing.T) {
	keep := make([]byte, 32<<20)
	runtime.GC()
	r := readHeap()
	if r.live < 32<<20 || r.held < r.live || r.allocs < r.live {
		t.Fatalf("readHeap = %+v; want live ≥ 32 MiB, held ≥ live, allocs ≥ live", r)
	}
	runtime.KeepAlive(keep)
}
