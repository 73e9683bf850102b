package consolefeeds_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/consolefeeds"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// rig is the console and events groups of the service on one table, with an inbox and an
// upstream CIFS feed.
type rig struct {
	apitest.Client
	api   *apptest.API
	tab   tables.Table
	inbox *consoletest.Inbox
	doc   atomic.Value // the upstream's document
}

func newRig(t *testing.T, tab tables.Table) *rig {
	t.Helper()
	cfg := apptest.Config()
	cfg.ConsoleURL = "http://console.test/app/"
	cfg.Feeds.AllowPrivate = true // the upstream is on loopback
	inbox := &consoletest.Inbox{}
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
		Keys:  apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		Meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
	}, routetable.GroupConsoleAuth, routetable.GroupConsoleOrgs, routetable.GroupEvents)
	return &rig{Client: apitest.Client{T: t, Handler: api.Handler()}, api: api, tab: tab, inbox: inbox}
}

// upstream serves r.doc.
func (r *rig) upstream() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, r.doc.Load().(string))
	}))
	r.T.Cleanup(srv.Close)
	return srv.URL
}

func (r *rig) owner(addr, name string) (string, string) {
	r.T.Helper()
	token := consoletest.SignIn(r.Client, r.inbox, addr).Token
	return token, consoletest.CreateOrg(r.Client, token, name)
}

func (r *rig) pass() int {
	r.T.Helper()
	n, err := r.api.Feeds().Pass(context.Background())
	if err != nil {
		r.T.Fatal(err)
	}
	return n
}

// cifs is a CIFS document of the given incidents, each "id lat lon".
func cifs(incidents ...string) string {
	var parts []string
	for _, inc := range incidents {
		f := strings.Fields(inc)
		parts = append(parts, `{"incident":{"id":"`+f[0]+`","type":"HAZARD","subtype":"HAZARD_ON_ROAD_OBJECT","street":"B17",`+
			`"polyline":"`+f[1]+` `+f[2]+` `+f[1]+`3 `+f[2]+`","direction":"BOTH_DIRECTIONS"}}`)
	}
	return `{"incidents":[` + strings.Join(parts, ",") + `]}`
}

