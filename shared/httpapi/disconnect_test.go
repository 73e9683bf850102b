package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/httpapi"
)

// blockingStore stands for a store call that is still waiting for the table when the client
// leaves: it returns only once its context is cancelled, with that cancellation, as the store
// adapters do.
type blockingStore struct{ entered chan struct{} }

func (s blockingStore) Query(ctx context.Context, cell string) error {
	close(s.entered)
	<-ctx.Done()
	return fmt.Errorf("query cell %s: %w", cell, ctx.Err())
}

// docs/api.md §7: a client that goes away before its answer receives nothing, so it is no server
// error: no 500 in the access log and no error-level line, but one info line saying the client
// went away, the access log's status 499, and the API's count of such requests.
func TestClientGoneIsNotAServerError(t *testing.T) {
	t.Parallel()
	api, logs := newTestAPI(t, httpapi.Config{})
	st := blockingStore{entered: make(chan struct{})}
	api.Handle(httpapi.Route{
		Method: "GET", Path: "/v1/slow", Hidden: true,
		Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			if err := st.Query(r.Context(), "88194ad107fffff"); err != nil {
				return fmt.Errorf("list events: %w", err)
			}
			return httpapi.WriteJSON(w, http.StatusOK, []string{})
		}),
	})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/slow", nil)
	req.Header.Set("X-Request-Id", "gone-1")
	done := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-st.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v; want its own cancellation", err)
	}

	// The server notices the closed connection on its own time: wait for the access log.
	var access, gone map[string]any
	var lines []map[string]any
	for deadline := time.Now().Add(10 * time.Second); access == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		lines = logLines(t, logs)
		for _, l := range lines {
			if l["request_id"] == "gone-1" && l["msg"] == "request" {
				access = l
			}
		}
	}
	for _, l := range lines {
		if l["request_id"] != "gone-1" {
			continue
		}
		if l["msg"] == "client went away before its answer" {
			gone = l
		}
		if l["level"] == "ERROR" || l["status"] == float64(http.StatusInternalServerError) {
			t.Errorf("log line %v; want no error level and no 500 for a client that went away", l)
		}
	}
	if access == nil {
		t.Fatalf("no access-log line for the request:\n%s", logs)
	}
	if access["status"] != float64(httpapi.StatusClientClosedRequest) {
		t.Errorf("access log status = %v; want %d", access["status"], httpapi.StatusClientClosedRequest)
	}
	if gone == nil || gone["level"] != "INFO" {
		t.Errorf("client-gone line = %v; want one at INFO level:\n%s", gone, logs)
	}
	if n := api.ClientsGone(); n != 1 {
		t.Errorf("ClientsGone() = %d; want 1", n)
	}
}
