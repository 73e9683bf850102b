package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
)

const goodEvent = `{"type":"accident","lat":48.1,"lon":11.5}`

func nested(depth int) string {
	return `{"type":"accident","lat":1,"lon":2,"geometry":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

// TestScenarios runs requests through the real router and middleware, one named scenario
// per error path, so that a new path is one more row.
func TestScenarios(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{})
	h := api.Handler()
	const id = "ev_abcdefghijklmnopqrstuvwxyz"
	cases := []struct {
		name       string
		method     string
		url        string
		header     map[string]string
		body       string
		noBody     bool
		wantStatus int
		wantBody   []string          // fragments of the response body
		wantHeader map[string]string // exact header values
	}{
		{name: "valid body decoded into the struct", method: "POST", url: "/v1/events",
			body:       `{"type":"accident","lat":48.1,"lon":11.5,"heading":90.0,"occurred_at":"2024-05-01T12:00:00+02:00","geometry":{"coordinates":[[11.5,48.1],[11.6,48.2]]}}`,
			wantStatus: 201, wantBody: []string{`"heading":90`, `"occurred_at":"2024-05-01T10:00:00Z"`, `"type":"LineString"`}},
		{name: "charset utf-8 accepted", method: "POST", url: "/v1/events", body: goodEvent,
			header: map[string]string{"Content-Type": "application/json; charset=UTF-8"}, wantStatus: 201},
		{name: "no content type accepted", method: "POST", url: "/v1/events", body: goodEvent,
			header: map[string]string{"Content-Type": ""}, wantStatus: 201},
		{name: "truncated JSON", method: "POST", url: "/v1/events", body: `{"type":"accident","lat":48.1`,
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`, `"loc":["body",29]`, `"msg":"JSON decode error"`, `"input":{}`}},
		{name: "syntax error located", method: "POST", url: "/v1/events", body: `{"type":"accident",,}`,
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`, `"loc":["body",19]`}},
		{name: "trailing garbage", method: "POST", url: "/v1/events", body: goodEvent + ` {}`,
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`, `"loc":["body",42]`}},
		{name: "invalid UTF-8", method: "POST", url: "/v1/events", body: "{\"type\":\"acc\xffident\"}",
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`, `"loc":["body",12]`, "UTF-8"}},
		{name: "duplicate member rejected", method: "POST", url: "/v1/events", body: `{"type":"accident","lat":1,"lat":2,"lon":3}`,
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`, `duplicate member name \"lat\"`}},
		{name: "nesting at the limit is parsed", method: "POST", url: "/v1/events", body: nested(31),
			wantStatus: 422, wantBody: []string{`"type":"model_attributes_type","loc":["body","geometry"]`}},
		{name: "nesting over the limit", method: "POST", url: "/v1/events", body: nested(32),
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`, "nesting deeper than 32"}},
		{name: "very deep nesting", method: "POST", url: "/v1/events", body: strings.Repeat("[", 20000),
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`, `"loc":["body",32]`}},
		{name: "empty body is missing", method: "POST", url: "/v1/events", body: "",
			wantStatus: 422, wantBody: []string{`{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}`}},
		{name: "null body is missing", method: "POST", url: "/v1/events", body: "null",
			wantStatus: 422, wantBody: []string{`"type":"missing","loc":["body"]`}},
		{name: "whitespace body is invalid JSON", method: "POST", url: "/v1/events", body: "  ",
			wantStatus: 422, wantBody: []string{`"type":"json_invalid"`}},
		{name: "array body", method: "POST", url: "/v1/events", body: `[1]`,
			wantStatus: 422, wantBody: []string{`"type":"model_attributes_type","loc":["body"]`, `"input":[1]`}},
		{name: "wrong types", method: "POST", url: "/v1/events", body: `{"type":"accident","lat":"48.1","lon":true}`,
			wantStatus: 422, wantBody: []string{`"type":"float_type","loc":["body","lat"]`, `"type":"float_type","loc":["body","lon"]`}},
		{name: "unknown field", method: "POST", url: "/v1/events", body: `{"type":"accident","lat":1,"lon":2,"environment":"sandbox"}`,
			wantStatus: 422, wantBody: []string{`{"detail":[{"type":"extra_forbidden","loc":["body","environment"],"msg":"Extra inputs are not permitted","input":"sandbox"}]}`}},
		{name: "several errors at once", method: "POST", url: "/v1/events",
			body:       `{"type":"meteor","lat":91,"heading":1.5,"severity":"extreme","occurred_at":"2024-05-01T10:00:00","x":1}`,
			wantStatus: 422, wantBody: []string{`"type":"enum","loc":["body","type"]`, `"type":"less_than_equal","loc":["body","lat"]`,
				`"type":"missing","loc":["body","lon"]`, `"type":"int_type","loc":["body","heading"]`, `"type":"enum","loc":["body","severity"]`,
				`"type":"timezone_aware","loc":["body","occurred_at"]`, `"type":"extra_forbidden","loc":["body","x"]`}},
		{name: "deep loc", method: "POST", url: "/v1/events", body: `{"type":"accident","lat":1,"lon":2,"geometry":{"coordinates":[[2,1],[3,4],[5,6],["x",7]]}}`,
			wantStatus: 422, wantBody: []string{`"loc":["body","geometry","coordinates",3,0]`}},
		{name: "huge body", method: "POST", url: "/v1/events", body: `{"type":"accident","lat":1,"lon":2,"description":"` + strings.Repeat("x", 70000) + `"}`,
			wantStatus: 413, wantBody: []string{`{"detail":"Request body too large: the limit is 65536 bytes"}`}},
		{name: "per-route body limit", method: "POST", url: "/v1/tiny", body: `{"action":"confirm","reporter_token":"` + strings.Repeat("a", 50) + `"}`,
			wantStatus: 413, wantBody: []string{`the limit is 64 bytes`}},
		{name: "text content type", method: "POST", url: "/v1/events", body: goodEvent, header: map[string]string{"Content-Type": "text/plain"},
			wantStatus: 415, wantBody: []string{`{"detail":"Unsupported media type: send the body as application/json"}`}},
		{name: "form content type", method: "POST", url: "/v1/events", body: "type=accident", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			wantStatus: 415},
		{name: "latin-1 charset", method: "POST", url: "/v1/events", body: goodEvent, header: map[string]string{"Content-Type": "application/json; charset=latin1"},
			wantStatus: 415},
		{name: "query parameters parsed", method: "GET", url: "/v1/events?lat=48.1&lon=11.5&type=accident&type=congestion&unknown=1",
			wantStatus: 200, wantBody: []string{`"lat":48.1`, `"radius":1000`, `"type":["accident","congestion"]`}},
		{name: "query parameters invalid", method: "GET", url: "/v1/events?lat=north&radius=0&type=meteor",
			wantStatus: 422, wantBody: []string{`"type":"float_parsing","loc":["query","lat"]`, `"type":"missing","loc":["query","lon"]`,
				`"type":"greater_than","loc":["query","radius"]`, `"type":"enum","loc":["query","type",0]`}},
		{name: "radius above the limit", method: "GET", url: "/v1/events?lat=1&lon=2&radius=9781",
			wantStatus: 422, wantBody: []string{`"type":"less_than_equal","loc":["query","radius"]`, `"ctx":{"le":9780}`}},
		{name: "path and body errors together", method: "POST", url: "/v1/events/nope/signals", body: `{"action":"maybe"}`,
			wantStatus: 422, wantBody: []string{`"loc":["path","event_id"]`, `"loc":["body","action"]`}},
		{name: "handler error maps to its status", method: "GET", url: "/v1/events/" + id,
			wantStatus: 404, wantBody: []string{`{"detail":"Event not found"}`}},
		{name: "429 with Retry-After in whole seconds", method: "POST", url: "/v1/events/" + id + "/signals", body: `{"action":"deny"}`,
			wantStatus: 429, wantBody: []string{`"detail":"Signal ceiling reached"`}, wantHeader: map[string]string{"Retry-After": "2"}},
		{name: "401 carries WWW-Authenticate", method: "GET", url: "/v1/private",
			wantStatus: 401, wantBody: []string{`{"detail":"API key missing"}`}, wantHeader: map[string]string{"WWW-Authenticate": "Bearer"}},
		{name: "domain value_error is a 422 list", method: "POST", url: "/v1/cross-field", body: `{"type":"accident","lat":1,"lon":2,"geometry":{"coordinates":[[5,5],[6,6]]}}`,
			wantStatus: 422, wantBody: []string{`"type":"value_error","loc":["body","geometry"]`, `"msg":"Value error, lat/lon must equal the first point of geometry"`}},
		{name: "unknown error is a 500 without its cause", method: "GET", url: "/v1/broken",
			wantStatus: 500, wantBody: []string{`{"detail":"Internal Server Error"}`}},
		{name: "panic is a JSON 500", method: "GET", url: "/v1/panic",
			wantStatus: 500, wantBody: []string{`{"detail":"Internal Server Error"}`}},
		{name: "unknown route", method: "GET", url: "/v1/nothing-here",
			wantStatus: 404, wantBody: []string{`{"detail":"Not Found"}`}},
		{name: "unknown route under a known prefix", method: "GET", url: "/v1/events/" + id + "/extra",
			wantStatus: 404, wantBody: []string{`{"detail":"Not Found"}`}},
		{name: "root exact only", method: "GET", url: "/",
			wantStatus: 200, wantBody: []string{`"service":"road-events"`}},
		{name: "wrong method", method: "DELETE", url: "/v1/events",
			wantStatus: 405, wantBody: []string{`{"detail":"Method Not Allowed"}`}, wantHeader: map[string]string{"Allow": "GET, HEAD, POST, OPTIONS"}},
		{name: "wrong method on a wildcard path", method: "PUT", url: "/v1/events/" + id,
			wantStatus: 405, wantHeader: map[string]string{"Allow": "GET, HEAD, OPTIONS"}},
		{name: "streaming handler flushes through the middleware", method: "GET", url: "/v1/stream?lat=1&lon=2&ticket=svc_st_secret",
			wantStatus: 200, wantBody: []string{"event: bye"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec = call(t, h, tc.method, tc.url, bodyReader(tc.body, tc.method), tc.header)
			if rec.Code != tc.wantStatus {
				t.Fatalf("%s %s = %d %s; want %d", tc.method, tc.url, rec.Code, rec.Body, tc.wantStatus)
			}
			body := rec.Body.String()
			for _, frag := range tc.wantBody {
				if !strings.Contains(body, frag) {
					t.Errorf("%s %s body = %.600s; want it to contain %s", tc.method, tc.url, body, frag)
				}
			}
			for k, v := range tc.wantHeader {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s %s header %s = %q; want %q", tc.method, tc.url, k, got, v)
				}
			}
			if rec.Code >= 400 {
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("error Content-Type = %q; want application/json", ct)
				}
				detailShape(t, rec.Body.Bytes())
				if strings.Contains(body, "10.0.0.7") || strings.Contains(body, "nil map") {
					t.Errorf("error body leaks an internal cause: %s", body)
				}
			}
		})
	}
}

