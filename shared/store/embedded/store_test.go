package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// waitLimit bounds waits for another goroutine, so a bug fails the test instead of hanging it.
const waitLimit = 30 * time.Second

func key(sk string) store.Key { return store.Key{PK: "p", SK: sk} }

func itemAt(k store.Key, kv ...any) store.Item {
	it := store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK}
	for i := 0; i+1 < len(kv); i += 2 {
		it[kv[i].(string)] = kv[i+1]
	}
	return it
}

func mustPut(t *testing.T, s *embedded.Store, it store.Item) {
	t.Helper()
	if err := s.Put(t.Context(), it, store.Condition{}); err != nil {
		t.Fatalf("Put(%v) = %v; want nil", it, err)
	}
}

func TestCloseWakesFollowerAndRefusesCalls(t *testing.T) {
	t.Parallel()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "store.db"), embedded.Options{SweepInterval: time.Hour})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	ctx := t.Context()
	cur, err := s.Follow(ctx)
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := cur.Next(ctx)
		done <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v; want nil", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, embedded.ErrClosed) {
			t.Errorf("Next during Close = %v; want ErrClosed", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Next still waiting after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
	calls := map[string]error{
		"Get":    func() error { _, err := s.Get(ctx, key("a")); return err }(),
		"Put":    s.Put(ctx, itemAt(key("a")), store.Condition{}),
		"Delete": s.Delete(ctx, key("a"), store.Condition{}),
		"Query":  func() error { _, err := s.Query(ctx, store.Query{PK: "p"}); return err }(),
		"Follow": func() error { _, err := s.Follow(ctx); return err }(),
		"Sweep":  s.Sweep(ctx),
	}
	for name, err := range calls {
		if !errors.Is(err, embedded.ErrClosed) {
			t.Errorf("%s after Close = %v; want ErrClosed", name, err)
		}
	}
}

func TestCursorClose(t *testing.T) {
	t.Parallel()
	h := openHarness(t)
	cur, err := h.Feed.Follow(t.Context())
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	if err := cur.Close(); err != nil {
		t.Fatalf("Cursor.Close = %v; want nil", err)
	}
	if _, err := cur.Next(t.Context()); !errors.Is(err, embedded.ErrCursorClosed) {
		t.Errorf("Next after Cursor.Close = %v; want ErrCursorClosed", err)
	}
}

func TestSlowFollowerGetsErrTrimmed(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	s := openStore(t, filepath.Join(t.TempDir(), "store.db"), embedded.Options{Clock: clk, SweepInterval: -1, FeedRetention: time.Hour})
	ctx := t.Context()
	slow, err := s.Follow(ctx)
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	mustPut(t, s, itemAt(key("old")))
	clk.Advance(time.Hour + time.Second)
	mustPut(t, s, itemAt(key("recent")))
	if err := s.Sweep(ctx); err != nil {
		t.Fatalf("Sweep = %v", err)
	}
	// The record of "old" is past retention and gone: the slow follower must learn it lost it
	// rather than silently skip to "recent".
	if c, err := slow.Next(ctx); !errors.Is(err, embedded.ErrTrimmed) {
		t.Errorf("Next of a follower behind the retention = %v, %v; want ErrTrimmed", c.Key, err)
	}
	fresh, err := s.Follow(ctx)
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	mustPut(t, s, itemAt(key("new")))
	if c, err := nextWithin(t, fresh); err != nil || c.Key != key("new") {
		t.Errorf("Next of a new follower = %v, %v; want the INSERT of %v", c.Key, err, key("new"))
	}
}

func nextWithin(t *testing.T, cur store.Cursor) (store.Change, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	return cur.Next(ctx)
}

