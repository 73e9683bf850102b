package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// errNotLoopback refuses a target that is not this machine: the generator is a benchmark of
// a local server, not a tool to load somebody else's.
var errNotLoopback = errors.New("loadgen: the base URL must be a loopback address")

// loopbackURL parses base and accepts it only when its host is a loopback address.
func loopbackURL(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("loadgen: base URL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("loadgen: base URL %q: want http or https", base)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, fmt.Errorf("%w, not %q", errNotLoopback, host)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("loadgen: base URL %q: want scheme, host, port and path only", base)
	}
	return u, nil
}

// target is the server under test, reached through one keep-alive client.
type target struct {
	base   string // without a trailing slash
	key    string
	client *http.Client
	// dials counts TCP connections: with keep-alive working it stays near the concurrency.
	dials atomic.Int64
}

// newTarget returns a client for clients concurrent workers. Every worker must find an idle
// connection when it sends, so the idle pool holds at least one per worker; otherwise the
// transport closes connections after each burst and the figures measure TCP handshakes.
func newTarget(base *url.URL, key string, clients int, timeout time.Duration) *target {
	t := &target{base: base.String(), key: key}
	for len(t.base) > 0 && t.base[len(t.base)-1] == '/' {
		t.base = t.base[:len(t.base)-1]
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy: nil, // loopback only: never through a proxy from the environment
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			t.dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        2 * clients,
		MaxIdleConnsPerHost: 2 * clients,
		// One connection per client at most: without it, a request issued while its
		// client's connection is still on its way back to the idle pool (a busy machine)
		// dials another, and the run holds more connections than it has clients.
		MaxConnsPerHost:       clients,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		// The server's own bytes are measured, not a decompression on our side.
		DisableCompression: true,
	}
	t.client = &http.Client{
		Transport: transport,
		Timeout:   timeout,
		// A redirect could lead off this machine; it is an answer to count, not to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return t
}

// close drops the idle connections, so that the next phase dials its own.
func (t *target) close() { t.client.CloseIdleConnections() }

// worker is one concurrent client: its reusable body buffer and its random source.
type worker struct {
	buf     bytes.Buffer
	rng     *rand.Rand
	answers int // query answers counted
}

// outcome is one request's result as a phase's do function sees it: status 0 with an error
// is a transport failure; an error with a status is a refused or malformed answer. n is a
// per-phase count (events returned by a query, 1 for a published segment).
type outcome struct {
	status int
	n      int
	err    error
}

// plan bounds a phase: it ends after count measured requests (when count > 0) or at
// warmup+duration (when duration > 0), whichever first, and in any case at hard.
type plan struct {
	phase    string
	clients  int
	count    int
	warmup   time.Duration
	duration time.Duration
	hard     time.Duration
	// abortErrors stops the phase early: once this many requests failed, going on measures
	// nothing.
	abortErrors int
	seed        uint64
	// rate, when > 0, makes the phase open-loop: request k (warm-up included) is due at
	// start + k/rate whatever the answers before it, the clients take the due requests in
	// turn, and a request's latency runs from when it was due, not from when a client got
	// round to sending it. Without this (closed loop, rate 0), a slow answer delays the
	// requests its client would have sent meanwhile and their wait is never measured
	// (coordinated omission): the figures then describe saturation, not a latency at a rate.
	rate float64
	// fromSend measures an open-loop request from when it was sent, not from when it was
	// due: for probes paced only to keep the machine as idle as a publisher at that rate
	// would, whose figure is the request's own time, comparable to a client's that sends at
	// will (floor.go).
	fromSend bool
	// clock is time.Now and sleeping when nil; tests inject a fake.
	clock pacer
}

// pacer tells the time and waits for it: the real clock, or a test's.
type pacer interface {
	Now() time.Time
	// SleepUntil returns when t has come, or ctx's error when ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) error
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lateSlack is how far past its due time an open-loop request may be sent before it counts
// as behind schedule: more than a timer's wake-up jitter, less than any latency that matters.
const lateSlack = time.Millisecond

// due returns when open-loop request k is due: start + k/rate, computed from k (not summed),
// so that rounding never drifts the schedule.
func due(start time.Time, rate float64, k int64) time.Time {
	return start.Add(time.Duration(float64(k) * float64(time.Second) / rate))
}

// workerStats is what one worker saw; merged at the end so the hot path takes no lock.
type workerStats struct {
	samples   latencies
	ok, errs  int
	n, maxN   int
	statuses  map[string]int
	errSample []string
	lastEnd   time.Time
	// late counts open-loop requests sent more than lateSlack after they were due; maxLag is
	// the longest such delay.
	late   int
	maxLag time.Duration
}

const maxErrorSamples = 5

// run drives do from p.clients workers as p says and returns the measured result. do gets
// the index of the measured request (0, 1, ...; seed uses it as the event number) or -1
// during the warm-up.
func (t *target) run(ctx context.Context, p plan, do func(ctx context.Context, w *worker, i int) outcome) result {
	hardCtx, cancel := context.WithTimeout(ctx, p.hard)
	defer cancel()
	clk := p.clock
	if clk == nil {
		clk = realClock{}
	}
	dials := t.dials.Load()
	start := clk.Now()
	measureFrom := start.Add(p.warmup)
	end := measureFrom.Add(p.duration)

	var (
		tickets atomic.Int64
		slots   atomic.Int64 // open loop: the next request's number, warm-up included
		failed  atomic.Int64
		stopMu  sync.Mutex
		stopped string
	)
	stop := func(reason string) {
		stopMu.Lock()
		if stopped == "" {
			stopped = reason
		}
		stopMu.Unlock()
	}
	isStopped := func() bool {
		stopMu.Lock()
		defer stopMu.Unlock()
		return stopped != ""
	}

	stats := make([]workerStats, p.clients)
	var wg sync.WaitGroup
	for c := range p.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &stats[c]
			s.statuses = map[string]int{}
			w := &worker{rng: rand.New(rand.NewPCG(p.seed, 1<<32+uint64(c)))}
			for !isStopped() {
				if hardCtx.Err() != nil {
					if ctx.Err() != nil {
						stop(stopInterrupts)
					} else {
						stop(stopHardLimit)
					}
					return
				}
				now := clk.Now()
				var dueAt time.Time
				if p.rate > 0 {
					// The request is measured by when it is due, so the warm-up and the
					// measured time each hold their share of the schedule.
					dueAt = due(start, p.rate, slots.Add(1)-1)
					if p.duration > 0 && !now.Before(end) {
						// The measured time is over: the requests due in it and still
						// unsent are counted as Unsent rather than sent after the end.
						stop(stopDuration)
						return
					}
					now = dueAt
				}
				measured := !now.Before(measureFrom)
				if measured && p.duration > 0 && !now.Before(end) {
					stop(stopDuration)
					return
				}
				i := -1
				if measured {
					n := tickets.Add(1)
					if p.count > 0 && n > int64(p.count) {
						stop(stopCount)
						return
					}
					i = int(n - 1)
				}
				if p.rate > 0 {
					if err := clk.SleepUntil(hardCtx, dueAt); err != nil {
						continue // the loop's top says why the phase ends
					}
				}
				t0 := clk.Now()
				o := do(hardCtx, w, i)
				doneAt := clk.Now()
				took := doneAt.Sub(t0)
				var lag time.Duration
				if p.rate > 0 {
					lag = t0.Sub(dueAt)
					if !p.fromSend {
						took = doneAt.Sub(dueAt) // from when it was due: queueing counts
					}
				}
				if o.err != nil && hardCtx.Err() != nil {
					// Cut by our own stop, not refused by the server: not a measurement.
					continue
				}
				if !measured && o.err == nil {
					continue
				}
				// A failure counts even in the warm-up: the server refused a user.
				s.statuses[statusKey(o.status)]++
				if o.err != nil {
					s.errs++
					if msg := o.err.Error(); len(s.errSample) < maxErrorSamples && !slices.Contains(s.errSample, msg) {
						s.errSample = append(s.errSample, msg)
					}
					if failed.Add(1) >= int64(p.abortErrors) {
						stop(stopTooMany)
					}
					continue
				}
				s.lastEnd = doneAt
				if lag > lateSlack {
					s.late++
				}
				s.maxLag = max(s.maxLag, lag)
				s.ok++
				s.samples = append(s.samples, took)
				s.n += o.n
				s.maxN = max(s.maxN, o.n)
			}
		}()
	}
	wg.Wait()

	r := result{Phase: p.phase, Clients: p.clients, Statuses: map[string]int{}, Stopped: stopped,
		Conns: t.dials.Load() - dials, OfferedPerSecond: p.rate}
	var maxLag time.Duration
	var all latencies
	var lastEnd time.Time
	sumN := 0
	for _, s := range stats {
		r.OK += s.ok
		r.Errors += s.errs
		sumN += s.n
		r.MaxEvents = max(r.MaxEvents, s.maxN)
		for k, v := range s.statuses {
			r.Statuses[k] += v
		}
		for _, e := range s.errSample {
			if len(r.ErrorSamples) < maxErrorSamples && !slices.Contains(r.ErrorSamples, e) {
				r.ErrorSamples = append(r.ErrorSamples, e)
			}
		}
		all = append(all, s.samples...)
		if s.lastEnd.After(lastEnd) {
			lastEnd = s.lastEnd
		}
		r.Late += s.late
		maxLag = max(maxLag, s.maxLag)
	}
	if p.rate > 0 {
		r.MaxLagMs = math.Round(float64(maxLag)/float64(time.Microsecond)) / 1000
	}
	r.Requests = r.OK + r.Errors
	if p.rate > 0 && p.duration > 0 && stopped == stopDuration {
		// Every request due in [measureFrom, end) was owed; those not sent by the end fell
		// behind schedule as much as the late ones.
		first := math.Ceil(p.warmup.Seconds() * p.rate)
		last := math.Ceil((p.warmup + p.duration).Seconds() * p.rate)
		r.Unsent = max(0, int(last-first)-r.Requests)
	}
	if r.Requests > 0 {
		r.Seconds = math.Round(lastEnd.Sub(measureFrom).Seconds()*1000) / 1000
	}
	if r.OK > 0 {
		r.MeanEvents = math.Round(float64(sumN)/float64(r.OK)*100) / 100
	}
	r.Lines = sumN // meaningful for seed only; query clears it
	r.summarise(all)
	return r
}

