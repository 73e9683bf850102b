package feedpoll_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feedpoll"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// cifs500 is a CIFS document of 500 hazards spread over a city, each a 30 m line.
func cifs500(shift float64) string {
	parts := make([]string, 500)
	for i := range parts {
		lat, lon := 48.05+float64(i/25)*0.01+shift, 11.45+float64(i%25)*0.01
		parts[i] = fmt.Sprintf(`{"incident":{"id":"h%d","type":"HAZARD","subtype":"HAZARD_ON_ROAD_OBJECT","street":"B%d",`+
			`"polyline":"%.5f %.5f %.5f %.5f","direction":"ONE_DIRECTION"}}`, i, i%300, lat, lon, lat+0.0003, lon)
	}
	return `{"incidents":[` + strings.Join(parts, ",") + `]}`
}

// BenchmarkSync500 polls a feed of 500 records on the embedded store (docs/interop.md §12):
// a first poll, which creates every event; a poll of the same document served again, which
// compares each record and writes nothing; a poll that moves every record (500 revisions); and
// a 304.
func BenchmarkSync500(b *testing.B) {
	for _, c := range []struct {
		name  string
		docs  func(i int) string
		fresh bool // every iteration starts from no state
		etag  bool
	}{
		// Each iteration's feed lies elsewhere, so that its records merge into none of the last.
		{"created", func(i int) string { return cifs500(float64(i%100) * 0.3) }, true, false},
		{"unchanged", func(int) string { return cifs500(0) }, false, false},
		{"revised", func(i int) string { return cifs500(float64(i%2+1) * 0.0001) }, false, false},
		{"not-modified", func(int) string { return cifs500(0) }, false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			tab := tables.Embedded(b)
			s, err := eventstore.New(tab, eventstore.Options{IDKey: idKey, Clock: tab.Clock})
			if err != nil {
				b.Fatal(err)
			}
			var doc string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.etag && r.Header.Get("If-None-Match") == `"v"` {
					w.WriteHeader(http.StatusNotModified)
					return
				}
				w.Header().Set("ETag", `"v"`)
				w.Write([]byte(doc))
			}))
			defer srv.Close()
			fetcher := feeds.NewFetcher(feeds.Options{AllowPrivate: true})
			feed := feeds.Feed{ID: "fd_bench", Org: "org_bench", Environment: apikey.Live, URL: srv.URL, Format: interop.CIFS}
			doc = c.docs(0)
			st, h := feedpoll.Sync(context.Background(), fetcher, s, tab.Clock.Now(), feed, feeds.State{})
			if h.Created != 500 {
				b.Fatalf("first poll %+v; want 500 created", h)
			}
			i := 0
			for b.Loop() {
				i++
				doc = c.docs(i)
				if c.fresh {
					feed.ID = fmt.Sprintf("fd_bench%d", i)
					st = feeds.State{}
				}
				if !c.etag {
					st.Validators = feeds.Validators{}
				}
				var h feeds.Health
				st, h = feedpoll.Sync(context.Background(), fetcher, s, tab.Clock.Now(), feed, st)
				if h.Err != "" || h.Skipped != 0 {
					b.Fatalf("poll %+v", h)
				}
			}
		})
	}
}
