package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/stream"
)

// startServer serves the whole service in this process on a fresh embedded store, as
// `go run .` does, and returns its address and a live API key.
func startServer(tb testing.TB) (base, key string) {
	tb.Helper()
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	st, err := embedded.Open(filepath.Join(tb.TempDir(), "roadevents.db"), embedded.Options{Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	keys := apikey.New(st, apikey.Options{Logger: logger})
	key, _, err = keys.Issue(context.Background(), apikey.IssueRequest{OrgID: "org_load", Environment: apikey.Live, Label: "load"})
	if err != nil {
		tb.Fatal(err)
	}
	hub := stream.NewHub(stream.HubOptions{Logger: logger, ResumeWindow: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hub.Run(ctx, st, stream.EventsDecoder())
	}()
	if err := hub.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store = config.StoreEmbedded
	api, err := app.New(app.Deps{Config: cfg, Table: st, Clock: clock.System, Logger: logger, Keys: keys,
		Meter: metering.New(st, metering.Options{Logger: logger, FlushInterval: -1}), Hub: hub})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	tb.Cleanup(func() {
		hub.Drain()
		srv.Close()
		cancel()
		<-done
		st.Close()
	})
	return srv.URL, key
}

// The tool's own accounting: on a quiet server every delta a subscriber's circle calls for
// arrives, none is dropped, and each is timed.
func TestRunDeliversEveryDelta(t *testing.T) {
	t.Parallel()
	base, key := startServer(t)
	o := options{
		base: base, key: key, subscribers: 40, rate: 50, duration: time.Second, radius: 2500,
		lat: 48.137, lon: 11.575, side: 6000, publishers: 4, opens: 8, settle: time.Minute,
		seed: 3, runID: "test",
	}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	// How many fit in the second depends on the machine; every one of them must arrive.
	if res.Published == 0 || res.Published > 50 || res.PublishErr != 0 || res.Expected <= 0 {
		t.Fatalf("published %d (%d failed), expected %d deltas; want 1 to 50, none failed, some deltas", res.Published, res.PublishErr, res.Expected)
	}
	if res.Received != res.Expected || res.Missing != 0 || res.Dropped != 0 || res.StreamErrors != 0 {
		t.Errorf("received %d of %d (missing %d, dropped %d, stream errors %d); want all", res.Received, res.Expected, res.Missing, res.Dropped, res.StreamErrors)
	}
	if !(res.P50Ms >= 0 && res.P50Ms <= res.P95Ms && res.P95Ms <= res.P99Ms && res.P99Ms <= res.MaxMs) {
		t.Errorf("percentiles %v %v %v %v; want ordered", res.P50Ms, res.P95Ms, res.P99Ms, res.MaxMs)
	}
}

// docs/api.md §10.2 (Stream), resuming: subscribers that keep dropping their connection and
// coming back with Last-Event-ID are sent every delta their circle calls for, each once, and
// no snapshot.
func TestRunResumesEveryDelta(t *testing.T) {
	t.Parallel()
	base, key := startServer(t)
	o := options{
		base: base, key: key, subscribers: 40, rate: 50, duration: 3 * time.Second, radius: 2500,
		lat: 48.137, lon: 11.575, side: 6000, publishers: 4, opens: 8, settle: time.Minute,
		seed: 4, runID: "resume", reconnect: 400 * time.Millisecond, away: 200 * time.Millisecond,
	}
	res, err := run(context.Background(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reconnects < int64(o.subscribers) || res.Replayed == 0 {
		t.Fatalf("%d reconnects, %d deltas sent on coming back; want every subscriber to come back, some deltas missed meanwhile", res.Reconnects, res.Replayed)
	}
	if res.Received != res.Expected || res.Duplicates != 0 || res.Resnapshots != 0 || res.StreamErrors != 0 {
		t.Errorf("received %d of %d, %d twice, %d snapshots on coming back, %d stream errors; want all, once each, none",
			res.Received, res.Expected, res.Duplicates, res.Resnapshots, res.StreamErrors)
	}
}

func TestCheckRefusesRemoteAndUnbounded(t *testing.T) {
	t.Parallel()
	ok := options{base: "http://127.0.0.1:8080", key: "k", subscribers: 1, rate: 1, duration: time.Second,
		publishers: 1, opens: 1, radius: 1, side: 1}
	if err := ok.check(); err != nil {
		t.Fatalf("check(%+v) = %v", ok, err)
	}
	for name, mod := range map[string]func(*options){
		"remote":         func(o *options) { o.base = "http://example.com" },
		"no key":         func(o *options) { o.key = "" },
		"too many":       func(o *options) { o.subscribers = maxSubscribers + 1 },
		"too long":       func(o *options) { o.duration = maxDuration + time.Second },
		"too fast":       func(o *options) { o.rate = maxRate + 1 },
		"settle forever": func(o *options) { o.settle = maxSettle + time.Second },
	} {
		o := ok
		mod(&o)
		if err := o.check(); err == nil {
			t.Errorf("%s: check accepted %+v", name, o)
		}
	}
}

// BenchmarkStreamDelivery is the in-process form of scripts/stream-load.sh on the embedded
// store: N subscribers of 1000 m spread over a 20 km city, 200 publishes a second for 10 s
// through the HTTP API, every delta timed from publication to reception. Run it once per size:
//
//	go test -run '^$' -bench StreamDelivery -benchtime 1x ./scripts/streamload
//
// Client and server share this process (and its file descriptors: two per stream), so memory
// per stream is measured by the script, which runs the server on its own.
func BenchmarkStreamDelivery(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			if need := uint64(2*n + 1024); !raiseFileLimit(need) {
				b.Skipf("needs %d open files in one process (ulimit -n); scripts/stream-load.sh runs the server in its own process", need)
			}
			base, key := startServer(b)
			var res result
			for i := 0; b.Loop(); i++ {
				var err error
				res, err = run(context.Background(), options{
					base: base, key: key, subscribers: n, rate: 200, duration: 10 * time.Second, radius: 1000,
					lat: 48.137, lon: 11.575, side: 20000, publishers: 32, opens: 128, settle: 10 * time.Second,
					seed: uint64(i + 1), runID: fmt.Sprintf("bench%d", i),
				}, func(string, ...any) {})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.P50Ms, "p50-ms")
			b.ReportMetric(res.P95Ms, "p95-ms")
			b.ReportMetric(res.P99Ms, "p99-ms")
			b.ReportMetric(float64(res.Missing), "missing")
			b.ReportMetric(float64(res.Dropped), "dropped")
			b.ReportMetric(res.PublishRate, "pub/s")
			b.ReportMetric(float64(res.Received), "deltas")
		})
	}
}

// raiseFileLimit raises this process's soft limit on open files towards the hard one and
// reports whether it reaches need.
func raiseFileLimit(need uint64) bool {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return false
	}
	if lim.Cur < need && lim.Max > lim.Cur {
		lim.Cur = min(lim.Max, need)
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur >= need
}
