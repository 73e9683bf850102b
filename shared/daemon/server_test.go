package daemon_test

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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
// the memory limit from the machine and the collector's setting from the live heap
// (docs/performance.md §7).
func TestTuneGCYieldsToTheEnvironment(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, env := range []map[string]string{{"GOGC": "50"}, {"GOMEMLIMIT": "2GiB"}} {
		debug.SetGCPercent(100)
		if stop, tuned := daemon.TuneGC(func(k string) string { return env[k] }); tuned {
			stop()
			t.Errorf("TuneGC with %v = true; want false", env)
		}
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("with %v the GC percent became %d; want it left at 100", env, got)
		}
	}
	stop, tuned := daemon.TuneGC(func(string) string { return "" })
	defer stop()
	if !tuned {
		t.Fatal("TuneGC without GOGC and GOMEMLIMIT = false; want true")
	}
	if got := debug.SetMemoryLimit(-1); got == math.MaxInt64 {
		t.Error("memory limit left unset; want a share of the machine's memory")
	}
	// The live heap of a test binary is far below the floor: after a collection the tuner
	// lets the heap grow by the floor, not by its few MB. It runs on the runtime's cleanup
	// goroutine, so the test collects until it has (or gives up).
	debug.SetGCPercent(100)
	got := 100
	for i := 0; i < 200 && got == 100; i++ {
		runtime.GC()
		runtime.Gosched()
		got = debug.SetGCPercent(100)
	}
	live := liveHeap()
	if want := daemon.GCPercent(live); got < want/2 || got <= 100 {
		t.Errorf("GC percent with %d bytes live = %d; want about %d", live, got, want)
	}
}

// GCPercent lets the heap grow by as much as is live, and by at least the floor.
func TestGCPercentKeepsAFloorOfHeadroom(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{daemon.HeadroomFloor / 4, 400},
		{daemon.HeadroomFloor / 2, 200},
		{daemon.HeadroomFloor, 100},
		{10 * daemon.HeadroomFloor, 100},
	} {
		if got := daemon.GCPercent(c.live); got != c.want {
			t.Errorf("GCPercent(%d) = %d; want %d", c.live, got, c.want)
		}
	}
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