func TestBackgroundSweeperDeletesExpired(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(epoch)
	s := openStore(t, filepath.Join(t.TempDir(), "store.db"), embedded.Options{Clock: clk, SweepInterval: 5 * time.Millisecond})
	ctx := t.Context()
	cur, err := s.Follow(ctx)
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	k := key("session")
	it := itemAt(k, store.AttrTTL, epoch.Add(time.Minute).Unix())
	mustPut(t, s, it)
	if c, err := nextWithin(t, cur); err != nil || c.Kind != store.ChangeInsert {
		t.Fatalf("first record = %v %v, %v; want the INSERT", c.Kind, c.Key, err)
	}
	clk.Advance(time.Minute)
	// No sleep: the sweeper's REMOVE arrives through the feed.
	c, err := nextWithin(t, cur)
	if err != nil {
		t.Fatalf("waiting for the sweeper's REMOVE: %v", err)
	}
	if c.Kind != store.ChangeRemove || !c.Expired || c.Key != k {
		t.Errorf("record after expiry = %v %v expired=%v; want REMOVE %v expired=true", c.Kind, c.Key, c.Expired, k)
	}
}

// TestSweepsEntriesOfTheEarlierLayout opens a file whose expiry index has the layout written
// before the index keys carried a sequence number (TTL and item key -> ""): its items are still
// swept.
func TestSweepsEntriesOfTheEarlierLayout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	clk := clock.NewFake(epoch)
	s := openStore(t, path, embedded.Options{Clock: clk, SweepInterval: -1})
	k := key("old-layout")
	mustPut(t, s, itemAt(k, store.AttrTTL, epoch.Add(time.Minute).Unix()))
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	rewriteFile(t, path, func(tx *bolt.Tx) error {
		ttls := tx.Bucket([]byte("ttl"))
		type entry struct{ k, v []byte }
		var entries []entry
		if err := ttls.ForEach(func(k, v []byte) error {
			entries = append(entries, entry{bytes.Clone(k), bytes.Clone(v)})
			return nil
		}); err != nil {
			return err
		}
		if len(entries) != 1 {
			return fmt.Errorf("%d expiry index entries, want 1", len(entries))
		}
		e := entries[0]
		if err := ttls.Delete(e.k); err != nil {
			return err
		}
		return ttls.Put(append(e.k[:8:8], e.v...), []byte{})
	})

	s = openStore(t, path, embedded.Options{Clock: clk, SweepInterval: -1})
	cur, err := s.Follow(t.Context())
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	clk.Advance(time.Minute)
	if err := s.Sweep(t.Context()); err != nil {
		t.Fatalf("Sweep = %v", err)
	}
	c, err := nextWithin(t, cur)
	if err != nil || c.Kind != store.ChangeRemove || !c.Expired || c.Key != k {
		t.Errorf("record after the sweep = %v %v expired=%v, %v; want REMOVE %v expired=true", c.Kind, c.Key, c.Expired, err, k)
	}
}

// A cursor told which keys' images it should decode still delivers every change, in order,
// and leaves out only the images of the others.
func TestCursorFilterImages(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "store.db"), embedded.Options{SweepInterval: -1})
	cur, err := s.Follow(t.Context())
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	cur.(store.ImageFilter).FilterImages(func(k store.Key) bool { return k.SK == "wanted" })
	mustPut(t, s, itemAt(key("ignored"), "v", "x"))
	mustPut(t, s, itemAt(key("wanted"), "v", "y"))
	for _, want := range []struct {
		sk     string
		images bool
	}{{"ignored", false}, {"wanted", true}} {
		c, err := nextWithin(t, cur)
		if err != nil {
			t.Fatalf("Next = %v", err)
		}
		if c.Key != key(want.sk) || c.Kind != store.ChangeInsert || (c.New != nil) != want.images || c.Old != nil {
			t.Errorf("change = %v %v old=%v new=%v; want INSERT %v with images %v", c.Kind, c.Key, c.Old, c.New, key(want.sk), want.images)
		}
		if want.images && c.New.String("v") != "y" {
			t.Errorf("new image of %v = %v; want v=y", c.Key, c.New)
		}
	}
}

func TestSeqKeepsIncreasingAcrossRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	seqAfterPut := func(sk string) string {
		s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
		if err != nil {
			t.Fatalf("Open = %v", err)
		}
		defer func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		}()
		cur, err := s.Follow(t.Context())
		if err != nil {
			t.Fatalf("Follow = %v", err)
		}
		mustPut(t, s, itemAt(key(sk)))
		c, err := nextWithin(t, cur)
		if err != nil {
			t.Fatalf("Next = %v", err)
		}
		return c.Seq
	}
	first := seqAfterPut("a")
	second := seqAfterPut("b")
	if !(second > first) || len(second) != len(first) {
		t.Errorf("Seq after reopening = %q; want a same-width position after %q", second, first)
	}
}

