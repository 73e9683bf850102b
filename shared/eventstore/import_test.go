package eventstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/interop.md §11: a feed's record becomes an event of the importing organisation with
// source_kind feed and its provenance, under an id derived from the organisation, the feed and
// the record; its validity is its expiry, within the type's ceiling; a changed record revises
// it, an unchanged one writes nothing, a record already over is refused, and an event the
// network ended stays ended.
func TestImportRecords(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		s, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock})
		if err != nil {
			t.Fatal(err)
		}
		h := newProcess(t, tab)
		key := h.key("org_feed", apikey.Live)
		ctx := context.Background()
		c := eventstore.Caller{Org: "org_feed", Environment: apikey.Live}
		now := tab.Clock.Now()
		p := eventstore.Provenance{FeedID: "fd_motorway", License: "CC BY 4.0", Fetched: now}
		rec := interop.Record{UpstreamID: "inc-17", In: event.EventIn{Type: "accident", Lat: 48.137, Lon: 11.575},
			Start: now.Add(-10 * time.Minute), End: now.Add(time.Hour), Updated: now.Add(-5 * time.Minute)}

		ev, outcome, err := s.Import(ctx, c, p, rec)
		if err != nil || outcome != eventstore.ImportCreated || ev.ID != s.FeedEventID("org_feed", "fd_motorway", "inc-17") {
			t.Fatalf("first import = %s, %v, %v; want created under the derived id", ev.ID, outcome, err)
		}
		var got []struct {
			EventID           string     `json:"event_id"`
			Lat               float64    `json:"lat"`
			SourceKind        string     `json:"source_kind"`
			FeedID            *string    `json:"feed_id"`
			License           *string    `json:"license"`
			UpstreamUpdatedAt *time.Time `json:"upstream_updated_at"`
			FetchedAt         *time.Time `json:"fetched_at"`
			OccurredAt        *time.Time `json:"occurred_at"`
			ExpiresAt         time.Time  `json:"expires_at"`
			UpdatedAt         *time.Time `json:"updated_at"`
		}
		read := func() {
			t.Helper()
			got = nil
			r := h.do("GET", "/v1/events?"+q(48.137, 11.575), key, nil)
			r.expect(t, http.StatusOK)
			if err := json.Unmarshal(r.Body, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("GET /v1/events = %d events; want the imported one", len(got))
			}
		}
		read()
		e := got[0]
		if e.SourceKind != "feed" || e.FeedID == nil || *e.FeedID != "fd_motorway" || e.License == nil || *e.License != "CC BY 4.0" ||
			e.UpstreamUpdatedAt == nil || !e.UpstreamUpdatedAt.Equal(rec.Updated) || e.FetchedAt == nil || !e.FetchedAt.Equal(now) ||
			e.OccurredAt == nil || !e.OccurredAt.Equal(rec.Start) || !e.ExpiresAt.Equal(rec.End) {
			t.Errorf("imported event %+v; want source feed, its provenance, occurred at the record's start, expiring at its end", e)
		}

		if _, outcome, err := s.Import(ctx, c, p, rec); err != nil || outcome != eventstore.ImportUnchanged {
			t.Errorf("the same record again = %v, %v; want unchanged", outcome, err)
		}
		tab.Clock.Advance(time.Minute)
		moved := rec
		moved.In.Lat, moved.Updated, moved.End = 48.1372, now.Add(time.Minute), now.Add(48*time.Hour)
		if _, outcome, err := s.Import(ctx, c, eventstore.Provenance{FeedID: "fd_motorway", Fetched: tab.Clock.Now()}, moved); err != nil || outcome != eventstore.ImportRevised {
			t.Fatalf("the moved record = %v, %v; want revised", outcome, err)
		}
		read()
		if e := got[0]; e.Lat != 48.1372 || e.UpdatedAt == nil || !e.ExpiresAt.Equal(ev.CreatedAt.Add(12*time.Hour)) || e.License != nil {
			t.Errorf("revised event %+v; want the new point, updated_at set, expiry at the 12 h ceiling, no licence", e)
		}

		over := rec
		over.UpstreamID, over.End = "inc-18", tab.Clock.Now().Add(-time.Second)
		if _, _, err := s.Import(ctx, c, p, over); !errors.Is(err, eventstore.ErrRecordOver) {
			t.Errorf("a record already over = %v; want ErrRecordOver", err)
		}
		if _, err := s.Close(ctx, c, ev.ID); err != nil {
			t.Fatal(err)
		}
		if _, outcome, err := s.Import(ctx, c, p, moved); err != nil || outcome != eventstore.ImportOver {
			t.Errorf("a record of a closed event = %v, %v; want it left over", outcome, err)
		}
		if other := s.FeedEventID("org_feed", "fd_other", "inc-17"); other == ev.ID {
			t.Errorf("two feeds' records with one upstream id share the event id %s", other)
		}
	})
}
