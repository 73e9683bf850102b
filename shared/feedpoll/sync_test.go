package feedpoll_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feedpoll"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/store"
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
			return feedpoll.Sync(ctx, fetcher, s, tab.Clock.Now(), feed, st)
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

// docs/interop.md §9, §12: the polls of TestSyncFollowsAFeed for each of the other formats,
// on fixtures of their own: a WZDx work-zone feed, a TDx incident feed and a DATEX II SRTI
// publication. The first poll imports the records the format can say as ours, where and what
// the document says, and counts those it cannot read (no id, a type we have no word for, a
// position out of range or a malformed line); the next revises the record that moved, leaves
// the unchanged ones, ends the one that left the feed and imports the new one; a 304 writes
// nothing; a broken upstream keeps every event and says why; a record whose end passes ends
// its event.
func TestSyncFollowsEachFormat(t *testing.T) {
	type place struct{ lat, lon float64 }
	for _, tc := range []struct {
		format interop.Format
		// The first document: what it creates and skips (and why, for the failure message),
		// and one of its events as the document says it.
		doc1             string
		created, skipped int
		skips            string
		probe            string
		typ, subtype     string
		at               place
		heading          int // -1: none
		// The second document: the record that moved and where to, the one that left, the
		// one that came, how many stay as they were and how many it skips.
		doc2                 string
		moved                string
		movedTo              place
		removed, added       string
		unchanged2, skipped2 int
		// A record of the second document whose end comes soon after.
		ends   string
		endsAt time.Time
	}{{
		format: interop.WZDx,
		doc1:   "wzdx-1.json", created: 3, skipped: 3,
		skips: "a detour, a work zone without an id, one with its positions written [lat, lon]",
		probe: "wz-311", typ: "roadworks", subtype: "mobile_crew", at: place{41.5012, -100.24952}, heading: 90,
		doc2: "wzdx-2.json", moved: "wz-310", movedTo: place{41.5276, -100.21835},
		removed: "wz-312", added: "wz-313", unchanged2: 1, skipped2: 1,
		ends: "wz-311", endsAt: time.Date(2040, 1, 1, 1, 30, 0, 0, time.UTC),
	}, {
		format: interop.TDx,
		doc1:   "tdx-1.json", created: 4, skipped: 3,
		skips: "a numeric id, a parade, a longitude of -197.6",
		probe: "inc-7002", typ: "weather_hazard", subtype: "gusts", at: place{38.9, -97.7}, heading: -1,
		doc2: "tdx-2.json", moved: "inc-7001", movedTo: place{38.84137, -97.61195},
		removed: "inc-7003", added: "inc-7005", unchanged2: 2, skipped2: 0,
		ends: "inc-7001", endsAt: time.Date(2040, 1, 1, 1, 30, 0, 0, time.UTC),
	}, {
		format: interop.DATEX2,
		doc1:   "datex2-1.json", created: 3, skipped: 3,
		skips: "an AbnormalTraffic queue, an obstruction without idG, a posList of three numbers",
		probe: "VRTC-R-0001-A", typ: "accident", at: place{52.1045, 5.9123}, heading: 270,
		doc2: "datex2-2.json", moved: "VRTC-R-0001-A", movedTo: place{52.1046, 5.9108},
		removed: "VRTC-R-0002", added: "VRTC-R-0006", unchanged2: 1, skipped2: 1,
		ends: "VRTC-R-0006", endsAt: time.Date(2040, 1, 1, 1, 30, 0, 0, time.UTC),
	}} {
		t.Run(string(tc.format), func(t *testing.T) {
			tables.Each(t, func(t *testing.T, tab tables.Table) {
				s, err := eventstore.New(tab, eventstore.Options{IDKey: idKey, Clock: tab.Clock})
				if err != nil {
					t.Fatal(err)
				}
				up := newUpstream(t)
				fetcher := feeds.NewFetcher(feeds.Options{AllowPrivate: true})
				feed := feeds.Feed{ID: "fd_" + string(tc.format), Org: "org_authority", Environment: apikey.Live,
					URL: up.srv.URL + "/feed.json", Format: tc.format, License: "CC0 1.0"}
				c := eventstore.Caller{Org: feed.Org, Environment: feed.Environment}
				ctx := context.Background()
				poll := func(st feeds.State) (feeds.State, feeds.Health) {
					return feedpoll.Sync(ctx, fetcher, s, tab.Clock.Now(), feed, st)
				}
				get := func(upstreamID string) (status string, ev event.Event) {
					ev, err := s.Get(ctx, c, s.FeedEventID(feed.Org, feed.ID, upstreamID))
					if err != nil {
						t.Fatalf("event of %s: %v", upstreamID, err)
					}
					return ev.Public(tab.Clock.Now()).Status, ev
				}

				up.doc.Store(tc.doc1)
				st, h := poll(feeds.State{})
				if h.Err != "" || h.Created != tc.created || h.Skipped != tc.skipped || h.Revised+h.Unchanged+h.Ended != 0 ||
					len(st.Known) != tc.created {
					t.Fatalf("first poll %+v, %d known; want %d created, %d skipped (%s)", h, len(st.Known), tc.created, tc.skipped, tc.skips)
				}
				status, ev := get(tc.probe)
				heading := -1
				if ev.Heading != nil {
					heading = *ev.Heading
				}
				subtype := ""
				if ev.Subtype != nil {
					subtype = *ev.Subtype
				}
				if status != "active" || ev.Type != tc.typ || subtype != tc.subtype || (place{ev.Lat, ev.Lon}) != tc.at || heading != tc.heading {
					t.Errorf("%s: %s %s/%s at %v heading %d; want active %s/%s at %v heading %d",
						tc.probe, status, ev.Type, subtype, place{ev.Lat, ev.Lon}, heading, tc.typ, tc.subtype, tc.at, tc.heading)
				}

				tab.Clock.Advance(10 * time.Minute)
				up.doc.Store(tc.doc2)
				st, h = poll(st)
				if h.Err != "" || h.Created != 1 || h.Revised != 1 || h.Unchanged != tc.unchanged2 || h.Ended != 1 ||
					h.Skipped != tc.skipped2 || len(st.Known) != 2+tc.unchanged2 {
					t.Fatalf("second poll %+v, %d known; want %s created, %s revised, %d unchanged, %s ended, %d skipped",
						h, len(st.Known), tc.added, tc.moved, tc.unchanged2, tc.removed, tc.skipped2)
				}
				if status, ev := get(tc.moved); status != "active" || (place{ev.Lat, ev.Lon}) != tc.movedTo {
					t.Errorf("%s %s at %v; want active at %v", tc.moved, status, place{ev.Lat, ev.Lon}, tc.movedTo)
				}
				if status, _ := get(tc.removed); status != "expired" {
					t.Errorf("%s, gone from the feed, is %s; want expired", tc.removed, status)
				}
				if status, _ := get(tc.added); status != "active" {
					t.Errorf("%s, new in the feed, is %s; want active", tc.added, status)
				}

				st, h = poll(st)
				if !h.NotModified || h.Err != "" || h.Created+h.Revised+h.Unchanged+h.Skipped+h.Ended != 0 {
					t.Errorf("unchanged document: %+v; want not modified and nothing done", h)
				}

				up.broken.Store(true)
				st2, h := poll(st)
				if !strings.Contains(h.Err, "500") || len(st2.Known) != len(st.Known) {
					t.Errorf("broken upstream: %+v, %d known; want the error kept and the state as it was (%d known)", h, len(st2.Known), len(st.Known))
				}
				for id := range st.Known {
					if ev, err := s.Get(ctx, c, id); err != nil || ev.Public(tab.Clock.Now()).Status != "active" {
						t.Errorf("event %s during the outage: %v, %v; want active", id, ev.Status, err)
					}
				}

				up.broken.Store(false)
				tab.Clock.Advance(tc.endsAt.Add(10 * time.Minute).Sub(tab.Clock.Now()))
				st.Validators = feeds.Validators{}
				next, h := poll(st)
				if h.Err != "" || h.Ended != 1 || len(next.Known) != len(st.Known)-1 {
					t.Errorf("after %s's end: %+v, %d known; want it ended and left out of %d", tc.ends, h, len(next.Known), len(st.Known))
				}
				if status, _ := get(tc.ends); status != "expired" {
					t.Errorf("%s after its end is %s; want expired", tc.ends, status)
				}
			})
		})
	}
}

