package app_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/app/billinggroup"
	"github.com/roadevents/roadevents/shared/app/consoleauthgroup"
	"github.com/roadevents/roadevents/shared/app/consoleorgsgroup"
	"github.com/roadevents/roadevents/shared/app/eventsgroup"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/lambdastore"
	"github.com/roadevents/roadevents/shared/app/metagroup"
	"github.com/roadevents/roadevents/shared/app/openapidoc"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/routetable"
)

// constructors are the functions' constructors, as functions/<group>/main.go passes them to
// lambdaapp.Start.
var constructors = map[routetable.Group]groupapi.Constructor{
	routetable.GroupMeta:        metagroup.Lambda(openapidoc.For),
	routetable.GroupEvents:      lambdastore.Opener(routetable.GroupEvents, eventsgroup.New),
	routetable.GroupConsoleAuth: lambdastore.Opener(routetable.GroupConsoleAuth, consoleauthgroup.New),
	routetable.GroupConsoleOrgs: lambdastore.Opener(routetable.GroupConsoleOrgs, consoleorgsgroup.New),
	routetable.GroupBilling:     lambdastore.Opener(routetable.GroupBilling, billinggroup.New),
}

// function builds group's Lambda function on an embedded store in a fresh folder.
func function(t *testing.T, group routetable.Group, clk clock.Clock) *lambdaapp.Function {
	t.Helper()
	f, err := lambdaapp.New(context.Background(), group, constructors[group], lambdaapp.Options{
		Getenv: func(k string) string {
			return map[string]string{"ROADEVENTS_STORE": "embedded", "ROADEVENTS_DATA": t.TempDir()}[k]
		},
		Clock:  clk,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("lambdaapp.New(%s): %v", group, err)
	}
	t.Cleanup(func() {
		if err := f.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return f
}

// TestFunctionsServeTheirTableRows: each function serves exactly its group's rows of the route
// table, which the CDK stack wires to it.
func TestFunctionsServeTheirTableRows(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC))
	for _, g := range routetable.Lambdas {
		var got, want []string
		for _, r := range function(t, g, clk).Routes() {
			got = append(got, r.Method+" "+r.Path)
		}
		for _, r := range g.Routes() {
			want = append(want, r.String())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("function %s serves %v; want its routetable rows %v", g, got, want)
		}
	}
}

// docs/api.md §10.1 and §10.2: the meta function, which links no other group, answers the
// meta routes byte for byte as `go run .` does: /openapi.json describes every group (the
// document generated ahead of time), and the limits name the level the area index is read at.
func TestMetaFunctionAnswersAsEveryGroup(t *testing.T) {
	t.Parallel()
	if config.DefaultLimits.QueryLevel != eventstore.QueryLevel {
		t.Errorf("config.DefaultLimits.QueryLevel = %d, which the meta function serves; want eventstore.QueryLevel %d",
			config.DefaultLimits.QueryLevel, eventstore.QueryLevel)
	}
	clk := clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC))
	meta := function(t, routetable.GroupMeta, clk)
	every := newAPI(t).Handler()
	for _, path := range []string{"/openapi.json", "/v1/meta/limits", "/v1/meta/taxonomy", "/v1/meta/event-types"} {
		answers := map[string]*httptest.ResponseRecorder{}
		for name, h := range map[string]http.Handler{"meta function": meta, "every group": every} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: GET %s = %d; want 200", name, path, rec.Code)
			}
			answers[name] = rec
		}
		if !bytes.Equal(answers["meta function"].Body.Bytes(), answers["every group"].Body.Bytes()) {
			t.Errorf("GET %s: the meta function's answer differs from every group's", path)
		}
	}
}

// docs/interop.md §13: the schedule's event makes the events function run a feed poll pass
// (the stack's feed poller is that function's code); the other functions with no scheduled job
// but billing refuse it.
func TestEventsFunctionRunsTheFeedPass(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC))
	scheduled := []byte(`{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","account":"123456789012",` +
		`"time":"2040-03-01T12:00:00Z","region":"eu-west-1","resources":["arn:aws:events:eu-west-1:123456789012:rule/feeds"],"detail":{}}`)
	for _, g := range routetable.Lambdas {
		_, err := function(t, g, clk).Invoke(context.Background(), scheduled)
		if has := g == routetable.GroupEvents || g == routetable.GroupBilling; has != (err == nil) {
			t.Errorf("function %s answered a scheduled event with %v; want a job run by events and billing only", g, err)
		}
	}
}
