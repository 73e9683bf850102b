package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

func taxonomySubtypes() map[string][]string {
	out := map[string][]string{}
	for _, ty := range taxonomy.All() {
		out[ty.ID] = ty.Subtypes
	}
	return out
}

var paris = square{Lat: 48.85, Lon: 2.35, Side: 50_000}

func testCity(t *testing.T, seed uint64) *city {
	t.Helper()
	c, err := newCity(paris, 0.10, taxonomySubtypes(), seed, "run1", time.Now)
	if err != nil {
		t.Fatalf("newCity = %v; want nil", err)
	}
	return c
}

func TestCityEventsArePublishableAndShaped(t *testing.T) {
	t.Parallel()
	const n = 5000
	c := testCity(t, 7)
	ids := map[string]bool{}
	lines := 0
	for i := range n {
		e := c.Event(i)
		body, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal event %d: %v", i, err)
		}
		// The server's own validation of POST /v1/events (docs/api.md §2.2) must accept every
		// event.
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode event %d: %v", i, err)
		}
		if errs := event.ValidateEventIn(v, time.Now()); errs != nil {
			t.Fatalf("event %d %s: ValidateEventIn = %v; want no error", i, body, errs)
		}
		if ids[e.ClientEventID] {
			t.Fatalf("event %d: client_event_id %q repeats", i, e.ClientEventID)
		}
		ids[e.ClientEventID] = true
		if !paris.contains(e.Lat, e.Lon, 2) {
			t.Errorf("event %d at %g,%g; want it inside the 50 km square", i, e.Lat, e.Lon)
		}
		if e.Geometry == nil {
			continue
		}
		lines++
		pts := e.Geometry.Coordinates
		if len(pts) < minLinePoints || len(pts) > maxLinePoints {
			t.Errorf("event %d: %d points; want %d..%d", i, len(pts), minLinePoints, maxLinePoints)
		}
		if pts[0] != [2]float64{e.Lon, e.Lat} {
			t.Errorf("event %d: first point %v; want [lon, lat] = [%g, %g]", i, pts[0], e.Lon, e.Lat)
		}
		ext := make([]geo.Point, len(pts))
		for j, p := range pts {
			ext[j] = geo.Point{Lat: p[1], Lon: p[0]}
		}
		// Rounding to 5 decimals moves each point by under a metre.
		if l := geo.Length(ext); l < minLineLength-float64(len(pts)) || l > maxLineLength+float64(len(pts)) {
			t.Errorf("event %d: line of %.0f m; want %.0f..%.0f m", i, l, minLineLength, maxLineLength)
		}
	}
	if share := float64(lines) / n; math.Abs(share-0.10) > 0.015 {
		t.Errorf("share of LineStrings = %.3f; want 0.10 ± 0.015", share)
	}
}

func TestCityIsAFunctionOfSeedAndIndex(t *testing.T) {
	t.Parallel()
	fixed := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	mk := func(seed uint64) *city {
		c, err := newCity(paris, 0.10, taxonomySubtypes(), seed, "run1", fixed)
		if err != nil {
			t.Fatalf("newCity = %v", err)
		}
		return c
	}
	a, b, other := mk(1), mk(1), mk(2)
	same := 0
	for i := range 200 {
		ja, _ := json.Marshal(a.Event(i))
		jb, _ := json.Marshal(b.Event(i))
		jo, _ := json.Marshal(other.Event(i))
		if !bytes.Equal(ja, jb) {
			t.Fatalf("event %d differs between two cities of seed 1:\n%s\n%s", i, ja, jb)
		}
		if bytes.Equal(ja, jo) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 1 and 2 gave %d identical events of 200; want none", same)
	}
}

func TestNewCityRefusesAForeignTaxonomy(t *testing.T) {
	t.Parallel()
	_, err := newCity(paris, 0.1, map[string][]string{"meteor_strike": nil}, 1, "r", time.Now)
	if err == nil {
		t.Errorf("newCity with a taxonomy of unknown types = nil; want an error")
	}
}

// countCase is an answer and what counting its events gives.
type countCase struct {
	name    string
	body    string
	want    int
	wantErr bool
}

