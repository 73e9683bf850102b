// Command soak runs a bounded, mixed load against a running road-events server, with clients
// that misbehave beside the ones that do not, and reports what an operator asks afterwards:
// was any acknowledged write lost, did GET /health keep answering, did a revoked key lose its
// streams at once, and did any request get a 500 (docs/operations.md §3).
//
// The load, for -duration:
//   - publishers send accidents with a client_event_id and retry 5xx, 429 and network errors
//     with the same id (the client rules of docs/api.md §7); every 2xx is remembered as
//     acknowledged;
//   - queriers read the area around random points; signallers confirm acknowledged events;
//   - streamers hold streams for a few seconds and drop them without a word;
//   - vanishers open a stream and reset its connection straight away;
//   - slow clients send a request's head and one byte of its body, and hold on;
//   - a revoker issues a key, opens a stream with it and one with its ticket, revokes it, and
//     times how long both streams take to end with bye credential_revoked; the ticket must
//     then be refused;
//   - a prober asks GET /health every 200 ms, with 2 s to answer.
//
// Afterwards every acknowledged event is read back. The exit status is 1 when a write was
// lost, a request got a 500, a revocation did not end its streams within 10 s, or /health
// answered less than 99 % of the probes. It signs in through the console's e-mailed code, so
// it needs the server's data folder (-data) for the outbox; scripts/soak.sh runs it all.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roadevents/roadevents/shared/stream"
)

type options struct {
	base, data                          string
	duration                            time.Duration
	publishers, queriers, signallers    int
	streamers, vanishers, slow          int
	revokeEvery, healthEvery, healthMax time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.base, "base", "http://127.0.0.1:8080", "server address (loopback only)")
	flag.StringVar(&o.data, "data", "data", "the server's data folder, for the sign-in code in its outbox")
	flag.DurationVar(&o.duration, "duration", time.Minute, "how long the load runs")
	flag.IntVar(&o.publishers, "publishers", 8, "publishing clients")
	flag.IntVar(&o.queriers, "queriers", 8, "querying clients")
	flag.IntVar(&o.signallers, "signallers", 4, "signalling clients")
	flag.IntVar(&o.streamers, "streamers", 100, "streams held a few seconds each, then dropped")
	flag.IntVar(&o.vanishers, "vanishers", 4, "clients opening streams and resetting them at once")
	flag.IntVar(&o.slow, "slow", 200, "clients sending one byte of a body and holding on")
	flag.DurationVar(&o.revokeEvery, "revoke-every", 5*time.Second, "how often a key is revoked mid-stream")
	flag.Parse()
	o.healthEvery, o.healthMax = 200*time.Millisecond, 2*time.Second
	if u, err := url.Parse(o.base); err != nil || !isLoopback(u.Hostname()) {
		fmt.Fprintln(os.Stderr, "soak: -base must be a loopback address")
		os.Exit(2)
	}
	r, err := run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
	if !r.passed() {
		os.Exit(1)
	}
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// report is what the run found.
type report struct {
	mu       sync.Mutex
	statuses map[string]int // "route status" -> count
	acked    []string       // ids of acknowledged publishes

	lost                  int
	healthOK, healthTotal atomic.Int64
	revocations           []time.Duration // time to the second bye
	revocationFailures    []string
	slowCut               []time.Duration // how long the server let a slow client hold on
	streamsOpened         atomic.Int64
}

func (r *report) count(route string, status int) {
	r.mu.Lock()
	r.statuses[fmt.Sprintf("%s %d", route, status)]++
	r.mu.Unlock()
}

func (r *report) serverErrors() int {
	n := 0
	for k, v := range r.statuses {
		if strings.HasSuffix(k, " 500") {
			n += v
		}
	}
	return n
}

func (r *report) availability() float64 {
	if r.healthTotal.Load() == 0 {
		return 0
	}
	return float64(r.healthOK.Load()) / float64(r.healthTotal.Load())
}

func (r *report) passed() bool {
	return r.lost == 0 && r.serverErrors() == 0 && len(r.revocationFailures) == 0 && r.availability() >= 0.99
}

