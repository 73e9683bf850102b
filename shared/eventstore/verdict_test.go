package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/network.md §2: a verdict invalidates the publisher's active events of its environment
// published since its start, and no other. A publish that is retried lists its event again,
// before finding it stored, when the listing is written apart from the event (ListApart, as on
// DynamoDB): a replay, an hour later, and the same client_event_id used in the other
// environment. Neither listing may bring the event under a verdict it does not fall under; and
// with the listing inside the publish transaction, the one publish must still be listed.
func TestVerdictGoesByTheEventNotItsListings(t *testing.T) {
	t.Parallel()
	for _, apart := range []bool{false, true} {
		t.Run(fmt.Sprintf("ListApart=%v", apart), func(t *testing.T) {
			t.Parallel()
			tables.Each(t, func(t *testing.T, tab tables.Table) {
				t.Parallel()
				verdictByEvent(t, tab, apart)
			})
		})
	}
}

func verdictByEvent(t *testing.T, tab tables.Table, listApart bool) {
	s, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock, ListApart: listApart})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	org := eventstore.Caller{Org: "org_a", Environment: event.EnvironmentLive}
	cid := "fleet-1"
	in := event.EventIn{Type: "road_damage", Lat: 50.1, Lon: 8.7, ClientEventID: &cid}
	ev, _, err := s.Publish(ctx, org, in)
	if err != nil {
		t.Fatal(err)
	}
	tab.Clock.Advance(time.Hour)
	since := tab.Clock.Now()
	if _, created, err := s.Publish(ctx, org, in); err != nil || created {
		t.Fatalf("replay: created %v, %v; want the stored event", created, err)
	}
	if _, _, err := s.Publish(ctx, eventstore.Caller{Org: "org_a", Environment: event.EnvironmentSandbox}, in); !errors.Is(err, event.ErrOtherEnvironment) {
		t.Fatalf("publish in sandbox = %v; want ErrOtherEnvironment", err)
	}
	if n, err := s.InvalidateOrg(ctx, "org_a", event.EnvironmentSandbox, time.Time{}, "sandbox verdict"); err != nil || n != 0 {
		t.Errorf("sandbox verdict invalidated %d, %v; want none (the event is live)", n, err)
	}
	if n, err := s.InvalidateOrg(ctx, "org_a", event.EnvironmentLive, since, "since the replay"); err != nil || n != 0 {
		t.Errorf("verdict since %v invalidated %d, %v; want none (the event is older)", since, n, err)
	}
	if n, err := s.InvalidateOrg(ctx, "org_a", event.EnvironmentLive, time.Time{}, "every event"); err != nil || n != 1 {
		t.Errorf("verdict on every event invalidated %d, %v; want the one event", n, err)
	}
	if got, err := s.Get(ctx, org, ev.ID); err != nil || got.Status != event.StatusInvalidated {
		t.Errorf("after the verdicts: %v, %v; want invalidated", got.Status, err)
	}
}

// A publish that merges with nothing waits for one write, the listing riding in its
// transaction, unless ListApart asks for the listing on its own (docs/operations.md §5): what a
// publish waits for on the embedded store is mostly its syncs (docs/performance.md §6).
func TestPublishWritesOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		listApart bool
		writes    int64
	}{{false, 1}, {true, 2}} {
		t.Run(fmt.Sprintf("ListApart=%v", tc.listApart), func(t *testing.T) {
			t.Parallel()
			tables.Each(t, func(t *testing.T, tab tables.Table) {
				t.Parallel()
				counting := &countingTable{Table: tab}
				s, err := eventstore.New(counting, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock, ListApart: tc.listApart})
				if err != nil {
					t.Fatal(err)
				}
				cid := "fleet-1"
				_, created, err := s.Publish(context.Background(), eventstore.Caller{Org: "org_a", Environment: event.EnvironmentLive},
					event.EventIn{Type: "road_damage", Lat: 50.1, Lon: 8.7, ClientEventID: &cid})
				if err != nil || !created {
					t.Fatalf("publish: created %v, %v", created, err)
				}
				if got := counting.writes.Load(); got != tc.writes {
					t.Errorf("publish made %d write calls; want %d", got, tc.writes)
				}
			})
		})
	}
}