// TestCorruptRecordsAreErrors damages stored records behind the store's back: reads return
// ErrCorrupt instead of panicking or returning garbage.
func TestCorruptRecordsAreErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	mustPut(t, s, itemAt(key("a"), "v", "x"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	garbage := [][]byte{nil, {1}, {1, 200}, {9, 0}, {1, 1, 1, 'v', 'Z'}, {1, 1, 1, 'v', 'S', 50, 'x'}, {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}}
	for i, g := range garbage {
		rewriteItems(t, path, g)
		s := openStore(t, path, embedded.Options{SweepInterval: -1})
		if _, err := s.Get(t.Context(), key("a")); !errors.Is(err, embedded.ErrCorrupt) {
			t.Errorf("garbage %d %v: Get = %v; want ErrCorrupt", i, g, err)
		}
		if _, err := s.Query(t.Context(), store.Query{PK: "p"}); !errors.Is(err, embedded.ErrCorrupt) {
			t.Errorf("garbage %d %v: Query = %v; want ErrCorrupt", i, g, err)
		}
		if err := s.Put(t.Context(), itemAt(key("a")), store.IfNotExists()); !errors.Is(err, embedded.ErrCorrupt) {
			t.Errorf("garbage %d %v: Put(IfNotExists) = %v; want ErrCorrupt", i, g, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
	}
}

// rewriteItems replaces the value of every item in the file with raw.
func rewriteItems(t *testing.T, path string, raw []byte) {
	t.Helper()
	rewriteFile(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("items"))
		var keys [][]byte
		if err := b.ForEach(func(k, _ []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if err := b.Put(k, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// rewriteFile changes a closed store's file behind its back, in one bbolt transaction.
func rewriteFile(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bolt.Open = %v", err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("rewrite %s: %v", path, err)
	}
}

func TestOpenRefusesUnknownFormat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatalf("bolt.Open = %v", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return b.Put([]byte("format"), []byte("2"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("write a format-2 file: %v", err)
	}
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
	if !errors.Is(err, embedded.ErrFormat) {
		if s != nil {
			_ = s.Close()
		}
		t.Errorf("Open(format 2 file) = %v; want ErrFormat", err)
	}
}

// TestOpensFileWithOtherPageSize: a store written before new files got 8 KiB pages (4 KiB,
// the OS page size) opens with its data, and takes new writes.
func TestOpensFileWithOtherPageSize(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 4096})
	if err != nil {
		t.Fatalf("bolt.Open = %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("Open(4 KiB file) = %v", err)
	}
	mustPut(t, s, itemAt(key("a"), "v", "1"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	s, err = embedded.Open(path, embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	defer s.Close()
	got, err := s.Get(t.Context(), key("a"))
	if err != nil || got["v"] != "1" {
		t.Errorf("Get after reopen = %v, %v; want v=1", got, err)
	}
}

// TestFailingWriteFailsAlone has one write fail on a damaged record while others commit at the
// same time, in the same group commit: only that write fails, the others are all stored.
func TestFailingWriteFailsAlone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	mustPut(t, s, itemAt(key("damaged")))
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	rewriteItems(t, path, []byte{1, 7})
	s = openStore(t, path, embedded.Options{SweepInterval: -1})
	ctx := t.Context()
	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i == n/2 {
				errs[i] = s.Put(ctx, itemAt(key("damaged"), "v", "new"), store.Condition{})
				return
			}
			errs[i] = s.Put(ctx, itemAt(key(fmt.Sprint(i)), "v", int64(i)), store.Condition{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i == n/2 && !errors.Is(err, embedded.ErrCorrupt):
			t.Errorf("Put over the damaged record = %v; want ErrCorrupt", err)
		case i != n/2 && err != nil:
			t.Errorf("Put %d alongside the failing write = %v; want nil", i, err)
		}
	}
	for i := range n {
		if i == n/2 {
			continue
		}
		got, err := s.Get(ctx, key(fmt.Sprint(i)))
		if err != nil || got.Int("v") != int64(i) {
			t.Errorf("Get(%d) = %v, %v; want v=%d", i, got, err, i)
		}
	}
}
