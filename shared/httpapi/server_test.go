package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/httpapi"
)

// TestPanicAfterTheResponseBeganAbortsIt checks, over a real connection, that a handler
// panicking mid-response does not leave the client with a truncated body that looks whole.
func TestPanicAfterTheResponseBeganAbortsIt(t *testing.T) {
	t.Parallel()
	api, logs := newTestAPI(t, httpapi.Config{})
	api.Handle(httpapi.Route{Method: "GET", Path: "/v1/half", Hidden: true,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `{"events":[`)
			http.NewResponseController(w).Flush()
			panic("lost the store half-way")
		})})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)

	res, err := srv.Client().Get(srv.URL + "/v1/half")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.ReadAll(res.Body); err == nil {
		t.Errorf("reading the body succeeded; want an error, the response was cut")
	}
	if !strings.Contains(logs.String(), "lost the store half-way") {
		t.Errorf("panic not logged:\n%s", logs)
	}
}

func TestOpenAPIHandler(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{})
	api.Handle(httpapi.Route{Method: "GET", Path: "/openapi.json", OperationID: "openapi", Hidden: true, Handler: api.OpenAPIHandler()})
	rec := call(t, api.Handler(), "GET", "/openapi.json", nil, nil)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json = %d %q %v", rec.Code, rec.Header().Get("Content-Type"), err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/v1/events"] == nil || doc.Paths["/openapi.json"] != nil {
		t.Errorf("document = openapi %q, %d paths; want 3.1.0 with /v1/events and without the hidden /openapi.json", doc.OpenAPI, len(doc.Paths))
	}
}

// BenchmarkMiddleware measures what every request pays before its handler: a GET through the
// whole chain (request id, access log to io.Discard, recovery, CORS, compression, routing)
// to a handler that writes a constant.
func BenchmarkMiddleware(b *testing.B) {
	api := httpapi.New(httpapi.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	api.Handle(httpapi.Route{Method: "GET", Path: "/ping", Hidden: true,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"ok"}`)
		})})
	h := api.Handler()
	req := httptest.NewRequest(http.MethodGet, "/ping", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// BenchmarkPublish measures one POST /v1/events through the whole stack with the largest
// payload docs/api.md §8 allows (512 positions), validation and decoding included.
func BenchmarkPublish(b *testing.B) {
	api, _ := newTestAPI(b, httpapi.Config{})
	h := api.Handler()
	pos := make([]string, 512)
	for i := range pos {
		pos[i] = fmt.Sprintf("[%.5f,%.5f]", 11.5+float64(i)*0.0001, 48.1+float64(i)*0.0001)
	}
	body := `{"type":"congestion","lat":48.1,"lon":11.5,"severity":"high","occurred_at":"2024-05-01T10:00:00Z","geometry":{"type":"LineString","coordinates":[` + strings.Join(pos, ",") + `]}}`
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkPublishTypical is the same with a typical point event.
func BenchmarkPublishTypical(b *testing.B) {
	api, _ := newTestAPI(b, httpapi.Config{})
	h := api.Handler()
	body := `{"type":"accident","lat":48.13743,"lon":11.57549,"heading":270,"severity":"high","description":"Two cars, right lane blocked","occurred_at":"2024-05-01T10:00:00Z","client_event_id":"fleet-42:8812"}`
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
