// Command streamload measures GET /v1/stream on a running road-events server: it opens N SSE
// subscribers spread over a city, reads the server's resident memory with them idle (from
// /proc), publishes events at a steady rate through POST /v1/events, timestamps every delta at
// publication (just before the publish is sent) and at reception, and reports the p50, p95 and
// p99 of publication-to-reception latency, the deltas expected, received, missing and
// reported dropped, and the memory per idle stream.
//
// Besides the latency from publication ("p50 ms" ...), it reports the same from the event's
// created_at ("cr."; stamped by the server as it handles the publish, so it leaves out the
// request's wait before the handler), from the delta's "at" ("hub"; when the hub dispatched
// it, after the store's commit and its change feed: the stream's own share), and the publish
// requests' own latency ("pub"), which holds the store's commit.
//
//	streamload run [flags]      one run; prints a table row and a JSON line starting {"phase"
//	streamload median FILE...   the median of each figure over the JSON lines of earlier runs
//
// Only loopback servers are accepted, and every run is bounded in time. The API key comes from
// -key or STREAMLOAD_API_KEY (keep it out of the process list). scripts/stream-load.sh runs the
// whole measurement on the embedded store and on DynamoDB Local.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Bounds on one run: the tool must end on its own whatever it is given.
const (
	maxSubscribers = 20_000
	maxRate        = 2_000
	maxDuration    = 10 * time.Minute
	maxSettle      = 2 * time.Minute
)

const usage = `usage: streamload run [flags]     (streamload run -h for the flags)
       streamload median FILE...  (median of each figure over the result lines in FILEs)`

func cli(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "median" {
		return medianCommand(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var o options
	var label string
	fl := flag.NewFlagSet("streamload run", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&o.base, "base", "http://127.0.0.1:8080", "base URL of the server, or of several, comma-separated (loopback only)")
	fl.StringVar(&o.publish, "publish", "", "base URL of the server(s) to publish to, comma-separated (default: -base's)")
	fl.BoolVar(&o.failover, "failover", false, "a subscriber whose stream ends comes back to the next server with Last-Event-ID")
	fl.StringVar(&o.key, "key", "", "API key (default $STREAMLOAD_API_KEY)")
	fl.IntVar(&o.subscribers, "subscribers", 1000, "SSE subscribers")
	fl.Float64Var(&o.rate, "rate", 200, "publishes a second")
	fl.DurationVar(&o.duration, "duration", 20*time.Second, "how long to publish")
	fl.Float64Var(&o.radius, "radius", 1000, "radius of every subscriber's circle, metres")
	fl.Float64Var(&o.lat, "lat", 48.137, "latitude of the city's centre")
	fl.Float64Var(&o.lon, "lon", 11.575, "longitude of the city's centre")
	fl.Float64Var(&o.side, "side", 20000, "side of the city's square, metres")
	fl.IntVar(&o.publishers, "publishers", 32, "concurrent publishing clients")
	fl.IntVar(&o.opens, "opens", 128, "streams being opened at once")
	fl.DurationVar(&o.settle, "settle", 5*time.Second, "longest wait for the last deltas after publishing")
	fl.DurationVar(&o.idle, "idle", 2*time.Second, "pause with every stream open and idle before reading the server's memory")
	fl.DurationVar(&o.reconnect, "reconnect", 0, "drop each stream after about this long and resume it with Last-Event-ID, again and again (0: never)")
	fl.DurationVar(&o.away, "away", time.Second, "how long a dropped stream stays away before it resumes (with -reconnect)")
	fl.IntVar(&o.serverPID, "server-pid", 0, "the server's process id, to read its memory from /proc (0: not measured)")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the subscribers' and events' positions")
	fl.StringVar(&o.runID, "run-id", "", "tag of this run's events (default: random)")
	fl.StringVar(&label, "label", "", "label of the result line (e.g. the store)")
	if err := fl.Parse(args[1:]); err != nil {
		return 2
	}
	if o.key == "" {
		o.key = getenv("STREAMLOAD_API_KEY")
	}
	if o.runID == "" {
		o.runID = fmt.Sprintf("%x", time.Now().UnixNano())
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "streamload: "+format+"\n", a...) }
	res, err := run(ctx, o, logf)
	res.Label = label
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	printResult(stdout, res)
	if res.PublishErr > 0 || res.StreamErrors > 0 {
		return 1
	}
	return 0
}

func (o options) check() error {
	servers := strings.Split(o.base, ",")
	if o.publish != "" {
		servers = append(servers, strings.Split(o.publish, ",")...)
	}
	for _, base := range servers {
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return fmt.Errorf("streamload: server %q is not a URL", base)
		}
		host := u.Hostname()
		if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
			return fmt.Errorf("streamload: server %q: only loopback servers are measured", base)
		}
	}
	switch {
	case o.key == "":
		return fmt.Errorf("streamload: no API key: set STREAMLOAD_API_KEY or -key")
	case o.subscribers < 1 || o.subscribers > maxSubscribers:
		return fmt.Errorf("streamload: -subscribers %d: want 1..%d", o.subscribers, maxSubscribers)
	case !(o.rate > 0) || o.rate > maxRate:
		return fmt.Errorf("streamload: -rate %v: want (0, %d]", o.rate, maxRate)
	case o.duration <= 0 || o.duration > maxDuration:
		return fmt.Errorf("streamload: -duration %v: want (0, %v]", o.duration, maxDuration)
	case o.settle < 0 || o.settle > maxSettle:
		return fmt.Errorf("streamload: -settle %v: want [0, %v]", o.settle, maxSettle)
	case o.publishers < 1 || o.opens < 1 || !(o.radius > 0) || !(o.side > 0):
		return fmt.Errorf("streamload: -publishers, -opens, -radius and -side must be positive")
	case o.reconnect < 0 || o.away < 0 || o.reconnect > 0 && o.reconnect < 100*time.Millisecond:
		return fmt.Errorf("streamload: -reconnect %v, -away %v: want 0 or at least 100ms, and a pause of 0 or more", o.reconnect, o.away)
	}
	return nil
}

