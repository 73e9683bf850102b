package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// result is what a phase reports: one row of the table and one JSON line.
type result struct {
	Phase   string  `json:"phase"`
	RadiusM float64 `json:"radius_m,omitempty"`
	Clients int     `json:"clients"`
	// Requests counts every measured request: OK plus Errors.
	Requests int `json:"requests"`
	OK       int `json:"ok"`
	// Errors are transport errors, non-2xx answers and bodies that are not what the route
	// returns, the warm-up's included.
	Errors int `json:"errors"`
	// Seconds is the measured time, from the first measured request to the last good answer.
	Seconds float64 `json:"seconds"`
	// PerSecond is OK / Seconds: publishes/s or queries/s.
	PerSecond float64 `json:"per_second"`
	// Latencies of the OK requests, exact (nearest-rank over every sample).
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// MeanEvents and MaxEvents are the sizes of the query answers.
	MeanEvents float64 `json:"mean_events,omitempty"`
	MaxEvents  int     `json:"max_events,omitempty"`
	// Lines counts the published events with a LineString extent.
	Lines int `json:"lines,omitempty"`
	// Conns counts the TCP connections dialled during the phase: about Clients when
	// keep-alive works.
	Conns    int64          `json:"conns"`
	Statuses map[string]int `json:"statuses"`
	// Stopped says what ended the phase: "count", "duration", "hard_limit", "too_many_errors"
	// or "interrupted".
	Stopped string `json:"stopped"`
	// OfferedPerSecond is the open-loop rate the requests were due at (-rate); 0 for a
	// closed-loop run, whose clients send again as soon as they have an answer. In an
	// open-loop run the latencies run from each request's due time, and PerSecond is the
	// rate achieved.
	OfferedPerSecond float64 `json:"offered_per_s,omitempty"`
	// Late counts the open-loop requests sent more than 1 ms after they were due: every
	// client was still waiting for an answer. Many late requests mean the server (or the
	// load generator) cannot keep the offered rate, and the latencies show the backlog.
	Late int `json:"late,omitempty"`
	// Unsent counts the open-loop requests due in the measured time that no client had sent
	// when it ended (run with -duration): behind schedule too.
	Unsent int `json:"unsent,omitempty"`
	// MaxLagMs is the longest delay between a request's due time and its sending.
	MaxLagMs float64 `json:"max_lag_ms,omitempty"`
	// Runs is the number of runs a median summarises (loadgen median); 0 for one run.
	Runs         int      `json:"runs,omitempty"`
	ErrorSamples []string `json:"error_samples,omitempty"`
}

// Reasons a phase stops.
const (
	stopCount      = "count"
	stopDuration   = "duration"
	stopHardLimit  = "hard_limit"
	stopTooMany    = "too_many_errors"
	stopInterrupts = "interrupted"
)

// errTooManyErrors and errIncomplete fail a run after its report is printed.
var (
	errTooManyErrors = errors.New("loadgen: too many failed requests")
	errIncomplete    = errors.New("loadgen: phase stopped before its end")
)

// check tells whether a phase ran as a load test must: to its planned end, and with at most
// maxErrors failures.
func (r result) check(maxErrors int) error {
	if r.Errors > maxErrors {
		return fmt.Errorf("%w: %s had %d errors (at most %d allowed; samples above)", errTooManyErrors, r.Phase, r.Errors, maxErrors)
	}
	if r.Stopped != stopCount && r.Stopped != stopDuration {
		return fmt.Errorf("%w: %s stopped by %s after %d requests", errIncomplete, r.Phase, r.Stopped, r.Requests)
	}
	return nil
}

// latencies are the samples of one phase.
type latencies []time.Duration

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted samples: the
// smallest sample with at least p % of the samples at or below it. Zero without samples.
func percentile(sorted latencies, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// summarise fills the latency fields of r from samples, which it sorts.
func (r *result) summarise(samples latencies) {
	slices.Sort(samples)
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }
	r.P50Ms = ms(percentile(samples, 50))
	r.P90Ms = ms(percentile(samples, 90))
	r.P99Ms = ms(percentile(samples, 99))
	r.MaxMs = ms(percentile(samples, 100))
	if r.Seconds > 0 {
		r.PerSecond = math.Round(float64(r.OK)/r.Seconds*10) / 10
	}
}

// report writes rs as a table, and each as one JSON line starting with `{"phase"` for
// scripts.
func report(w io.Writer, rs ...result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tradius_m\truns\tclients\toffered_s\trequests\terrors\tlate\tunsent\tseconds\tper_s\tp50_ms\tp90_ms\tp99_ms\tmax_ms\tmean_events\tconns\t")
	for _, r := range rs {
		radius, events := "-", "-"
		if r.Phase == "query" {
			radius = strconv.FormatFloat(r.RadiusM, 'f', -1, 64)
			events = strconv.FormatFloat(r.MeanEvents, 'f', 1, 64)
		}
		offered := "closed"
		if r.OfferedPerSecond > 0 {
			offered = strconv.FormatFloat(r.OfferedPerSecond, 'f', -1, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%.2f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%d\t\n",
			r.Phase, radius, max(r.Runs, 1), r.Clients, offered, r.Requests, r.Errors, r.Late, r.Unsent, r.Seconds, r.PerSecond,
			r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs, events, r.Conns)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	for _, r := range rs {
		for _, s := range r.ErrorSamples {
			fmt.Fprintf(w, "  error (%s): %s\n", r.Phase, s)
		}
	}
	for _, r := range rs {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
		if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
	}
	return nil
}
