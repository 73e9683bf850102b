package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
)

// Test-only payloads shaped like EventIn and SignalIn (docs/api.md §2.2, §10.2); the real
// declarations belong to the domain packages.
const tokenPattern = `^[A-Za-z0-9_.:-]{1,64}$`

var (
	position   = schema.Array(schema.Number()).Count(2, 2)
	lineString = schema.Object(
		schema.Prop("type", schema.Const("LineString").WithDefault("LineString")),
		schema.Req("coordinates", schema.Array(position).Count(2, 512)),
	).Named("LineString")

	eventIn = schema.Object(
		schema.Req("type", schema.Enum("accident", "congestion", "road_damage")),
		schema.Prop("subtype", schema.String().Match(tokenPattern).OrNull()),
		schema.Req("lat", schema.Number().Range(-90, 90)),
		schema.Req("lon", schema.Number().Range(-180, 180)),
		schema.Prop("geometry", lineString.OrNull()),
		schema.Prop("heading", schema.Integer().Range(0, 359).OrNull()),
		schema.Prop("severity", schema.Enum("low", "medium", "high").OrNull()),
		schema.Prop("description", schema.String().MaxLen(280).OrNull()),
		schema.Prop("occurred_at", schema.DateTime().OrNull()),
		schema.Prop("client_event_id", schema.String().Match(tokenPattern).OrNull()),
	).Named("EventIn")

	eventOut = schema.Object(
		schema.Req("event_id", schema.String()),
		schema.Req("type", schema.String()),
		schema.Req("lat", schema.Number()),
		schema.Req("lon", schema.Number()),
		schema.Prop("geometry", lineString.OrNull()),
		schema.Req("created_at", schema.DateTime()),
	).Named("EventPublic")

	okOut = schema.Object(schema.Req("ok", schema.Boolean())).Named("Ok")

	signalIn = schema.Object(
		schema.Req("action", schema.Enum("confirm", "deny")),
		schema.Prop("reporter_token", schema.String().Match(tokenPattern).OrNull()),
	).Named("SignalIn")

	listParams = []schema.Param{
		schema.Query("lat", schema.Number().Range(-90, 90)).Require(),
		schema.Query("lon", schema.Number().Range(-180, 180)).Require(),
		schema.Query("radius", schema.Number().GreaterThan(0).Max(9780).WithDefault(1000)),
		schema.Query("type", schema.Array(schema.Enum("accident", "congestion", "road_damage"))),
		schema.Query("min_confidence", schema.Number().Range(0, 1).WithDefault(0)),
	}
	eventIDParam = schema.Path("event_id", schema.String().Match(`^ev_[a-z2-7]{26}$`))
)

type line struct {
	Type        string       `json:"type"`
	Coordinates [][2]float64 `json:"coordinates"`
}

type eventPayload struct {
	Type          string     `json:"type"`
	Subtype       *string    `json:"subtype"`
	Lat           float64    `json:"lat"`
	Lon           float64    `json:"lon"`
	Geometry      *line      `json:"geometry"`
	Heading       *int       `json:"heading"`
	Severity      *string    `json:"severity"`
	Description   *string    `json:"description"`
	OccurredAt    *time.Time `json:"occurred_at"`
	ClientEventID *string    `json:"client_event_id"`
}

type signalPayload struct {
	Action        string  `json:"action"`
	ReporterToken *string `json:"reporter_token"`
}