func (r *report) print(w io.Writer) {
	keys := make([]string, 0, len(r.statuses))
	for k := range r.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(w, "answers by route and status:")
	for _, k := range keys {
		fmt.Fprintf(w, "  %-28s %8d\n", k, r.statuses[k])
	}
	fmt.Fprintf(w, "streams opened:                %d\n", r.streamsOpened.Load())
	fmt.Fprintf(w, "slow clients cut after:        %s\n", spread(r.slowCut))
	fmt.Fprintf(w, "revocations:                   %d, streams ended after %s\n", len(r.revocations), spread(r.revocations))
	for _, f := range r.revocationFailures {
		fmt.Fprintf(w, "  revocation failure: %s\n", f)
	}
	fmt.Fprintf(w, "500 answers:                   %d\n", r.serverErrors())
	fmt.Fprintf(w, "/health availability:          %.2f %% (%d of %d probes within 2 s)\n",
		100*r.availability(), r.healthOK.Load(), r.healthTotal.Load())
	fmt.Fprintf(w, "acknowledged writes:           %d\n", len(r.acked))
	fmt.Fprintf(w, "lost acknowledged writes:      %d\n", r.lost)
}

// spread is "median (max)" of ds, or "none".
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("median %s, max %s (%d)", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}

// soak is one run's clients and credentials.
type soak struct {
	o       options
	r       *report
	http    *http.Client
	session string
	orgA    string
	orgB    string
	keyA    string // publishes, queries, signals and streams
	n       atomic.Int64
}

func run(ctx context.Context, o options) (*report, error) {
	s := &soak{o: o, r: &report{statuses: map[string]int{}}, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64},
	}}
	if err := s.setUp(ctx); err != nil {
		return nil, err
	}
	load, stop := context.WithTimeout(ctx, o.duration)
	defer stop()
	var wg sync.WaitGroup
	spawn := func(n int, f func(context.Context)) {
		for range n {
			wg.Go(func() { f(load) })
		}
	}
	spawn(o.publishers, s.publish)
	spawn(o.queriers, s.query)
	spawn(o.signallers, s.signal)
	spawn(o.streamers, s.holdStreams)
	spawn(o.vanishers, s.vanish)
	spawn(o.slow, s.slowBody)
	spawn(1, s.revoke)
	spawn(1, s.probeHealth)
	wg.Wait()
	s.readBack(ctx)
	return s.r, nil
}

var signInCode = regexp.MustCompile(`\b[0-9]{6}\b`)

// setUp signs in by the e-mailed code, creates two organisations and a sandbox key.
func (s *soak) setUp(ctx context.Context) error {
	email := fmt.Sprintf("soak-%d@example.com", time.Now().UnixNano())
	if _, err := s.call(ctx, "sign-in", http.MethodPost, "/console/auth/request-code", "", map[string]string{"email": email}, nil); err != nil {
		return err
	}
	code, err := s.codeFor(email)
	if err != nil {
		return err
	}
	var sess struct{ Token string }
	if _, err := s.call(ctx, "sign-in", http.MethodPost, "/console/auth/verify-code", "", map[string]string{"email": email, "code": code}, &sess); err != nil {
		return err
	}
	s.session = sess.Token
	for _, org := range []*string{&s.orgA, &s.orgB} {
		var out struct {
			OrgID string `json:"org_id"`
		}
		if _, err := s.call(ctx, "create org", http.MethodPost, "/console/orgs", s.session, map[string]string{"name": "Soak fleet"}, &out); err != nil {
			return err
		}
		*org = out.OrgID
	}
	s.keyA, _, err = s.issueKey(ctx, s.orgA)
	return err
}

// codeFor reads the sign-in code mailed to email from the outbox (it is written before the
// request is answered).
func (s *soak) codeFor(email string) (string, error) {
	dir := filepath.Join(s.o.data, "outbox")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("read the outbox: %w", err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || !bytes.Contains(b, []byte("To: "+email)) {
			continue
		}
		if c := signInCode.Find(b); c != nil {
			return string(c), nil
		}
	}
	return "", fmt.Errorf("no sign-in code for %s in %s", email, dir)
}

func (s *soak) issueKey(ctx context.Context, org string) (raw, id string, err error) {
	var out struct {
		Key    string `json:"key"`
		APIKey struct {
			KeyID string `json:"key_id"`
		} `json:"api_key"`
	}
	_, err = s.call(ctx, "issue key", http.MethodPost, "/console/orgs/"+org+"/keys", s.session,
		map[string]string{"label": "soak", "environment": "sandbox"}, &out)
	return out.Key, out.APIKey.KeyID, err
}

