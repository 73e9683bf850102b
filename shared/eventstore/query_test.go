package eventstore_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §7, GET /v1/events 422: each cause at its loc with its type (docs/api.md §10.1).
func TestListValidation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		for _, tc := range []struct {
			name, query string
			want        problem
		}{
			{"radius 0", q(48, 11, "radius=0"), problem{"greater_than", `["query","radius"]`}},
			{"negative radius", q(48, 11, "radius=-5"), problem{"greater_than", `["query","radius"]`}},
			{"radius over max_query_radius_m", q(48, 11, "radius=9780.5"), problem{"less_than_equal", `["query","radius"]`}},
			{"unknown type", q(48, 11, "type=accident", "type=other"), problem{"enum", `["query","type",1]`}},
			{"lat out of range", q(90.1, 11), problem{"less_than_equal", `["query","lat"]`}},
			{"lon out of range", q(48, -180.1), problem{"greater_than_equal", `["query","lon"]`}},
			{"lat missing", "lon=11", problem{"missing", `["query","lat"]`}},
			{"lat not a number", "lat=north&lon=11", problem{"float_parsing", `["query","lat"]`}},
			{"min_confidence over 1", q(48, 11, "min_confidence=1.01"), problem{"less_than_equal", `["query","min_confidence"]`}},
			{"min_confidence under 0", q(48, 11, "min_confidence=-0.1"), problem{"greater_than_equal", `["query","min_confidence"]`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h.do("GET", "/v1/events?"+tc.query, key, nil).hasProblem(t, tc.want)
			})
		}
		// The widest radius itself is allowed, and an empty area is an empty array.
		if got := h.area(key, q(48, 11, "radius=9780")); len(got) != 0 {
			t.Errorf("empty area = %v; want []", got)
		}
		if r := h.do("GET", "/v1/events?"+q(48, 11), key, nil); string(r.Body) != "[]" {
			t.Errorf("empty area body = %s; want []", r.Body)
		}
	})
}

// docs/api.md §11.1: a query with 9 990 unknown types (109 KB) got a 5.4 MB answer. The answer
// is bounded, still the validation shape, and opens with the first errors found.
func TestListValidationAnswerIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, tables.Embedded(t))
	key := h.key("org_a", live)
	var query strings.Builder
	query.WriteString(q(48, 11))
	const types = 9990
	for i := range types {
		fmt.Fprintf(&query, "&type=t%05d", i)
	}
	const what = "GET /v1/events with 9 990 unknown types"
	r := h.client(t).Call("GET", "/v1/events?"+query.String(), key, "")
	if len(r.Body) > 16<<10 {
		t.Fatalf("%s: %d answers %d bytes; want at most 16 KiB", what, r.Status, len(r.Body))
	}
	items := h.client(t).ExpectProblems(r, what)
	apitest.CheckBody(t, r.Body, schema.HTTPValidationErrorSchema, what)
	if len(items) != schema.MaxListed+1 {
		t.Fatalf("422 lists %d items; want the first %d errors and one saying how many more", len(items), schema.MaxListed)
	}
	for i, it := range items[:schema.MaxListed] {
		wantLoc := fmt.Sprintf(`["query","type",%d]`, i)
		if it.Type != "enum" || apitest.JSON(it.Loc) != wantLoc || it.Input != fmt.Sprintf("t%05d", i) {
			t.Errorf("item %d = %s %s %v; want enum at %s for t%05d", i, it.Type, apitest.JSON(it.Loc), it.Input, wantLoc, i)
		}
	}
	last := items[schema.MaxListed]
	if last.Type != "value_error" || apitest.JSON(last.Loc) != `["query"]` || fmt.Sprint(last.Ctx["omitted"]) != fmt.Sprint(types-schema.MaxListed) {
		t.Errorf("last item = %+v; want a value_error at [\"query\"] with ctx.omitted %d", last, types-schema.MaxListed)
	}
}

