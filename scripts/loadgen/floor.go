package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/roadevents/roadevents/shared/durable"
)

// The floor phase measures what this machine makes any durable publish wait, whatever the
// server: a bare net/http round trip on loopback (a handler that writes 15 bytes), and a
// durable append of a publish-sized record in a folder (a write and an fdatasync into space
// written ahead, as the embedded store's log appends). An acknowledged publish pays both,
// and a live delivery comes after the acknowledgement's sync, so their sum bounds what the
// server's own work could ever bring a publish or a delivery down to (docs/performance.md
// §13). Given a server, it then times POST /v1/events the same way, to set beside them.
//
// Every probe is paced like a publisher at a rate, one client, because a machine that idles
// between requests answers each more slowly than one kept busy; each request is timed from
// when it was sent, as a fan-out's deliveries are, not from when it was due.

// floorRecordBytes is the size of one appended record: about one published point's log record.
const floorRecordBytes = 300

// floorSpace is how much of the probe's file is written ahead and synced before it is timed,
// so that no timed sync also commits a new file size.
const floorSpace = 4 << 20

// floorOptions are the floor phase's flags.
type floorOptions struct {
	dir      string
	requests int
	rate     float64
	timeout  time.Duration
	base     string // the server whose publishes are timed too; none when empty
	key      string
	seed     uint64
}

func (o floorOptions) validate() error {
	if o.dir == "" {
		return errors.New("loadgen: floor needs -dir, a folder on the file system to measure (the server's data folder)")
	}
	if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
		return fmt.Errorf("loadgen: floor: -dir %s: not a folder", o.dir)
	}
	if o.requests < 1 || o.requests > floorSpace/floorRecordBytes {
		return fmt.Errorf("loadgen: floor: -requests %d: want 1..%d", o.requests, floorSpace/floorRecordBytes)
	}
	if o.rate <= 0 || o.rate > 10_000 {
		return fmt.Errorf("loadgen: floor: -rate %g: want 0 < rate <= 10000", o.rate)
	}
	if o.timeout <= 0 || o.timeout > time.Minute {
		return fmt.Errorf("loadgen: floor: -timeout %s: want 0 < timeout <= 1m", o.timeout)
	}
	if o.base != "" && o.key == "" {
		return errors.New("loadgen: floor: -base needs an API key: set LOADGEN_API_KEY or -key")
	}
	return nil
}

// floorCommand is `loadgen floor`: the probes one after the other, one table, a result line each.
func floorCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o := floorOptions{}
	fl := flag.NewFlagSet("loadgen floor", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&o.dir, "dir", "", "folder whose file system the synced appends measure (the server's data folder)")
	fl.IntVar(&o.requests, "requests", 1000, "measured requests of each probe")
	fl.Float64Var(&o.rate, "rate", 200, "requests per second of each probe (one client)")
	fl.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of one request")
	fl.StringVar(&o.base, "base", "", "base URL of a server (loopback only) whose POST /v1/events is timed too")
	fl.StringVar(&o.key, "key", "", "API key for -base (default $LOADGEN_API_KEY)")
	fl.Uint64Var(&o.seed, "seed", 1, "random seed of the published events")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.key == "" {
		o.key = getenv("LOADGEN_API_KEY")
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "loadgen: unexpected arguments\n%s\n", usage)
		return 2
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var server *url.URL
	if o.base != "" {
		u, err := loopbackURL(o.base)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		server = u
	}
	rs, err := floor(ctx, o, server)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := report(stdout, rs...); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, r := range rs {
		if err := r.check(0); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	return 0
}

// floor runs the probes and returns their results: "floor-http", "floor-sync" (its file in
// o.dir) and, when server is set, "publish".
func floor(ctx context.Context, o floorOptions, server *url.URL) ([]result, error) {
	p := plan{clients: 1, count: o.requests, rate: o.rate, fromSend: true, abortErrors: 1, seed: o.seed,
		hard: time.Duration(float64(o.requests)/o.rate*float64(time.Second)) + o.timeout + 5*time.Second}
	httpRes, err := floorHTTP(ctx, p, o.timeout)
	if err != nil {
		return nil, err
	}
	syncRes, err := floorSync(ctx, p, o.dir)
	if err != nil {
		return nil, err
	}
	rs := []result{httpRes, syncRes}
	if server != nil {
		pubRes, err := floorPublish(ctx, p, server, o.key, o.timeout)
		if err != nil {
			return nil, err
		}
		rs = append(rs, pubRes)
	}
	return rs, nil
}

// floorHTTP times GET / of a bare net/http server of its own on a loopback port.
func floorHTTP(ctx context.Context, p plan, timeout time.Duration) (result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, fmt.Errorf("loadgen: floor: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: timeout, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	t := newTarget(&url.URL{Scheme: "http", Host: ln.Addr().String()}, "", 1, timeout)
	defer t.close()
	p.phase = "floor-http"
	return t.run(ctx, p, func(ctx context.Context, w *worker, _ int) outcome {
		status, err := t.send(ctx, w, http.MethodGet, "/", nil)
		return outcome{status: status, err: err}
	}), nil
}

// floorSync times appends of floorRecordBytes to a new file in dir, each synced as the
// embedded store's log syncs its records (durable.SyncData). The file is removed afterwards.
func floorSync(ctx context.Context, p plan, dir string) (result, error) {
	f, err := os.CreateTemp(dir, "loadgen-floor-*.tmp")
	if err != nil {
		return result{}, fmt.Errorf("loadgen: floor: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, floorSpace)); err != nil {
		return result{}, fmt.Errorf("loadgen: floor: write ahead: %w", err)
	}
	if err := f.Sync(); err != nil {
		return result{}, fmt.Errorf("loadgen: floor: %w", err)
	}
	record := make([]byte, floorRecordBytes)
	for i := range record {
		record[i] = byte(i + 1)
	}
	var off int64 // one client: no lock; validate keeps the records within floorSpace
	// The probe sends nothing over HTTP; the target only lends its pacing and statistics.
	t := &target{}
	p.phase = "floor-sync"
	return t.run(ctx, p, func(context.Context, *worker, int) outcome {
		if _, err := f.WriteAt(record, off); err != nil {
			return outcome{err: err}
		}
		off += floorRecordBytes
		if err := durable.SyncData(f); err != nil {
			return outcome{err: err}
		}
		return outcome{status: http.StatusOK}
	}), nil
}

// floorPublish times POST /v1/events of points of the benchmark city, as seed publishes them.
func floorPublish(ctx context.Context, p plan, server *url.URL, key string, timeout time.Duration) (result, error) {
	t := newTarget(server, key, 1, timeout)
	defer t.close()
	subtypes, err := t.taxonomy(ctx)
	if err != nil {
		return result{}, err
	}
	c, err := newCity(defaultCity, 0, subtypes, p.seed, randomRunID(), time.Now)
	if err != nil {
		return result{}, err
	}
	p.phase = "publish"
	return t.run(ctx, p, func(ctx context.Context, w *worker, i int) outcome {
		body, err := json.Marshal(c.Event(max(i, 0)))
		if err != nil {
			return outcome{err: err}
		}
		status, err := t.send(ctx, w, http.MethodPost, "/v1/events", body)
		if err == nil && status != http.StatusCreated {
			err = fmt.Errorf("POST /v1/events: %d, want 201", status)
		}
		return outcome{status: status, err: err}
	}), nil
}
