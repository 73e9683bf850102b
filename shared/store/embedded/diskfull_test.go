package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/store/embedded/disktest"
)

// TestFullDiskRefusesWritesAndRecovers: while the disk is full, every write is refused with
// store.ErrUnavailable and none is seen, reads go on; once there is room the next write
// succeeds without a restart, and after one only the acknowledged writes are there
// (docs/operations.md §2).
func TestFullDiskRefusesWritesAndRecovers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	disk := &disktest.Disk{}
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1, WALFiles: disk.Files})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	ctx := t.Context()
	if err := s.Put(ctx, diskItem("before"), store.IfNotExists()); err != nil {
		t.Fatalf("Put before the disk is full = %v", err)
	}

	disk.SetFull(true)
	refused := map[string]error{
		"Put":           s.Put(ctx, diskItem("refused"), store.IfNotExists()),
		"Delete":        s.Delete(ctx, diskItem("before").Key(), store.Condition{}),
		"TransactWrite": s.TransactWrite(ctx, []store.Op{store.PutOp(diskItem("refused-tx"), store.Condition{})}),
	}
	_, refused["Update"] = s.Update(ctx, diskItem("before").Key(), store.Update{Add: map[string]int64{"n": 1}}, store.Condition{})
	// Writers committing together share a log record: all of them are refused.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			err := s.Put(ctx, diskItem(fmt.Sprint("refused-", i)), store.Condition{})
			mu.Lock()
			refused[fmt.Sprint("concurrent Put ", i)] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for call, err := range refused {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a full disk = %v; want store.ErrUnavailable", call, err)
		}
	}
	checkItems(t, s, "while the disk is full", []string{"before"})

	disk.SetFull(false)
	if err := s.Put(ctx, diskItem("after"), store.IfNotExists()); err != nil {
		t.Fatalf("Put once the disk has room = %v; want nil", err)
	}
	checkItems(t, s, "once the disk has room", []string{"after", "before"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	checkItems(t, openStore(t, path, embedded.Options{SweepInterval: -1}), "after a restart", []string{"after", "before"})
}

// diskItem is the item sk of the partition these tests write.
func diskItem(sk string) store.Item {
	return store.Item{store.AttrPK: "disk", store.AttrSK: sk, "n": int64(1)}
}

// checkItems checks that the partition holds exactly the items sks, "before" as first written.
func checkItems(t *testing.T, s *embedded.Store, when string, sks []string) {
	t.Helper()
	items, err := s.Query(t.Context(), store.Query{PK: "disk"})
	if err != nil {
		t.Fatalf("Query %s = %v", when, err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.String(store.AttrSK))
		if it.String(store.AttrSK) == "before" && it.Int("n") != 1 {
			t.Errorf("%s: before.n = %d; want 1 (a refused update shows)", when, it.Int("n"))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(sks) {
		t.Errorf("items %s = %v; want %v", when, got, sks)
	}
}

// heldSync is a segment file of the log whose next sync, once held, waits until it is let go
// and then fails with the error it was let go with: a disk slow to sync, or one whose sync
// fails after the write went through.
type heldSync struct {
	mu      sync.Mutex
	held    bool
	entered chan struct{} // closed when the held sync has started
	release chan error
}

func (h *heldSync) files(f embedded.LogFile) embedded.LogFile { return &heldFile{LogFile: f, h: h} }

// hold makes the next sync wait for letGo.
func (h *heldSync) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held, h.entered, h.release = true, make(chan struct{}), make(chan error, 1)
}

// letGo ends the held sync, or the next one if none has started: it syncs, then returns err
// when not nil.
func (h *heldSync) letGo(err error) { h.release <- err }

type heldFile struct {
	embedded.LogFile
	h *heldSync
}

func (f *heldFile) SyncData() error {
	f.h.mu.Lock()
	held, entered, release := f.h.held, f.h.entered, f.h.release
	f.h.held = false
	f.h.mu.Unlock()
	if !held {
		return f.LogFile.SyncData()
	}
	close(entered)
	err := <-release
	if serr := f.LogFile.SyncData(); err == nil {
		err = serr
	}
	return err
}

// TestCommitIsSeenBeforeItsSync: a commit written to the log is seen by reads and by the feed's
// followers while its sync is under way, and its writer is answered only once the sync is done
// (docs/architecture.md §2: the streams do not wait for the disk, an acknowledged write is
// durable).
func TestCommitIsSeenBeforeItsSync(t *testing.T) {
	t.Parallel()
	disk := &heldSync{}
	s := openStore(t, filepath.Join(t.TempDir(), "store.db"), embedded.Options{SweepInterval: -1, WALFiles: disk.files})
	ctx := t.Context()
	if err := s.Put(ctx, diskItem("before"), store.IfNotExists()); err != nil { // the log's space is taken here
		t.Fatalf("Put = %v", err)
	}
	cur, err := s.Follow(ctx)
	if err != nil {
		t.Fatalf("Follow = %v", err)
	}
	defer cur.Close()

	disk.hold()
	answered := make(chan error, 1)
	go func() { answered <- s.Put(ctx, diskItem("seen"), store.IfNotExists()) }()
	<-disk.entered
	if _, err := s.Get(ctx, diskItem("seen").Key()); err != nil {
		t.Errorf("Get while the commit's sync is under way = %v; want the item", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ch, err := cur.Next(waitCtx)
	cancel()
	if err != nil || ch.Key != diskItem("seen").Key() {
		t.Errorf("the feed while the commit's sync is under way: %v, %v; want the change of %v", ch.Key, err, diskItem("seen").Key())
	}
	select {
	case err := <-answered:
		t.Fatalf("Put answered %v before its sync was done", err)
	default:
	}
	disk.letGo(nil)
	if err := <-answered; err != nil {
		t.Fatalf("Put once synced = %v; want nil", err)
	}
}

// TestFailedSyncTakesTheCommitBack: when the log's sync fails after the commit was written and
// seen, the write is refused with store.ErrUnavailable and taken back, readers no longer see
// it, and the store refuses every later write until it is reopened; reopened, it holds exactly
// the acknowledged writes and takes writes again (docs/operations.md §2). Both with earlier
// commits in memory and with none (each flushed at once).
func TestFailedSyncTakesTheCommitBack(t *testing.T) {
	t.Parallel()
	for name, flushBytes := range map[string]int{"commits in memory": 0, "commits flushed": 1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "store.db")
			disk := &heldSync{}
			quiet := slog.New(slog.DiscardHandler)
			s, err := embedded.Open(path, embedded.Options{SweepInterval: -1, WALFiles: disk.files, FlushBytes: flushBytes, Logger: quiet})
			if err != nil {
				t.Fatalf("Open = %v", err)
			}
			ctx := t.Context()
			if err := s.Put(ctx, diskItem("before"), store.IfNotExists()); err != nil {
				t.Fatalf("Put = %v", err)
			}

			disk.hold()
			disk.letGo(syscall.EIO) // the sync finds it waiting
			if err := s.Put(ctx, diskItem("refused"), store.IfNotExists()); !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("Put whose sync fails = %v; want store.ErrUnavailable", err)
			}
			checkItems(t, s, "after the failed sync", []string{"before"})
			if err := s.Put(ctx, diskItem("later"), store.IfNotExists()); !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("Put after a failed sync = %v; want store.ErrUnavailable until the store is reopened", err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close = %v", err)
			}

			s = openStore(t, path, embedded.Options{SweepInterval: -1, Logger: quiet})
			checkItems(t, s, "reopened", []string{"before"})
			if err := s.Put(ctx, diskItem("after"), store.IfNotExists()); err != nil {
				t.Fatalf("Put once reopened = %v; want nil", err)
			}
		})
	}
}