// docs/api.md §4.1 rule 3: only active events, nearest first, distance to the full extent, default
// radius 1000 m, filters by type and confidence.
func TestListNearestFirst(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		center := geo.Point{Lat: 52.52, Lon: 13.405}
		at := func(bearing, d float64) geo.Point { return destination(center, bearing, d) }
		p300, p600, p900, p1200 := at(0, 300), at(90, 600), at(180, 900), at(270, 1200)
		e600 := h.publish(key, point("accident", p600.Lat, p600.Lon))
		e300 := h.publish(key, point("object_on_road", p300.Lat, p300.Lon))
		e1200 := h.publish(key, point("congestion", p1200.Lat, p1200.Lon))
		e900 := h.publish(key, point("road_damage", p900.Lat, p900.Lon))
		// A 4 km segment whose ends are 2 km away but which passes 250 m from the centre.
		a, b := at(0, 250), at(0, 250)
		a, b = destination(a, 90, 2000), destination(b, 270, 2000)
		a, b = roundPoint(a), roundPoint(b)
		seg := h.publish(key, point("congestion", a.Lat, a.Lon).with("geometry", map[string]any{
			"coordinates": [][2]float64{{a.Lon, a.Lat}, {b.Lon, b.Lat}}}))

		got := ids(h.area(key, q(center.Lat, center.Lon)))
		want := []string{seg.EventID, e300.EventID, e600.EventID, e900.EventID}
		if !slices.Equal(got, want) {
			t.Errorf("default radius: %v; want %v (nearest first, the segment by its extent, 1200 m out)", got, want)
		}
		got = ids(h.area(key, q(center.Lat, center.Lon, "radius=1500")))
		if want := append(want, e1200.EventID); !slices.Equal(got, want) {
			t.Errorf("radius 1500: %v; want %v", got, want)
		}
		got = ids(h.area(key, q(center.Lat, center.Lon, "radius=1500", "type=congestion", "type=accident")))
		if want := []string{seg.EventID, e600.EventID, e1200.EventID}; !slices.Equal(got, want) {
			t.Errorf("type congestion and accident: %v; want %v", got, want)
		}
		// Confirm one event twice: its confidence rises over the others' 0.667.
		for _, tok := range []string{"v1", "v2"} {
			h.do("POST", "/v1/events/"+e900.EventID+"/signals", key, map[string]any{"action": "confirm", "reporter_token": tok}).
				expect(t, http.StatusOK)
		}
		got = ids(h.area(key, q(center.Lat, center.Lon, "min_confidence=0.7")))
		if want := []string{e900.EventID}; !slices.Equal(got, want) {
			t.Errorf("min_confidence 0.7: %v; want %v", got, want)
		}
		if got := h.area(key, q(center.Lat, center.Lon, "min_confidence=0.8")); len(got) != 1 || got[0].Confidence != 0.8 {
			t.Errorf("min_confidence 0.8: %v; want the event of confidence 0.8 (at least, inclusive)", ids(got))
		}
		if u := h.usage("org_a", live); u.Reads != 5 {
			t.Errorf("reads metered = %d; want 5, one per query", u.Reads)
		}
	})
}

func roundPoint(p geo.Point) geo.Point {
	return geo.Point{Lat: geo.Round5(p.Lat), Lon: geo.Round5(p.Lon)}
}

// The antimeridian: a query at lon 179.99 finds an event at lon -179.99 (2.2 km away at the
// equator) and the other way round, and a segment crossing it is found from both sides.
func TestListAcrossTheAntimeridian(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		west := h.publish(key, point("accident", 0, -179.99))
		east := h.publish(key, point("accident", 0.005, 179.995))
		seg := h.publish(key, point("congestion", -0.03, 179.98).with("geometry", map[string]any{
			"coordinates": [][2]float64{{179.98, -0.03}, {-179.98, -0.03}}}))
		if got, want := ids(h.area(key, q(0, 179.99, "radius=2300"))), []string{east.EventID, west.EventID}; !slices.Equal(got, want) {
			t.Errorf("at lon 179.99, radius 2300: %v; want %v (787 m and 2226 m; the segment is 3336 m away)", got, want)
		}
		if got, want := ids(h.area(key, q(0, 179.99, "radius=3400"))), []string{east.EventID, west.EventID, seg.EventID}; !slices.Equal(got, want) {
			t.Errorf("at lon 179.99, radius 3400: %v; want %v", got, want)
		}
		if got, want := ids(h.area(key, q(0, -179.995, "radius=3400"))), []string{west.EventID, east.EventID, seg.EventID}; !slices.Equal(got, want) {
			t.Errorf("at lon -179.995, radius 3400: %v; want %v", got, want)
		}
	})
}

