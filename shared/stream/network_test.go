package stream_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
)

// checkMergedInto fails unless ev was merged into survivor (docs/network.md §1).
func checkMergedInto(t testing.TB, ev event.EventPublic, survivor string) {
	t.Helper()
	if ev.Status != event.StatusMerged || ev.MergedInto == nil || *ev.MergedInto != survivor {
		t.Errorf("%s: status %s, merged_into %v; want merged into %s", ev.EventID, ev.Status, ev.MergedInto, survivor)
	}
}

// docs/network.md §1 and docs/api.md §10.2 (Stream): a report merged as it is published is never
// shown as active, so it sends no created delta; the survivor's new confirmation sends its
// signal delta.
func TestMergedAtBirthSendsNoCreated(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
		surv := r.publish(t, r.liveKey, "accident", center)
		expectDelta(t, s, stream.KindCreated, surv.EventID)

		dup := r.publish(t, r.otherKey, "accident", offset(center, 40))
		checkMergedInto(t, dup, surv.EventID)
		if got := expectDelta(t, s, stream.KindSignal, surv.EventID); got.ConfirmCount != 1 {
			t.Errorf("survivor's signal delta: confirm_count %d; want 1", got.ConfirmCount)
		}
		marker := r.publish(t, r.liveKey, "road_damage", offset(center, 500))
		expectDelta(t, s, stream.KindCreated, marker.EventID) // and nothing for the duplicate before it
	})
}

// docs/network.md §1 and docs/api.md §10.2 (Stream): an active report that a revision makes a
// duplicate leaves active: an ended delta with status merged, beside the survivor's signal
// delta (one transaction: either may come first).
func TestMergeByRevisionSendsEnded(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
		surv := r.publish(t, r.liveKey, "accident", center)
		expectDelta(t, s, stream.KindCreated, surv.EventID)
		other := r.publish(t, r.otherKey, "accident", offset(center, 400)) // beyond the merge distance
		expectDelta(t, s, stream.KindCreated, other.EventID)

		checkMergedInto(t, r.revise(t, r.otherKey, other.EventID, offset(center, 20)), surv.EventID)
		seen := map[string]stream.Kind{}
		for range 2 {
			kind, ev := deltaOf(t, s)
			seen[ev.EventID] = kind
			switch ev.EventID {
			case other.EventID:
				checkMergedInto(t, ev, surv.EventID)
			case surv.EventID:
				if ev.ConfirmCount != 1 {
					t.Errorf("survivor's delta: confirm_count %d; want 1", ev.ConfirmCount)
				}
			}
		}
		if seen[other.EventID] != stream.KindEnded || seen[surv.EventID] != stream.KindSignal {
			t.Errorf("deltas %v; want ended for %s and signal for %s", seen, other.EventID, surv.EventID)
		}
		marker := r.publish(t, r.liveKey, "road_damage", offset(center, 500))
		expectDelta(t, s, stream.KindCreated, marker.EventID)
	})
}

// docs/network.md §3 and docs/api.md §10.2 (Stream): a closed event sends an ended delta with
// status expired and expires_at at the close.
func TestCloseSendsEnded(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
		ev := r.publish(t, r.liveKey, "accident", center)
		expectDelta(t, s, stream.KindCreated, ev.EventID)
		status, body, _ := r.do(t, http.MethodPost, "/v1/events/"+ev.EventID+"/close", r.liveKey, map[string]any{})
		if status != http.StatusOK {
			t.Fatalf("close: %d %s", status, body)
		}
		got := expectDelta(t, s, stream.KindEnded, ev.EventID)
		if got.Status != event.StatusExpired || got.ExpiresAt != event.FormatTime(tab.Clock.Now()) {
			t.Errorf("ended delta: status %s, expires_at %v; want expired at %v", got.Status, got.ExpiresAt, tab.Clock.Now())
		}
	})
}

// docs/network.md §1 (concurrent reports): 20 organisations publishing one hazard at once show a
// subscriber one event: one created delta, then a signal delta per duplicate merged into it.
func TestMergeRaceStreamsOneEvent(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
		const n = 20
		keys := make([]string, n)
		for i := range keys {
			keys[i] = r.issue(t, fmt.Sprintf("org_%02d", i), apikey.Live)
		}
		published := make([]event.EventPublic, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, key := range keys {
			wg.Go(func() {
				<-start
				p := offset(center, float64(i))
				status, body, _ := r.do(t, http.MethodPost, "/v1/events", key, map[string]any{"type": "accident", "lat": p.Lat, "lon": p.Lon})
				if status != http.StatusCreated {
					t.Errorf("publish by org %d: %d %s; want 201", i, status, body)
					return
				}
				if err := json.Unmarshal(body, &published[i]); err != nil {
					t.Errorf("decode %s: %v", body, err)
				}
			})
		}
		close(start)
		wg.Wait()
		var survivor string
		for _, ev := range published {
			if ev.Status == event.StatusActive {
				if survivor != "" {
					t.Fatalf("active reports %s and %s; want one", survivor, ev.EventID)
				}
				survivor = ev.EventID
			}
		}
		if survivor == "" {
			t.Fatal("no report stayed active")
		}

		marker := r.publish(t, r.liveKey, "road_damage", offset(center, 500))
		counts := map[stream.Kind]int{}
		for {
			kind, ev := deltaOf(t, s)
			if ev.EventID == marker.EventID {
				break
			}
			if ev.EventID != survivor {
				t.Errorf("delta %s of %s; want deltas of the survivor %s only", kind, ev.EventID, survivor)
			}
			counts[kind]++
		}
		if counts[stream.KindCreated] != 1 || counts[stream.KindSignal] != n-1 || len(counts) != 2 {
			t.Errorf("deltas of the survivor %v; want 1 created and %d signal", counts, n-1)
		}
	})
}
