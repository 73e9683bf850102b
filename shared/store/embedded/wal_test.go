package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// append writes one record and syncs it, as the committer does around showing the commit.
func (w *wal) append(payload []byte) (uint64, error) {
	pos, err := w.write(payload)
	if err != nil {
		return 0, err
	}
	return pos, w.sync()
}

// walRecord is a record as replay received it.
type walRecord struct {
	pos     uint64
	payload []byte
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// walPayload is the payload of the test record at position pos: pos*7%45 copies of byte(pos),
// so lengths vary; it is empty only when pos is a multiple of 45, which no test reaches.
func walPayload(pos uint64) []byte {
	return bytes.Repeat([]byte{byte(pos)}, int(pos*7%45))
}

// openTestWAL opens the log in dir and returns what it replayed.
func openTestWAL(dir string, start uint64) (*wal, []walRecord, error) {
	var recs []walRecord
	w, err := openWAL(dir, start, discardLogger(), func(pos uint64, payload []byte) error {
		recs = append(recs, walRecord{pos, bytes.Clone(payload)})
		return nil
	})
	return w, recs, err
}

func mustOpenWAL(t *testing.T, dir string, start uint64) (*wal, []walRecord) {
	t.Helper()
	w, recs, err := openTestWAL(dir, start)
	if err != nil {
		t.Fatalf("openWAL(%s, %d) = %v; want nil", dir, start, err)
	}
	t.Cleanup(func() { _ = w.close() })
	return w, recs
}

// appendRecords appends the test records from w.next to last, checking their positions.
func appendRecords(t *testing.T, w *wal, last uint64) {
	t.Helper()
	for w.next <= last {
		want := w.next
		pos, err := w.append(walPayload(want))
		if err != nil || pos != want {
			t.Fatalf("append = %d, %v; want %d, nil", pos, err, want)
		}
	}
}

// checkReplay checks that recs are the test records first to last, in order.
func checkReplay(t *testing.T, recs []walRecord, first, last uint64) {
	t.Helper()
	var got, want []uint64
	for _, r := range recs {
		got = append(got, r.pos)
	}
	for pos := first; pos <= last; pos++ {
		want = append(want, pos)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("replayed positions %v; want %v", got, want)
	}
	for _, r := range recs {
		if !bytes.Equal(r.payload, walPayload(r.pos)) {
			t.Fatalf("payload of record %d = %x; want %x", r.pos, r.payload, walPayload(r.pos))
		}
	}
}

// segmentNames lists the segment files in dir.
func segmentNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir(%s) = %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), walSuffix) {
			names = append(names, e.Name())
		}
	}
	return names
}

func segName(first uint64) string { return fmt.Sprintf("%016x%s", first, walSuffix) }

// frameOffsets returns where each record of a segment file starts, and the file's size.
func frameOffsets(t *testing.T, path string) ([]int, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile = %v", err)
	}
	var offs []int
	for off := 0; off < len(data); {
		body, ok := walFrame(data[off:])
		if !ok {
			t.Fatalf("%s: bad frame at %d before any damage", path, off)
		}
		offs = append(offs, off)
		off += walFrameHeader + len(body)
	}
	return offs, len(data)
}

// buildLog writes records 1 to last into a new log in a new temporary folder, starting a new
// segment before each position in rotateBefore, closes it and returns the folder.
func buildLog(t *testing.T, last uint64, rotateBefore ...uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log.wal")
	w, recs, err := openTestWAL(dir, 1)
	if err != nil || len(recs) != 0 {
		t.Fatalf("openWAL(new) = %d records, %v; want 0, nil", len(recs), err)
	}
	for _, r := range rotateBefore {
		appendRecords(t, w, r-1)
		if err := w.rotate(); err != nil {
			t.Fatalf("rotate = %v; want nil", err)
		}
	}
	appendRecords(t, w, last)
	if err := w.close(); err != nil {
		t.Fatalf("close = %v; want nil", err)
	}
	return dir
}