// call sends one JSON request and decodes a 2xx answer into out; it counts the status.
func (s *soak) call(ctx context.Context, route, method, path, token string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.o.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			s.r.count(route, 0) // a network error or a timeout
		}
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s.r.count(route, resp.StatusCode)
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

// munich is a random point within about 10 km of Munich's centre.
func munich() (lat, lon float64) {
	return 48.137 + (rand.Float64()-0.5)*0.18, 11.575 + (rand.Float64()-0.5)*0.27
}

func (s *soak) publish(ctx context.Context) {
	for ctx.Err() == nil {
		lat, lon := munich()
		body := map[string]any{"type": "accident", "lat": lat, "lon": lon,
			"client_event_id": fmt.Sprintf("soak-%d-%d", time.Now().UnixNano(), s.n.Add(1))}
		// docs/api.md §7: retry 5xx, 429 and network errors with the same client_event_id. A retry
		// after the load ended still runs, so that nothing acknowledged is left unrecorded.
		for attempt := range 6 {
			var ev struct {
				EventID string `json:"event_id"`
			}
			status, err := s.call(context.WithoutCancel(ctx), "publish", http.MethodPost, "/v1/events", s.keyA, body, &ev)
			if err == nil {
				s.r.mu.Lock()
				s.r.acked = append(s.r.acked, ev.EventID)
				s.r.mu.Unlock()
				break
			}
			if status != 0 && status != http.StatusTooManyRequests && status < 500 {
				break
			}
			time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
		}
	}
}

func (s *soak) query(ctx context.Context) {
	for ctx.Err() == nil {
		lat, lon := munich()
		s.call(ctx, "query", http.MethodGet, fmt.Sprintf("/v1/events?lat=%f&lon=%f&radius=2000", lat, lon), s.keyA, nil, nil)
	}
}

func (s *soak) signal(ctx context.Context) {
	for ctx.Err() == nil {
		s.r.mu.Lock()
		var id string
		if len(s.r.acked) > 0 {
			id = s.r.acked[rand.IntN(len(s.r.acked))]
		}
		s.r.mu.Unlock()
		if id == "" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		s.call(ctx, "signal", http.MethodPost, "/v1/events/"+id+"/signals", s.keyA,
			map[string]string{"action": "confirm", "reporter_token": fmt.Sprintf("soak-vehicle-%d", rand.IntN(1000))}, nil)
		time.Sleep(20 * time.Millisecond)
	}
}

// openStream opens GET /v1/stream with the bearer key or, when key is empty, with ticket.
func (s *soak) openStream(ctx context.Context, key, ticket string) (*http.Response, error) {
	lat, lon := munich()
	q := fmt.Sprintf("/v1/stream?lat=%f&lon=%f&radius=3000", lat, lon)
	if ticket != "" {
		q += "&ticket=" + ticket
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.o.base+q, nil)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	// Streams have no overall timeout: a client of their own.
	resp, err := (&http.Transport{}).RoundTrip(req)
	if err != nil {
		return nil, err
	}
	s.r.count("stream", resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("stream: %d", resp.StatusCode)
	}
	s.r.streamsOpened.Add(1)
	return resp, nil
}

// holdStreams holds a stream 2 to 8 s, reading it, then drops it without a word.
func (s *soak) holdStreams(ctx context.Context) {
	for ctx.Err() == nil {
		hold, cancel := context.WithTimeout(ctx, time.Duration(2+rand.IntN(7))*time.Second)
		if resp, err := s.openStream(hold, s.keyA, ""); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		} else {
			time.Sleep(500 * time.Millisecond)
		}
		cancel()
	}
}

// dial connects to the server over raw TCP; on failure it pauses a moment and returns nil.
func (s *soak) dial() (c net.Conn, host string) {
	host = strings.TrimPrefix(s.o.base, "http://")
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return nil, host
	}
	return c, host
}

// vanish opens streams over raw TCP and resets the connection as soon as the answer starts.
func (s *soak) vanish(ctx context.Context) {
	for ctx.Err() == nil {
		c, host := s.dial()
		if c == nil {
			continue
		}
		lat, lon := munich()
		fmt.Fprintf(c, "GET /v1/stream?lat=%f&lon=%f HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", lat, lon, host, s.keyA)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		c.Read(make([]byte, 64))
		c.(*net.TCPConn).SetLinger(0) // a reset, as a phone losing coverage would leave
		c.Close()
		time.Sleep(100 * time.Millisecond)
	}
}

