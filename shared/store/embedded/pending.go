package embedded

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"github.com/tidwall/btree"
	bolt "go.etcd.io/bbolt"

	"github.com/roadevents/roadevents/shared/store"
)

// Commits bbolt does not hold yet. A commit is durable once the write-ahead log has synced it
// (wal.go); once written there, before the sync, its writes join the live layer, an in-memory
// sorted map per bucket that every read consults before bbolt (view.go). When the live layer
// is big or old enough it is frozen and a flusher goroutine writes it to bbolt in one
// transaction, while new commits fill a new live layer. One bbolt transaction for thousands
// of commits rewrites each branch page once, not once per commit, and nobody waits for its
// syncs. A publish synced through bbolt waited for scattered page writes and two fdatasyncs;
// through the log it waits for one sequential append (docs/performance.md §6).

const (
	// flushAge is the longest a commit stays in the live layer (Options.FlushBytes decides
	// the size).
	flushAge = 4 * time.Second
	// flushQuiet is how soon after the last commit a live layer is flushed when writes stop:
	// a store at rest then holds no commit in memory and has nothing in its log to replay,
	// and its file's pages are dropped from the process's memory (releaseMapping).
	flushQuiet = 500 * time.Millisecond
	flushRetry = time.Second
	// restBytes is the most a flush may leave in memory for the store to be at rest
	// (Store.OnRest).
	restBytes = 1 << 20
	// maxLiveBytes bounds the live layer while a flush is running: past it, commits wait for
	// the flush, so a disk slower than the writers holds them back instead of filling memory.
	maxLiveBytes = 128 << 20
	// entryOverhead is what a pending entry costs beside its key and value (tree slot, header).
	entryOverhead = 64
)

// metaWAL is the meta bucket's key for the position of the last log record bbolt holds.
var metaWAL = []byte("wal")

// layer is the writes of consecutive commits, newest value per key.
type layer struct {
	trees   [nBuckets]*btree.BTreeG[entry]
	seqs    [nBuckets]uint64 // the buckets' sequences after these commits
	last    uint64           // log position of the last commit
	commits int
	bytes   int
	since   time.Time // when its first commit joined
	latest  time.Time // when its last commit joined
}

func newLayer(seqs [nBuckets]uint64) *layer {
	l := &layer{seqs: seqs}
	for b := range l.trees {
		l.trees[b] = newTree()
	}
	return l
}

func (l *layer) empty() bool { return l.bytes == 0 }

// snapshot returns a copy of l that later commits to l do not change (copy on write).
func (l *layer) snapshot() *layer {
	c := *l
	for b := range c.trees {
		c.trees[b] = l.trees[b].Copy()
	}
	return &c
}

// wtx is a write transaction of the committer: reads see the transaction's own writes, then
// the view it began with; writes are kept until the transaction is committed to the log.
type wtx struct {
	v      *view
	staged [nBuckets]map[string]entry
	writes []stagedWrite // in order, for the log
	seqs   [nBuckets]uint64
}

type stagedWrite struct {
	b bucketID
	e entry
}

func (w *wtx) get(b bucketID, key []byte) []byte {
	if e, ok := w.staged[b][string(key)]; ok {
		if e.del {
			return nil
		}
		return e.val
	}
	return w.v.get(b, key)
}

// put writes val at key. Neither may be bbolt's memory: they outlive the transaction.
func (w *wtx) put(b bucketID, key, val []byte) { w.stage(b, entry{key: key, val: val}) }

func (w *wtx) del(b bucketID, key []byte) { w.stage(b, entry{key: key, del: true}) }

func (w *wtx) stage(b bucketID, e entry) {
	if w.staged[b] == nil {
		w.staged[b] = make(map[string]entry)
	}
	w.staged[b][string(e.key)] = e
	w.writes = append(w.writes, stagedWrite{b: b, e: e})
}

// nextSequence returns the next number of bucket b's sequence, as bbolt's NextSequence.
func (w *wtx) nextSequence(b bucketID) uint64 {
	w.seqs[b]++
	return w.seqs[b]
}

// cursor reads bucket b as the transaction began: without its own writes.
func (w *wtx) cursor(b bucketID) cursor { return w.v.cursor(b) }

// read begins a view of the store. The pending layers and bbolt's transaction are taken
// under one lock, which a flush also takes to drop the layer it wrote: a view never misses
// a commit, and at worst sees one in both places.
func (s *Store) read() (*view, error) {
	s.viewMu.RLock()
	defer s.viewMu.RUnlock()
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &view{tx: tx, layers: s.layers}, nil
}

