package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// childEnv, when set to a file path, turns TestDurabilityWriter into the writer process of
// TestDurabilityAfterKill.
const childEnv = "ROADEVENTS_EMBEDDED_DURABILITY_CHILD"

const (
	durabilityPK      = "durability"
	durabilityWriters = 4     // concurrent writers, so that batched commits are killed too
	durabilityMax     = 20000 // the child stops on its own if nobody kills it
	acksBeforeKill    = 300
)

// TestDurabilityWriter is the child process: it writes through the embedded store from several
// goroutines and prints "ack <sk>" for each write only after Put has returned.
func TestDurabilityWriter(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("helper process of TestDurabilityAfterKill; runs only as its child")
	}
	s, err := embedded.Open(path, embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("child: Open = %v", err)
	}
	var (
		mu   sync.Mutex // one line per write
		next int
		wg   sync.WaitGroup
	)
	for range durabilityWriters {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= durabilityMax {
					return
				}
				sk := fmt.Sprintf("%08d", i)
				err := s.Put(context.Background(), durabilityItem(sk), store.IfNotExists())
				mu.Lock()
				if err != nil {
					fmt.Printf("error %s %v\n", sk, err)
				} else {
					fmt.Printf("ack %s\n", sk)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatalf("child: Close = %v", err)
	}
}

func durabilityItem(sk string) store.Item {
	return store.Item{store.AttrPK: durabilityPK, store.AttrSK: sk, "payload": strings.Repeat(sk, 16), "n": int64(len(sk))}
}

// TestDurabilityAfterKill kills a writing process with SIGKILL in the middle of its writes, then
// reopens the file: every write the process acknowledged is there, and the store still works.
func TestDurabilityAfterKill(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDurabilityWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("StdoutPipe = %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	killed := false
	var acked []string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "ack "):
			acked = append(acked, strings.TrimPrefix(line, "ack "))
		case strings.HasPrefix(line, "error "):
			t.Errorf("child: %s", line)
		}
		if !killed && len(acked) == acksBeforeKill {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred code runs
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
		// Keep reading: acknowledgements already in the pipe count too.
	}
	werr := cmd.Wait()
	if !killed {
		t.Fatalf("child ended (%v) after %d acknowledged writes, before it could be killed", werr, len(acked))
	}
	if len(acked) >= durabilityMax {
		t.Fatalf("child finished all %d writes before the kill took effect; nothing was interrupted", durabilityMax)
	}
	t.Logf("child killed after %d acknowledged writes", len(acked))

	s := openStore(t, path, embedded.Options{SweepInterval: -1})
	ctx := t.Context()
	for _, sk := range acked {
		got, err := s.Get(ctx, store.Key{PK: durabilityPK, SK: sk})
		if err != nil {
			t.Fatalf("Get(acknowledged %s) after the kill = %v; want the item", sk, err)
		}
		if want := durabilityItem(sk); got.String("payload") != want.String("payload") {
			t.Fatalf("Get(acknowledged %s).payload = %q; want %q", sk, got.String("payload"), want.String("payload"))
		}
	}
	all, err := s.Query(ctx, store.Query{PK: durabilityPK})
	if err != nil {
		t.Fatalf("Query(whole partition) after the kill = %v; want nil", err)
	}
	if len(all) < len(acked) {
		t.Errorf("Query(whole partition) after the kill = %d items; want at least the %d acknowledged", len(all), len(acked))
	}
	k := store.Key{PK: durabilityPK, SK: "after-restart"}
	if err := s.Put(ctx, store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK}, store.IfNotExists()); err != nil {
		t.Fatalf("Put after the kill = %v; want nil", err)
	}
	if _, err := s.Get(ctx, k); err != nil {
		t.Errorf("Get(new write) after the kill = %v; want the item", err)
	}
	if err := s.Sweep(ctx); err != nil {
		t.Errorf("Sweep after the kill = %v; want nil", err)
	}
}
