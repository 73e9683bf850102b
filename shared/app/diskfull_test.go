package app_test

import (
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/store/embedded/disktest"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/operations.md §2: when the disk of the embedded store is full, publishing and console
// writes answer 503 with Retry-After, reads go on answering 200, and once there is room the
// next write succeeds without a restart; after a restart every acknowledged write is there and
// no refused one is.
func TestEmbeddedDiskFull(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), config.EmbeddedStoreFile)
	clk := clock.NewFake(tables.Start)
	cfg := apptest.Config()
	inbox := &consoletest.Inbox{}
	serve := func(opts embedded.Options) (apitest.Client, *embedded.Store) {
		opts.Clock, opts.SweepInterval = clk, -1
		s, err := embedded.Open(path, opts)
		if err != nil {
			t.Fatalf("embedded.Open = %v", err)
		}
		api := apptest.New(t, app.Deps{Config: cfg, Table: s, Clock: clk, Mailer: inbox})
		return apitest.Client{T: t, Handler: api.Handler()}, s
	}
	disk := &disktest.Disk{}
	c, s := serve(embedded.Options{WALFiles: disk.Files})

	owner := consoletest.SignIn(c, inbox, "owner@example.com").Token
	r := c.Call("POST", "/console/orgs", owner, `{"name":"Full Disk Roads"}`)
	c.Expect(r, http.StatusCreated, orgs.OrganisationSchema, "create an organisation")
	org := apitest.Decode[orgs.Organisation](t, r).OrgID
	r = c.Call("POST", "/console/orgs/"+org+"/keys", owner, `{"label":"k","environment":"live"}`)
	c.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue a key")
	key := apitest.Decode[orgs.IssuedKey](t, r).Key
	publish := func(id string) apitest.Response {
		return c.Call("POST", "/v1/events", key, `{"type":"object_on_road","lat":48.85,"lon":2.35,"client_event_id":"`+id+`"}`)
	}
	r = publish("before")
	c.Expect(r, http.StatusCreated, nil, "publish before the disk is full")
	before := apitest.Decode[struct {
		EventID string `json:"event_id"`
	}](t, r).EventID

	disk.SetFull(true)
	for _, w := range []struct {
		name string
		r    apitest.Response
	}{
		{"publish", publish("refused")},
		{"create an organisation", c.Call("POST", "/console/orgs", owner, `{"name":"Refused Roads"}`)},
		{"rename the organisation", c.Call("PATCH", "/console/orgs/"+org, owner, `{"name":"Refused"}`)},
	} {
		c.ExpectDetail(w.r, http.StatusServiceUnavailable, w.name+" on a full disk")
		if s, err := strconv.Atoi(w.r.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Errorf("%s on a full disk: Retry-After %q; want whole seconds", w.name, w.r.Header.Get("Retry-After"))
		}
	}
	for _, path := range []string{"/v1/events/" + before, "/v1/events?lat=48.85&lon=2.35"} {
		c.Expect(c.Call("GET", path, key, ""), http.StatusOK, nil, "GET "+path+" on a full disk")
	}
	r = c.Call("GET", "/console/orgs", owner, "")
	c.Expect(r, http.StatusOK, nil, "list organisations on a full disk")
	if got := apitest.Decode[[]orgs.Organisation](t, r); len(got) != 1 || got[0].Name != "Full Disk Roads" {
		t.Errorf("organisations on a full disk = %+v; want only Full Disk Roads, unrenamed", got)
	}

	disk.SetFull(false)
	c.Expect(publish("after"), http.StatusCreated, nil, "publish once the disk has room")
	c.Expect(c.Call("POST", "/console/orgs", owner, `{"name":"Second Roads"}`), http.StatusCreated, nil,
		"create an organisation once the disk has room")

	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	c, s = serve(embedded.Options{})
	t.Cleanup(func() { s.Close() })
	// A publish repeated with its client_event_id replays what was stored (200) and creates
	// what was not (201, docs/api.md §4.1 rule 1).
	c.Expect(publish("before"), http.StatusOK, nil, "publish before again after the restart")
	c.Expect(publish("after"), http.StatusOK, nil, "publish after again after the restart")
	c.Expect(publish("refused"), http.StatusCreated, nil, "publish the refused one again after the restart")
	r = c.Call("GET", "/console/orgs", owner, "")
	c.Expect(r, http.StatusOK, nil, "list organisations after the restart")
	var names []string
	for _, o := range apitest.Decode[[]orgs.Organisation](t, r) {
		names = append(names, o.Name)
	}
	if len(names) != 2 {
		t.Errorf("organisations after the restart = %v; want Full Disk Roads and Second Roads", names)
	}
}
