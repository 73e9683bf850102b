package daemon

import "runtime/debug"

// Garbage collection of a long-running server process, unless the operator set GOGC or
// GOMEMLIMIT. The live heap of `go run .` is small (tens of megabytes until the area cache
// fills, a few hundred at most), so at Go's default GOGC=100 the collector ran about 25 times
// a second under 64 publishing clients (GODEBUG=gctrace=1), and its mark phases and assists
// also slowed the store's single committer. scripts/load.sh, 40 000-event seed, interleaved
// runs: GOGC=100 2 423, 2 849, 2 934 publishes/s; GOGC=200 3 614, 3 120; GOGC=400 3 677,
// 3 501 (2 965, 3 430, 4 056 without the limit); GOGC=800 3 390, 3 217.
const (
	// GCPercent lets the heap grow to five times what was live after a collection.
	GCPercent = 400
	// MemoryLimit bounds the heap that GCPercent would otherwise let grow with the live heap:
	// past it the collector runs as often as it must. Publishing into the full 100 000-event
	// city keeps 400 to 820 MB live (the area cache's 270 MB, the embedded store's pending
	// layers and the page buffers of a flush); at 1 GiB the collector then ran every 200 ms
	// (gctrace). scripts/load.sh, 100 000-event seed then two 20 000-event publish runs,
	// two interleaved rounds: the publish runs gave 2 745, 2 351, 2 715, 2 382/s at 1 GiB
	// and 3 956, 3 952, 4 607, 3 772/s at 2 GiB.
	MemoryLimit = 2 << 30
)

// TuneGC applies GCPercent and MemoryLimit unless getenv gives GOGC or GOMEMLIMIT (the
// runtime applies those itself), and reports whether it did.
func TuneGC(getenv func(string) string) bool {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return false
	}
	debug.SetGCPercent(GCPercent)
	debug.SetMemoryLimit(MemoryLimit)
	return true
}