func printResult(w io.Writer, r result) {
	fmt.Fprintf(w, "%-9s %6s %6s %8s %8s %7s %7s | %7s %7s %7s %7s | %7s %7s %7s | %7s %7s %7s | %7s %7s | %10s\n",
		"label", "subs", "pub/s", "expected", "received", "missing", "dropped",
		"p50 ms", "p95 ms", "p99 ms", "max ms", "cr. p50", "cr. p95", "cr. p99", "hub p50", "hub p95", "hub p99",
		"pub p50", "pub p95", "KiB/stream")
	fmt.Fprintf(w, "%-9s %6d %6.1f %8d %8d %7d %7d | %7.1f %7.1f %7.1f %7.1f | %7.1f %7.1f %7.1f | %7.1f %7.1f %7.1f | %7.1f %7.1f | %10.1f\n",
		r.Label, r.Subscribers, r.PublishRate, r.Expected, r.Received, r.Missing, r.Dropped, r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs,
		r.StoreP50Ms, r.StoreP95Ms, r.StoreP99Ms, r.HubP50Ms, r.HubP95Ms, r.HubP99Ms, r.PublishP50Ms, r.PublishP95Ms, r.RSSPerConnKiB)
	if r.Reconnects > 0 || r.Failovers > 0 {
		fmt.Fprintf(w, "%-9s reconnects %d, to another server %d: %d answered with a snapshot, %d deltas sent on coming back, %d received twice\n",
			r.Label, r.Reconnects, r.Failovers, r.Resnapshots, r.Replayed, r.Duplicates)
	}
	b, _ := json.Marshal(r)
	fmt.Fprintln(w, string(b))
}