// docs/api.md §8 and §4.1 rule 3: at most 500 events, the nearest, truncated silently. The
// embedded store only: 520 publishes are slow on DynamoDB Local, and the query path is the same
// code on both adapters (tested there by the other tests).
func TestListCapsAt500(t *testing.T) {
	t.Parallel()
	h := newHarness(t, tables.Embedded(t))
	key := h.key("org_a", live)
	center := geo.Point{Lat: 40.4, Lon: -3.7}
	var mu sync.Mutex
	want := map[string]float64{}
	var wg sync.WaitGroup
	for i := range 520 {
		wg.Go(func() {
			p := roundPoint(destination(center, float64(i*37%360), 10+float64(i)*15))
			e := h.publish(key, point("congestion", p.Lat, p.Lon))
			mu.Lock()
			want[e.EventID] = geo.Distance(center, p)
			mu.Unlock()
		})
	}
	wg.Wait()
	got := h.area(key, q(center.Lat, center.Lon, "radius=9780"))
	if len(got) != 500 {
		t.Fatalf("got %d events; want 500 (docs/api.md §8: silently truncated)", len(got))
	}
	// Events are 10 m + 15 m * i away: the 500 nearest are i < 500.
	for i, e := range got {
		if d, far := want[e.EventID], 10+float64(500)*15-1; d > far {
			t.Errorf("event %d of the answer is %.0f m away; want only the 500 nearest (under %.0f m)", i, d, far)
		}
		if i > 0 && want[got[i-1].EventID] > want[e.EventID] {
			t.Errorf("event %d (%.0f m) after one at %.0f m; want nearest first", i, want[e.EventID], want[got[i-1].EventID])
		}
	}
}

// docs/api.md §1 and §4.1 rule 3: a live key is served live events only, a sandbox key both.
func TestListVisibility(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		liveKey, sandboxKey := h.key("org_a", live), h.key("org_a", sandbox)
		otherLive := h.key("org_b", live)
		l := h.publish(liveKey, point("accident", 41.9, 12.5))
		s := h.publish(sandboxKey, point("accident", 41.901, 12.5))
		o := h.publish(otherLive, point("accident", 41.902, 12.5))
		if got, want := ids(h.area(liveKey, q(41.9, 12.5))), []string{l.EventID, o.EventID}; !slices.Equal(got, want) {
			t.Errorf("live key: %v; want the live events %v only", got, want)
		}
		if got, want := ids(h.area(sandboxKey, q(41.9, 12.5))), []string{l.EventID, s.EventID, o.EventID}; !slices.Equal(got, want) {
			t.Errorf("sandbox key: %v; want live and sandbox %v", got, want)
		}
		// Organisation is resolved but does not alter the query (docs/api.md §4.1 rule 3).
		if got, want := ids(h.area(otherLive, q(41.9, 12.5))), []string{l.EventID, o.EventID}; !slices.Equal(got, want) {
			t.Errorf("org_b's live key: %v; want %v", got, want)
		}
	})
}

