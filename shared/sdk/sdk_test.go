package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/meta"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/sdk"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
)

// server runs the service's events, stream and meta groups on tab, as go run . does, with a
// stream hub following tab's feed, and returns its URL and a live and a sandbox key of two
// organisations: org_a's, and org_b's live one.
func server(t *testing.T, tab tables.Table) (url string, keyA, keyB string) {
	t.Helper()
	cfg := config.Default()
	cfg.EventIDKey = bytes.Repeat([]byte{0x3c}, 32)
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	keys := apikey.New(tab.Table, apikey.Options{Clock: tab.Clock})
	hub := stream.NewHub(stream.HubOptions{Clock: tab.Clock, Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Add(1)
	go func() { defer running.Done(); hub.Run(ctx, tab.Feed, stream.EventsDecoder()) }()
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Logger: logger, Keys: keys, Hub: hub,
		Meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
	}, routetable.GroupMeta, routetable.GroupEvents, routetable.GroupStream)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { hub.Drain(); srv.Close(); cancel(); running.Wait() })
	apitest.Eventually(t, "the hub follows the feed", hub.Ready)
	issue := func(org string) string {
		raw, _, err := keys.Issue(context.Background(), apikey.IssueRequest{OrgID: org, Environment: apikey.Live, Label: "sdk"})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	return srv.URL, issue("org_a"), issue("org_b")
}

// The typed client against the service itself, on both stores: publish (and its replay, the
// 200 path), query, get, signal, revise, evidence, close, the meta routes and an export; a
// refusal is an *APIError with the status and, for a 422, the items.
func TestClientAgainstTheService(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		url, keyA, keyB := server(t, tab)
		a, b := sdk.New(url, keyA), sdk.New(url, keyB)
		ctx := context.Background()
		trip := "trip-1"
		ev, created, err := a.Publish(ctx, sdk.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5, ClientEventID: &trip})
		if err != nil || !created || ev.Status != "active" {
			t.Fatalf("publish: %+v, created %v, %v", ev, created, err)
		}
		again, created, err := a.Publish(ctx, sdk.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5, ClientEventID: &trip})
		if err != nil || created || again.EventID != ev.EventID {
			t.Fatalf("replay: %s, created %v, %v; want the same event, not created", again.EventID, created, err)
		}
		found, err := b.Query(ctx, sdk.Area{Lat: 48.1, Lon: 11.5, RadiusM: 500, Types: []string{"accident"}})
		if err != nil || len(found) != 1 || found[0].EventID != ev.EventID {
			t.Fatalf("query: %v, %v", found, err)
		}
		reporter := "car-7"
		confirmed, err := b.Signal(ctx, ev.EventID, sdk.SignalIn{Action: "confirm", ReporterToken: &reporter})
		if err != nil || confirmed.ConfirmCount != 1 {
			t.Fatalf("signal: %+v, %v", confirmed, err)
		}
		high := "high"
		revised, err := a.Revise(ctx, ev.EventID, sdk.RevisionIn{Lat: 48.1001, Lon: 11.5, Severity: &high})
		if err != nil || revised.Severity == nil || *revised.Severity != "high" {
			t.Fatalf("revise: %+v, %v", revised, err)
		}
		if evidence, err := a.Evidence(ctx, ev.EventID); err != nil || evidence.EventID != ev.EventID {
			t.Fatalf("evidence: %+v, %v", evidence, err)
		}
		if _, err := b.Close(ctx, ev.EventID); sdk.StatusOf(err) != 403 {
			t.Errorf("another organisation closes: %v; want 403", err)
		}
		if closed, err := a.Close(ctx, ev.EventID); err != nil || closed.Status == "active" {
			t.Fatalf("close: %+v, %v", closed, err)
		}
		if got, err := b.Get(ctx, ev.EventID); err != nil || got.Status == "active" {
			t.Errorf("get after close: %+v, %v", got, err)
		}
		_, _, err = a.Publish(ctx, sdk.EventIn{Type: "tornado", Lat: 48.1, Lon: 11.5})
		var apiErr *sdk.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 422 || len(apiErr.Validation) == 0 || apiErr.Validation[0].Loc[1] != "type" {
			t.Errorf("an unknown type: %v; want a 422 at body.type", err)
		}
		if _, err := a.Get(ctx, "ev_doesnotexist"); sdk.StatusOf(err) != 404 {
			t.Errorf("an unknown id: %v; want 404", err)
		}
		types, err := a.EventTypes(ctx)
		if err != nil || !slices.Contains(types, "accident") {
			t.Errorf("event types: %v, %v", types, err)
		}
		if tx, err := a.Taxonomy(ctx); err != nil || len(tx.Types) != len(types) || tx.Types[0].ID != types[0] {
			t.Errorf("taxonomy: %+v, %v; want a type spec per type", tx, err)
		}
		if l, err := a.Limits(ctx); err != nil || l.MaxQueryRadiusM != 9780 {
			t.Errorf("limits: %+v, %v", l, err)
		}
		if doc, err := a.Export(ctx, sdk.ExportWZDx, 11.45, 48.05, 11.55, 48.15); err != nil || !bytes.Contains(doc, []byte("FeatureCollection")) {
			t.Errorf("export: %.80s, %v", doc, err)
		}
		if _, err := sdk.New(url, "svc_live_not-a-key").Query(ctx, sdk.Area{Lat: 1, Lon: 1}); sdk.StatusOf(err) != 401 {
			t.Errorf("a bad key: %v; want 401", err)
		}
	})
}

