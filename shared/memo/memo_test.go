package memo_test

import (
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/memo"
)

// A kept value is returned until the map fills; a full map is emptied before the next new key,
// so it never holds more than its limit, and a key kept again does not empty it.
func TestMapKeepsUpToItsLimit(t *testing.T) {
	t.Parallel()
	m := memo.New[int, string](3)
	if _, ok := m.Get(1); ok {
		t.Fatal("empty map: Get(1) found a value")
	}
	for k, v := range map[int]string{1: "a", 2: "b", 3: "c"} {
		m.Put(k, v)
	}
	m.Put(2, "B") // a kept key: replaced, nothing dropped
	for k, want := range map[int]string{1: "a", 2: "B", 3: "c"} {
		if got, ok := m.Get(k); !ok || got != want {
			t.Errorf("Get(%d) = %q, %v; want %q", k, got, ok, want)
		}
	}
	m.Put(4, "d")
	if n := m.Len(); n != 1 {
		t.Errorf("after a fourth key in a map of 3: %d entries; want 1 (emptied, then the new one)", n)
	}
	if got, ok := m.Get(4); !ok || got != "d" {
		t.Errorf("Get(4) = %q, %v; want the value just kept", got, ok)
	}
	if _, ok := m.Get(1); ok {
		t.Error("Get(1) after the map was emptied: still there")
	}
}

// Concurrent Gets and Puts are safe (run with -race) and bounded.
func TestMapConcurrentUse(t *testing.T) {
	t.Parallel()
	m := memo.New[int, int](64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := (g*7919 + i) % 200
				if v, ok := m.Get(k); ok && v != k*k {
					t.Errorf("Get(%d) = %d; want %d", k, v, k*k)
					return
				}
				m.Put(k, k*k)
			}
		})
	}
	wg.Wait()
	if n := m.Len(); n > 64 {
		t.Errorf("%d entries; want at most 64", n)
	}
}
