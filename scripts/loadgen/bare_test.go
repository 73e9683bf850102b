package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
)

// The bare server answers a publish as ours does on the wire (201, a Location, an event with
// every member of EventPublic) and a query with -events such events, refuses other routes,
// and stops when interrupted.
func TestBareAnswersPublishesUntilStopped(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	out, w := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"bare", "-addr", "127.0.0.1:0", "-events", "3"}, func(string) string { return "" }, w, &stderr)
		_ = w.Close()
		done <- code
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (stderr %q)", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	var listening struct{ Bare string }
	if err := json.Unmarshal([]byte(line), &listening); err != nil || listening.Bare == "" {
		t.Fatalf("first line %q: want {\"bare\":\"host:port\"} (%v)", line, err)
	}
	base := "http://" + listening.Bare

	resp, err := http.Post(base+"/v1/events", "application/json", strings.NewReader(`{"type":"debris","lat":48.1,"lon":11.5}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") == "" {
		t.Fatalf("POST /v1/events = %d, Location %q; want 201 with a Location", resp.StatusCode, resp.Header.Get("Location"))
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	var ev event.EventPublic
	if err := json.Unmarshal(body, &ev); err != nil || ev.EventID == "" || ev.CreatedAt == "" {
		t.Fatalf("answer %q is not a published event (%v)", body, err)
	}
	if want := len(jsonFieldsOf(t, ev)); len(members) != want {
		t.Errorf("answer has %d members; want all %d of EventPublic, as the server sends", len(members), want)
	}

	resp, err = http.Get(base + "/v1/events?lat=48.1&lon=11.5&radius=1000")
	if err != nil {
		t.Fatal(err)
	}
	list, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var events []event.EventPublic
	if err := json.Unmarshal(list, &events); resp.StatusCode != http.StatusOK || err != nil || len(events) != 3 || events[2].EventID != ev.EventID {
		t.Errorf("GET /v1/events = %d, %d events (%v); want 200 and the 3 events of -events, each the published one", resp.StatusCode, len(events), err)
	}

	resp, err = http.Get(base + "/v1/events/ev_naaurfhwlhjg25cewmzdozgifw")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/events/{id} = %d; want 404: the bare server only takes publishes and queries", resp.StatusCode)
	}

	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit = %d after interrupt; want 0 (stderr %q)", code, stderr.String())
	}
}

// jsonFieldsOf returns the members v encodes to.
func jsonFieldsOf(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Only a loopback address is served, and bad command lines are refused with 2.
func TestBareRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-addr", "0.0.0.0:0"},
		{"-addr", "192.0.2.1:8080"},
		{"-addr", "no-port"},
		{"-addr", "127.0.0.1:0", "extra"},
		{"-events", "-1"},
		{"-events", "501"},
		{"-unknown"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), append([]string{"bare"}, args...), func(string) string { return "" }, &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || stderr.Len() == 0 {
			t.Errorf("bare %q: exit %d, stdout %q, stderr %q; want 2, nothing served, a message", args, code, stdout.String(), stderr.String())
		}
	}
}
