package eventstore_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// checkMergedInto fails unless e is a duplicate merged into survivor (docs/network.md §1,
// docs/api.md §3: status merged).
func checkMergedInto(t *testing.T, e publicEvent, survivor string) {
	t.Helper()
	if e.Status != "merged" || e.MergedInto == nil || *e.MergedInto != survivor {
		t.Errorf("%s: status %s, merged_into %v; want merged into %s", e.EventID, e.Status, deref(e.MergedInto), survivor)
	}
}

// checkActive fails unless e stands on its own: active, merged into nothing.
func checkActive(t *testing.T, e publicEvent) {
	t.Helper()
	if e.Status != "active" || e.MergedInto != nil {
		t.Errorf("%s: status %s, merged_into %v; want active, merged into nothing", e.EventID, e.Status, deref(e.MergedInto))
	}
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// north returns the point m metres north of p, rounded as the service stores coordinates
// (docs/api.md §2.2: 5 decimals), so that distances computed here are the service's.
func north(p geo.Point, m float64) geo.Point {
	return geo.Point{Lat: geo.Round5(p.Lat + m/111195), Lon: p.Lon}
}

// east returns the point m metres east of p, rounded as the service stores it.
func east(p geo.Point, m float64) geo.Point {
	return geo.Point{Lat: p.Lat, Lon: geo.Round5(p.Lon + m/(111195*math.Cos(p.Lat*math.Pi/180)))}
}

// at places body at p.
func (b eventBody) at(p geo.Point) eventBody { return b.with("lat", p.Lat).with("lon", p.Lon) }

// line places body on the LineString through ps (its point is the first).
func (b eventBody) line(ps ...geo.Point) eventBody {
	coords := make([][2]float64, len(ps))
	for i, p := range ps {
		coords[i] = [2]float64{p.Lon, p.Lat}
	}
	return b.at(ps[0]).with("geometry", map[string]any{"type": "LineString", "coordinates": coords})
}

func mergeDistance(t *testing.T, typ string) float64 {
	t.Helper()
	spec, ok := taxonomy.Lookup(typ)
	if !ok || spec.MergeDistance <= 0 {
		t.Fatalf("taxonomy %s: merge distance %v; want one above 0", typ, spec.MergeDistance)
	}
	return spec.MergeDistance
}

// docs/network.md §1, docs/api.md §3 and §4.1 rules 1, 3 and 4: another organisation's report of
// the same hazard is answered 201 merged into the report already there, counts as that
// organisation's confirmation on it (docs/api.md §4.1 rule 6, with the extension of
// docs/api.md §2.1), and is then over: replayed as it is, readable, refused signals and
// revisions, never listed.
func TestMergeOnPublish(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		keyA, keyB := h.key("org_a", live), h.key("org_b", live)
		spot := geo.Point{Lat: 52.52, Lon: 13.405}
		first := h.publish(keyA, point("accident", 0, 0).with("subtype", "collision").with("heading", 90).at(spot))

		// Late in its life, so that the confirmation's extension shows (accident: 15 min).
		tab.Clock.Advance(110 * time.Minute)
		dupBody := point("accident", 0, 0).with("heading", 100).with("client_event_id", "dup-1").
			with("description", "two cars").at(north(spot, 60))
		dup := h.do("POST", "/v1/events", keyB, dupBody).event(t, http.StatusCreated)
		checkMergedInto(t, dup, first.EventID)
		if dup.EventID == first.EventID || dup.Lat != north(spot, 60).Lat || !dup.CreatedAt.Equal(tab.Clock.Now()) {
			t.Errorf("duplicate = %+v; want an event of its own, as published now", dup)
		}
		extended := tab.Clock.Now().Add(15 * time.Minute)
		surv := h.do("GET", "/v1/events/"+first.EventID, keyA, nil).event(t, http.StatusOK)
		checkActive(t, surv)
		if surv.ConfirmCount != 1 || surv.Verification != "confirmed" || !surv.ExpiresAt.Equal(extended) {
			t.Errorf("survivor after the merge: confirm_count %d, %s, expires_at %v; want 1, confirmed, %v (now + 15 min)",
				surv.ConfirmCount, surv.Verification, surv.ExpiresAt, extended)
		}

		// docs/api.md §4.1 rule 1: a replay answers 200 with the same merged event and counts nothing.
		tab.Clock.Advance(time.Minute)
		replay := h.do("POST", "/v1/events", keyB, dupBody).event(t, http.StatusOK)
		if replay.EventID != dup.EventID {
			t.Errorf("replay = %s; want %s", replay.EventID, dup.EventID)
		}
		checkMergedInto(t, replay, first.EventID)
		// docs/api.md §4.1 rule 4: a merged event is still readable.
		got := h.do("GET", "/v1/events/"+dup.EventID, keyB, nil).event(t, http.StatusOK)
		checkMergedInto(t, got, first.EventID)
		// docs/api.md §3: over, so signals and revisions are 409.
		h.do("POST", "/v1/events/"+dup.EventID+"/signals", keyA, map[string]any{"action": "confirm"}).detail(t, http.StatusConflict)
		h.do("POST", "/v1/events/"+dup.EventID+"/revisions", keyB, map[string]any{"lat": 40, "lon": 3}).detail(t, http.StatusConflict)

		// docs/api.md §4.1 rule 3: the area query lists the survivor alone.
		listed := h.area(keyA, q(spot.Lat, spot.Lon))
		if len(listed) != 1 || listed[0].EventID != first.EventID || listed[0].ConfirmCount != 1 {
			t.Errorf("area query = %+v; want only the survivor %s, with its confirmation", listed, first.EventID)
		}
		if got := h.do("GET", "/v1/events/"+first.EventID, keyA, nil).event(t, http.StatusOK); got.ConfirmCount != 1 {
			t.Errorf("survivor after the replay and the refused signal: confirm_count %d; want 1", got.ConfirmCount)
		}
	})
}

