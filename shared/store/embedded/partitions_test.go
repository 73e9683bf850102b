package embedded_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// Partitions names every partition with the prefix, of any key length, each once, whether its
// items are still in memory or already in the file, and leaves out deleted ones and the rest.
func TestPartitionsNamesThoseWithThePrefix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	put := func(pk, sk string) {
		mustPut(t, s, itemAt(store.Key{PK: pk, SK: sk}, "v", "x"))
	}
	for _, pk := range []string{"area#b", "area#a", "area#long-one", "area#\xff\xff", "areb", "are", "org#1", "area#gone"} {
		put(pk, "1")
		put(pk, "2")
	}
	if err := s.Delete(t.Context(), store.Key{PK: "area#gone", SK: "1"}, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), store.Key{PK: "area#gone", SK: "2"}, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"area#a", "area#b", "area#long-one", "area#\xff\xff"} // sorted
	check := func(when string) {
		t.Helper()
		got, err := s.Partitions(t.Context(), "area#")
		if err != nil {
			t.Fatalf("%s: Partitions = %v", when, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Partitions(area#) = %q; want %q", when, got, want)
		}
	}
	check("in memory")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = embedded.Open(path, embedded.Options{SweepInterval: -1}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("from the file")
}
