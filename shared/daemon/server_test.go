package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/daemon"
)

// Graceful shutdown lets an in-flight request finish and refuses new connections.
func TestServeDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "finished")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- daemon.Serve(ctx, ln, h, daemon.Options{DrainTimeout: time.Minute}) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-entered
	stop() // shutdown begins while the request is in flight

	select {
	case err := <-served:
		t.Fatalf("Serve returned %v before the in-flight request finished", err)
	case <-time.After(50 * time.Millisecond): // a bounded wait for a wrong early return, not timing
	}
	close(release)
	if r := <-got; r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request = %q, %v; want \"finished\", nil", r.body, r.err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v; want nil after a clean drain", err)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Fatal("listener still accepts connections after shutdown")
	}
}

// OnShutdown hooks run when shutdown begins, so long-lived streams can say goodbye.
func TestServeRunsShutdownHooks(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	called := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- daemon.Serve(ctx, ln, http.NotFoundHandler(), daemon.Options{OnShutdown: []func(){func() { close(called) }}})
	}()
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	<-called
}

// TuneGC leaves the collector to an operator who set GOGC or GOMEMLIMIT, and otherwise sets
// this package's defaults.
func TestTuneGCYieldsToTheEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, env := range []map[string]string{{"GOGC": "50"}, {"GOMEMLIMIT": "2GiB"}} {
		debug.SetGCPercent(100)
		if daemon.TuneGC(func(k string) string { return env[k] }) {
			t.Errorf("TuneGC with %v = true; want false", env)
		}
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("with %v the GC percent became %d; want it left at 100", env, got)
		}
	}
	if !daemon.TuneGC(func(string) string { return "" }) {
		t.Fatal("TuneGC without GOGC and GOMEMLIMIT = false; want true")
	}
	if got := debug.SetGCPercent(100); got != daemon.GCPercent {
		t.Errorf("GC percent = %d; want %d", got, daemon.GCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != daemon.MemoryLimit {
		t.Errorf("memory limit = %d; want %d", got, daemon.MemoryLimit)
	}
}