// docs/network.md §1: which pairs of reports are one hazard. Each case publishes a report of
// organisation org_a, then another report at its own spot, and checks whether the second was
// merged into the first.
func TestMergeRule(t *testing.T) {
	t.Parallel()
	type mergeCase struct {
		name          string
		first, second eventBody // placed by the case: second gap metres north of first
		gap           float64
		secondBy      string // the second report's publisher, "org_b/live" when empty
		firstEnv      string // live when empty
		over          func(t *testing.T, h *harness, tab tables.Table, key string, first publicEvent)
		merged        bool
	}
	accident := point("accident", 0, 0)
	cases := []mergeCase{
		{name: "another organisation, same spot", first: accident, second: accident, merged: true},
		{name: "same organisation", first: accident, second: accident, secondBy: "org_a/live"},
		{name: "other environment: sandbox beside live", first: accident, second: accident, secondBy: "org_b/sandbox"},
		{name: "other environment: live beside sandbox", first: accident, second: accident, firstEnv: sandbox},
		{name: "two sandbox reports of other organisations", first: accident, second: accident, firstEnv: sandbox,
			secondBy: "org_b/sandbox", merged: true},
		{name: "other type", first: accident, second: point("stopped_vehicle", 0, 0)},
		{name: "same subtype", first: accident.with("subtype", "collision"), second: accident.with("subtype", "collision"), merged: true},
		{name: "different subtypes", first: accident.with("subtype", "collision"), second: accident.with("subtype", "vehicle_fire")},
		{name: "subtype beside none", first: accident.with("subtype", "collision"), second: accident, merged: true},
		{name: "none beside a subtype", first: accident, second: accident.with("subtype", "vehicle_fire"), merged: true},
		{name: "headings 45° apart", first: accident.with("heading", 90), second: accident.with("heading", 135), merged: true},
		{name: "headings 46° apart", first: accident.with("heading", 90), second: accident.with("heading", 136)},
		{name: "headings across north, 30° apart", first: accident.with("heading", 350), second: accident.with("heading", 20), merged: true},
		{name: "headings across north, 50° apart", first: accident.with("heading", 350), second: accident.with("heading", 40)},
		{name: "opposite carriageways", first: accident.with("heading", 0), second: accident.with("heading", 180)},
		{name: "a heading beside none", first: accident.with("heading", 270), second: accident, merged: true},
		{name: "survivor closed by its publisher", first: accident, second: accident,
			over: func(t *testing.T, h *harness, _ tables.Table, key string, first publicEvent) {
				h.do("POST", "/v1/events/"+first.EventID+"/close", key, "{}").expect(t, http.StatusOK)
			}},
		{name: "survivor expired by time", first: accident, second: accident,
			over: func(_ *testing.T, _ *harness, tab tables.Table, _ string, first publicEvent) {
				tab.Clock.Set(first.ExpiresAt)
			}},
		{name: "survivor ended by the deny quorum", first: accident, second: accident,
			over: func(t *testing.T, h *harness, _ tables.Table, _ string, first publicEvent) {
				key := h.key("org_c", live)
				for i := range 3 {
					h.do("POST", "/v1/events/"+first.EventID+"/signals", key, map[string]any{
						"action": "deny", "reporter_token": fmt.Sprint("d", i)}).expect(t, http.StatusOK)
				}
			}},
	}
	// Just within and just beyond each type's merge distance: a few metres either side, more
	// than the rounding of coordinates moves a point (docs/api.md §2.2: 5 decimals, about a metre).
	for _, typ := range taxonomy.IDs() {
		d := mergeDistance(t, typ)
		cases = append(cases,
			mergeCase{name: typ + " just within its merge distance", first: point(typ, 0, 0), second: point(typ, 0, 0), gap: d - 4, merged: true},
			mergeCase{name: typ + " just beyond its merge distance", first: point(typ, 0, 0), second: point(typ, 0, 0), gap: d + 4})
	}
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		keys := map[string]string{}
		for _, who := range []string{"org_a/live", "org_a/sandbox", "org_b/live", "org_b/sandbox"} {
			org, env, _ := strings.Cut(who, "/")
			keys[who] = h.key(org, env)
		}
		// The cases run one after the other, on one clock that only moves forward.
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				// Each case 20 km from the others.
				spot := geo.Point{Lat: 30 + 0.18*float64(i), Lon: -100}
				firstKey := keys["org_a/"+cmp.Or(c.firstEnv, live)]
				first := h.publish(firstKey, c.first.at(spot))
				if c.over != nil {
					c.over(t, h, tab, firstKey, first)
				}
				to := north(spot, c.gap)
				if c.gap > 0 {
					if d, want := geo.Distance(spot, to), mergeDistance(t, first.Type); (d <= want) != c.merged {
						t.Fatalf("the reports are %.1f m apart, merge distance %v: the case is wrong", d, want)
					}
				}
				second := h.do("POST", "/v1/events", keys[cmp.Or(c.secondBy, "org_b/live")], c.second.at(to)).event(t, http.StatusCreated)
				survivor := h.do("GET", "/v1/events/"+first.EventID, firstKey, nil).event(t, http.StatusOK)
				if c.merged {
					checkMergedInto(t, second, first.EventID)
					if survivor.ConfirmCount != 1 {
						t.Errorf("first report's confirm_count %d; want 1, the second's organisation", survivor.ConfirmCount)
					}
					return
				}
				checkActive(t, second)
				if survivor.ConfirmCount != 0 {
					t.Errorf("first report's confirm_count %d; want 0, nothing merged into it", survivor.ConfirmCount)
				}
			})
		}
	})
}