// editFile replaces the contents of the file at path with edit applied to them.
func editFile(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestWALReopen checks that a closed log replays exactly its records, in order, and that
// appending continues at the next position, in the same segment.
func TestWALReopen(t *testing.T) {
	t.Parallel()
	dir := buildLog(t, 20)
	w, recs := mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 20)
	if w.next != 21 {
		t.Fatalf("next after reopen = %d; want 21", w.next)
	}
	appendRecords(t, w, 25)
	if err := w.close(); err != nil {
		t.Fatalf("close = %v; want nil", err)
	}
	if got, want := segmentNames(t, dir), []string{segName(1)}; !slices.Equal(got, want) {
		t.Fatalf("segments = %v; want %v", got, want)
	}
	_, recs = mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 25)
}

// TestWALOpenStart checks where a log begins: an empty log at start (its first segment named
// after it), and a log that reaches back before start replays from its first record (the
// caller skips what bbolt holds).
func TestWALOpenStart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "log.wal")
	w, recs := mustOpenWAL(t, dir, 7)
	if len(recs) != 0 || w.next != 7 {
		t.Fatalf("new log: %d records, next %d; want 0, 7", len(recs), w.next)
	}
	if got, want := segmentNames(t, dir), []string{segName(7)}; !slices.Equal(got, want) {
		t.Fatalf("segments = %v; want %v", got, want)
	}
	for w.next <= 12 {
		if _, err := w.append(walPayload(w.next)); err != nil {
			t.Fatalf("append = %v; want nil", err)
		}
	}
	_ = w.close()
	for _, start := range []uint64{7, 9, 13} {
		w, recs := mustOpenWAL(t, dir, start)
		checkReplay(t, recs, 7, 12)
		if w.next != 13 {
			t.Errorf("start %d: next = %d; want 13", start, w.next)
		}
		_ = w.close()
	}
}

// TestWALTornTail checks that what a crash can leave of the last record of the last segment
// is cut off on open: the file is truncated after the last good record, the records before it
// replay, and the next append reuses the lost position.
func TestWALTornTail(t *testing.T) {
	t.Parallel()
	type damage func(t *testing.T, path string, lastOff int)
	cut := func(at int) damage {
		return func(t *testing.T, path string, lastOff int) {
			if err := os.Truncate(path, int64(lastOff+at)); err != nil {
				t.Fatal(err)
			}
		}
	}
	add := func(b []byte) damage {
		return func(t *testing.T, path string, lastOff int) {
			editFile(t, path, func(data []byte) []byte { return append(data, b...) })
		}
	}
	flip := func(at int) damage { // at: offset in the last frame
		return func(t *testing.T, path string, lastOff int) {
			editFile(t, path, func(data []byte) []byte {
				data[lastOff+at] ^= 0x5a
				return data
			})
		}
	}
	type tc struct {
		name   string
		damage damage
		lost   bool // the last record is cut off (else only the added bytes)
	}
	var tests []tc
	// The last record (position 8, payload of 11 bytes: a 27-byte frame) cut at every length.
	for at := 1; at < walFrameHeader+8+len(walPayload(8)); at++ {
		tests = append(tests, tc{fmt.Sprintf("cut at byte %d of the last frame", at), cut(at), true})
	}
	for n := 1; n < walFrameHeader; n++ {
		tests = append(tests,
			tc{fmt.Sprintf("%d zero bytes after the last record", n), add(make([]byte, n)), false},
			tc{fmt.Sprintf("%d garbage bytes after the last record", n), add(bytes.Repeat([]byte{0xa7}, n)), false})
	}
	tests = append(tests,
		tc{"zeros longer than a frame header (preallocated tail)", add(make([]byte, 300)), false},
		tc{"a header whose body never arrived", add(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 100), 12345)), false},
		tc{"a header and part of its body", add(append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 100), 12345), make([]byte, 40)...)), false},
		tc{"a header and part of its body, then preallocated zeros", add(append(append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 100), 12345),
			bytes.Repeat([]byte{0xa7}, 40)...), make([]byte, 3000)...)), false},
		tc{"a full last frame with a wrong CRC", flip(5), true},
		tc{"a full last frame with a wrong position byte", flip(walFrameHeader + 7), true},
		tc{"a full last frame with a wrong payload byte", flip(walFrameHeader + 9), true},
		tc{"a full last frame whose body is zeros", func(t *testing.T, path string, lastOff int) {
			editFile(t, path, func(data []byte) []byte {
				clear(data[lastOff+walFrameHeader:])
				return data
			})
		}, true},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Two segments, records 1-5 and 6-8: only the last one may be torn.
			dir := buildLog(t, 8, 6)
			last := filepath.Join(dir, segName(6))
			offs, size := frameOffsets(t, last)
			tt.damage(t, last, offs[len(offs)-1])

			w, recs := mustOpenWAL(t, dir, 1)
			keep, wantSize := uint64(8), size
			if tt.lost {
				keep, wantSize = 7, offs[len(offs)-1]
			}
			checkReplay(t, recs, 1, keep)
			fi, err := os.Stat(last)
			if err != nil {
				t.Fatalf("Stat(last segment) after open = %v; want nil", err)
			}
			if fi.Size() != int64(wantSize) {
				t.Fatalf("size of the last segment after open = %d; want %d", fi.Size(), wantSize)
			}
			pos, err := w.append(walPayload(keep + 1))
			if err != nil || pos != keep+1 {
				t.Fatalf("append after open = %d, %v; want %d, nil", pos, err, keep+1)
			}
			_ = w.close()
			_, recs = mustOpenWAL(t, dir, 1)
			checkReplay(t, recs, 1, keep+1)
		})
	}
}