func bodyReader(body, method string) io.Reader {
	if method == http.MethodGet || method == http.MethodDelete || method == http.MethodPut {
		if body == "" {
			return nil
		}
	}
	return strings.NewReader(body)
}

func TestInternalCausesAreLogged(t *testing.T) {
	t.Parallel()
	api, logs := newTestAPI(t, httpapi.Config{})
	h := api.Handler()
	call(t, h, "GET", "/v1/broken", nil, map[string]string{"X-Request-Id": "trace-broken"})
	call(t, h, "GET", "/v1/panic", nil, map[string]string{"X-Request-Id": "trace-panic"})

	var sawCause, sawPanic bool
	for _, l := range logLines(t, logs) {
		switch {
		case l["request_id"] == "trace-broken" && l["msg"] == "request failed":
			sawCause = strings.Contains(l["error"].(string), "connection refused")
		case l["request_id"] == "trace-panic" && l["msg"] == "panic":
			sawPanic = l["panic"] == "nil map in handler" && strings.Contains(l["stack"].(string), "goroutine")
		}
	}
	if !sawCause {
		t.Errorf("log has no line with the handler error's cause:\n%s", logs)
	}
	if !sawPanic {
		t.Errorf("log has no line with the panic value and stack:\n%s", logs)
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	api, logs := newTestAPI(t, httpapi.Config{})
	h := api.Handler()
	const key = "svc_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	const ticket = "svc_st_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	call(t, h, "GET", "/v1/private", nil, map[string]string{"Authorization": "Bearer " + key, "X-Request-Id": "req-1"})
	call(t, h, "GET", "/v1/stream?lat=1&lon=2&ticket="+ticket, nil, map[string]string{"X-Request-Id": "req-2"})
	call(t, h, "GET", "/v1/events?lat=1&lon=2&api_key="+key, nil, map[string]string{"X-Request-Id": "req-3"})

	raw := logs.String()
	for _, secret := range []string{key, ticket, "0123456789abcdefghij"} {
		if strings.Contains(raw, secret) {
			t.Errorf("log contains a credential %q:\n%s", secret, raw)
		}
	}
	byID := map[string]map[string]any{}
	for _, l := range logLines(t, logs) {
		if l["msg"] == "request" {
			byID[l["request_id"].(string)] = l
		}
	}
	cases := []struct {
		id     string
		want   map[string]any
		wantIn map[string]string
	}{
		{"req-1", map[string]any{"method": "GET", "path": "/v1/private", "status": float64(401), "route": "/v1/private"}, nil},
		{"req-2", map[string]any{"path": "/v1/stream", "status": float64(200), "operation_id": "stream"},
			map[string]string{"query": "ticket=%5Bredacted%5D"}},
		{"req-3", map[string]any{"status": float64(200)}, map[string]string{"query": "api_key=%5Bredacted%5D"}},
	}
	for _, tc := range cases {
		l, ok := byID[tc.id]
		if !ok {
			t.Errorf("no access-log line with request_id %s:\n%s", tc.id, raw)
			continue
		}
		for k, v := range tc.want {
			if l[k] != v {
				t.Errorf("%s: %s = %v; want %v", tc.id, k, l[k], v)
			}
		}
		for k, frag := range tc.wantIn {
			if s, _ := l[k].(string); !strings.Contains(s, frag) {
				t.Errorf("%s: %s = %q; want it to contain %q", tc.id, k, s, frag)
			}
		}
		for _, k := range []string{"duration_ms", "bytes"} {
			if _, ok := l[k].(float64); !ok {
				t.Errorf("%s: %s = %v; want a number", tc.id, k, l[k])
			}
		}
	}
	if b := byID["req-2"]["bytes"]; b != float64(len("event: bye\ndata: {}\n\n")) {
		t.Errorf("req-2 bytes = %v; want the streamed length", b)
	}
}

// A handler mounted beside the API (the console's files) is logged as a route is: one access
// line with the request id it echoes, method, path, status and duration; a panic in it is a
// logged 500, not a dropped connection.
func TestObserveLogsAHandlerBesideTheAPI(t *testing.T) {
	t.Parallel()
	api, logs := newTestAPI(t, httpapi.Config{})
	h := api.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/app/panic" {
			panic("console handler bug")
		}
		http.NotFound(w, r)
	}))
	rec := call(t, h, "GET", "/app/%ff", nil, map[string]string{"X-Request-Id": "console-1"})
	if rec.Code != http.StatusNotFound || rec.Header().Get("X-Request-Id") != "console-1" {
		t.Errorf("GET /app/%%ff = %d, X-Request-Id %q; want the handler's 404 with the id echoed", rec.Code, rec.Header().Get("X-Request-Id"))
	}
	if rec := call(t, h, "GET", "/app/panic", nil, map[string]string{"X-Request-Id": "console-2"}); rec.Code != http.StatusInternalServerError {
		t.Errorf("GET /app/panic = %d; want 500", rec.Code)
	}
	want := map[string]map[string]any{
		// slog writes the invalid byte as U+FFFD.
		"console-1": {"method": "GET", "path": "/app/\ufffd", "status": float64(404)},
		"console-2": {"method": "GET", "path": "/app/panic", "status": float64(500)},
	}
	for _, l := range logLines(t, logs) {
		id, _ := l["request_id"].(string)
		w, ok := want[id]
		if l["msg"] != "request" || !ok {
			continue
		}
		delete(want, id)
		for k, v := range w {
			if l[k] != v {
				t.Errorf("%s: %s = %v; want %v", id, k, l[k], v)
			}
		}
		if _, ok := l["duration_ms"].(float64); !ok {
			t.Errorf("%s: duration_ms = %v; want a number", id, l["duration_ms"])
		}
	}
	for id := range want {
		t.Errorf("no access-log line with request_id %s:\n%s", id, logs)
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{})
	h := api.Handler()
	cases := []struct {
		name     string
		incoming string
		keep     bool
	}{
		{"sane id kept", "7f0c2a1e-5d2b-4a55-9c33-1c2b3a4d5e6f", true},
		{"none given", "", false},
		{"log injection replaced", "abc\n{\"level\":\"ERROR\"}", false},
		{"too long replaced", strings.Repeat("a", 129), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := call(t, h, "GET", "/v1/nothing", nil, map[string]string{"X-Request-Id": tc.incoming})
			got := rec.Header().Get("X-Request-Id")
			if tc.keep && got != tc.incoming {
				t.Errorf("X-Request-Id = %q; want %q echoed", got, tc.incoming)
			}
			if !tc.keep && (got == "" || got == tc.incoming) {
				t.Errorf("X-Request-Id = %q; want a generated id", got)
			}
		})
	}
}

