package eventstore_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §7, GET /v1/events/{event_id}: any status; 404 for an unknown or malformed id and for
// an event of a network the credential is not served (docs/api.md §4.1 rule 4: never 403).
func TestGet(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		liveKey, sandboxKey := h.key("org_a", live), h.key("org_a", sandbox)
		otherSandbox := h.key("org_b", sandbox)
		l := h.publish(liveKey, point("accident", 1, 1))
		s := h.publish(sandboxKey, point("accident", 1, 1))
		for _, tc := range []struct {
			name, key, id string
			want          int
		}{
			{"own live event", liveKey, l.EventID, http.StatusOK},
			{"sandbox key reads a live event", sandboxKey, l.EventID, http.StatusOK},
			{"another organisation's sandbox key reads a sandbox event", otherSandbox, s.EventID, http.StatusOK},
			{"live key asks for a sandbox event", liveKey, s.EventID, http.StatusNotFound},
			{"unknown id", liveKey, "ev_" + strings.Repeat("a", 26), http.StatusNotFound},
			{"malformed id", liveKey, "not-an-id", http.StatusNotFound},
			{"upper-case id", liveKey, strings.ToUpper(l.EventID), http.StatusNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := h.do("GET", "/v1/events/"+tc.id, tc.key, nil)
				if tc.want == http.StatusOK {
					if e := r.event(t, http.StatusOK); e.EventID != tc.id {
						t.Errorf("got %s; want %s", e.EventID, tc.id)
					}
					return
				}
				r.detail(t, tc.want)
			})
		}
		if u := h.usage("org_a", live); u.Reads != 5 {
			t.Errorf("reads metered for org_a live = %d; want 5 (404s included)", u.Reads)
		}
	})
}

