package eventstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// An imported record that duplicates a report already on the network merges into it
// (docs/interop.md §11) without deadlocking on the store's striped locks: here the survivor's
// id falls on the same stripe as the imported event's, which made the import wait for itself.
func TestImportMergesIntoAnEventOfTheSameLockStripe(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	s, err := New(tab, Options{IDKey: []byte("0123456789abcdef0123456789abcdef"), Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stripe := func(id string) uint64 { return maphash.String(s.seed, id) % uint64(len(s.locks)) }
	publisher := Caller{Org: "org_fleet", Environment: event.EnvironmentLive}
	survivor, _, err := s.Publish(ctx, publisher, event.EventIn{Type: "object_on_road", Lat: 48.1, Lon: 11.5})
	if err != nil {
		t.Fatal(err)
	}
	// A record id whose event shares the survivor's stripe.
	feed := Caller{Org: "org_authority", Environment: event.EnvironmentLive}
	p := Provenance{FeedID: "fd_city", Fetched: tab.Clock.Now()}
	upstream := ""
	for i := 0; upstream == ""; i++ {
		if id := fmt.Sprint("rec-", i); stripe(s.FeedEventID(feed.Org, p.FeedID, id)) == stripe(survivor.ID) {
			upstream = id
		}
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Import(ctx, feed, p, interop.Record{UpstreamID: upstream, In: event.EventIn{Type: "object_on_road", Lat: 48.1, Lon: 11.5}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the import of a duplicate is still waiting after 10 s: it holds the lock its merge needs")
	}
	ev, _, err := s.load(ctx, s.FeedEventID(feed.Org, p.FeedID, upstream))
	if err != nil || ev.Status != event.StatusMerged || ev.MergedInto == nil || *ev.MergedInto != survivor.ID {
		t.Errorf("the imported duplicate is %+v, %v; want merged into %s", ev, err, survivor.ID)
	}
}