func TestCountArray(t *testing.T) {
	t.Parallel()
	tests := []countCase{
		{"empty", `[]`, 0, false},
		{"empty with spaces", " [ \n ] \n", 0, false},
		{"one", `[{"a":1}]`, 1, false},
		{"three nested", `[{"g":{"c":[[1,2],[3,4]]}},{"b":[{}]},{}]`, 3, false},
		{"brackets and commas in strings", `[{"d":"a],[{\"x\"}, ["},{"d":"\\"}]`, 2, false},
		{"escaped backslashes before quotes", `[{"d":"a\\\"],[{"},{"e":"\\\\"},{"f":"\\"}]`, 3, false},
		{"unterminated string", `[{"d":"a\"}]`, 0, true},
		{"object, not array", `{"detail":"x"}`, 0, true},
		{"element not an object", `[1,2]`, 0, true},
		{"truncated", `[{"a":1},{"b":`, 0, true},
		{"trailing comma", `[{},]`, 0, true},
		{"empty element", `[{},,{}]`, 0, true},
		{"data after", `[{}] x`, 0, true},
		{"nothing", ``, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := countArray([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("countArray(%q) error = %v; want error %v", tt.body, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("countArray(%q) = %d; want %d", tt.body, got, tt.want)
			}
		})
	}
}

// countEvents counts the events of an answer, not the objects within them nor text within
// strings; the first answer of each worker, and one in fullCheckEvery, is also counted by
// countArray, so an answer of another shape fails the phase rather than being miscounted.
func TestCountEvents(t *testing.T) {
	t.Parallel()
	tests := []countCase{
		{"empty", " [ ]\n", 0, false},
		{"events with geometry", `[{"event_id":"ev_a","geometry":{"type":"LineString"}},{"event_id":"ev_b"}]`, 2, false},
		{"an id within a string", `[{"event_id":"ev_a","description":"{\"event_id\":1}"}]`, 1, false},
		{"not an array", `{"detail":"x"}`, 0, true},
		{"truncated", `[{"event_id":"ev_a"}`, 0, true},
	}
	for _, tt := range tests {
		got, err := countEvents([]byte(tt.body))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%s: countEvents(%q) = %d, %v; want %d, error %v", tt.name, tt.body, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	hundred := make(latencies, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name    string
		samples latencies
		p       float64
		want    time.Duration
	}{
		{"none", nil, 50, 0},
		{"one", latencies{7}, 99, 7},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p90 of 1..100", hundred, 90, 90 * time.Millisecond},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"max of 1..100", hundred, 100, 100 * time.Millisecond},
		{"p50 of four", latencies{1, 2, 3, 4}, 50, 2},
		{"p99 of four", latencies{1, 2, 3, 4}, 99, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := percentile(tt.samples, tt.p); got != tt.want {
				t.Errorf("percentile(%d samples, %g) = %v; want %v", len(tt.samples), tt.p, got, tt.want)
			}
		})
	}
}

func TestLoopbackURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base string
		ok   bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://127.0.0.2:8080/", true},
		{"http://localhost:9000", true},
		{"http://[::1]:8080", true},
		{"https://127.0.0.1", true},
		{"http://example.com", false},
		{"http://10.0.0.1:8080", false},
		{"http://0.0.0.0:8080", false},
		{"http://127.0.0.1.nip.io", false},
		{"ftp://127.0.0.1", false},
		{"http://user:pw@127.0.0.1", false},
		{"127.0.0.1:8080", false},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			t.Parallel()
			_, err := loopbackURL(tt.base)
			if (err == nil) != tt.ok {
				t.Errorf("loopbackURL(%q) = %v; want ok %v", tt.base, err, tt.ok)
			}
		})
	}
}

// runLoadgen runs the command and returns its exit code, its result line and its stderr.
func runLoadgen(t *testing.T, args ...string) (int, result, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr)
	var r result
	for line := range strings.Lines(stdout.String()) {
		if strings.HasPrefix(line, `{"phase"`) {
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("result line %q: %v", line, err)
			}
		}
	}
	return code, r, stderr.String()
}