// docs/network.md §1: the merge distance is to the survivor's whole extent, as the area query
// measures (docs/api.md §4.1 rule 3): a point near the middle of a long queue merges into it,
// though far from its first point.
func TestMergeIntoAnExtent(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		keyA, keyB := h.key("org_a", live), h.key("org_b", live)
		d := mergeDistance(t, "congestion")
		start := geo.Point{Lat: 45.0, Lon: 7.0}
		end := east(start, 2000)
		queue := h.publish(keyA, point("congestion", 0, 0).line(start, end))

		near := north(east(start, 1000), d-100)
		if geo.Distance(near, start) <= d {
			t.Fatalf("the point is %.0f m from the queue's first point; the case wants it beyond %v", geo.Distance(near, start), d)
		}
		dup := h.do("POST", "/v1/events", keyB, point("congestion", 0, 0).at(near)).event(t, http.StatusCreated)
		checkMergedInto(t, dup, queue.EventID)

		beside := h.do("POST", "/v1/events", keyB, point("congestion", 0, 0).at(north(east(start, 1000), d+100))).event(t, http.StatusCreated)
		checkActive(t, beside)
		if got := h.do("GET", "/v1/events/"+queue.EventID, keyA, nil).event(t, http.StatusOK); got.ConfirmCount != 1 {
			t.Errorf("queue's confirm_count %d; want 1 (the nearby point only)", got.ConfirmCount)
		}
	})
}