// docs/api.md §4.1 rule 5, §3 and §7, POST .../revisions.
func TestRevise(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		liveKey, sandboxKey := h.key("org_a", live), h.key("org_a", sandbox)
		otherLive, otherSandbox := h.key("org_b", live), h.key("org_b", sandbox)
		revise := func(key, id string, body any) reply {
			return h.do("POST", "/v1/events/"+id+"/revisions", key, body)
		}
		created := h.publish(liveKey, point("road_damage", 48.2, 16.37).with("subtype", "pothole").
			with("severity", "high").with("description", "deep").with("road_ref", "A1").with("geometry", map[string]any{
			"coordinates": [][2]float64{{16.37, 48.2}, {16.38, 48.2}}}))

		tab.Clock.Advance(3 * time.Hour)
		// Applied, not merged: severity and geometry omitted are cleared, the rest restated.
		e := revise(liveKey, created.EventID, map[string]any{"lat": 48.25, "lon": 16.4, "subtype": "sinkhole"}).
			event(t, http.StatusOK)
		if e.Lat != 48.25 || e.Lon != 16.4 || e.Geometry != nil || e.Severity != nil || e.Subtype == nil || *e.Subtype != "sinkhole" {
			t.Errorf("revised = %+v; want the new point, no geometry, no severity, subtype sinkhole (applied, not merged)", e)
		}
		if e.Type != "road_damage" || !e.CreatedAt.Equal(created.CreatedAt) || e.ConfirmCount != 0 || e.Status != "active" {
			t.Errorf("revised = %+v; want type, created_at, tallies and status kept (docs/api.md §4.1 rule 5)", e)
		}
		// docs/api.md §3: a revision pushes expiry back to a full TTL (road_damage: 12 h).
		if want := tab.Clock.Now().Add(12 * time.Hour); !e.ExpiresAt.Equal(want) || e.UpdatedAt == nil || !e.UpdatedAt.Equal(tab.Clock.Now()) {
			t.Errorf("expires_at %v, updated_at %v; want %v and now", e.ExpiresAt, e.UpdatedAt, want)
		}
		if got := h.do("GET", "/v1/events/"+created.EventID, liveKey, nil).event(t, http.StatusOK); got.Lat != 48.25 {
			t.Errorf("GET after the revision: lat %v; want 48.25", got.Lat)
		}

		sandboxEvent := h.publish(sandboxKey, point("accident", 1, 1))
		for _, tc := range []struct {
			name, key, id string
			body          any
			want          int
			problem       *problem
		}{
			{"another organisation's event", otherLive, created.EventID, map[string]any{"lat": 1, "lon": 1}, http.StatusForbidden, nil},
			{"another organisation's sandbox key on a live event", otherSandbox, created.EventID, map[string]any{"lat": 1, "lon": 1}, http.StatusForbidden, nil},
			{"own live event from a sandbox key", sandboxKey, created.EventID, map[string]any{"lat": 1, "lon": 1}, http.StatusForbidden, nil},
			{"own sandbox event from a live key (not served)", liveKey, sandboxEvent.EventID, map[string]any{"lat": 1, "lon": 1}, http.StatusNotFound, nil},
			{"unknown id", liveKey, "ev_" + strings.Repeat("b", 26), map[string]any{"lat": 1, "lon": 1}, http.StatusNotFound, nil},
			{"malformed id", liveKey, "x", map[string]any{"lat": 1, "lon": 1}, http.StatusNotFound, nil},
			{"subtype under the stored type", liveKey, created.EventID, map[string]any{"lat": 1, "lon": 1, "subtype": "landslide"},
				http.StatusUnprocessableEntity, &problem{"value_error", `["body","subtype"]`}},
			{"unknown field", liveKey, created.EventID, map[string]any{"lat": 1, "lon": 1, "type": "accident"},
				http.StatusUnprocessableEntity, &problem{"extra_forbidden", `["body","type"]`}},
			{"coordinate out of range", liveKey, created.EventID, map[string]any{"lat": 1, "lon": 200},
				http.StatusUnprocessableEntity, &problem{"less_than_equal", `["body","lon"]`}},
			{"lat/lon not matching geometry start", liveKey, created.EventID, map[string]any{"lat": 1, "lon": 1,
				"geometry": map[string]any{"coordinates": [][2]float64{{2, 2}, {3, 3}}}}, http.StatusUnprocessableEntity, &problem{"value_error", `["body","geometry"]`}},
			{"lat missing", liveKey, created.EventID, map[string]any{"lon": 1}, http.StatusUnprocessableEntity, &problem{"missing", `["body","lat"]`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := revise(tc.key, tc.id, tc.body)
				if tc.problem != nil {
					r.hasProblem(t, *tc.problem)
					return
				}
				r.detail(t, tc.want)
			})
		}
		if got := h.do("GET", "/v1/events/"+created.EventID, liveKey, nil).event(t, http.StatusOK); got.Lat != 48.25 {
			t.Errorf("after refused revisions: lat %v; want 48.25, unchanged", got.Lat)
		}

		// docs/api.md §3: a wrong-way vehicle report is not extended by its publisher.
		ww := h.publish(liveKey, point("wrong_way_vehicle", 47, 8))
		tab.Clock.Advance(10 * time.Minute)
		if got := revise(liveKey, ww.EventID, map[string]any{"lat": 47.001, "lon": 8}).event(t, http.StatusOK); !got.ExpiresAt.Equal(ww.ExpiresAt) || got.Lat != 47.001 {
			t.Errorf("wrong_way_vehicle revised: expires_at %v, lat %v; want %v unchanged and lat 47.001", got.ExpiresAt, got.Lat, ww.ExpiresAt)
		}
		// Over states refuse revisions with 409 (docs/api.md §3): expired by time...
		tab.Clock.Advance(11 * time.Minute)
		revise(liveKey, ww.EventID, map[string]any{"lat": 47, "lon": 8}).detail(t, http.StatusConflict)
		// ... and by the deny quorum.
		acc := h.publish(liveKey, point("accident", 46, 7))
		for i := range 3 {
			h.do("POST", "/v1/events/"+acc.EventID+"/signals", otherLive, map[string]any{"action": "deny", "reporter_token": strconv.Itoa(i)}).
				expect(t, http.StatusOK)
		}
		revise(liveKey, acc.EventID, map[string]any{"lat": 46, "lon": 7}).detail(t, http.StatusConflict)
	})
}