func TestSeedThenQueryAgainstFake(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "svc_test")
	const events, clients = 3000, 8
	code, r, stderr := runLoadgen(t, "seed", "-base", srv.URL, "-key", "svc_test",
		"-events", "3000", "-clients", "8", "-seed", "3")
	if code != 0 {
		t.Fatalf("seed exit = %d; want 0 (stderr %q)", code, stderr)
	}
	published, _, _ := f.stats()
	if r.OK != events || r.Errors != 0 || r.Requests != events || published != events {
		t.Errorf("seed ok %d, errors %d, requests %d, server holds %d; want %d, 0, %d, %d",
			r.OK, r.Errors, r.Requests, published, events, events, events)
	}
	if r.Statuses["201"] != events {
		t.Errorf("seed statuses = %v; want %d × 201", r.Statuses, events)
	}
	if r.Stopped != stopCount {
		t.Errorf("seed stopped by %q; want %q", r.Stopped, stopCount)
	}
	if r.Conns < 1 || r.Conns > clients {
		t.Errorf("seed dialled %d connections; want 1..%d (keep-alive)", r.Conns, clients)
	}
	if r.Lines < events/20 || r.Lines > events/5 {
		t.Errorf("seed published %d LineStrings of %d; want about 10 %%", r.Lines, events)
	}
	if r.P50Ms <= 0 || r.P50Ms > r.P90Ms || r.P90Ms > r.P99Ms || r.P99Ms > r.MaxMs {
		t.Errorf("seed latencies p50 %g, p90 %g, p99 %g, max %g; want 0 < p50 <= p90 <= p99 <= max",
			r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs)
	}

	var means []float64
	for _, radius := range []string{"1000", "9780"} {
		_, q0, ret0 := f.stats()
		code, r, stderr = runLoadgen(t, "query", "-base", srv.URL, "-key", "svc_test",
			"-radius", radius, "-requests", "150", "-duration", "0", "-warmup", "0", "-clients", "4")
		if code != 0 {
			t.Fatalf("query %s exit = %d; want 0 (stderr %q)", radius, code, stderr)
		}
		_, q1, ret1 := f.stats()
		if r.OK != 150 || r.Errors != 0 || q1-q0 != 150 {
			t.Errorf("query %s: ok %d, errors %d, server saw %d; want 150, 0, 150", radius, r.OK, r.Errors, q1-q0)
		}
		if want := math.Round(float64(ret1-ret0)/150*100) / 100; r.MeanEvents != want {
			t.Errorf("query %s: mean events %g; want %g (what the server returned)", radius, r.MeanEvents, want)
		}
		if r.MaxEvents > fakeMaxEvents {
			t.Errorf("query %s: max events %d; want at most %d", radius, r.MaxEvents, fakeMaxEvents)
		}
		if r.RadiusM != map[string]float64{"1000": 1000, "9780": 9780}[radius] {
			t.Errorf("query radius reported %g; want %s", r.RadiusM, radius)
		}
		means = append(means, r.MeanEvents)
	}
	if means[0] <= 0 || means[1] <= means[0] {
		t.Errorf("mean events at 1000 m %g and at 9780 m %g; want 0 < first < second", means[0], means[1])
	}
}

func TestQueryCountsServerErrorsAndFails(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "k")
	f.failEvery = 10
	code, r, stderr := runLoadgen(t, "query", "-base", srv.URL, "-key", "k",
		"-requests", "100", "-duration", "0", "-warmup", "0", "-clients", "4", "-max-errors", "5")
	if code != 1 {
		t.Errorf("exit = %d; want 1 with 10 errors over -max-errors 5", code)
	}
	if r.Errors != 10 || r.OK != 90 || r.Statuses["500"] != 10 || r.Statuses["200"] != 90 {
		t.Errorf("errors %d, ok %d, statuses %v; want 10, 90, 90×200 and 10×500", r.Errors, r.OK, r.Statuses)
	}
	if len(r.ErrorSamples) == 0 || !strings.Contains(r.ErrorSamples[0], "500") {
		t.Errorf("error samples %q; want them to name the 500", r.ErrorSamples)
	}
	if !strings.Contains(stderr, "too many failed requests") {
		t.Errorf("stderr %q; want it to say the run failed for errors", stderr)
	}

	// The same errors under a larger allowance pass.
	code, r, _ = runLoadgen(t, "query", "-base", srv.URL, "-key", "k",
		"-requests", "100", "-duration", "0", "-warmup", "0", "-clients", "4", "-max-errors", "10")
	if code != 0 || r.Errors != 10 {
		t.Errorf("with -max-errors 10: exit %d, errors %d; want 0, 10", code, r.Errors)
	}
}

