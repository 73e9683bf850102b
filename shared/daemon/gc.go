package daemon

import "runtime/debug"

// Garbage collection of a long-running server process, unless the operator set GOGC or
// GOMEMLIMIT. The live heap of `go run .` is small next to the garbage publishing makes, so at
// Go's default GOGC=100 the collector ran many times a second, and its mark phases and assists
// slowed the store's single committer (docs/performance.md §7).
const (
	// GCPercent lets the heap grow to five times what was live after a collection.
	GCPercent = 400
	// MemoryLimit bounds the heap that GCPercent would otherwise let grow with the live heap:
	// past it the collector runs as often as it must. Publishing into a full city keeps
	// several hundred MB live (the area cache, the embedded store's pending layers and the
	// page buffers of a flush); at 1 GiB the collector ran again soon after each collection
	// and publishing slowed (docs/performance.md §7).
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
