package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/roadevents/roadevents/shared/store"
)

// openStoreBolt opens a bbolt file with the store's buckets (initBuckets), as Open makes it.
func openStoreBolt(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "replay.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatalf("bolt.Open = %v; want nil", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Update(initBuckets); err != nil {
		t.Fatalf("initBuckets = %v; want nil", err)
	}
	return db
}

// bucketContents returns every key and value of bucket b.
func bucketContents(tx *bolt.Tx, b bucketID) map[string]string {
	m := map[string]string{}
	_ = tx.Bucket(bucketNames[b]).ForEach(func(k, v []byte) error {
		m[string(k)] = string(v)
		return nil
	})
	return m
}

// sampleCommit is a commit with puts and deletions in the three buckets: a key written twice
// (the later write wins), deletions of present and absent keys, an empty value, binary keys
// and a value long enough for a two-byte length.
func sampleCommit() *wtx {
	put := func(b bucketID, k, v string) stagedWrite {
		return stagedWrite{b: b, e: entry{key: []byte(k), val: []byte(v)}}
	}
	del := func(b bucketID, k string) stagedWrite {
		return stagedWrite{b: b, e: entry{key: []byte(k), del: true}}
	}
	return &wtx{
		seqs: [nBuckets]uint64{bItems: 5, bTTL: 7, bFeed: 1 << 40},
		writes: []stagedWrite{
			put(bItems, "over", "new1"),
			put(bItems, "new", "v"),
			del(bItems, "gone"),
			del(bItems, "absent"),
			put(bItems, "over", "new2"),
			put(bItems, "empty", ""),
			put(bItems, "\x00\xff", string(bytes.Repeat([]byte("long"), 100))),
			put(bTTL, "t1", "k1"),
			put(bTTL, "t2", "k2"),
			del(bTTL, "t2"),
			put(bFeed, "\x00\x00\x00\x00\x00\x00\x00\x01", "c1"),
			del(bFeed, "old-feed"),
		},
	}
}