func statusKey(status int) string {
	if status == 0 {
		return "transport_error"
	}
	return strconv.Itoa(status)
}

// send does one request and reads the whole answer into w.buf: a connection goes back to the
// idle pool only once its body is read to the end.
func (t *target) send(ctx context.Context, w *worker, method, path string, body []byte) (int, error) {
	var rd io.Reader // nil, not a nil *bytes.Reader, for a request without a body
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+t.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, trimQuery(path), err)
	}
	w.buf.Reset()
	_, err = w.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read the answer: %w", method, trimQuery(path), err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, trimQuery(path), resp.StatusCode, snippet(w.buf.Bytes()))
	}
	return resp.StatusCode, nil
}

func trimQuery(path string) string {
	for i := range len(path) {
		if path[i] == '?' {
			return path[:i]
		}
	}
	return path
}

func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}

// taxonomy reads GET /v1/meta/taxonomy (docs/api.md §2.6): the types and subtypes the server knows,
// so the city uses the server's vocabulary as it is today.
func (t *target) taxonomy(ctx context.Context) (map[string][]string, error) {
	var w worker
	if _, err := t.send(ctx, &w, http.MethodGet, "/v1/meta/taxonomy", nil); err != nil {
		return nil, fmt.Errorf("loadgen: read the taxonomy: %w", err)
	}
	var doc struct {
		Types []struct {
			ID       string   `json:"id"`
			Subtypes []string `json:"subtypes"`
		} `json:"types"`
	}
	if err := json.Unmarshal(w.buf.Bytes(), &doc); err != nil {
		return nil, fmt.Errorf("loadgen: decode the taxonomy: %w", err)
	}
	out := make(map[string][]string, len(doc.Types))
	for _, ty := range doc.Types {
		out[ty.ID] = ty.Subtypes
	}
	return out, nil
}

