package feedpoll_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feedpoll"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/interop.md §12: a deployment's export, polled as a feed by another deployment, gives
// the same events there: for each format, the events it carries, with their type, point, line
// and expiry (to the second). Through HTTP on both ends, on both stores.
func TestExportPolledAsAFeed(t *testing.T) {
	tables.Each(t, func(t *testing.T, source tables.Table) {
		discard := slog.New(slog.NewJSONHandler(io.Discard, nil))
		keys := apikey.New(source, apikey.Options{Clock: source.Clock, Logger: discard})
		cfg := config.Default()
		cfg.EventIDKey = idKey
		cfg.Export = config.Export{Publisher: "Autobahn Süd", Country: "DE"}
		api := apptest.New(t, app.Deps{Config: cfg, Table: source, Clock: source.Clock, Logger: discard, Keys: keys,
			Meter: metering.New(source, metering.Options{Clock: source.Clock, Logger: discard, FlushInterval: -1})}, routetable.GroupEvents)
		srv := httptest.NewServer(api.Handler())
		defer srv.Close()
		key, _, err := keys.Issue(context.Background(), apikey.IssueRequest{OrgID: "org_source", Environment: apikey.Live, Label: "export"})
		if err != nil {
			t.Fatal(err)
		}
		call := func(method, path, body string) []byte {
			req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode >= 300 {
				t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
			}
			return b
		}
		for _, body := range []string{
			`{"type":"accident","lat":48.137,"lon":11.575,"heading":90,"road_ref":"A9"}`,
			`{"type":"congestion","lat":48.14,"lon":11.58,"geometry":{"type":"LineString","coordinates":[[11.58,48.14],[11.59,48.145],[11.6,48.15]]}}`,
			`{"type":"roadworks","lat":48.135,"lon":11.57,"subtype":"mobile_crew"}`,
			`{"type":"wrong_way_vehicle","lat":48.138,"lon":11.576,"heading":180}`,
		} {
			call("POST", "/v1/events", body)
		}
		var published []event.EventPublic
		if err := json.Unmarshal(call("GET", "/v1/events?lat=48.137&lon=11.575&radius=5000", ""), &published); err != nil || len(published) != 4 {
			t.Fatalf("published %d events, %v; want 4", len(published), err)
		}

		fetcher := feeds.NewFetcher(feeds.Options{AllowPrivate: true})
		for _, f := range interop.Formats {
			// A deployment of its own per format: imports of one hazard from two feeds
			// would merge (docs/network.md §1).
			dest := tables.Embedded(t)
			if source.Adapter == tables.AdapterDynamoDB {
				dest = tables.DynamoDB(t)
			}
			s, err := eventstore.New(dest, eventstore.Options{IDKey: idKey, Clock: dest.Clock})
			if err != nil {
				t.Fatal(err)
			}
			doc := call("GET", "/v1/exports/"+string(f)+"?lat=48.137&lon=11.575&radius=5000", "")
			// The deployment's publisher names the document (docs/interop.md §7).
			if want := map[interop.Format]string{interop.WZDx: `"publisher":"Autobahn Süd"`, interop.TDx: `"publisher":"Autobahn Süd"`,
				interop.DATEX2: `"country":"DE"`}[f]; !strings.Contains(string(doc), want) {
				t.Errorf("%s export names no %s", f, want)
			}
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(doc) }))
			feed := feeds.Feed{ID: "fd_" + string(f), Org: "org_mirror", Environment: apikey.Live, URL: up.URL, Format: f}
			st, h := feedpoll.Sync(context.Background(), fetcher, s, dest.Clock.Now(), feed, feeds.State{})
			up.Close()
			if h.Err != "" || h.Skipped != 0 || h.Created == 0 {
				t.Fatalf("%s: poll %+v; want every record imported", f, h)
			}
			for id := range st.Known {
				got, err := s.Get(context.Background(), eventstore.Caller{Org: "org_mirror", Environment: apikey.Live}, id)
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(published, func(e event.EventPublic) bool { return s.FeedEventID("org_mirror", feed.ID, e.EventID) == id })
				if i < 0 {
					t.Fatalf("%s: event %s is of no published event", f, id)
				}
				want, pub := published[i], got.Public(dest.Clock.Now())
				expires, _ := time.Parse(time.RFC3339Nano, want.ExpiresAt)
				if pub.Type != want.Type || pub.Lat != want.Lat || pub.Lon != want.Lon || !sameLine(pub.Geometry, want.Geometry) ||
					!got.ExpiresAt.Equal(expires.Truncate(time.Second)) || pub.SourceKind != "feed" {
					t.Errorf("%s: %s read back as %+v; want %+v", f, id, pub, want)
				}
			}
		}
	})
}

func sameLine(a, b *event.LineString) bool {
	return (a == nil) == (b == nil) && (a == nil || slices.Equal(a.Coordinates, b.Coordinates))
}
