package embedded

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/roadevents/roadevents/shared/durable"
)

// The write-ahead log. A commit is durable once its record is appended here and synced: one
// sequential write and one fdatasync, where a bbolt commit rewrites every page it touches
// (several scattered pages per published event) and syncs twice. bbolt receives the commits
// later, many at a time (pending.go), and the log keeps every record that bbolt may not hold
// yet; Open replays them.
//
// The log is a folder of segment files, each named by the position of its first record in 16
// hex digits. A record is framed as
//
//	length (4 bytes, big-endian) | CRC-32C of the body (4 bytes) | body
//	body: position (8 bytes, big-endian) | payload
//
// Positions count records from 1 without gaps. Records are appended and synced one at a time,
// so after a crash only the last record of the last segment can be incomplete: Open cuts
// such a torn tail off (its commit never returned). A bad record anywhere else is corruption
// and Open fails rather than drop records that were acknowledged.
//
// A record that cannot be written or synced (a full disk, an I/O error) fails its commit and
// is cut off the segment at once, and the segment synced, before any other record may follow
// (docs/operations.md §2). After a failed fsync the kernel may have dropped the unwritten pages
// and will not report that again, so what the file holds past the last acknowledged record is
// unknown until it is cut; the records before it were synced when they were acknowledged. When
// the disk has room again, the next commit is appended where the failed one began.
//
// The segment being appended to is written with zeros, and synced, a step ahead of its records
// (preallocate): a record's fdatasync then writes its data only, where one that grows the file
// must also commit the new size to the file system's journal, which took twice as long
// (docs/performance.md §6). So the last segment may end in zeros, which Open cuts off; a
// segment is cut to its records before the next one is started, so earlier ones never do.

const (
	walSuffix       = ".wal"
	walFrameHeader  = 8
	walSegmentBytes = 64 << 20 // a segment is closed and a new one started past this size
	walMaxRecord    = 1 << 30  // a length above this is damage, not a record
	walPrealloc     = 1 << 20  // zeros are written ahead of the records in steps of this size
)

// walZeros is what preallocate writes: an array, which takes no memory until it is read.
var walZeros [walPrealloc]byte

var walCRC = crc32.MakeTable(crc32.Castagnoli)

// errWALCorrupt is wrapped by the errors of a log that cannot be read back.
var errWALCorrupt = errors.New("embedded: write-ahead log corrupt")

// LogFile is what the log needs of one of its segment files (Options.WALFiles).
type LogFile interface {
	WriteAt(p []byte, off int64) (int, error)
	// SyncData makes what was written durable (fdatasync on Linux).
	SyncData() error
	Truncate(size int64) error
	Close() error
}

// osLogFile is a segment file on disk.
type osLogFile struct{ *os.File }

func (f osLogFile) SyncData() error { return durable.SyncData(f.File) }

// walSegment is one file of the log.
type walSegment struct {
	first uint64 // position of its first record
	path  string
}

// wal appends records to the log. It is used by one goroutine at a time (the committer, or
// the flusher for release), under Store.walMu.
type wal struct {
	dir  string
	segs []walSegment // in position order; the last is the one appended to
	f    LogFile      // the last segment
	size int64        // bytes of f up to the end of its last acknowledged record
	// alloc is how far f holds synced zeros (or records): appends up to it do not grow f.
	alloc int64
	// segmentBytes is the size past which the next append starts a new segment.
	segmentBytes int64
	// torn is set while f may hold part of a failed record past size.
	torn bool
	next uint64 // position of the next record
	buf  []byte
	// files wraps each new segment file (Options.WALFiles); nil leaves it as it is.
	files func(LogFile) LogFile
}

// openWAL opens the log in dir (creating it), calls replay for every record in position order,
// and returns the log ready to append after the last one. start is the position the log must
// reach back to: the first record bbolt does not hold. A log that begins after start has lost
// records; an empty log continues at start.
func openWAL(dir string, start uint64, log *slog.Logger, replay func(pos uint64, payload []byte) error) (*wal, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	w := &wal{dir: dir, segs: segs, next: start, segmentBytes: walSegmentBytes}
	if len(segs) > 0 {
		if segs[0].first > start {
			return nil, fmt.Errorf("%w: %s begins at record %d, but record %d is not in the table", errWALCorrupt, dir, segs[0].first, start)
		}
		w.next = segs[0].first
	}
	for i, seg := range segs {
		if seg.first != w.next {
			return nil, fmt.Errorf("%w: %s begins at record %d, want %d", errWALCorrupt, seg.path, seg.first, w.next)
		}
		last := i == len(segs)-1
		size, err := w.replaySegment(seg, last, log, replay)
		if err != nil {
			return nil, err
		}
		if last {
			w.size, w.alloc = size, size // replay cut off anything past the records
		}
	}
	if len(segs) == 0 {
		if err := w.newSegment(); err != nil {
			return nil, err
		}
		return w, nil
	}
	f, err := os.OpenFile(segs[len(segs)-1].path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", segs[len(segs)-1].path, err)
	}
	w.f = osLogFile{f}
	return w, nil
}