func medianCommand(files []string, stdout, stderr io.Writer) int {
	var all []result
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, `{"phase"`) {
				var r result
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					fmt.Fprintf(stderr, "streamload: %s: %v\n", name, err)
					f.Close()
					return 1
				}
				all = append(all, r)
			}
		}
		f.Close()
	}
	for _, m := range medians(all) {
		printResult(stdout, m)
	}
	return 0
}

// medians groups results by label, subscribers and radius, in order of first appearance, and
// returns for each group one result whose figures are each the median over its runs; errors
// are summed, so that no failure hides behind a median.
func medians(rs []result) []result {
	type key struct {
		label       string
		subscribers int
		radius      float64
	}
	var order []key
	groups := map[key][]result{}
	for _, r := range rs {
		k := key{r.Label, r.Subscribers, r.RadiusM}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []result
	for _, k := range order {
		g := groups[k]
		med := func(f func(result) float64) float64 {
			v := make([]float64, len(g))
			for i, r := range g {
				v[i] = f(r)
			}
			slices.Sort(v)
			if len(v)%2 == 1 {
				return v[len(v)/2]
			}
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		medInt := func(f func(result) int64) int64 {
			return int64(math.Round(med(func(r result) float64 { return float64(f(r)) })))
		}
		m := result{Phase: "stream", Label: k.label, Subscribers: k.subscribers, RadiusM: k.radius, Runs: len(g)}
		m.PublishRate = med(func(r result) float64 { return r.PublishRate })
		m.Published = medInt(func(r result) int64 { return r.Published })
		m.Expected = medInt(func(r result) int64 { return r.Expected })
		m.Received = medInt(func(r result) int64 { return r.Received })
		m.Missing = medInt(func(r result) int64 { return r.Missing })
		m.Dropped = medInt(func(r result) int64 { return r.Dropped })
		m.P50Ms = med(func(r result) float64 { return r.P50Ms })
		m.P95Ms = med(func(r result) float64 { return r.P95Ms })
		m.P99Ms = med(func(r result) float64 { return r.P99Ms })
		m.MaxMs = med(func(r result) float64 { return r.MaxMs })
		m.StoreP50Ms = med(func(r result) float64 { return r.StoreP50Ms })
		m.StoreP95Ms = med(func(r result) float64 { return r.StoreP95Ms })
		m.StoreP99Ms = med(func(r result) float64 { return r.StoreP99Ms })
		m.HubP50Ms = med(func(r result) float64 { return r.HubP50Ms })
		m.HubP95Ms = med(func(r result) float64 { return r.HubP95Ms })
		m.HubP99Ms = med(func(r result) float64 { return r.HubP99Ms })
		m.PublishP50Ms = med(func(r result) float64 { return r.PublishP50Ms })
		m.PublishP95Ms = med(func(r result) float64 { return r.PublishP95Ms })
		m.OpenSeconds = med(func(r result) float64 { return r.OpenSeconds })
		m.RSSBeforeKiB = medInt(func(r result) int64 { return r.RSSBeforeKiB })
		m.RSSIdleKiB = medInt(func(r result) int64 { return r.RSSIdleKiB })
		m.RSSPerConnKiB = med(func(r result) float64 { return r.RSSPerConnKiB })
		m.RSSUnderLoadKiB = medInt(func(r result) int64 { return r.RSSUnderLoadKiB })
		m.ServerCPU = med(func(r result) float64 { return r.ServerCPU })
		for _, r := range g {
			m.PublishErr += r.PublishErr
			m.OpenErrors += r.OpenErrors
			m.OpenRetries += r.OpenRetries
			m.StreamErrors += r.StreamErrors
			m.Reconnects += r.Reconnects
			m.Failovers += r.Failovers
			m.Resnapshots += r.Resnapshots
			m.Duplicates += r.Duplicates
			m.Replayed += r.Replayed
		}
		out = append(out, m)
	}
	return out
}
