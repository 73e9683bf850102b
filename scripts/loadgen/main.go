// Command loadgen drives a running road-events server over HTTP with keep-alive connections
// and reports throughput and latency, one phase per run:
//
//	loadgen seed  [flags]   publish a generated city: N active events over a square
//	loadgen query [flags]   GET /v1/events at random points of that square at one radius,
//	                        closed loop (each client sends again on its answer: throughput
//	                        at saturation) or open loop with -rate (a fixed offered rate,
//	                        latency from each request's due time: latency at a throughput)
//	loadgen floor [flags]   what this machine makes a durable publish wait before any
//	                        server's work: a bare HTTP round trip and a synced append
//	loadgen bare [flags]    a server that answers every publish and query and does nothing
//	                        else: the most a client can ask of any server over HTTP here
//	loadgen median FILE...  the median of each figure over the result lines of earlier runs
//
// Each phase prints a table row and one JSON line starting with {"phase" (for scripts), and
// exits 1 when more than -max-errors requests failed or the phase stopped before its end.
// Only loopback targets are accepted. The API key comes from -key or LOADGEN_API_KEY (keep it
// out of the process list). scripts/load.sh runs the whole benchmark.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Bounds on what one run may ask for: the generator must end on its own whatever it is given.
const (
	maxClients  = 1024
	maxEvents   = 2_000_000
	maxDuration = 30 * time.Minute
	maxMaxTime  = 2 * time.Hour
	maxRequests = 50_000_000
	maxRate     = 1_000_000
)

// options are the flags of both phases.
type options struct {
	base, key        string
	clients          int
	lat, lon, side   float64
	timeout          time.Duration
	maxErrors        int
	abortErrors      int
	seed             uint64
	events           int
	lineShare        float64
	runID            string
	maxTime          time.Duration
	radius           float64
	duration, warmup time.Duration
	requests         int
	rate             float64
}

// defaultCity is the benchmark city unless -lat, -lon and -side say otherwise; the floor
// phase publishes into it.
var defaultCity = square{Lat: 48.85, Lon: 2.35, Side: 50_000}