// The lookup budget of docs/performance.md §1, over the globe (covers grow towards the poles and at
// pentagons): a 1000 m query reads at most 20 cells at the fine level; the widest reads the coarse
// level's 12 to 24 cells (package doc, "Area index"); a sandbox credential reads both environments'
// partitions of the same cells.
func TestAreaLookupBudget(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	s, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	sandboxCaller := eventstore.Caller{Org: "o", Environment: event.EnvironmentSandbox}
	for _, c := range []struct {
		name      string
		caller    eventstore.Caller
		radius    float64
		level     int
		maxLookup int
	}{
		{"live 1000 m", liveCaller, 1000, eventstore.FineLevel, eventstore.MaxLookups},
		{"live 9780 m", liveCaller, 9780, eventstore.CoarseLevel, 24},
		// docs/api.md §1: a sandbox credential is served both environments, which share the
		// index's partitions: it reads no more than a live one.
		{"sandbox 1000 m", sandboxCaller, 1000, eventstore.FineLevel, eventstore.MaxLookups},
	} {
		t.Run(c.name, func(t *testing.T) {
			worst := 0
			for lat := -80.0; lat <= 80; lat += 7.3 {
				for lon := -180.0; lon < 180; lon += 23.7 {
					res, err := s.Area(context.Background(), c.caller, eventstore.AreaQuery{
						Center: geo.Point{Lat: lat, Lon: lon}, Radius: c.radius})
					if err != nil {
						t.Fatal(err)
					}
					if res.Level != c.level {
						t.Fatalf("at %v, %v: level %d; want %d", lat, lon, res.Level, c.level)
					}
					worst = max(worst, res.Lookups)
				}
			}
			if worst > c.maxLookup {
				t.Errorf("up to %d lookups; want at most %d", worst, c.maxLookup)
			}
		})
	}
}

// The area index follows revisions and ends (docs/api.md §4.1 rule 3): an event moved by a revision
// is found at its new place only, and an event ended by the deny quorum is no longer listed.
func TestListFollowsChanges(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		e := h.publish(key, point("roadworks", 59.33, 18.06))
		h.do("POST", "/v1/events/"+e.EventID+"/revisions", key, map[string]any{"lat": 59.40, "lon": 18.06}).
			expect(t, http.StatusOK)
		if got := h.area(key, q(59.33, 18.06)); len(got) != 0 {
			t.Errorf("old place after the revision: %v; want nothing", ids(got))
		}
		got := h.area(key, q(59.40, 18.06))
		if len(got) != 1 || got[0].Lat != 59.40 {
			t.Fatalf("new place after the revision: %+v; want the revised event", got)
		}
		for i := range event.DenyQuorum {
			h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{
				"action": "deny", "reporter_token": fmt.Sprintf("d%d", i)}).expect(t, http.StatusOK)
		}
		if got := h.area(key, q(59.40, 18.06)); len(got) != 0 {
			t.Errorf("after the deny quorum: %v; want nothing (the event is expired)", ids(got))
		}
	})
}

// The area cache (Options.CacheBytes) answers exactly what the table holds: a store that
// caches, under concurrent publishes, revisions, signals and queries and with a limit small
// enough to evict all the time, agrees afterwards with a store reading the same table.
func TestAreaCacheAgreesWithTheTable(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	cached, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock, CacheBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	center := geo.Point{Lat: 45.76, Lon: 4.84}
	near := func(r *rand.Rand) geo.Point {
		return roundPoint(destination(center, r.Float64()*360, r.Float64()*3000))
	}
	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for range 60 {
				switch op := r.IntN(10); {
				case op < 4:
					p := near(r)
					e, _, err := cached.Publish(ctx, liveCaller, event.EventIn{Type: "congestion", Lat: p.Lat, Lon: p.Lon})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					ids = append(ids, e.ID)
					mu.Unlock()
				case op < 7:
					mu.Lock()
					var id string
					if len(ids) > 0 {
						id = ids[r.IntN(len(ids))]
					}
					mu.Unlock()
					if id == "" {
						continue
					}
					var err error
					if op < 5 {
						p := near(r)
						_, err = cached.Revise(ctx, liveCaller, id, event.RevisionIn{Lat: p.Lat, Lon: p.Lon})
					} else {
						tok := fmt.Sprint("v", r.IntN(5))
						action := []string{event.ActionConfirm, event.ActionDeny}[r.IntN(2)]
						_, _, err = cached.Signal(ctx, liveCaller, id, event.SignalIn{Action: action, ReporterToken: &tok})
					}
					if err != nil && !errors.Is(err, event.ErrOver) {
						t.Error(err)
						return
					}
				default:
					res, err := cached.Area(ctx, liveCaller, eventstore.AreaQuery{Center: near(r), Radius: 1000 + r.Float64()*8000})
					if err != nil {
						t.Error(err)
						return
					}
					res.AppendJSON(nil) // as the route does, then its memory goes to the next query
					res.Release()
				}
			}
		})
	}
	wg.Wait()
	r := rand.New(rand.NewPCG(99, 99))
	for i := range 40 {
		q := eventstore.AreaQuery{Center: near(r), Radius: []float64{300, 1000, 2500, 9780}[i%4]}
		got, err := cached.Area(ctx, liveCaller, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Area(ctx, liveCaller, q)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.AppendJSON(nil)) != string(want.AppendJSON(nil)) {
			t.Fatalf("query %d (radius %v): cached answer of %d events differs from the table's %d", i, q.Radius, len(got.Events), len(want.Events))
		}
		got.Release()
		want.Release()
	}
}

