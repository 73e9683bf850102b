package main

import (
	"bufio"
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
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/stream"
)

// options are what one run measures.
type options struct {
	base, key string
	// bases are the servers of base (comma-separated): subscriber i streams from bases[i%n].
	bases []string
	// publish lists the servers publishes go to (comma-separated; base when empty): round
	// them, and a publish a server cannot take goes to the next.
	publish   string
	publishTo []string
	// failover makes a subscriber whose stream ends (its server gone, or a bye) come back at
	// once to the next server, naming the last frame it received.
	failover    bool
	subscribers int
	rate        float64 // publishes a second
	duration    time.Duration
	radius      float64
	lat, lon    float64
	side        float64 // metres
	publishers  int
	opens       int // streams opened at once
	settle      time.Duration
	idle        time.Duration // pause before the idle memory is read
	// reconnect, when above 0, makes every subscriber drop its connection after about this long
	// (a random time from half to one and a half times it), stay away for away, and come back
	// naming the last frame it received (Last-Event-ID), again and again until the run ends.
	reconnect, away time.Duration
	serverPID       int
	seed            uint64
	runID           string
}

// result is one run's figures; its JSON line starts with {"phase" for scripts.
type result struct {
	Phase       string  `json:"phase"`
	Label       string  `json:"label"`
	Subscribers int     `json:"subscribers"`
	RadiusM     float64 `json:"radius_m"`
	Runs        int     `json:"runs"`
	// Publishing.
	Published   int64   `json:"published"`
	PublishErr  int64   `json:"publish_errors"`
	PublishRate float64 `json:"publish_rate"` // achieved, per second
	// Delivery: every delta a subscriber's circle calls for (expected), received in time,
	// and those its keepalives reported dropped.
	Expected int64   `json:"expected"`
	Received int64   `json:"received"`
	Missing  int64   `json:"missing"`
	Dropped  int64   `json:"dropped"`
	P50Ms    float64 `json:"p50_ms"`
	P95Ms    float64 `json:"p95_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	// The same from the event's created_at (stamped by the server as it handles the publish,
	// before the store commits it), and the publish requests' own latency.
	StoreP50Ms float64 `json:"store_p50_ms"`
	StoreP95Ms float64 `json:"store_p95_ms"`
	StoreP99Ms float64 `json:"store_p99_ms"`
	// From the delta's "at" (the hub dispatching it) to reception: the stream's own share.
	HubP50Ms     float64 `json:"hub_p50_ms"`
	HubP95Ms     float64 `json:"hub_p95_ms"`
	HubP99Ms     float64 `json:"hub_p99_ms"`
	PublishP50Ms float64 `json:"publish_p50_ms"`
	PublishP95Ms float64 `json:"publish_p95_ms"`
	// Connections and memory.
	OpenErrors      int64   `json:"open_errors"`
	OpenRetries     int64   `json:"open_retries"` // opens answered 5xx or bye snapshot_unavailable, then retried
	StreamErrors    int64   `json:"stream_errors"`
	OpenSeconds     float64 `json:"open_seconds"`
	RSSBeforeKiB    int64   `json:"rss_before_kib"`
	RSSIdleKiB      int64   `json:"rss_idle_kib"`
	RSSPerConnKiB   float64 `json:"rss_per_conn_kib"`
	RSSUnderLoadKiB int64   `json:"rss_load_kib"`
	// ServerCPU is the server's CPU time while publishing, in cores (1 = one core busy).
	ServerCPU float64 `json:"server_cpu_cores"`
	// Reconnecting (options.reconnect): how many times subscribers came back, how many of those
	// were answered with a snapshot instead of the deltas they missed, the deltas received twice,
	// and those published while their subscriber was away and sent when it came back (counted
	// as received, not timed).
	Reconnects int64 `json:"reconnects"`
	Failovers  int64 `json:"failovers"` // streams that ended and came back on another server
	// Opened counts the streams open on each server of -base once all are open (an open
	// retried after a 5xx goes to the next server with -failover).
	Opened      []int64 `json:"opened_per_server"`
	Resnapshots int64   `json:"resnapshots"`
	Duplicates  int64   `json:"duplicates"`
	Replayed    int64   `json:"replayed"`
}

// subscriber is one open stream.
type subscriber struct {
	center    geo.Point
	latencies []float32 // milliseconds from the publish being sent
	fromStore []float32 // milliseconds from the event's created_at (the server's clock)
	fromHub   []float32 // milliseconds from the delta's "at", when the hub dispatched it
	dropped   atomic.Int64
	received  atomic.Int64 // deltas received, each event once
	retries   int          // opens answered bye snapshot_unavailable before one began
	// Reconnecting (options.reconnect), read once the run is over: the publishes whose delta
	// came, and the counts of result.
	seen                                                     map[int]bool
	reconnects, failovers, resnapshots, duplicates, replayed int64
	server                                                   int // index in options.bases
}

// marker starts the description of every event this tool publishes; the number after it
// indexes the publish times.
const marker = "streamload "

// run opens the subscribers, measures the server's memory with them idle, publishes at the
// rate for the duration, waits for the last deltas, and returns the figures.
func run(ctx context.Context, o options, logf func(string, ...any)) (result, error) {
	res := result{Phase: "stream", Subscribers: o.subscribers, RadiusM: o.radius, Runs: 1}
	o.bases = strings.Split(o.base, ",")
	o.publishTo = o.bases
	if o.publish != "" {
		o.publishTo = strings.Split(o.publish, ",")
	}
	rng := rand.New(rand.NewPCG(o.seed, 0x5eed))
	city := square{Lat: o.lat, Lon: o.lon, Side: o.side}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	streamClient := &http.Client{Transport: &http.Transport{
		DialContext:        (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		DisableCompression: true,
		MaxConnsPerHost:    0,
	}}
	defer streamClient.CloseIdleConnections()
	pubClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: o.publishers, DisableCompression: true,
	}}
	defer pubClient.CloseIdleConnections()

	// Open the subscribers, a few at a time, each reading its stream until the run ends.
	subs := make([]*subscriber, o.subscribers)
	for i := range subs {
		lat, lon := city.random(rng)
		subs[i] = &subscriber{center: geo.Point{Lat: geo.Round5(lat), Lon: geo.Round5(lon)}, server: i % len(o.bases)}
	}
	var (
		sendTimes  = make([]atomic.Int64, int(o.rate*o.duration.Seconds())+o.publishers+16)
		readers    sync.WaitGroup
		opened     sync.WaitGroup
		openErrors atomic.Int64
		streamErrs atomic.Int64
		openSlots  = make(chan struct{}, o.opens)
		lastErr    atomic.Value
	)
	open := func(subs []*subscriber) {
		for _, s := range subs {
			opened.Add(1)
			readers.Add(1)
			openSlots <- struct{}{}
			go func() {
				defer readers.Done()
				err := s.read(ctx, streamClient, o, sendTimes, func() { <-openSlots; opened.Done() })
				if err != nil && ctx.Err() == nil {
					streamErrs.Add(1)
					lastErr.Store(err.Error())
				}
			}()
		}
		opened.Wait()
	}
	// Memory per stream is the slope between a tenth of the streams and all of them, both
	// idle, so that what the first requests warm up (code, pools, buffers) is not counted.
	first := max(1, o.subscribers/10)
	openStart := time.Now()
	open(subs[:first])
	if o.serverPID > 0 && first < o.subscribers {
		sleep(ctx, o.idle)
		rss, err := readRSS(o.serverPID)
		if err != nil {
			return res, err
		}
		res.RSSBeforeKiB = rss
	}
	open(subs[first:])
	res.OpenSeconds = time.Since(openStart).Seconds()
	for _, s := range subs {
		if s.received.Load() < 0 {
			openErrors.Add(1)
		}
		res.OpenRetries += int64(s.retries)
	}
	res.OpenErrors = openErrors.Load()
	// Every open has returned: the subscribers' servers are settled until a stream ends.
	res.Opened = make([]int64, len(o.bases))
	for _, s := range subs {
		res.Opened[s.server]++
	}
	logf("%d streams open in %.1f s (%d refused, %d opens retried after a 5xx or bye snapshot_unavailable)",
		o.subscribers, res.OpenSeconds, res.OpenErrors, res.OpenRetries)
	if res.OpenErrors > 0 {
		return res, fmt.Errorf("streamload: %d streams could not be opened (last error: %v)", res.OpenErrors, lastErr.Load())
	}

	if o.serverPID > 0 {
		sleep(ctx, o.idle)
		rss, err := readRSS(o.serverPID)
		if err != nil {
			return res, err
		}
		res.RSSIdleKiB = rss
		if o.subscribers > first {
			res.RSSPerConnKiB = float64(res.RSSIdleKiB-res.RSSBeforeKiB) / float64(o.subscribers-first)
		}
		logf("server RSS %d KiB with %d idle streams, %d KiB with %d: %.1f KiB a stream",
			res.RSSBeforeKiB, first, res.RSSIdleKiB, o.subscribers, res.RSSPerConnKiB)
	}

	// Publish at the rate, from a pool of clients, each publish timestamped just before it is
	// sent.
	n := int(o.rate * o.duration.Seconds())
	points := make([]geo.Point, n)
	for i := range points {
		lat, lon := city.random(rng)
		points[i] = geo.Point{Lat: geo.Round5(lat), Lon: geo.Round5(lon)}
	}
	// Scripts and tests that kill a server meanwhile wait for this line.
	logf("publishing %d events at %v a second", n, o.rate)
	jobs := make(chan int, o.publishers)
	publishLatency := make([]atomic.Int64, n)
	var (
		pubs      sync.WaitGroup
		published atomic.Int64
		pubErrs   atomic.Int64
	)
	for range o.publishers {
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			for seq := range jobs {
				p := points[seq]
				body := fmt.Sprintf(`{"type":"accident","lat":%v,"lon":%v,"description":"%s%s-%d","client_event_id":"%s-%d"}`,
					p.Lat, p.Lon, marker, o.runID, seq, o.runID, seq)
				start := time.Now()
				sendTimes[seq].Store(start.UnixNano())
				err := publish(ctx, pubClient, o, seq, body)
				publishLatency[seq].Store(int64(time.Since(start)))
				if err != nil {
					pubErrs.Add(1)
					if ctx.Err() == nil {
						lastErr.Store(err.Error())
					}
					continue
				}
				published.Add(1)
			}
		}()
	}
	cpuBefore, _ := readCPU(o.serverPID)
	interval := time.Duration(float64(time.Second) / o.rate)
	tick := time.NewTicker(interval)
	pubStart := time.Now()
	// The rate is a ceiling and the duration a bound: a server slower than the rate gets fewer
	// publishes, not a longer run.
	end := pubStart.Add(o.duration)
	for seq := 0; seq < n && ctx.Err() == nil && time.Now().Before(end); seq++ {
		select {
		case jobs <- seq:
		case <-ctx.Done():
		}
		if seq == n/2 && o.serverPID > 0 {
			if rss, err := readRSS(o.serverPID); err == nil {
				res.RSSUnderLoadKiB = rss
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	tick.Stop()
	close(jobs)
	pubs.Wait()
	pubSeconds := time.Since(pubStart).Seconds()
	if cpuAfter, err := readCPU(o.serverPID); err == nil && o.serverPID > 0 {
		res.ServerCPU = (cpuAfter - cpuBefore) / pubSeconds
	}
	res.Published, res.PublishErr = published.Load(), pubErrs.Load()
	res.PublishRate = float64(res.Published) / pubSeconds
	logf("published %d in %.1f s (%.0f/s), %d failed; the server used %.2f cores meanwhile",
		res.Published, pubSeconds, res.PublishRate, res.PublishErr, res.ServerCPU)

	// Every subscriber whose circle comes within its radius of a point is due that delta.
	for _, p := range points[:min(n, int(res.Published+res.PublishErr))] {
		for _, s := range subs {
			if geo.Distance(s.center, p) <= o.radius {
				res.Expected++
			}
		}
	}
	if res.PublishErr > 0 {
		res.Expected = -1 // unknown: a failed publish may still have been stored
	}
	total := func() int64 {
		var n int64
		for _, s := range subs {
			n += s.received.Load()
		}
		return n
	}
	deadline := time.Now().Add(o.settle)
	for time.Now().Before(deadline) && total() < res.Expected && ctx.Err() == nil {
		sleep(ctx, 50*time.Millisecond)
	}
	cancel()
	readers.Wait()

	var all, store, hub []float32
	for _, s := range subs {
		res.Received += s.received.Load()
		res.Dropped += s.dropped.Load()
		res.Reconnects += s.reconnects
		res.Failovers += s.failovers
		res.Resnapshots += s.resnapshots
		res.Duplicates += s.duplicates
		res.Replayed += s.replayed
		all = append(all, s.latencies...)
		store = append(store, s.fromStore...)
		hub = append(hub, s.fromHub...)
	}
	slices.Sort(store)
	res.StoreP50Ms, res.StoreP95Ms, res.StoreP99Ms = pct(store, 0.50), pct(store, 0.95), pct(store, 0.99)
	slices.Sort(hub)
	res.HubP50Ms, res.HubP95Ms, res.HubP99Ms = pct(hub, 0.50), pct(hub, 0.95), pct(hub, 0.99)
	pubLat := make([]float32, 0, n)
	for i := range min(n, len(publishLatency)) {
		if v := publishLatency[i].Load(); v > 0 {
			pubLat = append(pubLat, float32(float64(v)/1e6))
		}
	}
	slices.Sort(pubLat)
	res.PublishP50Ms, res.PublishP95Ms = pct(pubLat, 0.50), pct(pubLat, 0.95)
	res.StreamErrors = streamErrs.Load()
	if res.Expected >= 0 {
		res.Missing = res.Expected - res.Received
	}
	slices.Sort(all)
	res.P50Ms, res.P95Ms, res.P99Ms = pct(all, 0.50), pct(all, 0.95), pct(all, 0.99)
	if len(all) > 0 {
		res.MaxMs = float64(all[len(all)-1])
	}
	if res.StreamErrors > 0 {
		logf("%d streams ended with an error (last: %v)", res.StreamErrors, lastErr.Load())
	}
	return res, nil
}

// read opens the stream of s and reads it until ctx ends, calling ready once the snapshot has
// come (or the stream could not be opened: then received is set to -1). With o.reconnect it
// drops the connection now and then and comes back naming the last frame it received.
func (s *subscriber) read(ctx context.Context, client *http.Client, o options, sendTimes []atomic.Int64, ready func()) error {
	readyOnce := sync.OnceFunc(ready)
	defer readyOnce()
	s.seen = map[int]bool{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	lastID := ""
	for {
		resuming := lastID != ""
		fr, body, err := s.connect(ctx, client, o, &lastID)
		if err != nil {
			if lastID == "" {
				s.received.Store(-1)
			}
			return err
		}
		readyOnce()
		connected := time.Now().UnixNano()
		var leaving atomic.Bool
		var leave *time.Timer
		if o.reconnect > 0 {
			d := o.reconnect/2 + time.Duration(rng.Int64N(int64(o.reconnect)))
			leave = time.AfterFunc(d, func() { leaving.Store(true); body.Close() })
		}
		err = s.frames(fr, o, sendTimes, resuming, connected, &lastID)
		if leave != nil {
			leave.Stop()
		}
		body.Close()
		switch {
		case ctx.Err() != nil:
			return err
		case leaving.Load():
			sleep(ctx, o.away)
			s.reconnects++
		case o.failover && lastID != "":
			s.server = (s.server + 1) % len(o.bases)
			s.failovers++
		default:
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// connect opens the stream of s, retrying as a client should; with *lastID set it resumes.
func (s *subscriber) connect(ctx context.Context, client *http.Client, o options, lastID *string) (*stream.FrameReader, io.Closer, error) {
	// A stream refused with a 5xx or that says bye snapshot_unavailable first is opened again
	// after a pause, as docs/api.md §6 and §7 tell a client to (DynamoDB Local resets connections
	// when thousands of streams read their snapshots at once); the retries are counted.
	for attempt := 1; ; attempt++ {
		fr, body, retry, err := s.open(ctx, client, o, lastID)
		if err == nil {
			return fr, body, nil
		}
		if o.failover {
			// A server that is gone refuses the connection: the next one may not be.
			s.server = (s.server + 1) % len(o.bases)
			retry = true
		}
		if !retry || attempt == maxOpenAttempts || ctx.Err() != nil {
			return nil, nil, err
		}
		s.retries++
		sleep(ctx, time.Duration(attempt)*time.Second)
	}
}

// frames reads one connection's frames until it ends, noting the id of each in lastID.
// resumed says that the connection came back after a break that began at connected or
// before: the deltas of publishes sent before connected were missed while away.
func (s *subscriber) frames(fr *stream.FrameReader, o options, sendTimes []atomic.Int64, resumed bool, connected int64, lastID *string) error {
	for {
		f, err := fr.Next()
		if err != nil {
			return err
		}
		if f.ID != "" {
			*lastID = f.ID
		}
		now := time.Now().UnixNano()
		switch f.Event {
		case stream.FrameSnapshot:
			if resumed {
				s.resnapshots++
			}
		case stream.FrameEvent:
			seq, ok := seqOf(f.Data, o.runID)
			if !ok || seq >= len(sendTimes) {
				continue // an event of another run
			}
			if s.seen[seq] {
				s.duplicates++
				continue
			}
			s.seen[seq] = true
			s.received.Add(1)
			sent := sendTimes[seq].Load()
			if resumed && sent < connected {
				s.replayed++
				continue
			}
			s.latencies = append(s.latencies, float32(float64(now-sent)/1e6))
			if created, ok := timeAfter(f.Data, `"created_at":"`, false); ok {
				s.fromStore = append(s.fromStore, float32(float64(now-created)/1e6))
			}
			if at, ok := timeAfter(f.Data, `,"at":"`, true); ok {
				s.fromHub = append(s.fromHub, float32(float64(now-at)/1e6))
			}
		case stream.FrameKeepalive:
			var ka stream.KeepaliveData
			if json.Unmarshal(f.Data, &ka) == nil {
				s.dropped.Store(ka.Dropped)
			}
		case stream.FrameBye:
			return errors.New("bye: " + string(f.Data))
		}
	}
}