// The SDK's own Taxonomy reads every field the service serves: decoded and encoded again, the
// document is the same.
func TestTaxonomyMatchesTheService(t *testing.T) {
	served, err := json.Marshal(meta.Taxonomy())
	if err != nil {
		t.Fatal(err)
	}
	var mine sdk.Taxonomy
	if err := json.Unmarshal(served, &mine); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(mine)
	if string(again) != string(served) {
		t.Errorf("the SDK's taxonomy\n%s\ndiffers from the service's\n%s", again, served)
	}
}

// docs/api.md §6 through the SDK: a watch starts from the snapshot, follows publications,
// signals and ends, and drops an event at its expiry, which the service does not announce.
func TestWatch(t *testing.T) {
	tab := tables.Embedded(t)
	url, keyA, keyB := server(t, tab)
	a, b := sdk.New(url, keyA), sdk.New(url, keyB)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, _, err := a.Publish(ctx, sdk.EventIn{Type: "roadworks", Lat: 48.1, Lon: 11.5})
	if err != nil {
		t.Fatal(err)
	}
	states := make(chan sdk.State, 64)
	done := make(chan error, 1)
	go func() {
		done <- b.Watch(ctx, sdk.Area{Lat: 48.1, Lon: 11.5, RadiusM: 2000}, func(s sdk.State) { states <- s })
	}()
	await := func(what string, ok func(sdk.State) bool) sdk.State {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case s := <-states:
				if ok(s) {
					return s
				}
			case err := <-done:
				t.Fatalf("%s: the watch ended: %v", what, err)
			case <-deadline:
				t.Fatalf("%s: not within 10s", what)
			}
		}
	}
	ids := func(s sdk.State) []string {
		var out []string
		for _, e := range s.Events {
			out = append(out, e.EventID)
		}
		return out
	}
	await("the snapshot", func(s sdk.State) bool { return slices.Equal(ids(s), []string{first.EventID}) })
	second, _, err := a.Publish(ctx, sdk.EventIn{Type: "accident", Lat: 48.11, Lon: 11.5})
	if err != nil {
		t.Fatal(err)
	}
	await("the publication", func(s sdk.State) bool { return slices.Equal(ids(s), []string{first.EventID, second.EventID}) })
	reporter := "car-1"
	if _, err := b.Signal(ctx, second.EventID, sdk.SignalIn{Action: "confirm", ReporterToken: &reporter}); err != nil {
		t.Fatal(err)
	}
	await("the confirmation", func(s sdk.State) bool { return len(s.Events) == 2 && s.Events[1].ConfirmCount == 1 })
	if _, err := a.Close(ctx, first.EventID); err != nil {
		t.Fatal(err)
	}
	await("the close", func(s sdk.State) bool { return slices.Equal(ids(s), []string{second.EventID}) })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the watch ended with %v; want context.Canceled", err)
	}
}