// docs/api.md §5 (CORS): the allowed origins, methods and request headers (Last-Event-ID
// included, for resuming a stream), the exposed answer headers (Location included), and one
// answer to OPTIONS on every path: 204.
func TestCORS(t *testing.T) {
	t.Parallel()
	open, _ := newTestAPI(t, httpapi.Config{})
	listed, _ := newTestAPI(t, httpapi.Config{CORSOrigins: []string{"https://fleet.example"}})
	preflight := map[string]string{"Origin": "https://fleet.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization,content-type"}
	cases := []struct {
		name       string
		api        *httpapi.API
		method     string
		url        string
		header     map[string]string
		wantStatus int
		want       map[string]string // "" means the header must be absent
	}{
		{"preflight, default policy", open, "OPTIONS", "/v1/events", preflight, 204, map[string]string{
			"Access-Control-Allow-Origin":  "*",
			"Access-Control-Allow-Methods": "GET, POST, OPTIONS",
			"Access-Control-Allow-Headers": "Authorization, Content-Type, Last-Event-ID, X-Request-Id",
			"Access-Control-Max-Age":       "600",
		}},
		{"preflight of an unknown path still answered", open, "OPTIONS", "/v1/whatever", preflight, 204, map[string]string{
			"Access-Control-Allow-Origin": "*",
		}},
		{"simple request, default policy", open, "GET", "/v1/events?lat=1&lon=2", map[string]string{"Origin": "https://any.example"}, 200, map[string]string{
			"Access-Control-Allow-Origin":   "*",
			"Access-Control-Expose-Headers": "Location, Retry-After, WWW-Authenticate, X-Request-Id",
			"Vary":                          "Accept-Encoding", // compression's; not Origin under *
		}},
		{"errors carry CORS headers too", open, "GET", "/v1/private", map[string]string{"Origin": "https://any.example"}, 401, map[string]string{
			"Access-Control-Allow-Origin": "*",
		}},
		{"listed origin echoed", listed, "GET", "/v1/events?lat=1&lon=2", map[string]string{"Origin": "https://fleet.example"}, 200, map[string]string{
			"Access-Control-Allow-Origin": "https://fleet.example",
			"Vary":                        "Origin",
		}},
		{"listed origin preflight", listed, "OPTIONS", "/v1/events", preflight, 204, map[string]string{
			"Access-Control-Allow-Origin":  "https://fleet.example",
			"Access-Control-Allow-Methods": "GET, POST, OPTIONS",
		}},
		{"unlisted origin gets no allowance", listed, "GET", "/v1/events?lat=1&lon=2", map[string]string{"Origin": "https://evil.example"}, 200, map[string]string{
			"Access-Control-Allow-Origin": "",
			"Vary":                        "Origin",
		}},
		{"unlisted origin preflight", listed, "OPTIONS", "/v1/events", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, 204, map[string]string{
			"Access-Control-Allow-Origin":  "",
			"Access-Control-Allow-Methods": "",
		}},
		// A plain OPTIONS (no Origin) is 204 on every path, whatever methods the path has.
		{"plain OPTIONS of a collection", open, "OPTIONS", "/v1/events", nil, 204, map[string]string{
			"Access-Control-Allow-Methods": "",
		}},
		{"plain OPTIONS of an event", open, "OPTIONS", "/v1/events/ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", nil, 204, nil},
		{"plain OPTIONS of the stream", open, "OPTIONS", "/v1/stream", nil, 204, nil},
		{"plain OPTIONS of the root", open, "OPTIONS", "/", nil, 204, nil},
		{"plain OPTIONS of an unknown path", open, "OPTIONS", "/v1/whatever", nil, 204, nil},
		{"OPTIONS with Origin but no requested method", listed, "OPTIONS", "/v1/events", map[string]string{"Origin": "https://fleet.example"}, 204, map[string]string{
			"Access-Control-Allow-Origin":  "https://fleet.example",
			"Access-Control-Allow-Methods": "",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := call(t, tc.api.Handler(), tc.method, tc.url, nil, tc.header)
			if rec.Code != tc.wantStatus {
				t.Fatalf("%s %s = %d %s; want %d", tc.method, tc.url, rec.Code, rec.Body, tc.wantStatus)
			}
			for k, v := range tc.want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q; want %q", k, got, v)
				}
			}
		})
	}
}