// docs/interop.md §13, docs/api.md §4.3: an owner registers a feed; the poller imports its
// records as the organisation's events, with their provenance, in the feed's environment;
// every member reads the feed's health; changes are in the audit log.
func TestFeedImportedThroughTheConsole(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		ada, alpha := r.owner("ada@example.com", "Alpha")
		bob := consoletest.Join(r.Client, r.inbox, ada, alpha, "bob@example.com", "member")
		r.doc.Store(cifs("s1 48.1000 11.5000", "s2 48.1100 11.5100") + "")
		url := r.upstream() + "/hazards.json?district=7"
		base := "/console/orgs/" + alpha + "/feeds"

		res := r.Call("POST", base, ada, apitest.JSON(map[string]any{"name": "District 7", "url": url, "format": "cifs",
			"environment": "live", "license": "CC BY 4.0", "poll_interval_s": 120}))
		r.Expect(res, http.StatusCreated, consolefeeds.FeedPublicSchema, "register a feed")
		created := apitest.Decode[consolefeeds.FeedPublic](t, res)
		if created.Interval != 120 || created.Environment != "live" || created.NextPollAt == nil || created.Health.LastPoll != nil ||
			created.CreatedByEmail == nil || *created.CreatedByEmail != "ada@example.com" {
			t.Errorf("registered feed %+v; want due at once, never polled, by ada", created)
		}
		if n := r.pass(); n != 1 {
			t.Fatalf("the pass polled %d feeds; want 1", n)
		}

		// Bob, a member, reads the feed's health.
		one := base + "/" + created.FeedID
		res = r.Call("GET", one, bob, "")
		r.Expect(res, http.StatusOK, consolefeeds.FeedPublicSchema, "a member reads the feed")
		got := apitest.Decode[consolefeeds.FeedPublic](t, res)
		if h := got.Health; h.LastPoll == nil || h.LastPoll.Created != 2 || h.Active != 2 || h.LastSuccessAt == nil || h.LastError != nil {
			t.Fatalf("health after the first poll %+v; want 2 created and no error", h)
		}
		res = r.Call("GET", base, bob, "")
		r.Expect(res, http.StatusOK, nil, "a member lists the feeds")
		if list := apitest.Decode[[]consolefeeds.FeedPublic](t, res); len(list) != 1 || list[0].FeedID != created.FeedID {
			t.Errorf("list %+v; want the one feed", list)
		}

		// The events are Alpha's, live, with the feed's provenance.
		key := apitest.Decode[orgs.IssuedKey](t, r.Call("POST", "/console/orgs/"+alpha+"/keys", ada,
			`{"label":"reader","environment":"live"}`)).Key
		res = r.Call("GET", "/v1/events?lat=48.105&lon=11.505&radius=3000", key, "")
		evs := apitest.Decode[[]event.EventPublic](t, res)
		if len(evs) != 2 {
			t.Fatalf("the area holds %d events; want the feed's 2: %s", len(evs), res)
		}
		for _, e := range evs {
			if e.SourceKind != "feed" || e.FeedID == nil || *e.FeedID != created.FeedID || e.License == nil ||
				*e.License != "CC BY 4.0" || e.FetchedAt == nil || e.Type != "object_on_road" {
				t.Errorf("imported event %+v; want source_kind feed with the feed's id, licence and fetch time", e)
			}
		}

		// An outage shows; the events stay.
		r.doc.Store("<html>maintenance</html>")
		r.Expect(r.Call("POST", one+"/poll", ada, ""), http.StatusOK, consolefeeds.FeedPublicSchema, "poll now")
		r.pass()
		got = apitest.Decode[consolefeeds.FeedPublic](t, r.Call("GET", one, bob, ""))
		if got.Health.LastError == nil || got.Health.Active != 2 {
			t.Errorf("health during an outage %+v; want the error shown, the 2 records kept", got.Health)
		}

		// Pausing and the audit log, which never holds the URL's query.
		r.Expect(r.Call("PATCH", one, ada, `{"paused":true}`), http.StatusOK, consolefeeds.FeedPublicSchema, "pause")
		tab.Clock.Advance(10 * time.Minute) // five intervals; the events last 30 minutes
		if n := r.pass(); n != 0 {
			t.Errorf("a pass polled %d feeds while the feed is paused", n)
		}
		entries := apitest.Decode[[]audit.Entry](t, r.Call("GET", "/console/orgs/"+alpha+"/audit", bob, ""))
		var actions []string
		for _, e := range entries {
			if strings.HasPrefix(e.Action, "feed.") {
				actions = append(actions, e.Action)
				if e.Target == nil || *e.Target != created.FeedID || e.Detail["address"] != strings.TrimSuffix(url, "?district=7") {
					t.Errorf("audit entry %+v; want the feed as target and its address without the query", e)
				}
			}
		}
		if strings.Join(actions, " ") != "feed.updated feed.created" {
			t.Errorf("feed actions in the audit log %v; want created then updated", actions)
		}

		// Deleting ends the feed's events at the next pass.
		r.Expect(r.Call("DELETE", one, ada, ""), http.StatusOK, nil, "delete")
		r.ExpectDetail(r.Call("GET", one, ada, ""), http.StatusNotFound, "the deleted feed")
		r.ExpectDetail(r.Call("POST", one+"/poll", ada, ""), http.StatusNotFound, "a poll of the deleted feed")
		r.pass()
		res = r.Call("GET", "/v1/events?lat=48.105&lon=11.505&radius=3000", key, "")
		if n := len(apitest.Decode[[]event.EventPublic](t, res)); n != 0 {
			t.Errorf("the area holds %d events after the feed was deleted; want none", n)
		}
	})
}

// docs/api.md §4.3, docs/interop.md §13: only owners change feeds; a member of another
// organisation reaches none of them, by its own organisation's path either.
func TestFeedRoutesKeepTenantsApart(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		ada, alpha := r.owner("ada@example.com", "Alpha")
		bob := consoletest.Join(r.Client, r.inbox, ada, alpha, "bob@example.com", "member")
		cat, gamma := r.owner("cat@example.com", "Gamma")
		base := "/console/orgs/" + alpha + "/feeds"
		res := r.Call("POST", base, ada, `{"url":"https://feeds.example/a.json","format":"wzdx"}`)
		r.Expect(res, http.StatusCreated, consolefeeds.FeedPublicSchema, "register")
		one := base + "/" + apitest.Decode[consolefeeds.FeedPublic](t, res).FeedID

		for _, c := range []struct{ method, path, body string }{
			{"POST", base, `{"url":"https://feeds.example/b.json","format":"cifs"}`},
			{"PATCH", one, `{"name":"mine"}`},
			{"DELETE", one, ""},
			{"POST", one + "/poll", ""},
		} {
			r.ExpectDetail(r.Call(c.method, c.path, bob, c.body), http.StatusForbidden, "member bob: "+c.method+" "+c.path)
			r.ExpectDetail(r.Call(c.method, c.path, cat, c.body), http.StatusNotFound, "gamma's owner: "+c.method+" "+c.path)
		}
		r.ExpectDetail(r.Call("POST", base, cat, `{"format":"gtfs"}`), http.StatusNotFound, "gamma's owner sends a bad body: 404 before validation")
		r.ExpectDetail(r.Call("GET", base, cat, ""), http.StatusNotFound, "gamma's owner lists alpha's feeds")
		r.ExpectDetail(r.Call("GET", one, cat, ""), http.StatusNotFound, "gamma's owner reads alpha's feed")
		// Alpha's feed id under Gamma's path is no feed of Gamma's.
		foreign := strings.Replace(one, alpha, gamma, 1)
		for _, method := range []string{"GET", "PATCH", "DELETE"} {
			r.ExpectDetail(r.Call(method, foreign, cat, `{"name":"x"}`), http.StatusNotFound, "alpha's feed under gamma's path: "+method)
		}
		if list := apitest.Decode[[]consolefeeds.FeedPublic](t, r.Call("GET", "/console/orgs/"+gamma+"/feeds", cat, "")); len(list) != 0 {
			t.Errorf("gamma lists %d feeds; want none", len(list))
		}
		if got := apitest.Decode[consolefeeds.FeedPublic](t, r.Call("GET", one, ada, "")); got.Name != "" {
			t.Errorf("after the refused changes the feed is %+v; want it as registered", got)
		}
		r.ExpectDetail(r.Call("GET", base, "", ""), http.StatusUnauthorized, "no session")
	})
}

