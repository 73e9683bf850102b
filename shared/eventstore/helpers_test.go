package eventstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// harness is the service with the events group, served over HTTP on one table, with the
// table's fake clock: what a client of /v1/events meets.
type harness struct {
	t     testing.TB
	tab   tables.Table
	url   string
	keys  *apikey.Keys
	meter *metering.Meter
}

func newHarness(t testing.TB, tab tables.Table) *harness {
	t.Helper()
	return newHarnessOf(t, tab, tab.Adapter == tables.AdapterDynamoDB)
}

// newProcess is one of several service processes sharing tab, as Lambdas share DynamoDB:
// without an area cache, whatever the table.
func newProcess(t *testing.T, tab tables.Table) *harness {
	t.Helper()
	return newHarnessOf(t, tab, true)
}

// newHarnessOf builds the harness; shared configures it as a process sharing its table.
func newHarnessOf(t testing.TB, tab tables.Table, shared bool) *harness {
	t.Helper()
	discard := slog.New(slog.NewJSONHandler(io.Discard, nil))
	keys := apikey.New(tab, apikey.Options{Clock: tab.Clock, Logger: discard})
	meter := metering.New(tab, metering.Options{Clock: tab.Clock, Logger: discard, FlushInterval: -1})
	cfg := config.Default()
	cfg.EventIDKey = testIDKey
	if shared {
		// As deployed: processes sharing DynamoDB keep no area cache (app.areaCacheBytes).
		cfg.Store, cfg.Table = config.StoreDynamoDB, "test"
	}
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab, Clock: tab.Clock, Logger: discard,
		Keys: keys, Meter: meter}, routetable.GroupEvents)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := keys.Wait(context.Background()); err != nil {
			t.Errorf("keys.Wait = %v", err)
		}
	})
	return &harness{t: t, tab: tab, url: srv.URL, keys: keys, meter: meter}
}

// key issues an API key of organisation org in environment env and returns the raw key.
func (h *harness) key(org, env string) string {
	h.t.Helper()
	raw, _, err := h.keys.Issue(context.Background(), apikey.IssueRequest{OrgID: org, Environment: env, Label: "test"})
	if err != nil {
		h.t.Fatalf("Issue(%s, %s) = %v", org, env, err)
	}
	return raw
}

// client sends requests to the harness's server, reporting to t.
func (h *harness) client(t testing.TB) apitest.Client { return apitest.Client{T: t, URL: h.url} }

// reply is one HTTP answer to the request what.
type reply struct {
	apitest.Response
	what string
}

// do sends a request with key as bearer credential (none when empty) and body as JSON (a
// string is sent as it is).
func (h *harness) do(method, path, key string, body any) reply {
	h.t.Helper()
	s, ok := body.(string)
	if !ok && body != nil {
		s = apitest.JSON(body)
	}
	return reply{h.client(h.t).Call(method, path, key, s), method + " " + path}
}

// publicEvent is EventPublic as a client decodes it.
type publicEvent struct {
	EventID       string           `json:"event_id"`
	SchemaVersion int              `json:"schema_version"`
	Type          string           `json:"type"`
	Subtype       *string          `json:"subtype"`
	Lat           float64          `json:"lat"`
	Lon           float64          `json:"lon"`
	Geometry      *json.RawMessage `json:"geometry"`
	Severity      *string          `json:"severity"`
	CreatedAt     time.Time        `json:"created_at"`
	ExpiresAt     time.Time        `json:"expires_at"`
	UpdatedAt     *time.Time       `json:"updated_at"`
	SourceKind    string           `json:"source_kind"`
	Status        string           `json:"status"`
	Verification  string           `json:"verification"`
	Confidence    float64          `json:"confidence"`
	ConfirmCount  int              `json:"confirm_count"`
	DenyCount     int              `json:"deny_count"`
	Environment   string           `json:"environment"`
	MergedInto    *string          `json:"merged_into"`
}

// event decodes an EventPublic answer, failing unless the status is want.
func (r reply) event(t testing.TB, want int) publicEvent {
	t.Helper()
	r.expect(t, want)
	var e publicEvent
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("decode EventPublic %s: %v", r.Body, err)
	}
	return e
}

// list decodes a GET /v1/events answer, failing unless it is 200.
func (r reply) list(t testing.TB) []publicEvent {
	t.Helper()
	r.expect(t, http.StatusOK)
	var out []publicEvent
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("decode list %s: %v", r.Body, err)
	}
	return out
}

func (r reply) expect(t testing.TB, status int) {
	t.Helper()
	apitest.Client{T: t}.Expect(r.Response, status, nil, r.what)
}

// detail checks a handler error (docs/api.md §7 shape 1: {"detail": <string>}) and returns the
// sentence.
func (r reply) detail(t testing.TB, status int) string {
	t.Helper()
	return apitest.Client{T: t}.ExpectDetail(r.Response, status, r.what)
}

// problem is one item of a validation error, as a client matches it (docs/api.md §7: type and loc,
// never msg).
type problem struct {
	Type string
	Loc  string // the loc as JSON, e.g. ["body","lat"]
}

// problems checks a validation error (docs/api.md §7 shape 2: {"detail": [{type, loc, msg,
// input}]}) and returns its items.
func (r reply) problems(t testing.TB) []problem {
	t.Helper()
	var out []problem
	for _, it := range (apitest.Client{T: t}.ExpectProblems(r.Response, r.what)) {
		out = append(out, problem{Type: it.Type, Loc: apitest.JSON(it.Loc)})
	}
	return out
}

// hasProblem reports whether r is a validation error holding want.
func (r reply) hasProblem(t testing.TB, want problem) {
	t.Helper()
	got := r.problems(t)
	if !slices.Contains(got, want) {
		t.Errorf("validation errors = %v; want one %v", got, want)
	}
}

// eventBody is a POST /v1/events body; fields are added by the test.
type eventBody map[string]any

func point(typ string, lat, lon float64) eventBody {
	return eventBody{"type": typ, "lat": lat, "lon": lon}
}

func (b eventBody) with(k string, v any) eventBody {
	c := eventBody{}
	for kk, vv := range b {
		c[kk] = vv
	}
	c[k] = v
	return c
}

// publish posts body and returns the event, failing unless it was created.
func (h *harness) publish(key string, body eventBody) publicEvent {
	h.t.Helper()
	return h.do("POST", "/v1/events", key, body).event(h.t, http.StatusCreated)
}

// area asks GET /v1/events with the query string q.
func (h *harness) area(key, q string) []publicEvent {
	h.t.Helper()
	return h.do("GET", "/v1/events?"+q, key, nil).list(h.t)
}

func ids(list []publicEvent) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.EventID
	}
	return out
}

func q(lat, lon float64, extra ...string) string {
	s := fmt.Sprintf("lat=%v&lon=%v", lat, lon)
	for _, e := range extra {
		s += "&" + e
	}
	return s
}

// usage returns today's counts of organisation org in env, after flushing the meter.
func (h *harness) usage(org, env string) metering.Totals {
	h.t.Helper()
	if err := h.meter.Flush(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	now := h.tab.Clock.Now()
	days, err := h.meter.Read(context.Background(), org, env, now, now)
	if err != nil {
		h.t.Fatal(err)
	}
	return metering.Sum(days)
}

const (
	live    = event.EnvironmentLive
	sandbox = event.EnvironmentSandbox
)
