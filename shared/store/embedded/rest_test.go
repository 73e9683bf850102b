package embedded

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// Once a flush has written the commits held in memory to the file, nothing keeps them: after
// a burst of publishes they were tens of MB that stayed until the next commit, however long
// that took (docs/performance.md §6).
func TestFlushedCommitsAreFreed(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rested := make(chan struct{}, 4)
	s.OnRest(func() { rested <- struct{}{} })
	it := store.Item{store.AttrPK: "p", store.AttrSK: "k", "v": "value"}
	if err := s.Put(t.Context(), it, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	s.viewMu.RLock()
	e, held := s.shown.trees[bItems].Get(entry{key: itemKey(it.Key())})
	s.viewMu.RUnlock()
	if !held || len(e.val) == 0 {
		t.Fatal("the commit is not held in memory after it")
	}
	// The item's encoded bytes, as the layer holds them until the flush.
	freed := make(chan struct{})
	runtime.AddCleanup(&e.val[0], func(ch chan struct{}) { close(ch) }, freed)
	e = entry{}
	select {
	case <-rested:
	case <-time.After(30 * time.Second):
		t.Fatal("the store did not come to rest")
	}
	for range 3 {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the commit's layer is still reachable after its flush")
}