func listSegments(dir string) ([]walSegment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var segs []walSegment
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), walSuffix)
		if !ok || e.IsDir() {
			continue
		}
		first, err := strconv.ParseUint(name, 16, 64)
		if err != nil || len(name) != 16 {
			return nil, fmt.Errorf("%w: unexpected file %s in %s", errWALCorrupt, e.Name(), dir)
		}
		segs = append(segs, walSegment{first: first, path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(segs, func(a, b walSegment) int { return cmp.Compare(a.first, b.first) })
	return segs, nil
}

// replaySegment reads one segment, calling replay for each record, and returns the bytes of
// its valid records. In the last segment a torn final record is cut off.
func (w *wal) replaySegment(seg walSegment, last bool, log *slog.Logger, replay func(uint64, []byte) error) (int64, error) {
	data, err := os.ReadFile(seg.path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", seg.path, err)
	}
	off := 0
	for off < len(data) {
		body, ok := walFrame(data[off:])
		if !ok && last && allZero(data[off:]) {
			// Preallocated space that no record reached: no loss, nothing to report.
			if err := os.Truncate(seg.path, int64(off)); err != nil {
				return 0, fmt.Errorf("cut %s: %w", seg.path, err)
			}
			break
		}
		if !ok {
			if !last || !tornTail(data[off:], w.next) {
				return 0, fmt.Errorf("%w: %s: bad record at byte %d of %d", errWALCorrupt, seg.path, off, len(data))
			}
			log.Warn("embedded: cutting off the write-ahead log's torn last record (its commit never returned)",
				"file", seg.path, "at", off, "bytes", len(data)-off)
			if err := os.Truncate(seg.path, int64(off)); err != nil {
				return 0, fmt.Errorf("cut %s: %w", seg.path, err)
			}
			break
		}
		pos := binary.BigEndian.Uint64(body)
		if pos != w.next {
			return 0, fmt.Errorf("%w: %s: record %d where %d belongs", errWALCorrupt, seg.path, pos, w.next)
		}
		if err := replay(pos, body[8:]); err != nil {
			return 0, err
		}
		w.next++
		off += walFrameHeader + len(body)
	}
	return int64(off), nil
}

// walFrame returns the body of the record at the start of b, and false when b does not start
// with a whole, intact record.
func walFrame(b []byte) ([]byte, bool) {
	if len(b) < walFrameHeader {
		return nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if n < 8 || n > walMaxRecord || uint64(len(b)-walFrameHeader) < uint64(n) {
		return nil, false
	}
	body := b[walFrameHeader : walFrameHeader+int(n)]
	if crc32.Checksum(body, walCRC) != binary.BigEndian.Uint32(b[4:]) {
		return nil, false
	}
	return body, true
}

// tornTail tells whether b, which does not start with a valid record, can be what a crash
// leaves of record next, the one being appended: it does not extend past that record's frame
// (the preallocated zeros after it aside), and record next+1 does not follow (a damaged length
// can make a middle record look torn). Anything after a complete (but bad) frame means records
// were damaged, not torn.
func tornTail(b []byte, next uint64) bool {
	b = bytes.TrimRight(b, "\x00")
	if len(b) >= walFrameHeader {
		n := uint64(binary.BigEndian.Uint32(b))
		if uint64(len(b)) > walFrameHeader+n && (n != 0 || !allZero(b)) {
			return false
		}
	}
	for o := 1; o+walFrameHeader+8 <= len(b); o++ {
		if binary.BigEndian.Uint64(b[o+walFrameHeader:]) != next+1 {
			continue
		}
		if _, ok := walFrame(b[o:]); ok {
			return false
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// write writes one record at the end of the log, without syncing it, and returns its
// position; sync must follow before the next write. The committer shows the commit between
// the two (Store.update). After an error of either, the record is cut off again (cut), or, if
// even that failed, the next write cuts it first.
func (w *wal) write(payload []byte) (uint64, error) {
	if w.torn {
		if err := w.cut(); err != nil {
			return 0, err
		}
	}
	if w.size >= w.segmentBytes {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	if need := w.size + walFrameHeader + 8 + int64(len(payload)); need > w.alloc {
		if err := w.preallocate(need); err != nil {
			return 0, w.fail(err)
		}
	}
	pos := w.next
	w.buf = binary.BigEndian.AppendUint32(w.buf[:0], uint32(8+len(payload)))
	w.buf = binary.BigEndian.AppendUint32(w.buf, 0)
	w.buf = binary.BigEndian.AppendUint64(w.buf, pos)
	w.buf = append(w.buf, payload...)
	binary.BigEndian.PutUint32(w.buf[4:], crc32.Checksum(w.buf[walFrameHeader:], walCRC))
	if _, err := w.f.WriteAt(w.buf, w.size); err != nil {
		return 0, w.fail(fmt.Errorf("write-ahead log: %w", err))
	}
	return pos, nil
}

// sync syncs the record write wrote, which is durable when sync returns nil.
func (w *wal) sync() error {
	if err := w.f.SyncData(); err != nil {
		return w.fail(fmt.Errorf("write-ahead log: sync: %w", err))
	}
	w.size += int64(len(w.buf))
	w.next++
	if cap(w.buf) > 1<<20 {
		w.buf = nil // one large commit should not pin its buffer
	}
	return nil
}

// preallocate writes zeros from w.alloc on, in steps of walPrealloc, until the segment holds
// need bytes, and syncs them.
func (w *wal) preallocate(need int64) error {
	end := w.alloc
	for end < need {
		if _, err := w.f.WriteAt(walZeros[:], end); err != nil {
			return fmt.Errorf("write-ahead log: preallocate: %w", err)
		}
		end += walPrealloc
	}
	if err := w.f.SyncData(); err != nil {
		return fmt.Errorf("write-ahead log: preallocate: sync: %w", err)
	}
	w.alloc = end
	return nil
}

// fail cuts off the record whose write or sync failed with err, and returns err.
func (w *wal) fail(err error) error {
	w.torn = true
	if cerr := w.cut(); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// cut truncates the current segment to its last acknowledged record and syncs it, so that
// nothing of a failed record can be replayed and the next record follows the last good one.
func (w *wal) cut() error {
	if err := w.f.Truncate(w.size); err != nil {
		return fmt.Errorf("write-ahead log: cut the segment back to its last record: %w", err)
	}
	if err := w.f.SyncData(); err != nil {
		return fmt.Errorf("write-ahead log: sync after cutting the segment back: %w", err)
	}
	w.torn, w.alloc = false, w.size
	return nil
}

// rotate starts the next segment and closes the current one; if the next cannot be created,
// the current one stays and the next append tries again.
func (w *wal) rotate() error {
	if w.alloc > w.size {
		// Cut the preallocated zeros off first: only the last segment may end in them.
		if err := w.cut(); err != nil {
			return err
		}
	}
	old := w.f
	if err := w.newSegment(); err != nil {
		return err
	}
	// Every record of the old segment was synced when it was acknowledged: a failure to
	// close it loses nothing.
	_ = old.Close()
	return nil
}

// newSegment creates the segment whose first record is w.next and makes it the current one.
func (w *wal) newSegment() error {
	seg := walSegment{first: w.next, path: filepath.Join(w.dir, fmt.Sprintf("%016x%s", w.next, walSuffix))}
	f, err := os.OpenFile(seg.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write-ahead log: %w", err)
	}
	if err := durable.SyncDir(w.dir); err != nil {
		_ = f.Close()
		return fmt.Errorf("write-ahead log: %w", err)
	}
	var lf LogFile = osLogFile{f}
	if w.files != nil {
		lf = w.files(lf)
	}
	w.f, w.size, w.alloc, w.torn = lf, 0, 0, false
	w.segs = append(w.segs, seg)
	return nil
}

// release deletes the segments whose records are all at or before pos: bbolt holds them.
// The current segment stays.
func (w *wal) release(pos uint64) error {
	n := 0
	for n < len(w.segs)-1 && w.segs[n+1].first <= pos+1 {
		if err := os.Remove(w.segs[n].path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("write-ahead log: %w", err)
		}
		n++
	}
	w.segs = w.segs[n:]
	return nil
}

// reset empties the log once bbolt holds every record (Close): the next record starts a
// fresh segment, and a reopened store has nothing to replay.
func (w *wal) reset() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("write-ahead log: close: %w", err)
	}
	for _, seg := range w.segs {
		if err := os.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("write-ahead log: %w", err)
		}
	}
	w.segs, w.f = nil, nil
	return durable.SyncDir(w.dir)
}

// close closes the current segment, cut back to its records so that a log closed cleanly
// holds no preallocated zeros.
func (w *wal) close() error {
	if w.f == nil {
		return nil
	}
	var err error
	if w.alloc > w.size {
		err = w.cut()
	}
	err = errors.Join(err, w.f.Close())
	w.f = nil
	return err
}