func TestRouteMiddlewareSeesTheRouteAndRunsBeforeValidation(t *testing.T) {
	t.Parallel()
	auth := func(rt httpapi.Route, next http.Handler) http.Handler {
		return httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			if len(rt.Security) > 0 && r.Header.Get("Authorization") == "" {
				return httpapi.Unauthorized("API key missing")
			}
			if got, ok := httpapi.CurrentRoute(r.Context()); !ok || got.OperationID != rt.OperationID {
				t.Errorf("CurrentRoute = %v, %v; want %s", got.OperationID, ok, rt.OperationID)
			}
			next.ServeHTTP(w, r)
			return nil
		})
	}
	api, _ := newTestAPI(t, httpapi.Config{Middleware: []httpapi.RouteMiddleware{auth}})
	h := api.Handler()
	cases := []struct {
		name       string
		header     map[string]string
		wantStatus int
	}{
		{"no credential: 401 although the body is invalid", nil, 401},
		{"credential: the body is validated", map[string]string{"Authorization": "Bearer svc_x"}, 422},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := call(t, h, "POST", "/v1/events", strings.NewReader(`{"bad":1}`), tc.header)
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d %s; want %d", rec.Code, rec.Body, tc.wantStatus)
			}
		})
	}
	if rec := call(t, h, "GET", "/", nil, nil); rec.Code != 200 {
		t.Errorf("open route status = %d; want 200", rec.Code)
	}
}