func TestSeedWithRefusedKeyStopsEarly(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "right")
	code, r, _ := runLoadgen(t, "seed", "-base", srv.URL, "-key", "wrong",
		"-events", "100000", "-clients", "4", "-abort-errors", "20")
	if code != 1 {
		t.Errorf("exit = %d; want 1", code)
	}
	if r.Stopped != stopTooMany || r.OK != 0 || r.Statuses["401"] != r.Errors {
		t.Errorf("stopped %q, ok %d, statuses %v; want %q, 0, only 401s", r.Stopped, r.OK, r.Statuses, stopTooMany)
	}
	if r.Requests < 20 || r.Requests >= 100 {
		t.Errorf("requests %d; want it to stop soon after 20 errors", r.Requests)
	}
	if published, _, _ := f.stats(); published != 0 {
		t.Errorf("server holds %d events; want 0", published)
	}
}

func TestKeyFromEnvironmentIsUsedAndNeverPrinted(t *testing.T) {
	t.Parallel()
	const key = "svc_fromtheenvironment"
	getenv := func(name string) string {
		if name == "LOADGEN_API_KEY" {
			return key
		}
		return ""
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"query", "-h"}, getenv, &stdout, &stderr); code != 0 {
		t.Errorf("query -h = %d; want 0", code)
	}
	if strings.Contains(stdout.String()+stderr.String(), key) {
		t.Errorf("-h printed the API key from the environment: %q", stderr.String())
	}

	f, srv := newFake(t, key)
	stdout.Reset()
	code := run(t.Context(), []string{"seed", "-base", srv.URL, "-events", "10", "-clients", "2"}, getenv, &stdout, &stderr)
	if published, _, _ := f.stats(); code != 0 || published != 10 {
		t.Errorf("seed with the key in LOADGEN_API_KEY: exit %d, %d published; want 0, 10", code, published)
	}
}

func TestRunRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no phase", nil, "usage"},
		{"unknown phase", []string{"stream"}, "usage"},
		{"remote target", []string{"query", "-key", "k", "-base", "http://example.com"}, "loopback"},
		{"no key", []string{"seed"}, "no API key"},
		{"unbounded query", []string{"query", "-key", "k", "-duration", "0"}, "a phase must end"},
		{"zero radius", []string{"query", "-key", "k", "-radius", "0"}, "-radius"},
		{"too many clients", []string{"seed", "-key", "k", "-clients", "100000"}, "-clients"},
		{"too many events", []string{"seed", "-key", "k", "-events", "999999999"}, "-events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runLoadgen(t, tt.args...)
			if code != 2 {
				t.Errorf("run(%q) = %d; want 2", tt.args, code)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q; want it to contain %q", stderr, tt.want)
			}
		})
	}
}

func TestCheckFailsIncompletePhases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    result
		want error
	}{
		{"complete by count", result{Phase: "seed", Stopped: stopCount}, nil},
		{"complete by duration, errors allowed", result{Phase: "query", Stopped: stopDuration, Errors: 5}, nil},
		{"too many errors", result{Phase: "query", Stopped: stopDuration, Errors: 6}, errTooManyErrors},
		{"hard limit", result{Phase: "seed", Stopped: stopHardLimit}, errIncomplete},
		{"interrupted", result{Phase: "seed", Stopped: stopInterrupts}, errIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.r.check(5); !errors.Is(err, tt.want) {
				t.Errorf("check(5) = %v; want %v", err, tt.want)
			}
		})
	}
}