// maxOpenAttempts bounds how many times a subscriber tries to open its stream.
const maxOpenAttempts = 5

// open opens the stream of s and reads its snapshot, noting its id in *lastID, or, resuming
// after *lastID, reads nothing (the missed deltas, a snapshot or nothing may come first).
// retry is true when the server answered a 5xx or said bye snapshot_unavailable instead, which
// a client answers by reconnecting.
func (s *subscriber) open(ctx context.Context, client *http.Client, o options, lastID *string) (fr *stream.FrameReader, body io.Closer, retry bool, err error) {
	q := url.Values{}
	q.Set("lat", strconv.FormatFloat(s.center.Lat, 'f', -1, 64))
	q.Set("lon", strconv.FormatFloat(s.center.Lon, 'f', -1, 64))
	q.Set("radius", strconv.FormatFloat(o.radius, 'f', -1, 64))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.bases[s.server]+"/v1/stream?"+q.Encode(), nil)
	if err != nil {
		return nil, nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+o.key)
	if *lastID != "" {
		req.Header.Set("Last-Event-ID", *lastID)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, false, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		// docs/api.md §7, client retry rules: a 5xx is retried with backoff, a 4xx is not.
		return nil, nil, resp.StatusCode >= 500, fmt.Errorf("GET /v1/stream: %d %s", resp.StatusCode, b)
	}
	fr = stream.NewFrameReader(bufio.NewReaderSize(resp.Body, 4096))
	if *lastID != "" {
		return fr, resp.Body, false, nil
	}
	first, err := fr.Next()
	if err != nil || first.Event != stream.FrameSnapshot {
		resp.Body.Close()
		var bye stream.ByeData
		retry = first.Event == stream.FrameBye && json.Unmarshal(first.Data, &bye) == nil && bye.Reason == stream.ReasonSnapshotUnavailable
		return nil, nil, retry, fmt.Errorf("first frame %q %s: %v", first.Event, first.Data, err)
	}
	*lastID = first.ID
	return fr, resp.Body, false, nil
}