// docs/network.md §1: of several reports a new one duplicates, the oldest survives, even when
// a younger one lies nearer.
func TestMergeIntoTheOldest(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		keyA, keyB, keyC := h.key("org_a", live), h.key("org_b", live), h.key("org_c", live)
		spot := geo.Point{Lat: 41.9, Lon: 12.5}
		d := mergeDistance(t, "accident")
		oldest := h.publish(keyA, point("accident", 0, 0).at(spot))
		tab.Clock.Advance(time.Minute)
		// Beyond the merge distance of the oldest: a report of its own.
		younger := h.do("POST", "/v1/events", keyC, point("accident", 0, 0).at(north(spot, d+50))).event(t, http.StatusCreated)
		checkActive(t, younger)
		tab.Clock.Advance(time.Minute)
		// Within both merge distances, nearer the younger.
		between := north(spot, d-10)
		if geo.Distance(between, spot) <= geo.Distance(between, north(spot, d+50)) {
			t.Fatal("the case wants the new report nearer the younger report")
		}
		dup := h.do("POST", "/v1/events", keyB, point("accident", 0, 0).at(between)).event(t, http.StatusCreated)
		checkMergedInto(t, dup, oldest.EventID)
		if got := h.do("GET", "/v1/events/"+younger.EventID, keyC, nil).event(t, http.StatusOK); got.ConfirmCount != 0 {
			t.Errorf("younger report's confirm_count %d; want 0", got.ConfirmCount)
		}
	})
}

// docs/network.md §1 and docs/api.md §4.1 rule 6: a duplicate is one confirmation from its
// organisation as a whole; an organisation that confirmed the survivor already, or whose
// earlier duplicate was merged into it, adds none.
func TestMergeConfirmsOncePerOrganisation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		keyA, keyB, keyC := h.key("org_a", live), h.key("org_b", live), h.key("org_c", live)
		spot := geo.Point{Lat: 59.33, Lon: 18.07}
		surv := h.publish(keyA, point("accident", 0, 0).at(spot))
		tab.Clock.Advance(time.Minute)
		confirmed := h.do("POST", "/v1/events/"+surv.EventID+"/signals", keyB, map[string]any{"action": "confirm"}).event(t, http.StatusOK)

		tab.Clock.Advance(time.Hour)
		for i := range 2 {
			dup := h.do("POST", "/v1/events", keyB, point("accident", 0, 0).at(north(spot, float64(10*i)))).event(t, http.StatusCreated)
			checkMergedInto(t, dup, surv.EventID)
			got := h.do("GET", "/v1/events/"+surv.EventID, keyA, nil).event(t, http.StatusOK)
			if got.ConfirmCount != 1 || !got.ExpiresAt.Equal(confirmed.ExpiresAt) {
				t.Errorf("after org_b's duplicate %d: confirm_count %d, expires_at %v; want 1 and %v, unchanged", i+1,
					got.ConfirmCount, got.ExpiresAt, confirmed.ExpiresAt)
			}
		}
		h.do("POST", "/v1/events", keyC, point("accident", 0, 0).at(spot)).event(t, http.StatusCreated)
		if got := h.do("GET", "/v1/events/"+surv.EventID, keyA, nil).event(t, http.StatusOK); got.ConfirmCount != 2 {
			t.Errorf("after org_c's duplicate: confirm_count %d; want 2", got.ConfirmCount)
		}
	})
}

// docs/network.md §1: a revision that moves an active report onto another source's report of
// the same hazard merges it into that report (docs/api.md §3: it is then over).
func TestMergeOnRevision(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		keyA, keyB := h.key("org_a", live), h.key("org_b", live)
		spot, away := geo.Point{Lat: 48.85, Lon: 2.35}, geo.Point{Lat: 48.9, Lon: 2.35}
		surv := h.publish(keyA, point("accident", 0, 0).at(spot))
		tab.Clock.Advance(time.Minute)
		moved := h.publish(keyB, point("accident", 0, 0).at(away))
		if moved.Status != "active" {
			t.Fatalf("the report 5 km away is %s; want active", moved.Status)
		}

		tab.Clock.Advance(time.Minute)
		to := north(spot, 30)
		got := h.do("POST", "/v1/events/"+moved.EventID+"/revisions", keyB, map[string]any{"lat": to.Lat, "lon": to.Lon}).
			event(t, http.StatusOK)
		checkMergedInto(t, got, surv.EventID)
		checkMergedInto(t, h.do("GET", "/v1/events/"+moved.EventID, keyB, nil).event(t, http.StatusOK), surv.EventID)
		if s := h.do("GET", "/v1/events/"+surv.EventID, keyA, nil).event(t, http.StatusOK); s.ConfirmCount != 1 || s.Status != "active" {
			t.Errorf("survivor: confirm_count %d, status %s; want 1, active", s.ConfirmCount, s.Status)
		}
		if listed := h.area(keyA, q(spot.Lat, spot.Lon)); len(listed) != 1 || listed[0].EventID != surv.EventID {
			t.Errorf("area query at the survivor = %v; want only %s", ids(listed), surv.EventID)
		}
		if listed := h.area(keyA, q(away.Lat, away.Lon)); len(listed) != 0 {
			t.Errorf("area query where the duplicate was = %v; want nothing", ids(listed))
		}
		h.do("POST", "/v1/events/"+moved.EventID+"/revisions", keyB, map[string]any{"lat": away.Lat, "lon": away.Lon}).
			detail(t, http.StatusConflict)
	})
}