// flaky is an importer whose table stops answering after some imports.
type flaky struct {
	*eventstore.Store
	left   int
	closed int
}

func (f *flaky) Import(ctx context.Context, c eventstore.Caller, p eventstore.Provenance, rec interop.Record) (event.Event, eventstore.ImportOutcome, error) {
	if f.left == 0 {
		return event.Event{}, eventstore.ImportUnchanged, fmt.Errorf("import %s: %w", rec.UpstreamID, store.ErrUnavailable)
	}
	f.left--
	return f.Store.Import(ctx, c, p, rec)
}

func (f *flaky) Close(ctx context.Context, c eventstore.Caller, id string) (event.Event, error) {
	f.closed++
	return f.Store.Close(ctx, c, id)
}

// docs/interop.md §12: a table that stops answering in the middle of a poll stops the poll; no
// event is ended for the records it could not import, and the next poll reads the document
// again in full.
func TestSyncStopsWhenTheTableFails(t *testing.T) {
	tab := tables.Embedded(t)
	s, err := eventstore.New(tab, eventstore.Options{IDKey: idKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t)
	fetcher := feeds.NewFetcher(feeds.Options{AllowPrivate: true})
	feed := feeds.Feed{ID: "fd_a99", Org: "org_authority", Environment: apikey.Live, URL: up.srv.URL, Format: interop.CIFS}
	up.doc.Store("motorway-1.json")
	st, h := feedpoll.Sync(context.Background(), fetcher, s, tab.Clock.Now(), feed, feeds.State{})
	if h.Created != 3 {
		t.Fatalf("first poll %+v; want 3 created", h)
	}
	tab.Clock.Advance(10 * time.Minute)
	up.doc.Store("motorway-2.json")
	imp := &flaky{Store: s, left: 1}
	next, h := feedpoll.Sync(context.Background(), fetcher, imp, tab.Clock.Now(), feed, st)
	if !strings.Contains(h.Err, "unavailable") || imp.closed != 0 || h.Ended != 0 || len(next.Known) < len(st.Known) ||
		next.Validators != (feeds.Validators{}) {
		t.Errorf("poll with a failing table: %+v, %d closed, %d known, validators %+v; want it stopped, nothing ended, every event "+
			"still known, no validators", h, imp.closed, len(next.Known), next.Validators)
	}
	for id := range st.Known {
		if ev, err := s.Get(context.Background(), eventstore.Caller{Org: feed.Org, Environment: feed.Environment}, id); err != nil ||
			ev.Public(tab.Clock.Now()).Status != "active" {
			t.Errorf("event %s after the failed poll: %v; want active", id, err)
		}
	}
}