// docs/api.md §4.1 rule 6, §3 and §7, POST .../signals.
func TestSignal(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		liveKey, sandboxKey := h.key("org_a", live), h.key("org_a", sandbox)
		otherLive := h.key("org_b", live)
		signal := func(key, id string, body any) reply {
			return h.do("POST", "/v1/events/"+id+"/signals", key, body)
		}
		e := h.publish(liveKey, point("accident", 40, -74))
		id := e.EventID

		// The publisher's own organisation may signal its own event (docs/api.md §10.2).
		got := signal(liveKey, id, map[string]any{"action": "confirm"}).event(t, http.StatusOK)
		if got.ConfirmCount != 1 || got.Verification != "confirmed" || got.Confidence != 0.75 {
			t.Errorf("after a confirmation: %+v; want 1 confirm, confirmed, 0.75 (docs/api.md §10.2)", got)
		}
		// Without reporter_token the organisation is one reporter: a repeat changes nothing.
		if again := signal(liveKey, id, map[string]any{"action": "confirm"}).event(t, http.StatusOK); again.ConfirmCount != 1 {
			t.Errorf("repeat of the same action: confirm_count %d; want 1 (docs/api.md §3: nothing changes)", again.ConfirmCount)
		}
		// The same reporter changing its action moves from one tally to the other.
		got = signal(liveKey, id, map[string]any{"action": "deny", "lat": 40.001, "lon": -74}).event(t, http.StatusOK)
		if got.ConfirmCount != 0 || got.DenyCount != 1 || got.Verification != "disputed" {
			t.Errorf("after switching to deny: %+v; want 0 confirms, 1 deny, disputed", got)
		}
		// Tokens identify vehicles: two tokens of org_b are two reporters.
		signal(otherLive, id, map[string]any{"action": "confirm", "reporter_token": "v1"}).expect(t, http.StatusOK)
		got = signal(otherLive, id, map[string]any{"action": "confirm", "reporter_token": "v2"}).event(t, http.StatusOK)
		if got.ConfirmCount != 2 || got.DenyCount != 1 {
			t.Errorf("after two vehicles confirmed: %d/%d; want 2 confirms, 1 deny", got.ConfirmCount, got.DenyCount)
		}

		sandboxEvent := h.publish(sandboxKey, point("accident", 40, -74))
		for _, tc := range []struct {
			name, key, id string
			body          any
			want          int
			problem       *problem
		}{
			{"sandbox key on a live event", sandboxKey, id, map[string]any{"action": "confirm"}, http.StatusForbidden, nil},
			{"live key on a sandbox event (not served)", liveKey, sandboxEvent.EventID, map[string]any{"action": "confirm"}, http.StatusNotFound, nil},
			{"unknown id", liveKey, "ev_" + strings.Repeat("c", 26), map[string]any{"action": "confirm"}, http.StatusNotFound, nil},
			{"action other than confirm or deny", liveKey, id, map[string]any{"action": "like"}, 0, &problem{"enum", `["body","action"]`}},
			{"unknown field", liveKey, id, map[string]any{"action": "deny", "weight": 2}, 0, &problem{"extra_forbidden", `["body","weight"]`}},
			{"coordinate out of range", liveKey, id, map[string]any{"action": "deny", "lat": 91, "lon": 0}, 0, &problem{"less_than_equal", `["body","lat"]`}},
			{"lat without lon", liveKey, id, map[string]any{"action": "deny", "lat": 1}, 0, &problem{"value_error", `["body"]`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := signal(tc.key, tc.id, tc.body)
				if tc.problem != nil {
					r.hasProblem(t, *tc.problem)
					return
				}
				r.detail(t, tc.want)
			})
		}
		// A sandbox credential signals sandbox events.
		signal(sandboxKey, sandboxEvent.EventID, map[string]any{"action": "confirm"}).expect(t, http.StatusOK)

		// The deny quorum (docs/api.md §10.2): 3 denials outnumbering the confirmations end the
		// event at once; a late denial is 409 (docs/api.md §7).
		d := h.publish(liveKey, point("object_on_road", 41, -74))
		for i := range 3 {
			got = signal(otherLive, d.EventID, map[string]any{"action": "deny", "reporter_token": fmt.Sprint("d", i)}).event(t, http.StatusOK)
		}
		if got.Status != "expired" || !got.ExpiresAt.Equal(tab.Clock.Now()) {
			t.Errorf("after 3 denials: status %s, expires_at %v; want expired at now", got.Status, got.ExpiresAt)
		}
		signal(otherLive, d.EventID, map[string]any{"action": "deny", "reporter_token": "late"}).detail(t, http.StatusConflict)
		signal(otherLive, d.EventID, map[string]any{"action": "confirm", "reporter_token": "late"}).detail(t, http.StatusConflict)
		// An event expired by time refuses signals too.
		tab.Clock.Advance(2 * time.Hour)
		signal(otherLive, id, map[string]any{"action": "confirm", "reporter_token": "v3"}).detail(t, http.StatusConflict)

		// Every signal that passed validation is metered (docs/api.md §8 rule 3), refused ones included.
		if u := h.usage("org_b", live); u.Signals != 8 {
			t.Errorf("signals metered for org_b live = %d; want 8", u.Signals)
		}
	})
}