// TestWALCrashWithPreallocatedTail: the segment being appended to grows in preallocated steps,
// not record by record, and what a crash leaves (records, then zeros) replays every
// acknowledged record and appends after the last.
func TestWALCrashWithPreallocatedTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, _ := mustOpenWAL(t, dir, 1)
	appendRecords(t, w, 5)
	path := filepath.Join(dir, segName(1))
	if fi, err := os.Stat(path); err != nil || fi.Size() != walPrealloc {
		t.Fatalf("segment after 5 appends: %v, %v; want %d bytes (one preallocated step)", fi.Size(), err, walPrealloc)
	}
	// The process dies: w is never closed.
	w2, recs := mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 5)
	appendRecords(t, w2, 7)
	_ = w2.close()
	_, recs = mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 7)
}

// TestWALTornOnlyRecord checks a torn tail that was the only record of the last segment: the
// segment is emptied, not refused, and its first position is appended again.
func TestWALTornOnlyRecord(t *testing.T) {
	t.Parallel()
	dir := buildLog(t, 4, 4)
	if err := os.Truncate(filepath.Join(dir, segName(4)), 5); err != nil {
		t.Fatal(err)
	}
	w, recs := mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 3)
	if pos, err := w.append(walPayload(4)); err != nil || pos != 4 {
		t.Fatalf("append after open = %d, %v; want 4, nil", pos, err)
	}
	_ = w.close()
	_, recs = mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 4)
}

// flipByte xors one byte of a file.
func flipByte(t *testing.T, path string, at int) {
	t.Helper()
	editFile(t, path, func(data []byte) []byte {
		data[at] ^= 0xff
		return data
	})
}