// docs/api.md §10.2: the limits document's query_level is the resolution the area index is read at
// for the default radius, and max_query_radius_m the radius GET /v1/events refuses above.
func TestLimitsDocumentMatchesTheIndex(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	cfg := config.Default()
	cfg.EventIDKey = testIDKey
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab, Clock: tab.Clock})
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/v1/meta/limits", nil))
	var limits struct {
		MaxQueryRadiusM float64 `json:"max_query_radius_m"`
		QueryLevel      int     `json:"query_level"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &limits); err != nil {
		t.Fatal(err)
	}
	s, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Area(context.Background(), liveCaller, eventstore.AreaQuery{Center: geo.Point{Lat: 1, Lon: 1}, Radius: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if limits.QueryLevel != res.Level || limits.QueryLevel != eventstore.QueryLevel {
		t.Errorf("query_level %d; a 1000 m query reads level %d (eventstore.QueryLevel %d)", limits.QueryLevel, res.Level, eventstore.QueryLevel)
	}
	if limits.MaxQueryRadiusM != 9780 {
		t.Errorf("max_query_radius_m %v; want 9780 (docs/api.md §8)", limits.MaxQueryRadiusM)
	}
}

// The area query answers exactly what docs/api.md §4.1 rule 3 says, whatever the index looks
// like inside: the active events of the networks the caller is served (§1) that pass its
// filters and whose whole extent comes within the radius, nearest first (ties by id), at most
// 500, each as GET /v1/events/{id} shows it. Checked against every event of a dense town with
// LineStrings, sandbox events, signals and expired events, at radii read by cells and by
// partitions, by a store with the area cache and one without.
func TestAreaAgreesWithEveryEvent(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	cached, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock, CacheBytes: 64 << 20, SoleWriter: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(8, 8))
	center := geo.Point{Lat: 45.76, Lon: 4.84}
	near := func(d float64) geo.Point { return roundPoint(destination(center, r.Float64()*360, d*r.Float64())) }
	types := []string{"accident", "congestion", "road_damage", "police_check"}
	var ids []string
	for i := range 3000 {
		c := eventstore.Caller{Org: "org_town", Environment: live}
		if i%7 == 0 {
			c.Environment = sandbox
		}
		p := near(12000)
		in := event.EventIn{Type: types[r.IntN(len(types))], Lat: p.Lat, Lon: p.Lon}
		if i%8 == 0 {
			coords := [][2]float64{{p.Lon, p.Lat}}
			for range 1 + r.IntN(6) {
				q := roundPoint(destination(p, r.Float64()*360, 300+1500*r.Float64()))
				coords = append(coords, [2]float64{q.Lon, q.Lat})
				p = q
			}
			in.Type, in.Geometry = "congestion", &event.LineString{Type: event.GeometryType, Coordinates: coords}
		}
		ev, _, err := cached.Publish(ctx, c, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
		if i%5 == 0 {
			tok := fmt.Sprint("v", i%3)
			if _, _, err := cached.Signal(ctx, eventstore.Caller{Org: "org_fleet", Environment: c.Environment}, ev.ID,
				event.SignalIn{Action: event.ActionConfirm, ReporterToken: &tok}); err != nil {
				t.Fatal(err)
			}
		}
		if i%300 == 0 {
			tab.Clock.Advance(5 * time.Minute) // some expire before the queries
		}
	}
	now := tab.Clock.Now()
	var all []event.Event
	for _, id := range ids {
		ev, err := plain.Get(ctx, eventstore.Caller{Org: "org_town", Environment: sandbox}, id)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ev)
	}
	var held [2]heldAnswer // each store's last answer
	for i := range 150 {
		c := eventstore.Caller{Org: "org_q", Environment: []string{live, sandbox}[i%2]}
		// Radii of 2.5 to 4.5 km read partitions and stay under the cap, so that events near the
		// edge of the circle, near the edge of a partition too, count.
		q := eventstore.AreaQuery{Center: near(8000), Radius: []float64{200, 1000, 2500, 3500, 4500, 9780}[i%6]}
		if i%3 == 1 {
			q.Types = []string{"congestion", "accident"}
		}
		if i%4 == 2 {
			q.MinConfidence = 0.7
		}
		type hit struct {
			d    float64
			ev   event.Event
			json []byte
		}
		var want []hit
		for _, ev := range all {
			if ev.IsOver(now) || ev.Environment == sandbox && c.Environment == live ||
				len(q.Types) > 0 && !slices.Contains(q.Types, ev.Type) ||
				event.Confidence(ev.ConfirmCount, ev.DenyCount) < q.MinConfidence {
				continue
			}
			if d := geo.DistanceToExtent(q.Center, ev.Extent()); d <= q.Radius {
				js, err := json.Marshal(ev.Public(now))
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, hit{d, ev, js})
			}
		}
		slices.SortFunc(want, func(a, b hit) int {
			if a.d != b.d {
				return cmp.Compare(a.d, b.d)
			}
			return strings.Compare(a.ev.ID, b.ev.ID)
		})
		want = want[:min(len(want), eventstore.DefaultMaxEventsPerQuery)]
		body := []byte{'['} // what the route writes for want
		for j, w := range want {
			if j > 0 {
				body = append(body, ',')
			}
			body = append(body, w.json...)
		}
		body = append(body, ']')
		for si, s := range []*eventstore.Store{cached, plain} {
			res, err := s.Area(ctx, c, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Events) != len(want) {
				t.Fatalf("query %d (%+v, %s): %d events; want %d", i, q, c.Environment, len(res.Events), len(want))
			}
			for j, e := range res.Events {
				if e.ID != want[j].ev.ID || string(e.JSON()) != string(want[j].json) {
					t.Fatalf("query %d (%+v, %s), event %d: %s at %.1f m\n%s\nwant %s at %.1f m\n%s", i, q, c.Environment, j,
						e.ID, e.Distance(), e.JSON(), want[j].ev.ID, want[j].d, want[j].json)
				}
			}
			// An answer is kept until released, while the next query runs (its memory is reused
			// by later queries only once released): the body the route writes is still whole.
			if h := held[si]; h.res != nil {
				if got := h.res.AppendJSON(nil); string(got) != string(h.body) {
					t.Fatalf("query %d's answer changed while query %d ran:\n%s\nwant\n%s", i-1, i, got, h.body)
				}
				h.res.Release()
				if h.res.Events != nil {
					t.Fatalf("query %d's answer still has %d events once released", i-1, len(h.res.Events))
				}
			}
			held[si] = heldAnswer{res, body}
		}
	}
}

// heldAnswer is an answer not yet released and the body it must write.
type heldAnswer struct {
	res  *eventstore.AreaResult
	body []byte
}