// logLines parses every line of b as JSON, failing the test on a line that is not.
func logLines(t *testing.T, b *apitest.LogBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

var errDatabaseDown = errors.New("dynamodb: connection refused to 10.0.0.7")

// newTestAPI builds an API with sample routes covering every path through the plumbing.
func newTestAPI(t testing.TB, cfg httpapi.Config) (*httpapi.API, *apitest.LogBuffer) {
	t.Helper()
	logs := &apitest.LogBuffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.Clock == nil {
		cfg.Clock = clock.NewFake(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC))
	}
	api := httpapi.New(cfg)
	echo := func(status int) http.Handler {
		return httpapi.JSON(status, func(r *httpapi.Request[eventPayload]) (any, error) { return r.Body, nil })
	}
	api.Handle(
		httpapi.Route{
			Method: "POST", Path: "/v1/events", OperationID: "publish_event", Summary: "Publish an event",
			Tags: []string{"events"}, Security: []httpapi.Security{httpapi.SecurityAPIKey},
			Body: eventIn,
			Responses: map[int]httpapi.Response{
				201: httpapi.JSONResponse("Created", eventOut),
				200: httpapi.JSONResponse("Faithful replay", eventOut),
				409: httpapi.ErrorResponse("client_event_id reused with different content"),
			},
			Handler: echo(http.StatusCreated),
		},
		httpapi.Route{
			Method: "GET", Path: "/v1/events", OperationID: "list_events", Tags: []string{"events"},
			Security: []httpapi.Security{httpapi.SecurityAPIKey},
			Params:   listParams,
			Responses: map[int]httpapi.Response{
				200: httpapi.JSONResponse("Active events, nearest first", schema.Array(eventOut)),
			},
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				p := httpapi.Params(r)
				return httpapi.WriteJSON(w, http.StatusOK, map[string]any{
					"lat": p.Float("lat"), "radius": p.Float("radius"), "type": p.Strings("type"),
				})
			}),
		},
		httpapi.Route{
			Method: "GET", Path: "/v1/events/{event_id}", OperationID: "get_event", Tags: []string{"events"},
			Security: []httpapi.Security{httpapi.SecurityAPIKey},
			Params:   []schema.Param{eventIDParam},
			Responses: map[int]httpapi.Response{
				200: httpapi.JSONResponse("The event", eventOut),
				404: httpapi.ErrorResponse("Unknown event"),
			},
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				return httpapi.NotFound("Event not found")
			}),
		},
		httpapi.Route{
			Method: "POST", Path: "/v1/events/{event_id}/signals", OperationID: "signal_event", Tags: []string{"events"},
			Security: []httpapi.Security{httpapi.SecurityAPIKey},
			Params:   []schema.Param{eventIDParam},
			Body:     signalIn,
			Responses: map[int]httpapi.Response{
				200: httpapi.JSONResponse("Signal accepted", eventOut),
				429: httpapi.ErrorResponse("Hourly signal ceiling reached", httpapi.RetryAfter),
			},
			Handler: httpapi.JSON(http.StatusOK, func(r *httpapi.Request[signalPayload]) (any, error) {
				if r.Body.Action == "deny" {
					return nil, httpapi.TooManyRequests("Signal ceiling reached", 1500*time.Millisecond)
				}
				return map[string]string{"event_id": r.Params.String("event_id"), "action": r.Body.Action}, nil
			}),
		},
		httpapi.Route{
			Method: "POST", Path: "/v1/tiny", Body: signalIn, MaxBodyBytes: 64,
			Responses: map[int]httpapi.Response{200: httpapi.JSONResponse("Done", okOut)},
			Handler: httpapi.JSON(http.StatusOK, func(*httpapi.Request[signalPayload]) (map[string]bool, error) {
				return map[string]bool{"ok": true}, nil
			}),
		},
		httpapi.Route{
			Method: "POST", Path: "/v1/cross-field", Body: eventIn,
			Responses: map[int]httpapi.Response{200: httpapi.JSONResponse("The payload", eventIn)},
			Handler: httpapi.JSON(http.StatusOK, func(r *httpapi.Request[eventPayload]) (eventPayload, error) {
				in := r.Body
				if in.Geometry != nil && (in.Geometry.Coordinates[0][0] != in.Lon || in.Geometry.Coordinates[0][1] != in.Lat) {
					return in, schema.Errors{schema.ValueError(schema.Loc("body", "geometry"), "lat/lon must equal the first point of geometry", nil)}
				}
				return in, nil
			}),
		},
		httpapi.Route{
			Method: "GET", Path: "/v1/private", Security: []httpapi.Security{httpapi.SecurityAPIKey},
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				if r.Header.Get("Authorization") == "" {
					return httpapi.Unauthorized("API key missing")
				}
				return httpapi.Unauthorized("API key invalid or revoked")
			}),
		},
		httpapi.Route{
			Method: "GET", Path: "/v1/stream", OperationID: "stream",
			Security: []httpapi.Security{httpapi.SecurityAPIKey, httpapi.SecurityStreamTicket},
			Params:   append(append([]schema.Param{}, listParams...), schema.Query("ticket", schema.String())),
			Responses: map[int]httpapi.Response{
				200: {Description: "Server-sent events", ContentType: "text/event-stream", Schema: schema.String()},
			},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				http.NewResponseController(w).Flush()
				fmt.Fprint(w, "event: bye\ndata: {}\n\n")
			}),
		},
		httpapi.Route{
			Method: "GET", Path: "/v1/broken", Hidden: true,
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				return fmt.Errorf("load event ev_x: %w", errDatabaseDown)
			}),
		},
		httpapi.Route{
			Method: "GET", Path: "/v1/panic", Hidden: true,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				panic("nil map in handler")
			}),
		},
		httpapi.Route{
			Method: "GET", Path: "/{$}", OperationID: "root",
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				return httpapi.WriteJSON(w, http.StatusOK, map[string]string{"service": "road-events"})
			}),
		},
	)
	return api, logs
}

// call sends one request to h and returns the recorded response.
func call(t testing.TB, h http.Handler, method, target string, body io.Reader, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// detailShape checks a non-2xx body is {"detail": string} or {"detail": [ValidationError]}
// and returns the decoded detail.
func detailShape(t testing.TB, body []byte) any {
	t.Helper()
	var got map[string]json.RawMessage
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, body)
	}
	if len(got) != 1 || got["detail"] == nil {
		t.Fatalf("body %s: want exactly one member, detail", body)
	}
	var s string
	if json.Unmarshal(got["detail"], &s) == nil {
		if s == "" {
			t.Fatalf("body %s: empty detail", body)
		}
		return s
	}
	var items []schema.ValidationError
	dec := json.NewDecoder(bytes.NewReader(got["detail"]))
	dec.UseNumber() // inputs are echoed verbatim, 1e400 included
	dec.DisallowUnknownFields()
	if err := dec.Decode(&items); err != nil || len(items) == 0 {
		t.Fatalf("body %s: detail is neither a string nor a list of validation errors (%v)", body, err)
	}
	for _, it := range items {
		if it.Type == "" || it.Msg == "" || len(it.Loc) == 0 {
			t.Fatalf("body %s: incomplete validation error %+v", body, it)
		}
		if root, _ := it.Loc[0].(string); root != "body" && root != "query" && root != "path" {
			t.Fatalf("body %s: loc %v does not start with body, query or path", body, it.Loc)
		}
	}
	return items
}
