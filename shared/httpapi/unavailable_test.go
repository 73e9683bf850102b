package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/store"
)

// docs/operations.md §1: a table that could not answer is 503 {"detail"} with Retry-After on
// every route, wrapped as deep as it comes, before the route's own table, which could map
// another sentinel of the same chain to a status the client would not retry (here a 400), and
// with nothing of the cause in the answer.
func TestStoreUnavailableIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	api, logs := newTestAPI(t, httpapi.Config{})
	ok := map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("ok", okOut)}
	cause := fmt.Errorf("verify code: %w: %w", errGone, fmt.Errorf("get codes|x: %w: throttled by table t-secret", store.ErrUnavailable))
	api.Handle(httpapi.Route{Method: "GET", Path: "/code", Responses: ok,
		Errors: httpapi.ErrorTable{{Err: errGone, Status: http.StatusBadRequest, Detail: "Bad code"}},
		Handler: httpapi.JSON(http.StatusOK, func(*httpapi.Request[httpapi.NoBody]) (map[string]bool, error) {
			return nil, cause
		})})
	api.Handle(httpapi.Route{Method: "GET", Path: "/plain", Responses: ok,
		Handler: httpapi.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return cause })})
	for _, path := range []string{"/code", "/plain"} {
		rec := call(t, api.Handler(), "GET", path, nil, nil)
		want := `{"detail":"` + httpapi.DetailUnavailable + `"}`
		if got := strings.TrimSpace(rec.Body.String()); rec.Code != http.StatusServiceUnavailable || got != want {
			t.Errorf("GET %s = %d %s; want 503 %s", path, rec.Code, got, want)
		}
		if got := rec.Header().Get("Retry-After"); got != "2" {
			t.Errorf("GET %s: Retry-After = %q; want \"2\"", path, got)
		}
	}
	if !strings.Contains(logs.String(), "t-secret") {
		t.Errorf("the cause was not logged: %s", logs.String())
	}
}