// seed publishes events 0..count-1 of c (POST /v1/events) and reports publishes/s.
func (t *target) seed(ctx context.Context, c *city, p plan) result {
	p.phase = "seed"
	r := t.run(ctx, p, func(ctx context.Context, w *worker, i int) outcome {
		if i < 0 {
			return outcome{} // seed has no warm-up: every event counts
		}
		e := c.Event(i)
		body, err := json.Marshal(e)
		if err != nil {
			return outcome{err: fmt.Errorf("encode event %d: %w", i, err)}
		}
		status, err := t.send(ctx, w, http.MethodPost, "/v1/events", body)
		if err == nil && status != http.StatusCreated && status != http.StatusOK {
			err = fmt.Errorf("POST /v1/events: %d, want 201", status)
		}
		o := outcome{status: status, err: err}
		if e.Geometry != nil {
			o.n = 1
		}
		return o
	})
	r.MeanEvents, r.MaxEvents = 0, 0
	return r
}

// query sends GET /v1/events at random points of area with radius metres and reports
// queries/s, latency and the mean size of the answers.
func (t *target) query(ctx context.Context, area square, radius float64, p plan) result {
	p.phase = "query"
	rad := strconv.FormatFloat(radius, 'f', -1, 64)
	r := t.run(ctx, p, func(ctx context.Context, w *worker, _ int) outcome {
		lat, lon := area.random(w.rng)
		path := "/v1/events?lat=" + strconv.FormatFloat(round5(lat), 'f', -1, 64) +
			"&lon=" + strconv.FormatFloat(round5(lon), 'f', -1, 64) + "&radius=" + rad
		status, err := t.send(ctx, w, http.MethodGet, path, nil)
		if err != nil {
			return outcome{status: status, err: err}
		}
		n, err := countEvents(w.buf.Bytes())
		if err == nil && w.answers%fullCheckEvery == 0 {
			var full int
			if full, err = countArray(w.buf.Bytes()); err == nil && full != n {
				err = fmt.Errorf("%w: %d elements, %d of them events", errNotArray, full, n)
			}
		}
		w.answers++
		if err != nil {
			return outcome{status: status, err: fmt.Errorf("GET /v1/events: %w", err)}
		}
		return outcome{status: status, n: n}
	})
	r.RadiusM = radius
	r.Lines = 0
	return r
}
