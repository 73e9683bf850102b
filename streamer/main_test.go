package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/relay/relaytest"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/stream/streamtest"
)

func TestConfigureNeedsDynamoDB(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, err := configure(env(nil)); !errors.Is(err, errNotDynamoDB) {
		t.Errorf("configure(embedded) = %v; want errNotDynamoDB", err)
	}
	cfg, err := configure(env(map[string]string{"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": "events"}))
	if err != nil || cfg.Table != "events" {
		t.Errorf("configure(dynamodb) = %+v, %v", cfg, err)
	}
}

// The AWS shape end to end on DynamoDB Local: an event published through the events routes
// (as the events Lambda serves them) reaches a stream of the streamer through the table's
// DynamoDB Stream; a ticket minted there opens the streamer's stream; revoking a key ends its
// streams and refuses its ticket; SIGTERM (the end of ctx)
// says bye with reconnect to every stream, turns the health check to 503 and ends run.
func TestStreamerOnDynamoDBLocal(t *testing.T) {
	// No write before the streamer follows the new table but the key's: the first writes are
	// the ones on which DynamoDB Local answers TrimmedDataAccessException, and the streamer must
	// deliver them all the same.
	dep := newDeployment(t, "org_s")
	keys, key, lambda, logger := dep.keys, dep.key, dep.events, dep.logger
	cfg, err := configure(func(k string) string {
		return map[string]string{"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": dep.table,
			"ROADEVENTS_STREAM_POLL_INTERVAL": "50ms"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, logger, ln) }()

	// The load balancer's view: 503 until the hub follows the stream. This waits for the
	// task to be ready; nothing is asserted about how long it takes.
	for {
		status, _ := get(t, base+"/health")
		if status == http.StatusOK {
			break
		}
		if status != http.StatusServiceUnavailable {
			t.Fatalf("GET /health: %d; want 503 then 200", status)
		}
		time.Sleep(10 * time.Millisecond)
	}

	center := "lat=48.13743&lon=11.57549&radius=2000"
	byKey := open(t, base+"/v1/stream?"+center, key)
	if snap := byKey.Snapshot(t); len(snap.Events) != 0 {
		t.Fatalf("first snapshot holds %d events; want none", len(snap.Events))
	}
	published := post(t, lambda.URL+"/v1/events", key, `{"type":"accident","lat":48.1375,"lon":11.5755}`)
	var ev event.EventPublic
	if d := byKey.Delta(t, &ev); d.Kind != stream.KindCreated || ev.EventID != published["event_id"] {
		t.Fatalf("delta %s of %s; want created of %v", d.Kind, ev.EventID, published["event_id"])
	}

	ticket := post(t, lambda.URL+"/v1/stream/tickets", key, "")["ticket"].(string)
	byTicket := open(t, base+"/v1/stream?"+center+"&ticket="+ticket, "")
	if snap := byTicket.Snapshot(t); len(snap.Events) != 1 {
		t.Fatalf("snapshot with the ticket holds %d events; want 1", len(snap.Events))
	}

	// docs/api.md §11.4: the console revokes another key of the organisation; the streams it
	// opened here, itself or by ticket, end at once, and its ticket opens nothing more.
	other, otherKey, err := keys.Issue(context.Background(), apikey.IssueRequest{OrgID: "org_s", Environment: apikey.Live, Label: "other"})
	if err != nil {
		t.Fatal(err)
	}
	otherTicket := post(t, lambda.URL+"/v1/stream/tickets", other, "")["ticket"].(string)
	revoked := []*streamtest.Stream{open(t, base+"/v1/stream?"+center, other), open(t, base+"/v1/stream?"+center+"&ticket="+otherTicket, "")}
	for _, s := range revoked {
		s.Snapshot(t)
	}
	if _, err := keys.Revoke(context.Background(), "org_s", otherKey.KeyID, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range revoked {
		var bye stream.ByeData
		s.Expect(t, stream.FrameBye, &bye)
		if bye.Reason != stream.ReasonCredentialRevoked || bye.Reconnect {
			t.Errorf("bye %+v after revocation; want credential_revoked without reconnect", bye)
		}
	}
	if status, body := get(t, base+"/v1/stream?"+center+"&ticket="+otherTicket); status != http.StatusUnauthorized {
		t.Errorf("the revoked key's ticket on the streamer: %d %s; want 401", status, body)
	}

	cancel() // what SIGTERM does
	for _, s := range []*streamtest.Stream{byKey, byTicket} {
		var bye stream.ByeData
		s.Expect(t, stream.FrameBye, &bye)
		if !bye.Reconnect {
			t.Errorf("bye %+v on shutdown; want reconnect true", bye)
		}
		if _, err := s.NextErr(); !errors.Is(err, io.EOF) {
			t.Errorf("after bye: %v; want the end of the response", err)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("run = %v after shutdown; want nil", err)
	}
}

// deployment is a table on DynamoDB Local with the events routes served on it as the events
// Lambda serves them, and a live API key of one organisation.
type deployment struct {
	table  string
	keys   *apikey.Keys
	key    string
	events *httptest.Server
	logger *slog.Logger
}

// newDeployment points the AWS SDK at DynamoDB Local (skipping tb without it: scripts/test.sh
// provides it) and sets up a deployment for org.
func newDeployment(t *testing.T, org string) deployment {
	t.Helper()
	l := tables.NewLocal(t)
	endpoint := os.Getenv(tables.EndpointEnv)
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": endpoint,
	} {
		t.Setenv(k, v)
	}
	table := dynamodb.New(l.DB, l.Name, dynamodb.Options{})
	d := deployment{table: l.Name, logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	d.keys = apikey.New(table, apikey.Options{Logger: d.logger})
	var err error
	if d.key, _, err = d.keys.Issue(context.Background(), apikey.IssueRequest{OrgID: org, Environment: apikey.Live, Label: "test"}); err != nil {
		t.Fatal(err)
	}
	eventsAPI, err := app.New(app.Deps{Config: config.Default(), Table: table, Clock: clock.System, Logger: d.logger,
		Keys: d.keys, Meter: metering.New(table, metering.Options{FlushInterval: -1})}, routetable.GroupEvents)
	if err != nil {
		t.Fatal(err)
	}
	d.events = httptest.NewServer(eventsAPI.Handler())
	t.Cleanup(d.events.Close)
	return d
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func post(t *testing.T, url, key, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %d %v %v", url, resp.StatusCode, out, err)
	}
	return out
}

func open(t *testing.T, url, key string) *streamtest.Stream {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	s, resp, body := streamtest.Open(t, http.DefaultClient, req)
	if s == nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return s
}

// docs/architecture.md §3: behind a relay, streamers follow its log in Redis instead of the
// table's stream, so there may be as many as the connections need. On DynamoDB Local and the
// test Redis: `streamer -relay` and two streamers; an event published through the events routes
// reaches a stream on the first, and a client that leaves it and comes back to the second
// naming its last frame is sent the events it missed, without a snapshot.
func TestStreamersBehindTheRelay(t *testing.T) {
	dep := newDeployment(t, "org_r")
	log := relaytest.NewLog(t, 0)
	key, lambda, logger := dep.key, dep.events, dep.logger
	cfg, err := configure(func(k string) string {
		return map[string]string{"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": dep.table,
			"ROADEVENTS_STREAM_POLL_INTERVAL": "50ms", "ROADEVENTS_RELAY_REDIS": "redis://" + relaytest.Addr(t),
			"ROADEVENTS_RELAY_KEY": log.Key()}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() { cancel(); running.Wait() }()
	start := func(serve func(context.Context, config.Config, *slog.Logger, net.Listener) error) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		running.Add(1)
		go func() {
			defer running.Done()
			if err := serve(ctx, cfg, logger, ln); err != nil {
				t.Errorf("serve = %v", err)
			}
		}()
		base := "http://" + ln.Addr().String()
		for status, _ := get(t, base+"/health"); status != http.StatusOK; status, _ = get(t, base+"/health") {
			time.Sleep(10 * time.Millisecond)
		}
		return base
	}
	start(runRelay)
	relaytest.WaitStarted(t, log)
	first, second := start(run), start(run)

	center := "lat=48.13743&lon=11.57549&radius=2000"
	s := open(t, first+"/v1/stream?"+center, key)
	s.Snapshot(t)
	published := post(t, lambda.URL+"/v1/events", key, `{"type":"accident","lat":48.1375,"lon":11.5755}`)
	f := s.Next(t)
	var delta stream.DeltaData
	var ev event.EventPublic
	if err := json.Unmarshal(f.Data, &delta); err != nil || json.Unmarshal(delta.Event, &ev) != nil ||
		f.Event != stream.FrameEvent || ev.EventID != published["event_id"] {
		t.Fatalf("frame %s on the first streamer; want the delta of %v", streamtest.Describe(f), published["event_id"])
	}
	s.Close()

	var missed []any
	for i := range 3 {
		body := fmt.Sprintf(`{"type":"road_damage","lat":%v,"lon":11.5755}`, 48.1376+float64(i)/10000)
		missed = append(missed, post(t, lambda.URL+"/v1/events", key, body)["event_id"])
	}
	req, _ := http.NewRequest(http.MethodGet, second+"/v1/stream?"+center, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Last-Event-ID", f.ID)
	resumed, resp, body := streamtest.Open(t, http.DefaultClient, req)
	if resumed == nil {
		t.Fatalf("resume on the second streamer: %d %s", resp.StatusCode, body)
	}
	for _, id := range missed {
		if d := resumed.Delta(t, &ev); d.Kind != stream.KindCreated || ev.EventID != id {
			t.Fatalf("on the second streamer: delta %s of %s; want created of %v (no snapshot)", d.Kind, ev.EventID, id)
		}
	}
}
