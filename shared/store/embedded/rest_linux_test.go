package embedded_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/store/embedded"
)

// When writes stop, the store writes what it holds in memory to its file, tells OnRest, and
// its file's pages no longer count in the process's memory; every item reads back as written
// (docs/performance.md §6).
func TestStoreComesToRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer s.Close()
	rested := make(chan struct{}, 16)
	s.OnRest(func() { rested <- struct{}{} })

	const n = 3000
	value := strings.Repeat("v", 1000)
	for i := range n {
		mustPut(t, s, itemAt(key(fmt.Sprintf("k%05d", i)), "value", fmt.Sprintf("%s%d", value, i)))
	}
	waitRest := func() {
		t.Helper()
		select {
		case <-rested:
		case <-time.After(waitLimit):
			t.Fatal("the store did not come to rest after its last write")
		}
	}
	readAll := func() {
		t.Helper()
		for i := range n {
			k := key(fmt.Sprintf("k%05d", i))
			it, err := s.Get(t.Context(), k)
			if err != nil || it == nil || it.String("value") != fmt.Sprintf("%s%d", value, i) {
				t.Fatalf("Get(%s) = %v, %v; want the value written", k, it, err)
			}
		}
	}
	waitRest()
	if size := fileSize(t, path); size < n*1000 {
		t.Fatalf("the file holds %d bytes after the flush; want the %d items' values in it", size, n)
	}
	// Reading maps the file's pages into the process; the next rest drops them again.
	readAll()
	if rss := mappedResident(t, path); rss < 1<<20 {
		t.Fatalf("%d KiB of the file resident after reading %d items from it; want the pages read", rss>>10, n)
	}
	mustPut(t, s, itemAt(key("last"), "value", "x"))
	waitRest()
	if rss := mappedResident(t, path); rss > 256<<10 {
		t.Errorf("%d KiB of the file resident in the process at rest; want at most 256 KiB", rss>>10)
	}
	readAll()
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// mappedResident sums the resident bytes of the process's mappings of the file at path
// (/proc/self/smaps).
func mappedResident(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's header: its address range first
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && fields[0] == "Rss:" {
			kib, _ := strconv.ParseInt(fields[1], 10, 64)
			total += kib << 10
		}
	}
	return total
}
