package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
)

var (
	errBusy    = errors.New("thing: changed meanwhile")
	errGone    = errors.New("thing: gone")
	errOwner   = errors.New("thing: owner only")
	errSession = errors.New("thing: session ended")
)

// refusal says when to retry, as a rate limit's error does.
type refusal struct{ wait time.Duration }

func (refusal) Error() string            { return "thing: refused" }
func (r refusal) RetryIn() time.Duration { return r.wait }
func (refusal) Is(target error) bool     { return target == errLimited }

var errLimited = errors.New("thing: limited")

// One table per package maps its sentinel errors; a route can put its
// own sentence first; the cause is never sent.
func TestErrorTableMapsSentinelsOfTheRoute(t *testing.T) {
	t.Parallel()
	table := httpapi.ErrorTable{
		{Err: errGone, Status: http.StatusNotFound, Detail: "Thing not found"},
		{Err: errOwner, Status: http.StatusForbidden, Detail: "Owners only"},
		{Err: errSession, Status: http.StatusUnauthorized, Detail: "Session ended"},
		{Err: errLimited, Status: http.StatusTooManyRequests, Detail: "Slow down"},
		{Err: errBusy, Status: http.StatusServiceUnavailable, Detail: "Busy; retry"},
	}
	api, _ := newTestAPI(t, httpapi.Config{})
	fails := func(err error) http.Handler {
		return httpapi.JSON(http.StatusOK, func(*httpapi.Request[httpapi.NoBody]) (map[string]bool, error) { return nil, err })
	}
	ok := map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("ok", okOut)}
	for path, err := range map[string]error{
		"/gone": fmt.Errorf("read thing 7: %w", errGone), "/owner": errOwner, "/session": errSession,
		"/limited": refusal{wait: 2500 * time.Millisecond}, "/other": errors.New("disk on fire"), "/busy": errBusy,
	} {
		api.Handle(httpapi.Route{Method: "GET", Path: path, Responses: ok, Errors: table, Handler: fails(err)})
	}
	api.Handle(httpapi.Route{Method: "GET", Path: "/gone-member", Responses: ok, Handler: fails(errGone),
		Errors: table.With(httpapi.ErrorRule{Err: errGone, Status: http.StatusNotFound, Detail: "Member not found"})})
	cases := []struct {
		path, wantBody string
		wantStatus     int
		wantHeader     [2]string
	}{
		{"/gone", `{"detail":"Thing not found"}`, 404, [2]string{}},
		{"/gone-member", `{"detail":"Member not found"}`, 404, [2]string{}},
		{"/owner", `{"detail":"Owners only"}`, 403, [2]string{}},
		{"/session", `{"detail":"Session ended"}`, 401, [2]string{"WWW-Authenticate", "Bearer"}},
		{"/limited", `{"detail":"Slow down"}`, 429, [2]string{"Retry-After", "3"}},
		{"/other", `{"detail":"Internal Server Error"}`, 500, [2]string{}},
		// docs/operations.md §1: every 503 says when to retry.
		{"/busy", `{"detail":"Busy; retry"}`, 503, [2]string{"Retry-After", "1"}},
	}
	for _, tc := range cases {
		rec := call(t, api.Handler(), "GET", tc.path, nil, nil)
		if got := strings.TrimSpace(rec.Body.String()); rec.Code != tc.wantStatus || got != tc.wantBody {
			t.Errorf("GET %s = %d %s; want %d %s", tc.path, rec.Code, got, tc.wantStatus, tc.wantBody)
		}
		if h := tc.wantHeader; h[0] != "" && rec.Header().Get(h[0]) != h[1] {
			t.Errorf("GET %s: %s = %q; want %q", tc.path, h[0], rec.Header().Get(h[0]), h[1])
		}
	}
	// Errors that already carry their response pass through unchanged.
	conflict := fmt.Errorf("write: %w", httpapi.Conflict("Taken"))
	if got := table.Public(conflict); got != conflict {
		t.Errorf("Public(%v) = %v; want it unchanged", conflict, got)
	}
	verrs := fmt.Errorf("check: %w", schema.Errors{schema.ValueError(schema.Loc("body"), "bad", nil)})
	if got := table.Public(verrs); got != verrs {
		t.Errorf("Public(%v) = %v; want it unchanged", verrs, got)
	}
}
