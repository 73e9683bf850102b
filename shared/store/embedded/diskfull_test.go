package embedded_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

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
	it := func(sk string) store.Item { return store.Item{store.AttrPK: "disk", store.AttrSK: sk, "n": int64(1)} }
	if err := s.Put(ctx, it("before"), store.IfNotExists()); err != nil {
		t.Fatalf("Put before the disk is full = %v", err)
	}

	disk.SetFull(true)
	refused := map[string]error{
		"Put":           s.Put(ctx, it("refused"), store.IfNotExists()),
		"Delete":        s.Delete(ctx, it("before").Key(), store.Condition{}),
		"TransactWrite": s.TransactWrite(ctx, []store.Op{store.PutOp(it("refused-tx"), store.Condition{})}),
	}
	_, refused["Update"] = s.Update(ctx, it("before").Key(), store.Update{Add: map[string]int64{"n": 1}}, store.Condition{})
	// Writers committing together share a log record: all of them are refused.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			err := s.Put(ctx, it(fmt.Sprint("refused-", i)), store.Condition{})
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
	if err := s.Put(ctx, it("after"), store.IfNotExists()); err != nil {
		t.Fatalf("Put once the disk has room = %v; want nil", err)
	}
	checkItems(t, s, "once the disk has room", []string{"after", "before"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	checkItems(t, openStore(t, path, embedded.Options{SweepInterval: -1}), "after a restart", []string{"after", "before"})
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