// docs/network.md §1 (concurrent reports): 20 organisations publishing one hazard at once
// leave exactly one active report, the 19 others merged into it, one event to the area query.
func TestMergeRace(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		spot := geo.Point{Lat: 40.4168, Lon: -3.7038}
		keys := make([]string, 20)
		for i := range keys {
			keys[i] = h.key(fmt.Sprintf("org_%02d", i), live)
		}
		checkOneSurvivor(t, publishAtOnce(t, []*harness{h}, keys, spot), h, keys[0], spot)
	})
}

// docs/network.md §1: the merge guards, not locks within one process, decide the race: two
// instances of the service on one table, 10 organisations through each at once, still leave
// one survivor. On DynamoDB this is two processes as deployed; on the embedded store, which
// one process owns, it is two event stores over one file.
func TestMergeRaceAcrossProcesses(t *testing.T) {
	t.Parallel()
	t.Run(tables.AdapterEmbedded, func(t *testing.T) {
		t.Parallel()
		tab := tables.Embedded(t)
		crossProcessRace(t, newProcess(t, tab), newProcess(t, tab))
	})
	t.Run(tables.AdapterDynamoDB, func(t *testing.T) {
		t.Parallel()
		l := tables.NewLocal(t)
		crossProcessRace(t, newProcess(t, l.Table()), newProcess(t, l.Table()))
	})
}

func crossProcessRace(t *testing.T, one, two *harness) {
	spot := geo.Point{Lat: 38.7223, Lon: -9.1393}
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = one.key(fmt.Sprintf("org_%02d", i), live)
	}
	checkOneSurvivor(t, publishAtOnce(t, []*harness{one, two}, keys, spot), two, keys[0], spot)
}

// publishAtOnce has organisation i (keys[i]) publish one accident a metre apart from the
// next around spot, all released at once, through the instances in turn, and returns the
// answers.
func publishAtOnce(t *testing.T, through []*harness, keys []string, spot geo.Point) []publicEvent {
	t.Helper()
	out := make([]publicEvent, len(keys))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, key := range keys {
		h := through[i%len(through)]
		wg.Go(func() {
			<-start
			r := h.client(t).Call("POST", "/v1/events", key, apitest.JSON(point("accident", 0, 0).at(north(spot, float64(i)))))
			if r.Status != http.StatusCreated {
				t.Errorf("publish by %d: %d %s; want 201", i, r.Status, r.Body)
				return
			}
			if err := json.Unmarshal(r.Body, &out[i]); err != nil {
				t.Errorf("decode %s: %v", r.Body, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// checkOneSurvivor fails unless exactly one of got is active and every other is merged into
// it, which lists alone around spot with a confirmation from each other organisation.
func checkOneSurvivor(t *testing.T, got []publicEvent, h *harness, key string, spot geo.Point) {
	t.Helper()
	var active []string
	for _, e := range got {
		if e.Status == "active" {
			active = append(active, e.EventID)
		}
	}
	if len(active) != 1 {
		t.Fatalf("active reports %v; want exactly one", active)
	}
	for _, e := range got {
		if e.EventID != active[0] {
			checkMergedInto(t, e, active[0])
		}
	}
	listed := h.area(key, q(spot.Lat, spot.Lon))
	if len(listed) != 1 || listed[0].EventID != active[0] || listed[0].ConfirmCount != len(got)-1 {
		t.Errorf("area query = %+v; want only %s, with %d confirmations", listed, active[0], len(got)-1)
	}
}