// A payload type and its schema are checked when the route is added (and so in every test
// that builds the API), never at a request: a mismatch cannot ship.
func TestHandleRejectsBadDeclarations(t *testing.T) {
	t.Parallel()
	ok := http.NotFoundHandler()
	type xIn struct {
		X string `json:"x"`
	}
	echoX := httpapi.JSON(http.StatusOK, func(r *httpapi.Request[xIn]) (xIn, error) { return r.Body, nil })
	xOK := map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("x", schema.Object(schema.Req("x", schema.String())))}
	cases := []struct {
		name  string
		route httpapi.Route
		why   string // in the panic's message, when set
	}{
		{"lower-case method", httpapi.Route{Method: "get", Path: "/a", Handler: ok}, ""},
		{"subtree path", httpapi.Route{Method: "GET", Path: "/a/", Handler: ok}, ""},
		{"no handler", httpapi.Route{Method: "GET", Path: "/a"}, ""},
		{"path parameter not in path", httpapi.Route{Method: "GET", Path: "/a", Handler: ok,
			Params: []schema.Param{schema.Path("id", schema.String())}}, ""},
		{"parameter without schema", httpapi.Route{Method: "GET", Path: "/a", Handler: ok,
			Params: []schema.Param{{Name: "q", In: schema.InQuery}}}, ""},
		{"duplicate route", httpapi.Route{Method: "GET", Path: "/v1/events", Handler: ok}, ""},
		{"duplicate operation id", httpapi.Route{Method: "GET", Path: "/b", OperationID: "get_event", Handler: ok}, ""},
		{"two schemas with one name", httpapi.Route{Method: "POST", Path: "/c", Handler: echoX,
			Body: schema.Object(schema.Req("x", schema.String())).Named("EventIn"), Responses: xOK}, "EventIn"},
		{"a body read by an untyped handler", httpapi.Route{Method: "POST", Path: "/f", Handler: ok,
			Body: schema.Object(schema.Req("x", schema.String())).Named("X"), Responses: xOK}, "typed handler"},
		{"body type that disagrees with the schema", httpapi.Route{Method: "POST", Path: "/g", Body: eventIn, Responses: xOK,
			Handler: httpapi.JSON(http.StatusOK, func(*httpapi.Request[signalPayload]) (any, error) { return nil, nil })}, "body: schema: Go type and schema disagree"},
		{"answer type that disagrees with the schema", httpapi.Route{Method: "POST", Path: "/h", Body: signalIn,
			Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("The event", eventOut)},
			Handler:   httpapi.JSON(http.StatusOK, func(*httpapi.Request[signalPayload]) (signalPayload, error) { return signalPayload{}, nil })}, "response 200: schema: Go type and schema disagree"},
		{"answer status without a documented body", httpapi.Route{Method: "GET", Path: "/i",
			Handler: httpapi.JSON(http.StatusOK, func(*httpapi.Request[httpapi.NoBody]) (signalPayload, error) { return signalPayload{}, nil })}, "documents no body"},
		{"a body the handler does not read", httpapi.Route{Method: "POST", Path: "/j", Body: signalIn, Responses: xOK,
			Handler: httpapi.JSON(http.StatusOK, func(*httpapi.Request[httpapi.NoBody]) (any, error) { return nil, nil })}, "reads none"},
		{"Validate without Body", httpapi.Route{Method: "POST", Path: "/d", Handler: ok,
			Validate: func(any) (any, schema.Errors) { return nil, nil }}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api, _ := newTestAPI(t, httpapi.Config{})
			defer func() {
				switch r := recover(); {
				case r == nil:
					t.Errorf("Handle(%s %s) did not panic", tc.route.Method, tc.route.Path)
				case !strings.Contains(fmt.Sprint(r), tc.why):
					t.Errorf("Handle(%s %s) panicked with %q; want it to say %q", tc.route.Method, tc.route.Path, r, tc.why)
				}
			}()
			api.Handle(tc.route)
		})
	}
}