// TestCommitReplayRoundTrip checks that a commit's log record, replayed into bbolt, makes the
// writes in order (the later of two writes of a key wins, deletions delete) and raises each
// bucket's sequence to the commit's, never lowering it.
func TestCommitReplayRoundTrip(t *testing.T) {
	t.Parallel()
	db := openStoreBolt(t)
	before := [nBuckets]map[string]string{
		bItems: {"keep": "old", "gone": "x", "over": "old"},
		bTTL:   {},
		bFeed:  {"old-feed": "c0"},
	}
	beforeSeqs := [nBuckets]uint64{bItems: 10, bTTL: 0, bFeed: 3}
	if err := db.Update(func(tx *bolt.Tx) error {
		for b := range nBuckets {
			bk := tx.Bucket(bucketNames[b])
			for k, v := range before[b] {
				if err := bk.Put([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
			if err := bk.SetSequence(beforeSeqs[b]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("fill bbolt: %v", err)
	}

	w := sampleCommit()
	want := [nBuckets]map[string]string{}
	for b := range nBuckets {
		want[b] = maps.Clone(before[b])
	}
	for _, sw := range w.writes {
		if sw.e.del {
			delete(want[sw.b], string(sw.e.key))
		} else {
			want[sw.b][string(sw.e.key)] = string(sw.e.val)
		}
	}
	wantSeqs := [nBuckets]uint64{bItems: 10, bTTL: 7, bFeed: 1 << 40}

	payload := encodeCommit(w)
	if err := db.Update(func(tx *bolt.Tx) error { return replayCommit(tx, payload) }); err != nil {
		t.Fatalf("replayCommit = %v; want nil", err)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		for b := range nBuckets {
			if got := bucketContents(tx, b); !maps.Equal(got, want[b]) {
				t.Errorf("bucket %s after replay = %q; want %q", bucketNames[b], got, want[b])
			}
			if got := tx.Bucket(bucketNames[b]).Sequence(); got != wantSeqs[b] {
				t.Errorf("sequence of %s after replay = %d; want %d", bucketNames[b], got, wantSeqs[b])
			}
		}
		if got := walPosition(tx); got != 0 {
			t.Errorf("log position after replayCommit = %d; want 0 (recover sets it)", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// replayCommit writes a commit's log record into bbolt as recover does: decoded into a layer,
// then written as the flusher writes one.
func replayCommit(tx *bolt.Tx, payload []byte) error {
	l := newLayer([nBuckets]uint64{})
	if err := l.addRecord(payload); err != nil {
		return err
	}
	return writeEntries(tx, l)
}

// replayRolledBack replays payload in a write transaction that is then discarded, and turns a
// panic into an error.
func replayRolledBack(db *bolt.DB, payload []byte) (err error) {
	tx, err := db.Begin(true)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return replayCommit(tx, payload)
}

// TestReplayCommitRefusesDamage checks that a cut or extended log record, or one naming an
// unknown bucket or deletion flag, is ErrCorrupt, never a panic or a shorter commit.
func TestReplayCommitRefusesDamage(t *testing.T) {
	t.Parallel()
	db := openStoreBolt(t)
	w := sampleCommit()
	payload := encodeCommit(w)
	if err := replayRolledBack(db, payload); err != nil {
		t.Fatalf("replay of the whole record = %v; want nil", err)
	}
	for n := range len(payload) {
		if err := replayRolledBack(db, payload[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("replay of the first %d of %d bytes = %v; want ErrCorrupt", n, len(payload), err)
		}
	}
	for _, extra := range [][]byte{{0}, {1, 2, 3}, payload} {
		if err := replayRolledBack(db, slices.Concat(payload, extra)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("replay with %d bytes after the record = %v; want ErrCorrupt", len(extra), err)
		}
	}

	// The first write's bucket and deletion flag follow the sequences and the count.
	var head []byte
	for _, seq := range w.seqs {
		head = binary.AppendUvarint(head, seq)
	}
	head = binary.AppendUvarint(head, uint64(len(w.writes)))
	if !bytes.HasPrefix(payload, head) || payload[len(head)] != byte(bItems) || payload[len(head)+1] != 0 {
		t.Fatalf("record does not start with its sequences, count and a put in items: % x", payload[:len(head)+2])
	}
	for _, tt := range []struct {
		name string
		at   int
		val  byte
	}{
		{"bucket 3", len(head), 3},
		{"bucket 255", len(head), 255},
		{"deletion flag 2", len(head) + 1, 2},
	} {
		bad := bytes.Clone(payload)
		bad[tt.at] = tt.val
		if err := replayRolledBack(db, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("replay with %s = %v; want ErrCorrupt", tt.name, err)
		}
	}
}

// copyTree copies the folder src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read %s: %v", src, err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatalf("write %s: %v", dst, err)
	}
}

// TestRecoverAfterCrash writes through a store, then takes what a crash would leave on disk,
// without Close: a copy of the bbolt file and of the log folder, taken while the store is
// open. The copy opens with every acknowledged write (replayed from the log), and again after
// a clean Close.
func TestRecoverAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	s, err := Open(path, Options{FlushBytes: 1 << 30, SweepInterval: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatalf("Open = %v; want nil", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close of the original = %v; want nil", err)
		}
	}()
	s.viewMu.RLock()
	flushedAtOpen := s.flushed
	s.viewMu.RUnlock()

	key := func(i int) store.Key { return store.Key{PK: "crash", SK: fmt.Sprintf("%03d", i)} }
	item := func(i, n int) store.Item {
		return store.Item{store.AttrPK: "crash", store.AttrSK: fmt.Sprintf("%03d", i), "n": int64(n)}
	}
	// 30 puts, 10 of them overwritten and 5 deleted: the replay must keep the order.
	want := map[int]int{} // item -> n; absent: deleted
	for i := range 30 {
		if err := s.Put(ctx, item(i, i), store.Condition{}); err != nil {
			t.Fatalf("Put(%d) = %v; want nil", i, err)
		}
		want[i] = i
	}
	for i := range 10 {
		if err := s.Put(ctx, item(i, 100+i), store.Condition{}); err != nil {
			t.Fatalf("Put(%d) again = %v; want nil", i, err)
		}
		want[i] = 100 + i
	}
	for i := 20; i < 25; i++ {
		if err := s.Delete(ctx, key(i), store.Condition{}); err != nil {
			t.Fatalf("Delete(%d) = %v; want nil", i, err)
		}
		delete(want, i)
	}

	// The writes returned, so their records are synced in the log; bbolt may not have them.
	// Copying bbolt's file while the flusher writes it could give a file no crash leaves (its
	// pages read before and after a commit), so the copy must not overlap a flush: take it
	// while no layer is frozen, and take it again if a flush began or ended meanwhile (a flush
	// closes and replaces s.flushed). With FlushBytes this large, only the age limit
	// (flushAge) flushes, so the first copy normally holds everything in the log alone.
	var (
		crash   string
		flushed chan struct{} // s.flushed while the copy was taken
	)
	for attempt := 0; ; attempt++ {
		var frozen *layer
		s.viewMu.RLock()
		frozen, flushed = s.frozen, s.flushed
		s.viewMu.RUnlock()
		if frozen != nil {
			<-flushed // a flush is running: wait for its end
			continue
		}
		crash = filepath.Join(dir, fmt.Sprintf("crash%d", attempt))
		if err := os.Mkdir(crash, 0o750); err != nil {
			t.Fatal(err)
		}
		copyFile(t, path, filepath.Join(crash, "store.db"))
		copyTree(t, path+walSuffix, filepath.Join(crash, "store.db"+walSuffix))
		s.viewMu.RLock()
		frozen, flushedAfter := s.frozen, s.flushed
		s.viewMu.RUnlock()
		if frozen == nil && flushedAfter == flushed {
			break
		}
	}
	copied := filepath.Join(crash, "store.db")

	// Without a flush before the copy, the copied bbolt file holds none of the writes: they
	// can only come back from the log.
	if flushed == flushedAtOpen {
		db, err := bolt.Open(copied, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("bolt.Open(copy) = %v; want nil", err)
		}
		var items int
		var pos uint64
		_ = db.View(func(tx *bolt.Tx) error {
			items = tx.Bucket(bucketItems).Stats().KeyN
			pos = walPosition(tx)
			return nil
		})
		_ = db.Close()
		if items != 0 || pos != 0 {
			t.Fatalf("copied bbolt file before replay: %d items, log position %d; want 0, 0", items, pos)
		}
	} else {
		t.Logf("a flush ran before the copy: part of the writes come from the bbolt file")
	}

	check := func(name string, st *Store) {
		t.Helper()
		for i := range 30 {
			got, err := st.Get(ctx, key(i))
			n, ok := want[i]
			switch {
			case !ok && !errors.Is(err, store.ErrNotFound):
				t.Errorf("%s: Get(%d) = %v, %v; want store.ErrNotFound", name, i, got, err)
			case ok && (err != nil || got.Int("n") != int64(n)):
				t.Errorf("%s: Get(%d) = %v, %v; want n=%d", name, i, got, err, n)
			}
		}
	}
	c, err := Open(copied, Options{FlushBytes: 1 << 30, SweepInterval: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatalf("Open(copy) = %v; want nil", err)
	}
	check("copy", c)
	if err := c.Close(); err != nil {
		t.Fatalf("Close of the copy = %v; want nil", err)
	}
	c, err = Open(copied, Options{FlushBytes: 1 << 30, SweepInterval: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatalf("Open(copy) after Close = %v; want nil", err)
	}
	check("copy reopened after Close", c)
	if err := c.Close(); err != nil {
		t.Fatalf("Close of the copy = %v; want nil", err)
	}
	check("original", s)
}

// TestRecoverSkipsAppliedRecords checks recover against bbolt's log position: records at or
// before it are not replayed again (record 3 would bring back a stale value), later ones are,
// the position becomes the last record's, and the log restarts empty after it. A log that
// lacks records bbolt does not hold fails with errWALCorrupt.
func TestRecoverSkipsAppliedRecords(t *testing.T) {
	t.Parallel()
	put := func(k, v string) stagedWrite { return stagedWrite{b: bItems, e: entry{key: []byte(k), val: []byte(v)}} }
	records := map[uint64]*wtx{ // the others write "filler"
		3: {seqs: [nBuckets]uint64{bFeed: 3}, writes: []stagedWrite{put("x", "stale")}},
		6: {seqs: [nBuckets]uint64{bFeed: 6}, writes: []stagedWrite{put("y", "6")}},
		7: {seqs: [nBuckets]uint64{bFeed: 7}, writes: []stagedWrite{{b: bItems, e: entry{key: []byte("z"), del: true}}}},
		8: {seqs: [nBuckets]uint64{bFeed: 8}, writes: []stagedWrite{put("w", "8")}},
	}
	tests := []struct {
		name          string
		applied       uint64 // bbolt's log position
		first, last   uint64 // the log's records; none when last < first
		want          map[string]string
		wantPos, next uint64
		wantErr       error
	}{
		{"records after the position", 5, 1, 8, map[string]string{"x": "fresh", "y": "6", "w": "8", "filler": "5"}, 8, 9, nil},
		{"nothing after the position", 8, 1, 8, map[string]string{"x": "fresh", "z": "old", "filler": "5"}, 8, 9, nil},
		{"empty log", 10, 1, 0, map[string]string{"x": "fresh", "z": "old", "filler": "5"}, 10, 11, nil},
		{"log from the next record", 5, 6, 8, map[string]string{"x": "fresh", "y": "6", "w": "8", "filler": "5"}, 8, 9, nil},
		{"records missing", 2, 4, 8, nil, 0, 0, errWALCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := openStoreBolt(t)
			if err := db.Update(func(tx *bolt.Tx) error {
				bk := tx.Bucket(bucketItems)
				for k, v := range map[string]string{"x": "fresh", "z": "old", "filler": "5"} {
					if err := bk.Put([]byte(k), []byte(v)); err != nil {
						return err
					}
				}
				return setWALPosition(tx, tt.applied)
			}); err != nil {
				t.Fatalf("fill bbolt: %v", err)
			}
			dir := filepath.Join(t.TempDir(), "store.db"+walSuffix)
			if tt.last >= tt.first {
				w, _ := mustOpenWAL(t, dir, tt.first)
				for pos := tt.first; pos <= tt.last; pos++ {
					rec, ok := records[pos]
					if !ok {
						rec = &wtx{seqs: [nBuckets]uint64{bFeed: pos}, writes: []stagedWrite{put("filler", fmt.Sprint(pos))}}
					}
					if got, err := w.append(encodeCommit(rec)); err != nil || got != pos {
						t.Fatalf("append = %d, %v; want %d, nil", got, err, pos)
					}
				}
				_ = w.close()
			}

			s := &Store{db: db, log: discardLogger()}
			err := s.recover(dir)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("recover = %v; want an error wrapping %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("recover = %v; want nil", err)
			}
			defer func() { _ = s.wal.close() }()
			_ = db.View(func(tx *bolt.Tx) error {
				if got := bucketContents(tx, bItems); !maps.Equal(got, tt.want) {
					t.Errorf("items after recover = %q; want %q", got, tt.want)
				}
				if got := walPosition(tx); got != tt.wantPos {
					t.Errorf("log position after recover = %d; want %d", got, tt.wantPos)
				}
				if got := tx.Bucket(bucketFeed).Sequence(); tt.last > tt.applied && got != tt.last {
					t.Errorf("feed sequence after recover = %d; want %d", got, tt.last)
				}
				return nil
			})
			if got, want := segmentNames(t, dir), []string{segName(tt.next)}; !slices.Equal(got, want) {
				t.Errorf("segments after recover = %v; want %v", got, want)
			}
			if s.wal.next != tt.next || s.live == nil {
				t.Errorf("after recover: next %d, live layer %v; want next %d and a live layer", s.wal.next, s.live, tt.next)
			}
			if pos, err := s.wal.append([]byte("x")); err != nil || pos != tt.next {
				t.Errorf("append after recover = %d, %v; want %d, nil", pos, err, tt.next)
			}
		})
	}
}