// viewDo runs fn on a new view.
func (s *Store) viewDo(fn func(*view) error) error {
	v, err := s.read()
	if err != nil {
		return err
	}
	defer v.tx.Rollback()
	return fn(v)
}

// update runs fn in a write transaction and commits it: written to the log, shown in the live
// layer, then synced. It runs on the committer goroutine only.
//
// The commit is shown before its sync, so reads and the feed's followers (the streams) do not
// wait for the disk: a delivery no longer includes the sync, nor a sync that stalls
// (docs/performance.md §8). The writers' answers still wait for it, so nothing acknowledged
// can be lost, and a process killed after the write keeps the commit, which the kernel holds.
// Only a machine that loses its power during the sync can lose a commit that was seen, one
// whose writers were never told it succeeded (docs/architecture.md §2).
func (s *Store) update(fn func(*wtx) error) error {
	if s.syncFailed != nil {
		return fmt.Errorf("%w: the write-ahead log could not be synced, the store takes no writes until it is reopened: %w",
			store.ErrUnavailable, s.syncFailed)
	}
	v, err := s.read()
	if err != nil {
		return err
	}
	w := &wtx{v: v, seqs: s.live.seqs}
	err = fn(w)
	// The view ends before the locks below: a flush that must grow bbolt's memory map waits
	// for every read transaction, and new views wait for it under viewMu, which install takes.
	// Nothing staged points into bbolt's memory.
	_ = v.tx.Rollback()
	if err != nil || len(w.writes) == 0 {
		return err
	}
	s.walMu.Lock()
	pos, err := s.wal.write(encodeCommit(w))
	s.walMu.Unlock()
	if err != nil {
		// The commit is shown to no one, and wal.write cuts it off the log before the next
		// record: the disk refused it, as a full disk does, and the next commit tries again
		// (docs/operations.md §2).
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	before, seqs := s.shown, s.live.seqs // the live layer as it was, nil when empty
	s.install(w, pos)
	s.walMu.Lock()
	err = s.wal.sync()
	s.walMu.Unlock()
	if err != nil {
		// The commit is taken back and cut off the log, and no commit follows it: the feed's
		// followers may have read its positions, which the next commit would be given
		// (docs/operations.md §2).
		s.takeBack(before, seqs)
		s.syncFailed = err
		s.log.Error("embedded: the write-ahead log could not be synced; the store takes no writes until it is reopened", "err", err)
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// takeBack undoes the last install: the live layer becomes before again (a new layer with
// seqs when before is nil, as after a freeze) and new views no longer see the commit.
// Committer only.
func (s *Store) takeBack(before *layer, seqs [nBuckets]uint64) {
	if before == nil {
		s.live = newLayer(seqs)
	} else {
		s.live = before.snapshot()
	}
	s.viewMu.Lock()
	s.shown = before
	s.feedSeq = seqs[bFeed]
	s.showLocked()
	s.viewMu.Unlock()
}

// install adds a written commit to the live layer and shows it to new views, and wakes the
// feed's followers if it holds change records: once per group of writes, on the committer,
// rather than once per write from each writer's goroutine after it was scheduled again.
func (s *Store) install(w *wtx, pos uint64) {
	l := s.live
	fed := w.seqs[bFeed] != l.seqs[bFeed]
	l.latest = time.Now()
	if l.empty() {
		l.since = l.latest
	}
	for _, sw := range w.writes {
		l.trees[sw.b].Set(sw.e)
		l.bytes += len(sw.e.key) + len(sw.e.val) + entryOverhead
	}
	l.seqs, l.last = w.seqs, pos
	l.commits++
	snap := l.snapshot()
	s.viewMu.Lock()
	s.shown = snap
	s.feedSeq = w.seqs[bFeed]
	s.showLocked()
	s.viewMu.Unlock()
	if fed {
		s.notify()
		// The followers just woken are queued to run next on this goroutine's processor, which
		// the sync that follows holds while it blocks, so they waited for the runtime to take
		// it back or for the other core to steal them. Yielding hands it to them at once, and
		// the other core takes up the sync: paced deliveries came 9 % sooner at the p95, their
		// publishes' answers 6 % later at the p50 (docs/performance.md §8).
		runtime.Gosched()
	}
}

// showLocked sets the layers new views see; s.viewMu is held.
func (s *Store) showLocked() {
	// A new slice, not s.layers[:0:0]: that keeps pointing at the old array, whose elements
	// (a flushed layer, tens of MB) would stay reachable until the next commit.
	s.layers = nil
	if s.shown != nil && !s.shown.empty() {
		s.layers = append(s.layers, s.shown)
	}
	if s.frozen != nil {
		s.layers = append(s.layers, s.frozen)
	}
}

// maybeFreeze hands the live layer to the flusher when it is due and no flush is running, and
// waits for a running flush while the live layer is over maxLiveBytes. Committer only.
func (s *Store) maybeFreeze() {
	for {
		s.viewMu.RLock()
		frozen := s.frozen != nil
		flushed := s.flushed
		s.viewMu.RUnlock()
		l := s.live
		if !frozen {
			if !l.empty() && (l.bytes >= s.flushBytes || time.Since(l.since) >= flushAge || time.Since(l.latest) >= flushQuiet) {
				s.freeze()
			}
			return
		}
		if l.bytes < maxLiveBytes {
			return
		}
		select {
		case <-flushed:
		case <-s.closing:
			return // a flusher retrying a failure has stopped; Close tries once more
		}
	}
}

// freeze makes the live layer the frozen one and starts a new live layer; the flusher is
// told. Committer only, with no frozen layer.
func (s *Store) freeze() {
	s.swapLive()
	select {
	case s.flushReq <- struct{}{}:
	default:
	}
}

// swapLive makes the live layer the frozen one and starts a new live layer.
func (s *Store) swapLive() {
	l := s.live
	s.live = newLayer(l.seqs)
	s.viewMu.Lock()
	s.frozen = l
	s.shown = nil
	s.showLocked()
	s.viewMu.Unlock()
}

// flushLoop is the flusher goroutine; it ends when Close closes s.flushReq.
// A flush that fails is retried every flushRetry; meanwhile the commits stay in the log and
// in memory, and writers wait once the live layer is full (maybeFreeze).
func (s *Store) flushLoop() {
	defer close(s.flusherDone)
	for range s.flushReq {
		for {
			err := s.flush()
			if err == nil {
				s.atRest()
				break
			}
			s.log.Error("embedded: writing pending commits to the table file failed; they stay in the write-ahead log", "err", err)
			select {
			case <-time.After(flushRetry):
			case <-s.closing:
				return // Close tries once more
			}
		}
	}
}

// flush writes the frozen layer to bbolt, then drops it and the log records it held.
func (s *Store) flush() error {
	s.viewMu.RLock()
	l := s.frozen
	s.viewMu.RUnlock()
	if l == nil {
		return nil
	}
	start := time.Now()
	var stats bolt.TxStats
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := writeLayer(tx, l); err != nil {
			return err
		}
		tx.OnCommit(func() { stats = tx.Stats() })
		return nil
	})
	if err != nil {
		return err
	}
	s.log.Debug("embedded: pending commits written to the table file", "commits", l.commits, "bytes", l.bytes,
		"pages", stats.GetWrite(), "duration", time.Since(start))
	s.viewMu.Lock()
	s.frozen = nil
	s.showLocked()
	close(s.flushed)
	s.flushed = make(chan struct{})
	s.viewMu.Unlock()
	s.walMu.Lock()
	defer s.walMu.Unlock()
	return s.wal.release(l.last)
}

// atRest, after a flush, checks whether what came in while it ran is small (a checkpoint, a
// usage count) and if so drops the file's mapped pages and calls OnRest's function. The
// flushed layer must be unreachable by then, so that a collection it starts frees it.
func (s *Store) atRest() {
	s.viewMu.RLock()
	rest := s.frozen == nil && (s.shown == nil || s.shown.bytes < restBytes)
	s.viewMu.RUnlock()
	if !rest {
		return
	}
	s.releaseMapping()
	if fn := s.onRest.Load(); fn != nil {
		(*fn)()
	}
}

// writeLayer writes a layer's entries, sequences and log position into bbolt.
func writeLayer(tx *bolt.Tx, l *layer) error {
	if err := writeEntries(tx, l); err != nil {
		return err
	}
	return setWALPosition(tx, l.last)
}

// writeEntries writes a layer's entries into bbolt and raises the buckets' sequences to its.
func writeEntries(tx *bolt.Tx, l *layer) error {
	for b := range nBuckets {
		bk := tx.Bucket(bucketNames[b])
		if b == bFeed || b == bTTL {
			packGrowing(bk)
		}
		var err error
		l.trees[b].Scan(func(e entry) bool {
			if e.del {
				err = bk.Delete(e.key)
			} else {
				err = bk.Put(e.key, e.val)
			}
			return err == nil
		})
		if err != nil {
			return fmt.Errorf("write %s: %w", bucketNames[b], err)
		}
		if l.seqs[b] > bk.Sequence() {
			if err := bk.SetSequence(l.seqs[b]); err != nil {
				return err
			}
		}
	}
	return nil
}

// packGrowing lets the pages of a bucket whose keys grow fill up before they split. bbolt
// splits a full page in halves by default (FillPercent 0.5), right for keys inserted anywhere,
// but a half left behind by growing keys is never written again. The feed's keys only grow; the
// expiry index's grow at one place per lifetime in use (an event's expiry is its creation plus
// its type's lifetime), and halves left it half empty: after 100 000 publishes 61 MB of pages
// for 30 MB of entries (docs/performance.md §6). The setting lasts for the transaction.
func packGrowing(b *bolt.Bucket) { b.FillPercent = 1 }

func walPosition(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(bucketMeta).Get(metaWAL); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func setWALPosition(tx *bolt.Tx, pos uint64) error {
	return tx.Bucket(bucketMeta).Put(metaWAL, binary.BigEndian.AppendUint64(nil, pos))
}

// encodeCommit is a commit's log record: the sequences after it, then its writes in order.
func encodeCommit(w *wtx) []byte {
	n := 16
	for _, sw := range w.writes {
		n += 12 + len(sw.e.key) + len(sw.e.val)
	}
	b := make([]byte, 0, n)
	for _, seq := range w.seqs {
		b = binary.AppendUvarint(b, seq)
	}
	b = binary.AppendUvarint(b, uint64(len(w.writes)))
	for _, sw := range w.writes {
		del := byte(0)
		if sw.e.del {
			del = 1
		}
		b = append(b, byte(sw.b), del)
		b = appendBytes(b, sw.e.key)
		if !sw.e.del {
			b = appendBytes(b, sw.e.val)
		}
	}
	return b
}

// addRecord adds a commit's log record (encodeCommit) to l.
func (l *layer) addRecord(payload []byte) error {
	d := &decoder{b: payload}
	for b := range l.seqs {
		l.seqs[b] = max(l.seqs[b], d.uvarint())
	}
	n := d.count()
	for range n {
		b, del := bucketID(d.byte()), d.byte()
		e := entry{key: d.bytes(), del: del == 1}
		if !e.del {
			e.val = d.bytes()
		}
		if d.err != nil {
			return d.err
		}
		if b >= nBuckets || del > 1 {
			return corrupt("log record: bucket %d, deletion flag %d", b, del)
		}
		l.trees[b].Set(e)
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return corrupt("log record: %d bytes after its writes", len(d.b))
	}
	return nil
}

// recover replays into bbolt the log records it does not hold, and empties the log. It runs
// in Open, before the store serves anything.
func (s *Store) recover(dir string) error {
	var applied uint64
	if err := s.db.View(func(tx *bolt.Tx) error { applied = walPosition(tx); return nil }); err != nil {
		return err
	}
	// The records bbolt lacks are gathered in one layer, newest value per key, and written as
	// the flusher writes a layer.
	unapplied := newLayer([nBuckets]uint64{})
	w, err := openWAL(dir, applied+1, s.log, func(pos uint64, payload []byte) error {
		if pos <= applied {
			return nil
		}
		if err := unapplied.addRecord(payload); err != nil {
			return fmt.Errorf("replay the write-ahead log: log record %d: %w", pos, err)
		}
		unapplied.last = pos
		unapplied.commits++
		return nil
	})
	if err != nil {
		return err
	}
	if unapplied.commits > 0 {
		if err := s.db.Update(func(tx *bolt.Tx) error { return writeLayer(tx, unapplied) }); err != nil {
			_ = w.close()
			return fmt.Errorf("replay the write-ahead log: %w", err)
		}
		s.log.Info("embedded: replayed the write-ahead log", "commits", unapplied.commits)
	}
	// bbolt now holds every record: start an empty log after the last position.
	w.files = s.walFiles
	next := max(w.next, applied+1)
	if err := w.reset(); err != nil {
		return err
	}
	w.next = next
	if err := w.newSegment(); err != nil {
		return err
	}
	s.wal = w
	return s.db.View(func(tx *bolt.Tx) error {
		var seqs [nBuckets]uint64
		for b := range seqs {
			seqs[b] = tx.Bucket(bucketNames[b]).Sequence()
		}
		s.live = newLayer(seqs)
		s.feedSeq = seqs[bFeed]
		return nil
	})
}

// flushAll writes every pending commit to bbolt and empties the log (Close). The committer and
// the flusher have stopped.
func (s *Store) flushAll() error {
	if err := s.flush(); err != nil {
		return err
	}
	if !s.live.empty() {
		s.swapLive()
		if err := s.flush(); err != nil {
			return err
		}
	}
	return s.wal.reset()
}