func TestMediansPerPhaseAndRadius(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	runs := []result{
		{Phase: "seed", Clients: 64, Requests: 100, OK: 100, PerSecond: 900, P99Ms: 40, Stopped: stopCount},
		{Phase: "query", RadiusM: 1000, Clients: 64, Requests: 10, OK: 10, PerSecond: 300, P50Ms: 3, P99Ms: 9, MeanEvents: 120, Stopped: stopDuration},
		{Phase: "query", RadiusM: 9780, Clients: 64, Requests: 10, OK: 9, Errors: 1, PerSecond: 50, P50Ms: 30, P99Ms: 90, MeanEvents: 500, Stopped: stopDuration},
		{Phase: "query", RadiusM: 1000, Clients: 64, Requests: 10, OK: 10, PerSecond: 100, P50Ms: 1, P99Ms: 30, MeanEvents: 125, Stopped: stopDuration},
		{Phase: "query", RadiusM: 9780, Clients: 64, Requests: 10, OK: 10, PerSecond: 70, P50Ms: 20, P99Ms: 70, MeanEvents: 500, Stopped: stopDuration},
		{Phase: "query", RadiusM: 1000, Clients: 64, Requests: 10, OK: 10, PerSecond: 200, P50Ms: 2, P99Ms: 10, MeanEvents: 130, Stopped: stopDuration},
		{Phase: "query", RadiusM: 9780, Clients: 64, Requests: 3, OK: 3, PerSecond: 60, P50Ms: 25, P99Ms: 80, MeanEvents: 499, Stopped: stopHardLimit},
	}
	if err := report(&out, runs...); err != nil {
		t.Fatalf("report = %v", err)
	}
	rs, err := readResults(&out)
	if err != nil {
		t.Fatalf("readResults = %v", err)
	}
	if len(rs) != len(runs) {
		t.Fatalf("readResults found %d results in the report; want %d (table lines skipped)", len(rs), len(runs))
	}
	got := medians(rs)
	if len(got) != 3 {
		t.Fatalf("medians = %d groups; want 3 (seed, query 1000, query 9780)", len(got))
	}
	tests := []struct {
		name      string
		got       result
		phase     string
		radius    float64
		runs      int
		perSecond float64
		p50, p99  float64
		mean      float64
		requests  int
		errors    int
		stopped   string
	}{
		{"seed", got[0], "seed", 0, 1, 900, 0, 40, 0, 100, 0, stopCount},
		{"query 1000", got[1], "query", 1000, 3, 200, 2, 10, 125, 30, 0, stopDuration},
		{"query 9780", got[2], "query", 9780, 3, 60, 25, 80, 500, 23, 1, stopHardLimit},
	}
	for _, tt := range tests {
		g := tt.got
		if g.Phase != tt.phase || g.RadiusM != tt.radius || g.Runs != tt.runs {
			t.Errorf("%s: group %s %g ×%d; want %s %g ×%d", tt.name, g.Phase, g.RadiusM, g.Runs, tt.phase, tt.radius, tt.runs)
		}
		if g.PerSecond != tt.perSecond || g.P50Ms != tt.p50 || g.P99Ms != tt.p99 || g.MeanEvents != tt.mean {
			t.Errorf("%s: per_s %g p50 %g p99 %g mean %g; want %g %g %g %g", tt.name,
				g.PerSecond, g.P50Ms, g.P99Ms, g.MeanEvents, tt.perSecond, tt.p50, tt.p99, tt.mean)
		}
		if g.Requests != tt.requests || g.Errors != tt.errors || g.Stopped != tt.stopped {
			t.Errorf("%s: requests %d errors %d stopped %q; want %d %d %q (totals, and an incomplete run shows)",
				tt.name, g.Requests, g.Errors, g.Stopped, tt.requests, tt.errors, tt.stopped)
		}
	}
}

func TestMedianOfEvenCount(t *testing.T) {
	t.Parallel()
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median(4,1,3,2) = %g; want 2.5", got)
	}
}

// An answer whose events countEvents would miscount (objects that do not open with an id)
// fails the query phase: the answers checked with countArray as well disagree.
func TestQueryRefusesAnswersOfAnotherShape(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "svc_test")
	if code, _, stderr := runLoadgen(t, "seed", "-base", srv.URL, "-key", "svc_test",
		"-events", "300", "-clients", "4", "-seed", "3"); code != 0 {
		t.Fatalf("seed exit = %d; want 0 (stderr %q)", code, stderr)
	}
	f.mu.Lock()
	f.idless = true
	f.mu.Unlock()
	code, r, stderr := runLoadgen(t, "query", "-base", srv.URL, "-key", "svc_test",
		"-radius", "9780", "-requests", "320", "-duration", "0", "-warmup", "0", "-clients", "4")
	// Each worker checks its first answer fully, then one in fullCheckEvery.
	if code == 0 || r.Errors < 4 {
		t.Errorf("query of idless answers: exit %d, %d errors (stderr %q); want a failure, an error per worker at least", code, r.Errors, stderr)
	}
}