// wantCorrupt checks that opening the log from start fails with errWALCorrupt and, unless path
// is "", leaves the segment at path as it was (no record is cut off).
func wantCorrupt(t *testing.T, dir string, start uint64, path string) {
	t.Helper()
	var before []byte
	if path != "" {
		var err error
		if before, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	w, recs, err := openTestWAL(dir, start)
	if !errors.Is(err, errWALCorrupt) {
		if w != nil {
			_ = w.close()
		}
		var cut string
		if path != "" {
			after, _ := os.ReadFile(path)
			cut = fmt.Sprintf(", %s cut from %d to %d bytes", filepath.Base(path), len(before), len(after))
		}
		t.Fatalf("openWAL(start %d) = %v (%d records replayed%s); want an error wrapping errWALCorrupt",
			start, err, len(recs), cut)
	}
	if path == "" {
		return
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("%s changed by the failed open (%d bytes, then %d, %v)", path, len(before), len(after), err)
	}
}

// TestWALCorruptMiddleRecord checks that a damaged record followed by more records, whether in
// the last segment or an earlier one, fails the open rather than dropping acknowledged
// records: every byte of its CRC and body flipped in turn.
func TestWALCorruptMiddleRecord(t *testing.T) {
	t.Parallel()
	for _, seg := range []uint64{1, 6} { // an earlier segment, then the last one
		for rec := range 3 { // records 2-4 or 7-9 of 1-5 and 6-10, inside their segment
			pos := seg + 1 + uint64(rec)
			frame := walFrameHeader + 8 + len(walPayload(pos))
			for at := 4; at < frame; at++ {
				t.Run(fmt.Sprintf("segment %d record %d byte %d", seg, pos, at), func(t *testing.T) {
					t.Parallel()
					dir := buildLog(t, 10, 6)
					path := filepath.Join(dir, segName(seg))
					offs, _ := frameOffsets(t, path)
					flipByte(t, path, offs[pos-seg]+at)
					wantCorrupt(t, dir, 1, path)
				})
			}
		}
	}
}

// TestWALCorruptLengthField checks the same as TestWALCorruptMiddleRecord for the 4-byte
// length of a record in the middle of the last segment: a damaged length that points past the
// end of the file must not pass for a torn tail while later records follow.
func TestWALCorruptLengthField(t *testing.T) {
	t.Parallel()
	for at := range 4 {
		t.Run(fmt.Sprintf("byte %d", at), func(t *testing.T) {
			t.Parallel()
			dir := buildLog(t, 5)
			path := filepath.Join(dir, segName(1))
			offs, _ := frameOffsets(t, path)
			flipByte(t, path, offs[1]+at) // record 2 of 5
			wantCorrupt(t, dir, 1, path)
		})
	}
}

// TestWALCorruptEarlierSegment checks that a torn or extended segment other than the last fails
// the open: only the record being appended when the process died may be incomplete.
func TestWALCorruptEarlierSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"last record cut short", func(t *testing.T, path string) {
			_, size := frameOffsets(t, path)
			if err := os.Truncate(path, int64(size-3)); err != nil {
				t.Fatal(err)
			}
		}},
		{"zeros after the last record", func(t *testing.T, path string) {
			editFile(t, path, func(data []byte) []byte { return append(data, make([]byte, 5)...) })
		}},
		{"last record with a wrong CRC", func(t *testing.T, path string) {
			offs, _ := frameOffsets(t, path)
			flipByte(t, path, offs[len(offs)-1]+6)
		}},
		{"last record missing", func(t *testing.T, path string) {
			offs, _ := frameOffsets(t, path)
			if err := os.Truncate(path, int64(offs[len(offs)-1])); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := buildLog(t, 10, 4, 8)
			path := filepath.Join(dir, segName(4))
			tt.damage(t, path)
			wantCorrupt(t, dir, 1, path)
		})
	}
}

// TestWALMissingRecords checks that a log that lost records fails the open: one that begins
// after start, one with a segment missing in the middle, and a segment whose name is not a
// position.
func TestWALMissingRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		start  uint64
		damage func(t *testing.T, dir string)
	}{
		{"first segment deleted", 1, func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, segName(1))); err != nil {
				t.Fatal(err)
			}
		}},
		{"begins after start", 3, func(t *testing.T, dir string) {
			// Keep records 4-9 only: bbolt holds 1-2, so record 3 is lost.
			if err := os.Remove(filepath.Join(dir, segName(1))); err != nil {
				t.Fatal(err)
			}
		}},
		{"middle segment deleted", 1, func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, segName(4))); err != nil {
				t.Fatal(err)
			}
		}},
		{"segment named after the wrong position", 1, func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, segName(7)), filepath.Join(dir, segName(8))); err != nil {
				t.Fatal(err)
			}
		}},
		{"segment file with a short name", 1, func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "7"+walSuffix), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := buildLog(t, 9, 4, 7)
			tt.damage(t, dir)
			wantCorrupt(t, dir, tt.start, "")
		})
	}

	// Records 4-9 are enough when bbolt holds 1-3, and other files are not the log's.
	dir := buildLog(t, 9, 4, 7)
	if err := os.Remove(filepath.Join(dir, segName(1))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, recs := mustOpenWAL(t, dir, 4)
	checkReplay(t, recs, 4, 9)
}