// docs/api.md §8: the hourly signal ceiling per organisation and environment is 429 with
// Retry-After, and a throttled signal is still metered (docs/api.md §8 rule 3). On the
// embedded store only: using up 3000 signals takes about a minute on DynamoDB Local, the
// ceiling itself is tested on both adapters in package ratelimit, and what follows its answer
// here is the same code on both.
func TestSignalCeiling(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	h := newHarness(t, tab)
	key := h.key("org_a", live)
	e := h.publish(key, point("accident", 35.68, 139.69))
	tab.Clock.Advance(20 * time.Minute) // 40 minutes of the clock-hour window left
	// Use up the organisation's budget as other signals would.
	ceiling := ratelimit.NewSignals(tab)
	var (
		wg   sync.WaitGroup
		used atomic.Int64
	)
	for range 16 {
		wg.Go(func() {
			for used.Add(1) <= ratelimit.SignalCeiling.Limit {
				if ok, _, err := ceiling.Allow(context.Background(), "org_a", live, tab.Clock.Now()); err != nil || !ok {
					t.Errorf("Allow = %v, %v; want the budget to last", ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	r := h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{"action": "confirm"})
	r.detail(t, http.StatusTooManyRequests)
	if got := r.Header.Get("Retry-After"); got != "2400" {
		t.Errorf("Retry-After = %q; want 2400, the seconds left in the window (docs/api.md §10.2)", got)
	}
	if got := h.do("GET", "/v1/events/"+e.EventID, key, nil).event(t, http.StatusOK); got.ConfirmCount != 0 {
		t.Errorf("confirm_count after a throttled signal = %d; want 0", got.ConfirmCount)
	}
	// The other environment has its own budget (docs/api.md §8: within one side of the line).
	sandboxKey := h.key("org_a", sandbox)
	s := h.publish(sandboxKey, point("accident", 35.68, 139.69))
	h.do("POST", "/v1/events/"+s.EventID+"/signals", sandboxKey, map[string]any{"action": "confirm"}).expect(t, http.StatusOK)
	if u := h.usage("org_a", live); u.Signals != 1 {
		t.Errorf("signals metered = %d; want 1, the throttled one", u.Signals)
	}
	tab.Clock.Advance(40 * time.Minute)
	h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{"action": "confirm"}).expect(t, http.StatusOK)
}

// docs/api.md §4.1 rule 6: 100 reporters signalling one event at once lose no vote.
func TestSignalRace(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		e := h.publish(key, point("road_damage", 48, 2).with("geometry", map[string]any{
			"coordinates": [][2]float64{{2, 48}, {2.01, 48}}}))
		const n = 100
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{
					"action": "confirm", "reporter_token": fmt.Sprint("veh-", i)})
				if r.Status != http.StatusOK {
					t.Errorf("signal %d: %d %s", i, r.Status, r.Body)
				}
			})
		}
		wg.Wait()
		got := h.do("GET", "/v1/events/"+e.EventID, key, nil).event(t, http.StatusOK)
		if got.ConfirmCount != n {
			t.Errorf("confirm_count = %d; want %d (no vote lost)", got.ConfirmCount, n)
		}
		// The index items were rewritten with each change: the listed copy agrees.
		listed := h.area(key, q(48, 2.005))
		if len(listed) != 1 || listed[0].ConfirmCount != n || listed[0].Confidence != got.Confidence {
			t.Errorf("listed = %+v; want the event with %d confirmations, confidence %v", listed, n, got.Confidence)
		}
	})
}
