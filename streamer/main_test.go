package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"
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
	l := tables.NewLocal(t) // skips without DynamoDB Local: scripts/test.sh provides it
	endpoint := os.Getenv(tables.EndpointEnv)
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": endpoint,
	} {
		t.Setenv(k, v)
	}
	// No write before the streamer follows the new table: its first writes are the ones on which
	// DynamoDB Local answers TrimmedDataAccessException (aws/aws-sdk-java#2923), and the
	// streamer must deliver them all the same.
	table := dynamodb.New(l.DB, l.Name, dynamodb.Options{})
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))

	// The events group, as its Lambda would serve it, on the same table.
	keys := apikey.New(table, apikey.Options{Logger: logger})
	key, _, err := keys.Issue(context.Background(), apikey.IssueRequest{OrgID: "org_s", Environment: apikey.Live, Label: "test"})
	if err != nil {
		t.Fatal(err)
	}
	eventsAPI, err := app.New(app.Deps{Config: config.Default(), Table: table, Clock: clock.System, Logger: logger,
		Keys: keys, Meter: metering.New(table, metering.Options{FlushInterval: -1})}, routetable.GroupEvents)
	if err != nil {
		t.Fatal(err)
	}
	lambda := httptest.NewServer(eventsAPI.Handler())
	defer lambda.Close()

	cfg, err := configure(func(k string) string {
		return map[string]string{"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": l.Name,
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
