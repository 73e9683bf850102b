package stream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/stream/streamtest"
)

// faultTable lets a test make area queries fail (the snapshot cannot be read) or run code
// right after one (a change committed while a stream reads its snapshot).
type faultTable struct {
	store.Table
	failQuery  atomic.Bool
	afterQuery atomic.Pointer[func()]
}

var errQueryDown = fmt.Errorf("test: queries are down")

func (f *faultTable) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if f.failQuery.Load() {
		return nil, errQueryDown
	}
	items, err := f.Table.Query(ctx, q)
	if hook := f.afterQuery.Swap(nil); hook != nil {
		(*hook)()
	}
	return items, err
}

// testLog sends the log of the code under test to the test's log, shown when it fails.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// rig is the service's /v1 events and stream routes on one table, served over real HTTP,
// with the hub following the table's change feed: the embedded store's feed, or DynamoDB
// Streams on DynamoDB Local.
type rig struct {
	tab    tables.Table
	table  *faultTable
	srv    *httptest.Server
	client *http.Client
	hub    *stream.Hub
	timers *streamtest.Timers
	keys   *apikey.Keys
	meter  *metering.Meter
	events *eventstore.Store
	// openapi is the document of the rig's routes.
	openapi func() []byte

	// API keys: organisation A live and sandbox, organisation B live.
	liveKey, sandboxKey, otherKey string
	counter                       atomic.Int64
}

type rigOptions struct {
	// listener wraps the test server's listener (the stalled test holds a connection's writes).
	listener func(net.Listener) net.Listener
	// writeTimeout replaces stream.DefaultWriteTimeout.
	writeTimeout time.Duration
	// http2 serves over TLS with HTTP/2, where a stream writes through the ResponseWriter.
	http2 bool
	// capacity is the hub's connection budget (HubOptions.Capacity).
	capacity stream.Capacity
	// resumeWindow is HubOptions.ResumeWindow.
	resumeWindow time.Duration
	// feed replaces the table's feed that the hub follows.
	feed func(store.Feed) store.Feed
}

func newRig(t testing.TB, tab tables.Table, opts ...rigOptions) *rig {
	t.Helper()
	var o rigOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	logger := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r := &rig{tab: tab, table: &faultTable{Table: tab.Table}, timers: streamtest.NewTimers()}
	r.keys = apikey.New(r.table, apikey.Options{Clock: tab.Clock, Logger: logger})
	r.meter = metering.New(r.table, metering.Options{Clock: tab.Clock, Logger: logger, FlushInterval: -1})
	evs, err := eventstore.New(r.table, eventstore.Options{IDKey: bytes.Repeat([]byte{7}, 32), Clock: tab.Clock, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	r.events = evs
	r.hub = stream.NewHub(stream.HubOptions{Clock: tab.Clock, Logger: logger, Capacity: o.capacity, ResumeWindow: o.resumeWindow})
	feed := tab.Feed
	if o.feed != nil {
		feed = o.feed(feed)
	}
	tickets := stream.NewTickets(r.table, stream.TicketOptions{Clock: tab.Clock, Keys: r.keys})
	api := httpapi.New(httpapi.Config{
		Logger: logger, Clock: tab.Clock,
		Middleware: []httpapi.RouteMiddleware{apikey.Middleware(r.keys, apikey.MiddlewareOptions{Tickets: tickets})},
	})
	api.Handle(eventstore.Routes(eventstore.Deps{Store: evs, Meter: r.meter, Clock: tab.Clock})...)
	d := stream.Deps{
		Hub: r.hub, Snapshots: stream.EventsSnapshots(evs), Tickets: tickets, Meter: r.meter,
		Clock: tab.Clock, Timers: r.timers, Logger: logger, WriteTimeout: o.writeTimeout,
	}
	api.Handle(stream.TicketRoutes(d)...)
	api.Handle(stream.Routes(d)...)
	r.openapi = api.OpenAPI

	// The hub follows a brand-new table, whose first writes (the keys below) are the ones on
	// which DynamoDB Local answers TrimmedDataAccessException (aws/aws-sdk-java#2923): the
	// DynamoDB feed must go on through it without losing a change.
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Add(1)
	go func() {
		defer running.Done()
		r.hub.Run(ctx, feed, stream.EventsDecoder())
	}()
	r.srv = httptest.NewUnstartedServer(api.Handler())
	if o.listener != nil {
		r.srv.Listener = o.listener(r.srv.Listener)
	}
	if o.http2 {
		r.srv.EnableHTTP2 = true
		r.srv.StartTLS()
		r.client = r.srv.Client()
	} else {
		r.srv.Start()
		r.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 0}}
	}
	t.Cleanup(func() {
		// Streams end before the server waits for its handlers, and the feed is left before
		// the table (closed by tables.Each) goes.
		r.hub.Drain()
		r.srv.Close()
		wait, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		if err := r.hub.Wait(wait); err != nil {
			t.Errorf("streams still running after the drain: %v", err)
		}
		cancel()
		running.Wait()
	})
	if err := r.hub.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	r.liveKey = r.issue(t, "org_a", apikey.Live)
	r.sandboxKey = r.issue(t, "org_a", apikey.Sandbox)
	r.otherKey = r.issue(t, "org_b", apikey.Live)
	return r
}