// docs/api.md §7, docs/interop.md §13: bad input is 422 at the field at fault, never echoing a
// password; the cap of feeds is 409; an unknown feed is 404.
func TestFeedRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t))
	ada, alpha := r.owner("ada@example.com", "Alpha")
	base := "/console/orgs/" + alpha + "/feeds"
	for body, field := range map[string]string{
		`{"format":"cifs"}`:                                                     "url",
		`{"url":"https://x.example/f","format":"gtfs"}`:                         "format",
		`{"url":"ftp://x.example/f","format":"cifs"}`:                           "url",
		`{"url":"https://user:hunter2@x.example/f","format":"cifs"}`:            "url",
		`{"url":"https://x.example/f","format":"cifs","name":"\u0007"}`:         "name",
		`{"url":"https://x.example/f","format":"cifs","poll_interval_s":59}`:    "poll_interval_s",
		`{"url":"https://x.example/f","format":"cifs","poll_interval_s":86401}`: "poll_interval_s",
		`{"url":"https://x.example/f","format":"cifs","environment":"prod"}`:    "environment",
		`{"url":"https://x.example/f","format":"cifs","colour":"red"}`:          "colour",
	} {
		problems := r.ExpectProblems(r.Call("POST", base, ada, body), body)
		if len(problems) == 0 || problems[0].Loc[len(problems[0].Loc)-1] != field {
			t.Errorf("%s: problems %+v; want one at %s", body, problems, field)
		}
	}
	if res := r.Call("POST", base, ada, `{"url":"https://user:hunter2@x.example/f","format":"cifs"}`); strings.Contains(string(res.Body), "hunter2") {
		t.Errorf("the refusal of a URL with credentials echoes them: %s", res)
	}
	res := r.Call("POST", base, ada, `{"url":"https://x.example/f","format":"cifs"}`)
	r.Expect(res, http.StatusCreated, consolefeeds.FeedPublicSchema, "a good feed")
	one := base + "/" + apitest.Decode[consolefeeds.FeedPublic](t, res).FeedID
	if problems := r.ExpectProblems(r.Call("PATCH", one, ada, `{"environment":"live"}`), "a new environment"); len(problems) == 0 {
		t.Error("PATCH of the environment accepted; it is fixed")
	}
	r.ExpectDetail(r.Call("GET", base+"/fd_unknown", ada, ""), http.StatusNotFound, "an unknown feed")
	for range feeds.MaxPerOrg - 1 {
		r.Expect(r.Call("POST", base, ada, `{"url":"https://x.example/f","format":"cifs"}`), http.StatusCreated, nil, "up to the cap")
	}
	r.ExpectDetail(r.Call("POST", base, ada, `{"url":"https://x.example/f","format":"cifs"}`), http.StatusConflict, "past the cap")

	var doc struct {
		Paths map[string]map[string]any
	}
	if err := json.Unmarshal(r.api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	for path, methods := range map[string][]string{"/console/orgs/{org_id}/feeds": {"get", "post"},
		"/console/orgs/{org_id}/feeds/{feed_id}": {"get", "patch", "delete"}, "/console/orgs/{org_id}/feeds/{feed_id}/poll": {"post"}} {
		for _, m := range methods {
			if doc.Paths[path][m] == nil {
				t.Errorf("/openapi.json lacks %s %s", m, path)
			}
		}
	}
}