// slowBody sends a publish's head and one byte of its 100-byte body, and waits for the server
// to give up on it.
func (s *soak) slowBody(ctx context.Context) {
	for ctx.Err() == nil {
		c, host := s.dial()
		if c == nil {
			continue
		}
		start := time.Now()
		fmt.Fprintf(c, "POST /v1/events HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", host)
		done := make(chan struct{})
		go func() {
			defer close(done)
			io.Copy(io.Discard, c)
		}()
		select {
		case <-done:
			s.r.mu.Lock()
			s.r.slowCut = append(s.r.slowCut, time.Since(start))
			s.r.mu.Unlock()
		case <-ctx.Done():
		}
		c.Close()
		<-done
	}
}

// revoke issues a key, opens a stream with it and one with a ticket it minted, revokes it,
// and checks both streams end with bye credential_revoked within 10 s and the ticket is then
// refused.
func (s *soak) revoke(ctx context.Context) {
	every(ctx, s.o.revokeEvery, func() {
		if err := s.revokeOnce(ctx); err != nil && ctx.Err() == nil {
			s.r.mu.Lock()
			s.r.revocationFailures = append(s.r.revocationFailures, err.Error())
			s.r.mu.Unlock()
		}
	})
}

// every runs f each period until ctx ends.
func every(ctx context.Context, period time.Duration, f func()) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

func (s *soak) revokeOnce(ctx context.Context) error {
	raw, id, err := s.issueKey(ctx, s.orgB)
	if err != nil {
		return err
	}
	var t struct{ Ticket string }
	if _, err := s.call(ctx, "mint ticket", http.MethodPost, "/v1/stream/tickets", raw, nil, &t); err != nil {
		return err
	}
	watch, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	byKey, err := s.openStream(watch, raw, "")
	if err != nil {
		return err
	}
	defer byKey.Body.Close()
	byTicket, err := s.openStream(watch, "", t.Ticket)
	if err != nil {
		return err
	}
	defer byTicket.Body.Close()
	// Past each snapshot, so that the byes are read as they come.
	for _, resp := range []*http.Response{byKey, byTicket} {
		if _, err := stream.NewFrameReader(resp.Body).Next(); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	start := time.Now()
	if _, err := s.call(ctx, "revoke key", http.MethodDelete, "/console/orgs/"+s.orgB+"/keys/"+id, s.session, nil, nil); err != nil {
		return err
	}
	for _, resp := range []*http.Response{byKey, byTicket} {
		if err := awaitRevokedBye(resp.Body); err != nil {
			return err
		}
	}
	s.r.mu.Lock()
	s.r.revocations = append(s.r.revocations, time.Since(start))
	s.r.mu.Unlock()
	if _, err := s.openStream(ctx, "", t.Ticket); err == nil {
		return errors.New("the revoked key's ticket still opens a stream")
	}
	return nil
}

// awaitRevokedBye reads frames until bye, which must say credential_revoked without
// reconnecting.
func awaitRevokedBye(body io.Reader) error {
	fr := stream.NewFrameReader(bufio.NewReader(body))
	for {
		f, err := fr.Next()
		if err != nil {
			return fmt.Errorf("stream of a revoked key: %w before bye credential_revoked", err)
		}
		if f.Event != stream.FrameBye {
			continue
		}
		var bye stream.ByeData
		if json.Unmarshal(f.Data, &bye) != nil || bye.Reason != stream.ReasonCredentialRevoked || bye.Reconnect {
			return fmt.Errorf("stream of a revoked key: bye %s; want credential_revoked without reconnect", f.Data)
		}
		return nil
	}
}

func (s *soak) probeHealth(ctx context.Context) {
	client := &http.Client{Timeout: s.o.healthMax}
	every(ctx, s.o.healthEvery, func() {
		s.r.healthTotal.Add(1)
		resp, err := client.Get(s.o.base + "/health")
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			s.r.healthOK.Add(1)
		}
	})
}

// readBack reads every acknowledged event; one the server does not have is lost.
func (s *soak) readBack(ctx context.Context) {
	for _, id := range s.r.acked {
		for attempt := 0; ; attempt++ {
			status, _ := s.call(ctx, "read back", http.MethodGet, "/v1/events/"+id, s.keyA, nil, nil)
			if status == http.StatusOK {
				break
			}
			if status == http.StatusNotFound || attempt == 5 {
				s.r.lost++
				fmt.Fprintf(os.Stderr, "lost: acknowledged event %s reads %d\n", id, status)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
