package feeds_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

var idKey = []byte("0123456789abcdef0123456789abcdef")

// upstream serves testdata/<name> with an ETag of its name, 304 for it, or 500 when broken.
type upstream struct {
	srv    *httptest.Server
	doc    atomic.Value // file name
	broken atomic.Bool
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.broken.Load() {
			http.Error(w, "upstream down", http.StatusInternalServerError)
			return
		}
		name := u.doc.Load().(string)
		etag := `"` + name + `"`
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("ETag", etag)
		w.Write(b)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// docs/interop.md §12: polls of a CIFS feed over time. The first imports the records it can
// read and counts the rest; the next revises the record that moved, ends the one that left the
// feed and imports the new one; an unchanged document is a 304 that writes nothing; a broken
// upstream keeps every event and says why; a record whose end passes ends its event.
func TestSyncFollowsAFeed(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		s, err := eventstore.New(tab, eventstore.Options{IDKey: idKey, Clock: tab.Clock})
		if err != nil {
			t.Fatal(err)
		}
		up := newUpstream(t)
		fetcher := feeds.NewFetcher(feeds.Options{AllowPrivate: true})
		feed := feeds.Feed{ID: "fd_a99", Org: "org_authority", Environment: apikey.Live, URL: up.srv.URL + "/feed.json",
			Format: interop.CIFS, License: "CC BY 4.0"}
		c := eventstore.Caller{Org: feed.Org, Environment: feed.Environment}
		ctx := context.Background()
		poll := func(st feeds.State) (feeds.State, feeds.Health) {
			return feeds.Sync(ctx, fetcher, s, tab.Clock.Now(), feed, st)
		}
		get := func(upstreamID string) (status string, lat float64) {
			ev, err := s.Get(ctx, c, s.FeedEventID(feed.Org, feed.ID, upstreamID))
			if err != nil {
				t.Fatalf("event of %s: %v", upstreamID, err)
			}
			return ev.Public(tab.Clock.Now()).Status, ev.Lat
		}

		up.doc.Store("motorway-1.json")
		st, h := poll(feeds.State{})
		if h.Err != "" || h.Created != 3 || h.Skipped != 3 || len(st.Known) != 3 {
			t.Fatalf("first poll %+v, %d known; want 3 created, 3 skipped (chit-chat, a latitude of 95, no id)", h, len(st.Known))
		}
		if _, lat := get("mw-101"); lat != 48.1504 {
			t.Errorf("mw-101 at %v; want its polyline's end, 48.1504", lat)
		}

		tab.Clock.Advance(10 * time.Minute)
		up.doc.Store("motorway-2.json")
		st, h = poll(st)
		if h.Err != "" || h.Created != 1 || h.Revised != 1 || h.Unchanged != 1 || h.Ended != 1 {
			t.Fatalf("second poll %+v; want mw-106 created, mw-101 revised, mw-103 unchanged, mw-102 ended", h)
		}
		if status, lat := get("mw-101"); status != "active" || lat != 48.1514 {
			t.Errorf("mw-101 %s at %v; want active at 48.1514", status, lat)
		}
		if status, _ := get("mw-102"); status != "expired" {
			t.Errorf("mw-102, gone from the feed, is %s; want expired", status)
		}

		st, h = poll(st)
		if !h.NotModified || h.Created+h.Revised+h.Unchanged+h.Ended != 0 {
			t.Errorf("unchanged document: %+v; want not modified and nothing done", h)
		}

		up.broken.Store(true)
		st2, h := poll(st)
		if !strings.Contains(h.Err, "500") || len(st2.Known) != 3 {
			t.Errorf("broken upstream: %+v; want the error kept and the state as it was", h)
		}
		if status, _ := get("mw-106"); status != "active" {
			t.Errorf("mw-106 during the outage is %s; want active", status)
		}

		up.broken.Store(false)
		up.doc.Store("motorway-2.json")
		tab.Clock.Advance(2*time.Hour + 20*time.Minute) // 02:30: mw-101 ended at 02:00
		st.Validators = feeds.Validators{}
		_, h = poll(st)
		if h.Ended != 1 {
			t.Errorf("after mw-101's end: %+v; want it ended", h)
		}
		if status, _ := get("mw-101"); status != "expired" {
			t.Errorf("mw-101 after its end is %s; want expired", status)
		}
	})
}
