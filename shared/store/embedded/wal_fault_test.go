package embedded

import (
	"bytes"
	"syscall"
	"testing"
)

// faultyFile is a segment file on a disk that fails as its fields say: a write that stops half
// way with ENOSPC (a full disk), a sync that fails with EIO after the write went through, a
// truncation that fails.
type faultyFile struct {
	LogFile
	full, syncFails, truncateFails bool
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if f.full {
		n, _ := f.LogFile.WriteAt(p[:len(p)/2], off)
		return n, syscall.ENOSPC
	}
	return f.LogFile.WriteAt(p, off)
}

func (f *faultyFile) SyncData() error {
	if f.syncFails {
		f.syncFails = false // the kernel reports a failed writeback once
		return syscall.EIO
	}
	return f.LogFile.SyncData()
}

func (f *faultyFile) Truncate(size int64) error {
	if f.truncateFails {
		return syscall.EIO
	}
	return f.LogFile.Truncate(size)
}

// TestWALFailedAppendLeavesNoTrace: a record whose write or sync fails is refused and leaves
// nothing in the log; the log goes on appending after the last acknowledged record once the
// disk works again, without a restart, and a reopened log replays exactly the acknowledged
// records (docs/operations.md §2). Also when cutting the failed record off fails at first:
// then nothing is appended until it is cut.
func TestWALFailedAppendLeavesNoTrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(*faultyFile)
		heal  func(*faultyFile)
		// atPrealloc makes the failing append the one that must preallocate first.
		atPrealloc bool
	}{
		{"full disk", func(f *faultyFile) { f.full = true }, func(f *faultyFile) { f.full = false }, false},
		{"failed sync", func(f *faultyFile) { f.syncFails = true }, func(*faultyFile) {}, false},
		{"full disk, failed cut", func(f *faultyFile) { f.full, f.truncateFails = true, true },
			func(f *faultyFile) { f.full, f.truncateFails = false, false }, false},
		{"full disk while preallocating", func(f *faultyFile) { f.full = true }, func(f *faultyFile) { f.full = false }, true},
		{"failed sync of the preallocated zeros", func(f *faultyFile) { f.syncFails = true }, func(*faultyFile) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w, _ := mustOpenWAL(t, dir, 1)
			f := &faultyFile{LogFile: w.f}
			w.f = f
			appendRecords(t, w, 3)
			if tc.atPrealloc {
				w.alloc = w.size
			}
			tc.fault(f)
			lost := bytes.Repeat([]byte("lost"), 50)
			if _, err := w.append(lost); err == nil {
				t.Fatalf("append on a failing disk = nil; want an error")
			}
			if f.truncateFails {
				if _, err := w.append(lost); err == nil {
					t.Fatalf("append before the failed record is cut off = nil; want an error")
				}
			}
			if w.next != 4 {
				t.Fatalf("next after a failed append = %d; want 4", w.next)
			}
			tc.heal(f)
			appendRecords(t, w, 6)
			if err := w.close(); err != nil {
				t.Fatalf("close = %v", err)
			}
			_, recs := mustOpenWAL(t, dir, 1)
			checkReplay(t, recs, 1, 6)
		})
	}
}

// TestWALRotationOnAFullDisk: when the next segment cannot be created, the current one stays
// in use and the append fails; once it can, the log rotates and goes on.
func TestWALRotationOnAFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, _ := mustOpenWAL(t, dir, 1)
	appendRecords(t, w, 2)
	w.segmentBytes = w.size  // due for rotation
	w.dir = dir + "/missing" // the next segment cannot be created
	if _, err := w.append(walPayload(3)); err == nil {
		t.Fatalf("append when the next segment cannot be created = nil; want an error")
	}
	if w.next != 3 || len(w.segs) != 1 {
		t.Fatalf("after a failed rotation: next %d, %d segments; want 3, 1", w.next, len(w.segs))
	}
	w.dir = dir
	appendRecords(t, w, 4)
	if len(w.segs) != 2 {
		t.Fatalf("after the rotation: %d segments; want 2", len(w.segs))
	}
	if err := w.close(); err != nil {
		t.Fatalf("close = %v", err)
	}
	_, recs := mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 4)
}