const usage = `usage: loadgen seed|query [flags]   (loadgen seed -h for the flags)
       loadgen floor -dir DIR [flags]  (a bare HTTP round trip, a synced append in DIR, and -base's publish)
       loadgen bare [-addr A]          (serve POST and GET /v1/events doing nothing else, until interrupted)
       loadgen median FILE...          (median of each figure over the result lines in FILEs)`

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "median" {
		return medianCommand(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "bare" {
		return bareCommand(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "floor" {
		return floorCommand(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "seed" && args[0] != "query") {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	phase := args[0]
	o := options{}
	fl := flag.NewFlagSet("loadgen "+phase, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&o.base, "base", "http://127.0.0.1:8080", "base URL of the server (loopback only)")
	// The environment is read after parsing, so that -h never prints the key as a default.
	fl.StringVar(&o.key, "key", "", "API key (default $LOADGEN_API_KEY)")
	fl.IntVar(&o.clients, "clients", 64, "concurrent clients, each with its own keep-alive connection")
	fl.Float64Var(&o.lat, "lat", defaultCity.Lat, "latitude of the centre of the city")
	fl.Float64Var(&o.lon, "lon", defaultCity.Lon, "longitude of the centre of the city")
	fl.Float64Var(&o.side, "side", defaultCity.Side, "side of the city's square, metres")
	fl.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of one request")
	fl.IntVar(&o.maxErrors, "max-errors", 5, "fail the run when more requests than this failed")
	fl.IntVar(&o.abortErrors, "abort-errors", 1000, "stop the phase once this many requests failed")
	fl.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed gives the same city and query points")
	switch phase {
	case "seed":
		fl.IntVar(&o.events, "events", 100_000, "events to publish")
		fl.Float64Var(&o.lineShare, "lines", 0.10, "share of events with a LineString extent")
		fl.StringVar(&o.runID, "run-id", "", "prefix of client_event_id (default: random, so reruns on one store create new events)")
		fl.DurationVar(&o.maxTime, "max-time", 30*time.Minute, "hard stop of the phase")
	case "query":
		fl.Float64Var(&o.radius, "radius", 1000, "query radius, metres")
		fl.DurationVar(&o.duration, "duration", 20*time.Second, "measured time (0: until -requests)")
		fl.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured time first, to open the connections")
		fl.IntVar(&o.requests, "requests", 0, "stop after this many measured requests (0: until -duration)")
		fl.Float64Var(&o.rate, "rate", 0, "open loop: offered requests per second over all clients, latency measured from each request's due time (0: closed loop, each client sends again on its answer)")
	}
	if err := fl.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.key == "" {
		o.key = getenv("LOADGEN_API_KEY")
	}
	if err := o.validate(phase, fl.NArg()); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	base, err := loopbackURL(o.base)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if o.runID == "" {
		o.runID = randomRunID()
	}

	t := newTarget(base, o.key, o.clients, o.timeout)
	defer t.close()
	area := square{Lat: o.lat, Lon: o.lon, Side: o.side}
	var r result
	switch phase {
	case "seed":
		subtypes, err := t.taxonomy(ctx)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		c, err := newCity(area, o.lineShare, subtypes, o.seed, o.runID, time.Now)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		r = t.seed(ctx, c, plan{clients: o.clients, count: o.events, hard: o.maxTime,
			abortErrors: o.abortErrors, seed: o.seed})
	case "query":
		// The hard stop lets the last requests finish; a run bounded by count alone is
		// still bounded in time.
		measured := o.duration
		if measured == 0 {
			measured = maxDuration
		}
		r = t.query(ctx, area, o.radius, plan{clients: o.clients, count: o.requests,
			warmup: o.warmup, duration: o.duration, hard: o.warmup + measured + o.timeout + 5*time.Second,
			abortErrors: o.abortErrors, seed: o.seed, rate: o.rate})
	}
	if err := report(stdout, r); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := r.check(o.maxErrors); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func (o options) validate(phase string, extra int) error {
	switch {
	case extra > 0:
		return fmt.Errorf("loadgen: unexpected arguments\n%s", usage)
	case o.key == "":
		return errors.New("loadgen: no API key: set LOADGEN_API_KEY or -key (issue one with `roadevents apikey issue`)")
	case o.clients < 1 || o.clients > maxClients:
		return fmt.Errorf("loadgen: -clients %d: want 1..%d", o.clients, maxClients)
	case o.lat < -85 || o.lat > 85 || o.lon < -180 || o.lon > 180:
		return fmt.Errorf("loadgen: centre %g,%g: want a latitude within ±85 and a longitude within ±180", o.lat, o.lon)
	case o.side <= 0 || o.side > 1_000_000:
		return fmt.Errorf("loadgen: -side %g: want 0 < side <= 1000 km", o.side)
	case o.timeout <= 0 || o.timeout > time.Minute:
		return fmt.Errorf("loadgen: -timeout %s: want 0 < timeout <= 1m", o.timeout)
	case o.maxErrors < 0 || o.abortErrors < 1:
		return fmt.Errorf("loadgen: -max-errors must be >= 0 and -abort-errors >= 1")
	case o.events < 0 || o.events > maxEvents:
		return fmt.Errorf("loadgen: -events %d: want 0..%d", o.events, maxEvents)
	case o.lineShare < 0 || o.lineShare > 1:
		return fmt.Errorf("loadgen: -lines %g: want 0..1", o.lineShare)
	case phase == "seed" && (o.maxTime <= 0 || o.maxTime > maxMaxTime):
		return fmt.Errorf("loadgen: -max-time %s: want 0 < max-time <= %s", o.maxTime, maxMaxTime)
	case phase == "query" && o.radius <= 0:
		return fmt.Errorf("loadgen: -radius %g: want > 0", o.radius)
	case o.duration < 0 || o.duration > maxDuration || o.warmup < 0 || o.warmup > maxDuration:
		return fmt.Errorf("loadgen: -duration and -warmup: want 0..%s", maxDuration)
	case o.requests < 0 || o.requests > maxRequests:
		return fmt.Errorf("loadgen: -requests %d: want 0..%d", o.requests, maxRequests)
	case o.rate < 0 || o.rate > maxRate:
		return fmt.Errorf("loadgen: -rate %g: want 0 (closed loop) or up to %d per second", o.rate, maxRate)
	case phase == "query" && o.duration == 0 && o.requests == 0:
		return errors.New("loadgen: query needs -duration or -requests: a phase must end")
	}
	return nil
}

// randomRunID names a run: client_event_id values must not collide with an earlier run on
// the same store, or the publishes would be replays (docs/api.md §4.1 rule 1), not creations.
func randomRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return "lg" + hex.EncodeToString(b)
}

// medianCommand prints the medians of the result lines in files, and exits 1 when any run
// failed or stopped early, so that a summary never hides a failure.
func medianCommand(files []string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var all []result
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		rs, err := readResults(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		all = append(all, rs...)
	}
	if len(all) == 0 {
		fmt.Fprintln(stderr, "loadgen: no result lines in", files)
		return 1
	}
	ms := medians(all)
	if err := report(stdout, ms...); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	code := 0
	for _, m := range ms {
		if m.Stopped != stopCount && m.Stopped != stopDuration {
			fmt.Fprintf(stderr, "loadgen: a %s run stopped by %s\n", m.Phase, m.Stopped)
			code = 1
		}
	}
	return code
}
