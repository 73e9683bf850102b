package consoleusage_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// Session tokens of the test callers: an owner and a member of orgA, and an outsider.
const (
	tokenOwner    = "ses_owner"
	tokenMember   = "ses_member"
	tokenOutsider = "ses_outsider"
	orgA          = "org_a"
)

// memberships stands in for orgs.Service: org -> user -> role.
type memberships map[string]map[string]string

func (m memberships) Access(_ context.Context, orgID, userID string) (string, string, bool, error) {
	role, ok := m[orgID][userID]
	return role, "free", ok, nil
}

// rig is the usage routes on one table, behind the console's session middleware.
type rig struct {
	tab   tables.Table
	meter *metering.Meter
	keys  *apikey.Keys
	srv   *httptest.Server
}

func newRig(t *testing.T, tab tables.Table) *rig {
	t.Helper()
	meter := metering.New(tab, metering.Options{Clock: tab.Clock, FlushInterval: -1})
	keys := apikey.New(tab, apikey.Options{Clock: tab.Clock})
	api := httpapi.New(httpapi.Config{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Clock:  tab.Clock,
		Middleware: []httpapi.RouteMiddleware{consoleauth.Middleware(consoletest.Sessions{
			tokenOwner:    {User: consoleauth.User{ID: "usr_owner", Email: "owner@example.com"}},
			tokenMember:   {User: consoleauth.User{ID: "usr_member", Email: "member@example.com"}},
			tokenOutsider: {User: consoleauth.User{ID: "usr_outsider", Email: "out@example.com"}},
		})},
	})
	api.Handle(consoleusage.Routes(consoleusage.Deps{
		Orgs:  memberships{orgA: {"usr_owner": "owner", "usr_member": "member"}},
		Meter: meter,
		Keys:  keys,
		Clock: tab.Clock,
	})...)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &rig{tab: tab, meter: meter, keys: keys, srv: srv}
}

// count counts n units of c now, and flushes them to the table.
func (r *rig) count(t *testing.T, env string, c metering.Counter, n int) {
	t.Helper()
	for range n {
		r.meter.Count(context.Background(), orgA, env, c)
	}
	if err := r.meter.Flush(context.Background()); err != nil {
		t.Fatalf("Flush = %v", err)
	}
}

// client sends requests to the rig's server, reporting to t.
func (r *rig) client(t testing.TB) apitest.Client { return apitest.Client{T: t, URL: r.srv.URL} }

// get sends GET path with token and decodes a 200 body into out; it returns the status.
func (r *rig) get(t *testing.T, token, path string, out any) int {
	t.Helper()
	res := r.client(t).Call(http.MethodGet, path, token, "")
	if res.Status == http.StatusOK && out != nil {
		if err := json.Unmarshal(res.Body, out); err != nil {
			t.Fatalf("GET %s: decode %s: %v", path, res.Body, err)
		}
	}
	return res.Status
}