func (r *rig) issue(t testing.TB, org, env string) string {
	t.Helper()
	raw, _, err := r.keys.Issue(context.Background(), apikey.IssueRequest{OrgID: org, Environment: env, Label: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// do sends a request with key as bearer (none when empty) and returns status and body.
func (r *rig) do(t testing.TB, method, path, key string, body any) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// publish publishes an event of type typ at p through the API and returns it.
func (r *rig) publish(t testing.TB, key, typ string, p geo.Point) event.EventPublic {
	t.Helper()
	n := r.counter.Add(1)
	status, body, _ := r.do(t, http.MethodPost, "/v1/events", key, map[string]any{
		"type": typ, "lat": p.Lat, "lon": p.Lon, "description": fmt.Sprintf("test %d", n),
	})
	if status != http.StatusCreated {
		t.Fatalf("publish: %d %s", status, body)
	}
	var ev event.EventPublic
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// revise moves an event to p through the API.
func (r *rig) revise(t testing.TB, key, id string, p geo.Point) event.EventPublic {
	t.Helper()
	status, body, _ := r.do(t, http.MethodPost, "/v1/events/"+id+"/revisions", key, map[string]any{"lat": p.Lat, "lon": p.Lon})
	if status != http.StatusOK {
		t.Fatalf("revise: %d %s", status, body)
	}
	var ev event.EventPublic
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// signal sends a signal with a reporter token through the API.
func (r *rig) signal(t testing.TB, key, id, action, reporter string) event.EventPublic {
	t.Helper()
	status, body, _ := r.do(t, http.MethodPost, "/v1/events/"+id+"/signals", key, map[string]any{"action": action, "reporter_token": reporter})
	if status != http.StatusOK {
		t.Fatalf("signal: %d %s", status, body)
	}
	var ev event.EventPublic
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// query builds the query of a stream or area query around p.
func query(p geo.Point, radius float64, extra ...string) string {
	v := url.Values{}
	v.Set("lat", fmt.Sprint(p.Lat))
	v.Set("lon", fmt.Sprint(p.Lon))
	if radius > 0 {
		v.Set("radius", fmt.Sprint(radius))
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Add(extra[i], extra[i+1])
	}
	return v.Encode()
}

// open opens GET /v1/stream?q with key as bearer (none when empty). It returns the stream when
// it began, else the refusal.
func (r *rig) open(t testing.TB, q, key string, header ...string) (*streamtest.Stream, int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.srv.URL+"/v1/stream?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	s, resp, body := streamtest.Open(t, r.client, req)
	if s != nil {
		if ct := s.Resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("stream Content-Type %q; want text/event-stream", ct)
		}
		return s, http.StatusOK, nil
	}
	return nil, resp.StatusCode, body
}

// mustOpen opens a stream that must begin, and reads its snapshot.
func (r *rig) mustOpen(t testing.TB, q, key string) (*streamtest.Stream, stream.SnapshotData) {
	t.Helper()
	s, status, body := r.open(t, q, key)
	if s == nil {
		t.Fatalf("GET /v1/stream?%s: %d %s; want the stream to begin", q, status, body)
	}
	return s, s.Snapshot(t)
}

// deltaOf reads the next frame, which must be a delta, and returns its kind and event.
func deltaOf(t testing.TB, s *streamtest.Stream) (stream.Kind, event.EventPublic) {
	t.Helper()
	var ev event.EventPublic
	d := s.Delta(t, &ev)
	return d.Kind, ev
}

// expectDelta reads the next frame and checks it is a delta of kind for event id.
func expectDelta(t testing.TB, s *streamtest.Stream, kind stream.Kind, id string) event.EventPublic {
	t.Helper()
	k, ev := deltaOf(t, s)
	if k != kind || ev.EventID != id {
		t.Fatalf("delta %s of %s; want %s of %s", k, ev.EventID, kind, id)
	}
	return ev
}

func ids(events []json.RawMessage) []string {
	out := make([]string, len(events))
	for i, e := range events {
		var ev struct {
			ID string `json:"event_id"`
		}
		json.Unmarshal(e, &ev)
		out[i] = ev.ID
	}
	return out
}
