package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §11.3: the console's answers and stream tickets carry Cache-Control: no-store,
// those holding a credential first (a session token, a TOTP secret, a new API key, a ticket),
// refusals included; the public, shareable /v1 answers do not.
func TestConsoleAndTicketAnswersAreNotStored(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	cfg := apptest.Config()
	inbox := &consoletest.Inbox{}
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
		Keys: apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}), Meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1})})
	c := apitest.Client{T: t, Handler: api.Handler()}
	notStored := func(r apitest.Response, want int, what string) apitest.Response {
		t.Helper()
		c.Expect(r, want, nil, what)
		if got := r.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control = %q; want no-store", what, got)
		}
		return r
	}

	const addr = "ada@example.com"
	notStored(c.Call("POST", "/console/auth/request-code", "", `{"email":"`+addr+`"}`), http.StatusOK, "request a code")
	r := notStored(c.Call("POST", "/console/auth/verify-code", "", apitest.JSON(map[string]string{"email": addr, "code": inbox.LastCode(t, addr)})),
		http.StatusOK, "verify the code (a session token)")
	session := apitest.Decode[consoleauth.SessionOut](t, r).Token
	notStored(c.Call("POST", "/console/auth/totp/setup", session, ""), http.StatusOK, "TOTP enrolment (a secret)")
	r = notStored(c.Call("POST", "/console/orgs", session, `{"name":"Ada Fleet"}`), http.StatusCreated, "create an organisation")
	org := apitest.Decode[orgs.Organisation](t, r).OrgID
	r = notStored(c.Call("POST", "/console/orgs/"+org+"/keys", session, `{"label":"app","environment":"sandbox"}`), http.StatusCreated, "issue a key (the raw key)")
	key := apitest.Decode[orgs.IssuedKey](t, r).Key
	notStored(c.Call("POST", "/v1/stream/tickets", key, ""), http.StatusCreated, "mint a stream ticket")
	notStored(c.Call("GET", "/console/plans", "", ""), http.StatusOK, "the plans")
	notStored(c.Call("GET", "/console/auth/me", "", ""), http.StatusUnauthorized, "a refused console request")
	notStored(c.Call("PATCH", "/console/auth/me", session, `{"locale":"e"}`), http.StatusUnprocessableEntity, "an invalid console request")
	notStored(c.Call("GET", "/console/orgs/org_unknown", session, ""), http.StatusNotFound, "another organisation")

	// Every console route, whatever it answers a caller without credentials.
	for _, rt := range api.Routes() {
		if !strings.HasPrefix(rt.Path, "/console/") {
			continue
		}
		path := wildcard.ReplaceAllString(rt.Path, "x")
		if r := c.Call(rt.Method, path, "", ""); r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s = %d with Cache-Control %q; want no-store", rt.Method, path, r.Status, r.Header.Get("Cache-Control"))
		}
	}

	for _, path := range []string{"/v1/meta/taxonomy", "/health"} {
		if r := c.Call("GET", path, "", ""); r.Header.Get("Cache-Control") == "no-store" {
			t.Errorf("GET %s: Cache-Control = no-store; want the public answers left as they were", path)
		}
	}
	if r := c.Call("GET", "/v1/events?lat=48.85&lon=2.35", key, ""); r.Status != http.StatusOK || r.Header.Get("Cache-Control") == "no-store" {
		t.Errorf("GET /v1/events = %d, Cache-Control %q; want 200 without no-store", r.Status, r.Header.Get("Cache-Control"))
	}
}
