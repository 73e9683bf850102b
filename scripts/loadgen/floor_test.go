package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// runFloor runs `loadgen floor args...` and returns its exit code, its result lines by phase
// in order, and its standard error.
func runFloor(t *testing.T, args ...string) (int, []result, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), append([]string{"floor"}, args...), func(string) string { return "" }, &stdout, &stderr)
	var rs []result
	for line := range strings.Lines(stdout.String()) {
		if strings.HasPrefix(line, `{"phase"`) {
			var r result
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("result line %q: %v", line, err)
			}
			rs = append(rs, r)
		}
	}
	return code, rs, stderr.String()
}

// The floor phase times a bare round trip, a synced append in the folder given and, with a
// server, its publishes, each as many times as asked; it leaves nothing in the folder.
func TestFloorMeasuresEachProbeAndCleansUp(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "k")
	dir := t.TempDir()
	code, rs, stderr := runFloor(t, "-dir", dir, "-requests", "25", "-rate", "2000", "-base", srv.URL, "-key", "k")
	if code != 0 {
		t.Fatalf("floor exit = %d; want 0 (stderr %q)", code, stderr)
	}
	var phases []string
	for _, r := range rs {
		phases = append(phases, r.Phase)
		if r.OK != 25 || r.Errors != 0 || r.Stopped != stopCount {
			t.Errorf("%s: ok %d, errors %d, stopped by %q; want 25, 0, %q", r.Phase, r.OK, r.Errors, r.Stopped, stopCount)
		}
		if r.P50Ms <= 0 || r.P50Ms > r.MaxMs {
			t.Errorf("%s: p50 %g, max %g; want 0 < p50 <= max", r.Phase, r.P50Ms, r.MaxMs)
		}
	}
	if strings.Join(phases, " ") != "floor-http floor-sync publish" {
		t.Errorf("phases %q; want floor-http floor-sync publish", phases)
	}
	if published, _, _ := f.stats(); published != 25 {
		t.Errorf("the server holds %d publishes; want 25", published)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the folder holds %d files after the run; want none", len(left))
	}
}

// Without a server, the two probes of the machine alone.
func TestFloorWithoutServer(t *testing.T) {
	t.Parallel()
	code, rs, stderr := runFloor(t, "-dir", t.TempDir(), "-requests", "5", "-rate", "2000")
	if code != 0 || len(rs) != 2 {
		t.Fatalf("floor exit = %d with %d results; want 0 and 2 (stderr %q)", code, len(rs), stderr)
	}
}

func TestFloorRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no folder", nil, "-dir"},
		{"missing folder", []string{"-dir", dir + "/nope"}, "not a folder"},
		{"no requests", []string{"-dir", dir, "-requests", "0"}, "-requests"},
		{"more records than the file holds", []string{"-dir", dir, "-requests", "1000000"}, "-requests"},
		{"no rate", []string{"-dir", dir, "-rate", "0"}, "-rate"},
		{"server without key", []string{"-dir", dir, "-base", "http://127.0.0.1:1"}, "API key"},
		{"remote server", []string{"-dir", dir, "-base", "http://example.com", "-key", "k"}, "loopback"},
		{"stray argument", []string{"-dir", dir, "extra"}, "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runFloor(t, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("floor %q = %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
			}
		})
	}
}

// A probe's figure is the request's own time: paced at a rate its server cannot keep up
// with, each request still measures its service time, where the open loop's measure from
// the due time grows with the backlog.
func TestFromSendTimesTheRequestItself(t *testing.T) {
	t.Parallel()
	for _, fromSend := range []bool{false, true} {
		clk := &fakeClock{now: time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)}
		var tg target
		r := tg.run(t.Context(), plan{phase: "floor-http", clients: 1, count: 100, hard: time.Minute,
			abortErrors: 1, rate: 100, fromSend: fromSend, clock: clk},
			func(context.Context, *worker, int) outcome {
				clk.advance(20 * time.Millisecond) // twice the 10 ms between due times
				return outcome{status: 200}
			})
		if fromSend && (r.P50Ms != 20 || r.MaxMs != 20) {
			t.Errorf("from send: p50 %g, max %g ms; want 20 and 20 (the service time)", r.P50Ms, r.MaxMs)
		}
		if !fromSend && r.MaxMs < 1000 {
			t.Errorf("from due: max %g ms; want the backlog of 100 requests (about 1 s) in it", r.MaxMs)
		}
		if r.Late == 0 {
			t.Errorf("fromSend %v: no late request; want most of them late", fromSend)
		}
	}
}