// TestWALRelease checks that release(pos) deletes exactly the segments whose records are all
// at or before pos, never the current one, and that the log then reopens from what is left.
func TestWALRelease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pos  uint64
		want []uint64 // first positions of the segments left
	}{
		{0, []uint64{1, 4, 7}},
		{2, []uint64{1, 4, 7}},
		{3, []uint64{4, 7}},
		{5, []uint64{4, 7}},
		{6, []uint64{7}},
		{8, []uint64{7}},
		{9, []uint64{7}},
		{100, []uint64{7}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.pos), func(t *testing.T) {
			t.Parallel()
			dir := buildLog(t, 9, 4, 7)
			w, _ := mustOpenWAL(t, dir, 1)
			if err := w.release(tt.pos); err != nil {
				t.Fatalf("release(%d) = %v; want nil", tt.pos, err)
			}
			var want, gotSegs []string
			for _, first := range tt.want {
				want = append(want, segName(first))
			}
			for _, s := range w.segs {
				gotSegs = append(gotSegs, filepath.Base(s.path))
			}
			if got := segmentNames(t, dir); !slices.Equal(got, want) {
				t.Fatalf("segment files after release(%d) = %v; want %v", tt.pos, got, want)
			}
			if !slices.Equal(gotSegs, want) {
				t.Fatalf("w.segs after release(%d) = %v; want %v", tt.pos, gotSegs, want)
			}
			// The current segment is still the one appended to.
			appendRecords(t, w, 10)
			_ = w.close()
			_, recs := mustOpenWAL(t, dir, min(tt.pos+1, 7))
			checkReplay(t, recs, tt.want[0], 10)
		})
	}
}

// TestWALReleaseEmptyCurrent checks release right after a rotation, when the current segment
// holds no record yet: it stays, and the log reopens empty at its position.
func TestWALReleaseEmptyCurrent(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "log.wal")
	w, _ := mustOpenWAL(t, dir, 1)
	appendRecords(t, w, 3)
	if err := w.rotate(); err != nil {
		t.Fatalf("rotate = %v; want nil", err)
	}
	appendRecords(t, w, 6)
	if err := w.rotate(); err != nil {
		t.Fatalf("rotate = %v; want nil", err)
	}
	if err := w.release(6); err != nil {
		t.Fatalf("release(6) = %v; want nil", err)
	}
	if got, want := segmentNames(t, dir), []string{segName(7)}; !slices.Equal(got, want) {
		t.Fatalf("segments after release(6) = %v; want %v", got, want)
	}
	_ = w.close()
	w, recs := mustOpenWAL(t, dir, 7)
	if len(recs) != 0 || w.next != 7 {
		t.Fatalf("reopen: %d records, next %d; want 0, 7", len(recs), w.next)
	}
}

// TestWALReset checks that reset removes every segment, and that a log started again after it
// (as recover does) holds only the new records.
func TestWALReset(t *testing.T) {
	t.Parallel()
	dir := buildLog(t, 9, 4, 7)
	w, recs := mustOpenWAL(t, dir, 1)
	checkReplay(t, recs, 1, 9)
	if err := w.reset(); err != nil {
		t.Fatalf("reset = %v; want nil", err)
	}
	if got := segmentNames(t, dir); len(got) != 0 {
		t.Fatalf("segments after reset = %v; want none", got)
	}
	if err := w.close(); err != nil {
		t.Fatalf("close after reset = %v; want nil", err)
	}
	w, recs = mustOpenWAL(t, dir, 10)
	if len(recs) != 0 || w.next != 10 {
		t.Fatalf("reopen after reset: %d records, next %d; want 0, 10", len(recs), w.next)
	}
	appendRecords(t, w, 11)
	if err := w.reset(); err != nil {
		t.Fatalf("reset = %v; want nil", err)
	}
	if err := w.newSegment(); err != nil { // recover's order: reset, then a new segment
		t.Fatalf("newSegment = %v; want nil", err)
	}
	appendRecords(t, w, 12)
	_ = w.close()
	_, recs = mustOpenWAL(t, dir, 12)
	checkReplay(t, recs, 12, 12)
}
