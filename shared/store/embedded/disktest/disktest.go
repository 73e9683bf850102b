// Package disktest fills the disk of an embedded store on purpose, for the tests that show what
// the service does when it runs out of space (docs/operations.md §2): a wrapper of the store's
// write-ahead log files (embedded.Options.WALFiles) whose writes fail with ENOSPC while the disk
// is said to be full. It is imported by tests only.
package disktest

import (
	"sync/atomic"
	"syscall"

	"github.com/roadevents/roadevents/shared/store/embedded"
)

// Disk is the disk of one store's write-ahead log. It is safe for concurrent use.
type Disk struct{ full atomic.Bool }

// Files wraps a segment file of the log: give it as embedded.Options.WALFiles.
func (d *Disk) Files(f embedded.LogFile) embedded.LogFile { return &file{LogFile: f, disk: d} }

// SetFull fills the disk (true) or frees it (false).
func (d *Disk) SetFull(full bool) { d.full.Store(full) }

type file struct {
	embedded.LogFile
	disk *Disk
}

// WriteAt writes half of p and fails with ENOSPC while the disk is full, as a write that
// runs out of space part way does.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if f.disk.full.Load() {
		n, _ := f.LogFile.WriteAt(p[:len(p)/2], off)
		return n, syscall.ENOSPC
	}
	return f.LogFile.WriteAt(p, off)
}
