package app_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §5 (CORS): OPTIONS without Origin is answered 204 on every path, by every process:
// `go run .` with every group, and on AWS the meta Lambda (which API Gateway sends every OPTIONS
// to, though it knows none of the other groups' routes) as well as a group's own Lambda.
func TestOptionsAnsweredAlikeEverywhere(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	clk := clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC))
	processes := map[string]http.Handler{
		"every group":   apptest.New(t, app.Deps{Config: config.Default(), Table: tab.Table, Clock: tab.Clock}).Handler(),
		"meta Lambda":   function(t, routetable.GroupMeta, clk),
		"events Lambda": function(t, routetable.GroupEvents, clk),
	}
	paths := []string{"/", "/health", "/openapi.json", "/v1/events", "/v1/events/ev_aaaaaaaaaaaaaaaaaaaaaaaaaa",
		"/v1/stream/tickets", "/console/plans", "/console/billing/webhook", "/v1/nowhere"}
	for name, h := range processes {
		for _, path := range paths {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodOptions, path, nil))
			if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
				t.Errorf("%s: OPTIONS %s = %d %q; want 204 without a body", name, path, rec.Code, rec.Body)
			}
		}
	}
}
