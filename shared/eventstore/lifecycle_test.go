package eventstore_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §2.1: every type's default TTL, from the documented table (not from the taxonomy
// package, so that a drift between the two fails here).
func TestDefaultTTL(t *testing.T) {
	t.Parallel()
	ttl := map[string]time.Duration{
		"accident": 2 * time.Hour, "stopped_vehicle": time.Hour, "object_on_road": 30 * time.Minute,
		"weather_hazard": 3 * time.Hour, "congestion": 30 * time.Minute, "wrong_way_vehicle": 20 * time.Minute,
		"road_damage": 12 * time.Hour, "people_on_road": 30 * time.Minute, "police_check": 30 * time.Minute,
		"speed_camera": time.Hour, "road_closure": 2 * time.Hour, "infrastructure_fault": 6 * time.Hour,
		"roadworks": 4 * time.Hour,
	}
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		for typ, want := range ttl {
			e := h.publish(key, point(typ, 10, 10))
			if got := e.ExpiresAt.Sub(e.CreatedAt); got != want {
				t.Errorf("%s: expires_at - created_at = %v; want %v", typ, got, want)
			}
		}
	})
}

// docs/api.md §2.1 and §10.2: a first confirmation from a new reporter extends expiry to at least
// now + the type's extension, capped at created_at + the ceiling; an unconfirmed report expires on
// schedule (docs/api.md §2.1 rule 3). Each case keeps an event alive with a new reporter a minute
// before each expiry until the ceiling stops it, on the injected clock.
func TestExtensionAndCeiling(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ               string
		ttl, ext, ceiling time.Duration
	}{
		{"accident", 2 * time.Hour, 15 * time.Minute, 12 * time.Hour}, // the 15-minute rule
		{"road_damage", 12 * time.Hour, 12 * time.Hour, 30 * 24 * time.Hour},
		{"speed_camera", time.Hour, 2 * time.Hour, 7 * 24 * time.Hour},
		{"infrastructure_fault", 6 * time.Hour, 6 * time.Hour, 7 * 24 * time.Hour},
	}
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		// The cases run one after the other on one clock, which only moves forward.
		for _, c := range cases {
			t.Run(c.typ, func(t *testing.T) {
				signal := func(id, token string) publicEvent {
					t.Helper()
					return h.do("POST", "/v1/events/"+id+"/signals", key, map[string]any{
						"action": "confirm", "reporter_token": token}).event(t, http.StatusOK)
				}
				e := h.publish(key, point(c.typ, 20, 20))
				created, expires := e.CreatedAt, e.ExpiresAt
				if expires.Sub(created) != c.ttl {
					t.Fatalf("initial expiry %v after creation; want %v", expires.Sub(created), c.ttl)
				}
				limit := created.Add(c.ceiling)
				// Within the TTL a confirmation extends to now + extension only when that is later.
				tab.Clock.Advance(time.Minute)
				got := signal(e.EventID, "first")
				if want := maxTime(expires, tab.Clock.Now().Add(c.ext)); !got.ExpiresAt.Equal(want) {
					t.Fatalf("first confirmation a minute in: expires_at %v; want %v", got.ExpiresAt, want)
				}
				expires = got.ExpiresAt
				// The same reporter again extends nothing, even after changing its mind.
				h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{"action": "deny", "reporter_token": "first"}).expect(t, http.StatusOK)
				if again := signal(e.EventID, "first"); !again.ExpiresAt.Equal(expires) {
					t.Fatalf("same reporter confirming again: expires_at %v; want %v unchanged", again.ExpiresAt, expires)
				}
				for step := 0; !expires.Equal(limit); step++ {
					if step > 1000 {
						t.Fatalf("expiry never reached the ceiling %v (now %v)", limit, expires)
					}
					tab.Clock.Set(expires.Add(-time.Minute))
					got := signal(e.EventID, fmt.Sprint("r", step))
					want := tab.Clock.Now().Add(c.ext)
					if want.After(limit) {
						want = limit
					}
					if !got.ExpiresAt.Equal(want) {
						t.Fatalf("step %d at %v: expires_at %v; want %v", step, tab.Clock.Now(), got.ExpiresAt, want)
					}
					expires = got.ExpiresAt
				}
				// At the ceiling a new reporter extends no more, and the event then expires.
				tab.Clock.Set(limit.Add(-time.Second))
				if got := signal(e.EventID, "late"); !got.ExpiresAt.Equal(limit) || got.Status != "active" {
					t.Fatalf("at the ceiling: %v %s; want %v, active", got.ExpiresAt, got.Status, limit)
				}
				tab.Clock.Set(limit)
				if got := h.do("GET", "/v1/events/"+e.EventID, key, nil).event(t, http.StatusOK); got.Status != "expired" {
					t.Errorf("at created_at + ceiling: status %s; want expired", got.Status)
				}
				h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{"action": "confirm", "reporter_token": "after"}).
					detail(t, http.StatusConflict)
			})
		}
	})
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// docs/api.md §3: natural expiry happens when expires_at is reached, with no sweeper: the event is
// readable by id as expired and gone from GET /v1/events at that very moment (the
// table deletes expired items late, so every read filters on expires_at itself).
func TestNaturalExpiry(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		e := h.publish(key, point("wrong_way_vehicle", 30, 30))
		tab.Clock.Set(e.ExpiresAt.Add(-time.Millisecond))
		if got := h.area(key, q(30, 30)); len(got) != 1 || got[0].Status != "active" {
			t.Fatalf("a millisecond before expiry: %+v; want the active event", got)
		}
		tab.Clock.Set(e.ExpiresAt)
		if got := h.area(key, q(30, 30)); len(got) != 0 {
			t.Errorf("at expires_at: listed %v; want nothing", ids(got))
		}
		got := h.do("GET", "/v1/events/"+e.EventID, key, nil).event(t, http.StatusOK)
		if got.Status != "expired" || !got.ExpiresAt.Equal(e.ExpiresAt) {
			t.Errorf("GET at expires_at: status %s, expires_at %v; want expired, %v", got.Status, got.ExpiresAt, e.ExpiresAt)
		}
		// docs/api.md §10.2: kept, and readable, at least 7 days after it left active.
		tab.Clock.Advance(7*24*time.Hour + time.Minute)
		if got := h.do("GET", "/v1/events/"+e.EventID, key, nil).event(t, http.StatusOK); got.Status != "expired" {
			t.Errorf("7 days after expiry: status %s; want expired", got.Status)
		}
	})
}

// docs/api.md §10.2: a revision sets expires_at = min(now + default TTL, created_at + ceiling).
func TestRevisionCappedAtTheCeiling(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		e := h.publish(key, point("speed_camera", 5, 5))
		// Keep it alive with confirmations (2 h each) to near its 7-day ceiling.
		limit := e.CreatedAt.Add(7 * 24 * time.Hour)
		expires := e.ExpiresAt
		for i := 0; expires.Before(limit); i++ {
			tab.Clock.Set(expires.Add(-time.Minute))
			expires = h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{
				"action": "confirm", "reporter_token": fmt.Sprint("v", i)}).event(t, http.StatusOK).ExpiresAt
		}
		tab.Clock.Set(limit.Add(-20 * time.Minute))
		got := h.do("POST", "/v1/events/"+e.EventID+"/revisions", key, map[string]any{"lat": 5.001, "lon": 5}).event(t, http.StatusOK)
		if !got.ExpiresAt.Equal(limit) {
			t.Errorf("revision 20 minutes before the ceiling: expires_at %v; want the ceiling %v", got.ExpiresAt, limit)
		}
	})
}
