package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// readResults reads the result lines of earlier runs (lines starting with {"phase"); other
// lines, such as the tables, are skipped.
func readResults(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `{"phase"`) {
			continue
		}
		var res result
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return nil, fmt.Errorf("loadgen: result line %q: %w", line, err)
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("loadgen: read results: %w", err)
	}
	return out, nil
}

// medians groups results by phase, radius and offered rate (closed-loop runs apart), in order of first appearance, and returns for
// each group one result whose figures are each the median over the group's runs (the median
// of each figure on its own: the p99 of the summary is the median of the runs' p99s).
// Requests, errors and late and unsent requests are summed, so that no failure is hidden by a median.
func medians(rs []result) []result {
	type key struct {
		phase   string
		radius  float64
		offered float64
	}
	var order []key
	groups := map[key][]result{}
	for _, r := range rs {
		k := key{r.Phase, r.RadiusM, r.OfferedPerSecond}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]result, 0, len(order))
	for _, k := range order {
		g := groups[k]
		m := result{Phase: k.phase, RadiusM: k.radius, OfferedPerSecond: k.offered, Clients: g[0].Clients, Runs: len(g),
			Statuses: map[string]int{}, Stopped: g[0].Stopped}
		med := func(f func(result) float64) float64 {
			v := make([]float64, len(g))
			for i, r := range g {
				v[i] = f(r)
			}
			return median(v)
		}
		m.Seconds = med(func(r result) float64 { return r.Seconds })
		m.PerSecond = med(func(r result) float64 { return r.PerSecond })
		m.P50Ms = med(func(r result) float64 { return r.P50Ms })
		m.P90Ms = med(func(r result) float64 { return r.P90Ms })
		m.P99Ms = med(func(r result) float64 { return r.P99Ms })
		m.MaxMs = med(func(r result) float64 { return r.MaxMs })
		m.MaxLagMs = med(func(r result) float64 { return r.MaxLagMs })
		m.MeanEvents = med(func(r result) float64 { return r.MeanEvents })
		m.Conns = int64(math.Round(med(func(r result) float64 { return float64(r.Conns) })))
		for _, r := range g {
			m.Requests += r.Requests
			m.OK += r.OK
			m.Errors += r.Errors
			m.Late += r.Late // totals, like errors: behind schedule in any run shows
			m.Unsent += r.Unsent
			m.Lines += r.Lines
			m.MaxEvents = max(m.MaxEvents, r.MaxEvents)
			for s, n := range r.Statuses {
				m.Statuses[s] += n
			}
			if r.Stopped != stopCount && r.Stopped != stopDuration {
				m.Stopped = r.Stopped // an incomplete run shows in the summary
			}
		}
		out = append(out, m)
	}
	return out
}

// median returns the middle value of v, or the mean of the two middle values.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