// A route's Validate replaces the body schema's validation, so that cross-field rules are
// reported in the same 422 as the schema's errors (docs/api.md §10.1: every error is reported), and
// the handler only runs when it finds nothing.
func TestRouteValidateReportsCrossFieldErrorsWithSchemaErrors(t *testing.T) {
	t.Parallel()
	body := schema.Object(
		schema.Req("from", schema.Integer()),
		schema.Req("to", schema.Integer()),
		schema.Prop("note", schema.String().MaxLen(3)),
	).Named("RangeIn")
	api := httpapi.New(httpapi.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	api.Handle(httpapi.Route{
		Method: "POST", Path: "/ranges", Body: body,
		Validate: func(v any) (any, schema.Errors) {
			errs := body.Validate(v, []any{"body"})
			obj, _ := v.(map[string]any)
			from, err1 := jsonInt(obj["from"])
			to, err2 := jsonInt(obj["to"])
			if err1 == nil && err2 == nil && from > to {
				errs = append(errs, schema.ValueError([]any{"body", "to"}, "to must not be before from", obj["to"]))
			}
			return nil, errs
		},
		Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("Done", schema.Object(schema.Req("ok", schema.String())))},
		Handler: httpapi.JSON(http.StatusOK, func(*httpapi.Request[map[string]any]) (map[string]string, error) {
			return map[string]string{"ok": "yes"}, nil
		}),
	})
	h := api.Handler()
	cases := []struct {
		name       string
		body       string
		wantStatus int
		wantErrors [][2]string // type, loc
	}{
		{"valid", `{"from":1,"to":2}`, 200, nil},
		{"cross-field only", `{"from":3,"to":2}`, 422, [][2]string{{"value_error", `["body","to"]`}}},
		{"schema and cross-field together", `{"from":3,"to":2,"note":"long"}`, 422,
			[][2]string{{"string_too_long", `["body","note"]`}, {"value_error", `["body","to"]`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := call(t, h, "POST", "/ranges", strings.NewReader(tc.body), nil)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d %s; want %d", rec.Code, rec.Body, tc.wantStatus)
			}
			if tc.wantErrors == nil {
				return
			}
			var got struct {
				Detail []struct {
					Type string `json:"type"`
					Loc  []any  `json:"loc"`
				} `json:"detail"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			var pairs [][2]string
			for _, d := range got.Detail {
				loc, _ := json.Marshal(d.Loc)
				pairs = append(pairs, [2]string{d.Type, string(loc)})
			}
			if fmt.Sprint(pairs) != fmt.Sprint(tc.wantErrors) {
				t.Errorf("errors = %v; want %v", pairs, tc.wantErrors)
			}
		})
	}
}

// A route's Validate may return the body already decoded: the handler's Body gets that value
// rather than the body decoded again, and a Validate returning nil, or a value of another
// type, leaves Body decoding the body itself.
func TestRouteValidateHandsOverTheDecodedBody(t *testing.T) {
	t.Parallel()
	type rangeIn struct {
		From int64  `json:"from"`
		Note string `json:"note"`
	}
	body := schema.Object(schema.Req("from", schema.Integer()), schema.Prop("note", schema.String())).Named("RangeIn")
	api := httpapi.New(httpapi.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	for path, decoded := range map[string]any{
		"/handed-over": rangeIn{From: 7, Note: "decoded by Validate"},
		"/nil":         nil,
		"/other-type":  map[string]int{"from": 7},
	} {
		api.Handle(httpapi.Route{
			Method: "POST", Path: path, Body: body,
			Validate:  func(v any) (any, schema.Errors) { return decoded, body.Validate(v, []any{"body"}) },
			Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("The range", body)},
			Handler:   httpapi.JSON(http.StatusOK, func(r *httpapi.Request[rangeIn]) (rangeIn, error) { return r.Body, nil }),
		})
	}
	h := api.Handler()
	for path, want := range map[string]string{
		"/handed-over": `{"from":7,"note":"decoded by Validate"}`,
		"/nil":         `{"from":1,"note":"sent"}`,
		"/other-type":  `{"from":1,"note":"sent"}`,
	} {
		rec := call(t, h, "POST", path, strings.NewReader(`{"from":1,"note":"sent"}`), nil)
		if got := strings.TrimSpace(rec.Body.String()); rec.Code != 200 || got != want {
			t.Errorf("POST %s = %d %s; want 200 %s", path, rec.Code, got, want)
		}
	}
}

func jsonInt(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a number: %v", v)
	}
	return n.Int64()
}