// timeAfter finds the timestamp that follows tag in a delta (the first occurrence, or the
// last), in Unix nanoseconds, without decoding the delta.
func timeAfter(data []byte, tagText string, last bool) (int64, bool) {
	tag := []byte(tagText)
	i := bytes.Index(data, tag)
	if last {
		i = bytes.LastIndex(data, tag)
	}
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(tag):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t.UnixNano(), err == nil
}

// seqOf finds the publish number in a delta's description without decoding the whole event.
func seqOf(data []byte, runID string) (int, bool) {
	tag := []byte(marker + runID + "-")
	i := bytes.Index(data, tag)
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(tag):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest[:j]))
	return n, err == nil
}

// publish sends body to publishing server seq%n, and, when that one cannot take it (gone, or
// 5xx), to the next: the body's client_event_id makes a second try that reaches a stored event
// answer 200 with it instead of publishing it twice (docs/api.md §4.1).
func publish(ctx context.Context, client *http.Client, o options, seq int, body string) error {
	var err error
	for i := range len(o.publishTo) {
		if err = publishTo(ctx, client, o, o.publishTo[(seq+i)%len(o.publishTo)], body); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func publishTo(ctx context.Context, client *http.Client, o options, base, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/events", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+o.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /v1/events: %d %s", resp.StatusCode, b)
	}
	return nil
}

