//go:build unix

package daemon_test

import (
	"syscall"
	"testing"

	"github.com/roadevents/roadevents/shared/daemon"
)

// docs/operations.md §3: at start the soft descriptor limit is raised to the hard one, and
// the limit reported is the one in force.
func TestRaiseFileLimit(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lowered := lim
	lowered.Cur = min(lim.Max, 512)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	got, err := daemon.RaiseFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur != lim.Max || got != uint64(lim.Cur) {
		t.Fatalf("after RaiseFileLimit: soft %d, hard %d, reported %d; want soft = hard = reported", lim.Cur, lim.Max, got)
	}
}