// readRSS returns the resident set of process pid in KiB, from /proc/<pid>/status.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("streamload: server memory: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("streamload: no VmRSS in /proc/%d/status", pid)
}

// readCPU returns the user and system CPU seconds process pid has used, from /proc/<pid>/stat
// (in clock ticks of 1/100 s, the Linux USER_HZ).
func readCPU(pid int) (float64, error) {
	if pid <= 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from after its ')'.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("streamload: /proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("streamload: /proc/%d/stat: bad CPU times", pid)
	}
	return (utime + stime) / 100, nil
}

// pct is the q-quantile of sorted values (nearest rank), 0 for none.
func pct(sorted []float32, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[max(i, 0)])
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// square is the city: Side metres across, centred on (Lat, Lon).
type square struct {
	Lat, Lon float64
	Side     float64
}

// random returns a point drawn uniformly over the square (an equirectangular projection
// around the centre, exact to metres at a city's size).
func (s square) random(r *rand.Rand) (lat, lon float64) {
	dx, dy := (r.Float64()-0.5)*s.Side, (r.Float64()-0.5)*s.Side
	lat = s.Lat + dy/geo.EarthRadius*180/math.Pi
	lon = s.Lon + dx/(geo.EarthRadius*math.Cos(s.Lat*math.Pi/180))*180/math.Pi
	return lat, lon
}
