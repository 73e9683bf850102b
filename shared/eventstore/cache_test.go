package eventstore

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// cacheItem is an area index item of live event id under pk, with a record of the given version.
func cacheItem(t *testing.T, pk, id string, version int64) store.Item {
	t.Helper()
	ev := event.Event{ID: id, Type: "accident", Lat: 1, Lon: 2, Version: version,
		ExpiresAt: time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)}
	return indexItem(t, pk, ev)
}

// indexItem is the area index item of live event ev under pk, written when ev was created.
func indexItem(t *testing.T, pk string, ev event.Event) store.Item {
	t.Helper()
	ev.Environment, ev.Status = event.EnvironmentLive, event.StatusActive
	ev.CreatedAt = ev.ExpiresAt.Add(-time.Hour)
	rec, err := encodeRecord(ev, ev.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	return areaItem(store.Key{PK: pk, SK: "00l" + ev.ID}, ev.ExpiresAt, rec)
}

// live is what a live credential is served.
var live = []string{event.EnvironmentLive}

// versions returns the version of each record the cache holds for pk, by id, or nil when the
// partition is not loaded.
func versions(c *partCache, pk string) map[string]int64 {
	var out map[string]int64
	c.view(pk, 0, func(groups []group) {
		out = map[string]int64{}
		for _, g := range groups {
			for _, r := range g.recs {
				out[r.id()] = r.version
			}
		}
	})
	return out
}

// A partition read from the table is kept, and writes of this process keep it current.
func TestPartCacheFollowsWrites(t *testing.T) {
	t.Parallel()
	c := newPartCache(1 << 20)
	const pk = "area#live#cell"
	hit, tk := c.view(pk, 0, func([]group) {})
	if hit {
		t.Fatal("empty cache: hit; want a miss")
	}
	a, _ := cacheRecord(cacheItem(t, pk, "ev_a", 1), true, new(slab))
	c.fill(tk, []cachedRec{a})
	if got := versions(c, pk); fmt.Sprint(got) != "map[ev_a:1]" {
		t.Fatalf("after fill: %v; want ev_a at version 1", got)
	}
	c.apply([]store.Op{
		store.PutOp(cacheItem(t, pk, "ev_a", 2), store.Condition{}),
		store.PutOp(cacheItem(t, pk, "ev_b", 1), store.Condition{}),
		store.PutOp(store.Item{store.AttrPK: "event#ev_a", store.AttrSK: "event"}, store.Condition{}),
	}, nil, 0)
	if got := versions(c, pk); fmt.Sprint(got) != "map[ev_a:2 ev_b:1]" {
		t.Fatalf("after puts: %v; want ev_a at 2 and ev_b at 1", got)
	}
	c.apply([]store.Op{store.DeleteOp(store.Key{PK: pk, SK: "00lev_a"}, store.Condition{})}, nil, 0)
	if got := versions(c, pk); fmt.Sprint(got) != "map[ev_b:1]" {
		t.Fatalf("after delete: %v; want ev_b only", got)
	}
	// A refused transaction wrote nothing: the partition stays.
	c.apply([]store.Op{store.DeleteOp(store.Key{PK: pk, SK: "00lev_b"}, store.Condition{})}, &store.ConditionError{Op: 0}, 0)
	if got := versions(c, pk); fmt.Sprint(got) != "map[ev_b:1]" {
		t.Fatalf("after a refused transaction: %v; want ev_b still", got)
	}
	// A transaction of unknown outcome drops the partition: the table decides again.
	c.apply([]store.Op{store.DeleteOp(store.Key{PK: pk, SK: "00lev_b"}, store.Condition{})}, errors.New("timeout"), 0)
	if got := versions(c, pk); got != nil {
		t.Fatalf("after a failed transaction: %v; want the partition dropped", got)
	}
}

// A reader that read the table before a write of this process must not put back what it read
// without the write: it would hide the write until the partition is dropped. The writes since
// its read began are replayed on what it read; when they were not all kept, the fill is refused.
func TestPartCacheFillCatchesUpWithWrites(t *testing.T) {
	t.Parallel()
	const pk = "area#live#cell"
	old, _ := cacheRecord(cacheItem(t, pk, "ev_a", 1), true, new(slab))
	other, _ := cacheRecord(cacheItem(t, pk, "ev_b", 1), true, new(slab))
	put := func(id string, version int64) []store.Op {
		return []store.Op{store.PutOp(cacheItem(t, pk, id, version), store.Condition{})}
	}
	t.Run("writes in between are replayed", func(t *testing.T) {
		c := newPartCache(1 << 20)
		_, tk := c.view(pk, 0, func([]group) {})
		c.apply(put("ev_a", 2), nil, 0)
		c.apply(put("ev_c", 1), nil, 0)
		c.apply([]store.Op{store.DeleteOp(store.Key{PK: pk, SK: "00lev_b"}, store.Condition{})}, nil, 0)
		c.fill(tk, []cachedRec{old, other})
		if got := versions(c, pk); fmt.Sprint(got) != "map[ev_a:2 ev_c:1]" {
			t.Errorf("fill after writes: %v; want ev_a at 2 and ev_c at 1, ev_b deleted", got)
		}
	})
	t.Run("a read that saw the write already", func(t *testing.T) {
		c := newPartCache(1 << 20)
		_, tk := c.view(pk, 0, func([]group) {})
		c.apply(put("ev_a", 2), nil, 0)
		now, _ := cacheRecord(cacheItem(t, pk, "ev_a", 2), true, new(slab))
		c.fill(tk, []cachedRec{now})
		if got := versions(c, pk); fmt.Sprint(got) != "map[ev_a:2]" {
			t.Errorf("fill: %v; want ev_a once, at 2", got)
		}
	})
	t.Run("write of unknown outcome in between", func(t *testing.T) {
		c := newPartCache(1 << 20)
		_, tk := c.view(pk, 0, func([]group) {})
		c.apply(put("ev_a", 2), errors.New("timeout"), 0)
		c.fill(tk, []cachedRec{old})
		if got := versions(c, pk); got != nil {
			t.Errorf("fill after a failed write: %v; want it refused", got)
		}
	})
	t.Run("more writes in between than are kept", func(t *testing.T) {
		c := newPartCache(1 << 20)
		_, tk := c.view(pk, 0, func([]group) {})
		for v := range int64(maxPending + 1) {
			c.apply(put("ev_a", v+2), nil, 0)
		}
		c.fill(tk, []cachedRec{old})
		if got := versions(c, pk); got != nil {
			t.Errorf("fill after %d writes: %v; want it refused", maxPending+1, got)
		}
		// The next reader watches afresh and loads.
		_, tk = c.view(pk, 0, func([]group) {})
		c.apply(put("ev_a", 100), nil, 0)
		c.fill(tk, []cachedRec{old})
		if got := versions(c, pk); fmt.Sprint(got) != "map[ev_a:100]" {
			t.Errorf("next fill: %v; want ev_a at 100", got)
		}
	})
	t.Run("eviction in between", func(t *testing.T) {
		c := newPartCache(1 << 20)
		_, tk := c.view(pk, 0, func([]group) {})
		c.evict()
		c.fill(tk, []cachedRec{old})
		if got := versions(c, pk); got != nil {
			t.Errorf("fill after an eviction: %v; want it refused (the write count was forgotten)", got)
		}
	})
}

// The cache stays within its limit, however many partitions are read.
func TestPartCacheLimit(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	c := newPartCache(limit)
	for i := range 1000 {
		pk := fmt.Sprintf("area#live#%d", i)
		_, tk := c.view(pk, 0, func([]group) {})
		r, _ := cacheRecord(cacheItem(t, pk, "ev_a", 1), true, new(slab))
		c.fill(tk, []cachedRec{r, r})
		if got := c.size.Load(); got > limit {
			t.Fatalf("after %d partitions: %d bytes; want at most %d", i+1, got, limit)
		}
	}
}

// pointDistance is geo.Distance to the bit, so that a point's distance does not depend on
// whether it was measured by an area query or by anything else using geo.
func TestPointDistance(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 3))
	for range 100_000 {
		c := geo.Point{Lat: r.Float64()*180 - 90, Lon: r.Float64()*360 - 180}
		p := geo.Point{Lat: geo.Round5(c.Lat + r.NormFloat64()), Lon: geo.Round5(math.Mod(c.Lon+r.NormFloat64()+540, 360) - 180)}
		p.Lat = max(-90, min(90, p.Lat))
		m := newMatcher(AreaQuery{Center: c, Radius: 1000}, 0, 500, live)
		if got, want := m.pointDistance(p, math.Cos(p.Lat*degToRad)), geo.Distance(c, p); got != want {
			t.Fatalf("pointDistance(%v, %v) = %v; geo.Distance = %v", c, p, got, want)
		}
	}
}

// Expired records leave the cache once a minute: the table's TTL deletions never reach it.
func TestPartCachePrunesExpired(t *testing.T) {
	t.Parallel()
	c := newPartCache(1 << 20)
	const pk = "area#live#cell"
	expires := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() // cacheItem's expiry
	_, tk := c.view(pk, expires-1, func([]group) {})
	a, _ := cacheRecord(cacheItem(t, pk, "ev_a", 1), true, new(slab))
	c.fill(tk, []cachedRec{a})
	before := c.size.Load()
	c.view(pk, expires, func([]group) {}) // the first view prunes at once
	if got := versions(c, pk); len(got) != 0 {
		t.Errorf("after expiry: %v; want the record pruned", got)
	}
	if after := c.size.Load(); after != before-a.size {
		t.Errorf("size %d after pruning; want %d", after, before-a.size)
	}
}

// scanItem is an area index item of event id under pk at the given extent (one position: a
// point), expiring at expires.
func scanItem(t *testing.T, pk, id string, expires time.Time, ext ...geo.Point) store.Item {
	t.Helper()
	typ := "accident"
	if len(ext) > 1 {
		typ = "congestion"
	}
	return typedItem(t, pk, id, typ, expires, ext...)
}

// typedItem is scanItem's item with an event of type typ.
func typedItem(t *testing.T, pk, id, typ string, expires time.Time, ext ...geo.Point) store.Item {
	t.Helper()
	ev := event.Event{ID: id, Type: typ, Lat: ext[0].Lat, Lon: ext[0].Lon, Version: 1, ExpiresAt: expires}
	if len(ext) > 1 {
		coords := make([][2]float64, len(ext))
		for i, p := range ext {
			coords[i] = [2]float64{p.Lon, p.Lat}
		}
		ev.Geometry = &event.LineString{Type: event.GeometryType, Coordinates: coords}
	}
	return indexItem(t, pk, ev)
}

// A group's key must keep its lower bound one, and the order of the bounds, or addPart would
// stop before a group that holds a nearer event (docs/api.md §4.1 rule 3: nearest first).
func TestNearKeyKeepsBoundAndOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 9))
	ds := []float64{-5000, -1e-9, 0, 1e-9, 0.1, 1, 999.99999999, 1000, 1000.0000001, 9780, 9781, 2e7}
	for range 20000 {
		ds = append(ds, math.Ldexp(r.Float64(), r.IntN(40)-15)) // from micrometres to far beyond the globe
	}
	for i, d := range ds {
		k := nearKey(d, i)
		if got := nearDist(k); got > max(d, 0) || got < max(d, 0)*(1-1e-6) {
			t.Fatalf("bound %v became %v", d, got)
		}
		if int(uint32(k)) != i {
			t.Fatalf("group %d came back as %d", i, uint32(k))
		}
	}
	slices.Sort(ds)
	for i := 1; i < len(ds); i++ {
		if nearKey(ds[i-1], 0)>>32 > nearKey(ds[i], 0)>>32 {
			t.Fatalf("bound %v sorts after %v", ds[i-1], ds[i])
		}
	}
}

// A cached partition read by groups, nearest first, skipping the groups out of reach, and
// points first within each (matcher.addPart) gives exactly the answer of its records taken in
// order, with the cap reached (where the reach test and the skipping tighten) and not.
func TestAddPartAgreesWithAdd(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 8))
	center := geo.Point{Lat: 48.85, Lon: 2.35}
	near := func(spread float64) geo.Point {
		return geo.Point{Lat: geo.Round5(center.Lat + (r.Float64()-0.5)*spread), Lon: geo.Round5(center.Lon + (r.Float64()-0.5)*spread)}
	}
	expires := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	types := append(taxonomy.IDs(), "retired_type") // one the taxonomy does not hold: kind 0
	var recs []cachedRec
	for i := range 2000 {
		ext := []geo.Point{near(0.1)}
		if r.IntN(5) == 0 { // LineStrings of 2 to 6 positions, some long
			for range 1 + r.IntN(5) {
				ext = append(ext, near(0.1))
			}
		}
		typ := types[r.IntN(len(types))]
		rec, err := cacheRecord(typedItem(t, "area#live#cell", fmt.Sprintf("ev_%05d", i), typ, expires, ext...), i%2 == 0, new(slab))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	var p part
	p.load(recs)
	filters := [][]string{nil, {"accident"}, {"retired_type"}, {"congestion", "roadworks", "retired_type"}}
	for _, radius := range []float64{300, 1000, 3000, 9780} {
		for _, limit := range []int{500, 50} {
			for n := range 8 {
				q := AreaQuery{Center: near(0.05), Radius: radius, Types: filters[n%len(filters)]}
				byPart, inOrder := newMatcher(q, 0, limit, live), newMatcher(q, 0, limit, live)
				byPart.addPart(p.groups)
				for i := range recs {
					inOrder.add(&recs[i])
				}
				if got, want := answerText(byPart.result(true)), answerText(inOrder.result(false)); got != want {
					t.Errorf("centre %v, radius %v, limit %d, types %q: by groups found\n%s\nwant (records in order)\n%s", q.Center, radius, limit, q.Types, got, want)
				}
			}
		}
	}
}

// A point found twice, read across a concurrent move, is answered once, in its newest copy,
// wherever the copies come in the order of reading.
func TestResultKeepsTheNewestCopy(t *testing.T) {
	t.Parallel()
	center := geo.Point{Lat: 48.85, Lon: 2.35}
	expires := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	old, err := cacheRecord(scanItem(t, "area#live#a", "ev_moved", expires, geo.Point{Lat: 48.851, Lon: 2.35}), true, new(slab))
	if err != nil {
		t.Fatal(err)
	}
	moved := old
	moved.version, moved.p0 = 2, geo.Point{Lat: 48.852, Lon: 2.35}
	moved.u, moved.cos = moved.p0.Unit(), math.Cos(moved.p0.Lat*degToRad)
	other, err := cacheRecord(scanItem(t, "area#live#b", "ev_other", expires, geo.Point{Lat: 48.8515, Lon: 2.35}), true, new(slab))
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]cachedRec{{old, other, moved}, {moved, other, old}} {
		m := newMatcher(AreaQuery{Center: center, Radius: 1000}, 0, 500, live)
		for i := range order {
			m.add(&order[i])
		}
		got := m.result(false)
		if len(got) != 2 || got[0].ID != "ev_other" || got[1].ID != "ev_moved" || got[1].Distance() != geo.Distance(center, moved.p0) {
			t.Errorf("found %v; want ev_other, then ev_moved once at its new position, %.1f m", got, geo.Distance(center, moved.p0))
		}
	}
}

// A query can tell whether records were added to the cache while it read: only then may it
// have seen an event twice (stillSince).
func TestPartCacheTellsWhetherRecordsWereAdded(t *testing.T) {
	t.Parallel()
	c := newPartCache(1 << 20)
	const pk = "area#live#cell"
	mark, still := c.still()
	if !still || !c.stillSince(mark) {
		t.Fatal("an idle cache: not still")
	}
	_, tk := c.view(pk, 0, func([]group) {})
	a, _ := cacheRecord(cacheItem(t, pk, "ev_a", 1), true, new(slab))
	c.fill(tk, []cachedRec{a})
	if c.stillSince(mark) {
		t.Error("after a fill: still; want the query told")
	}
	mark, _ = c.still()
	c.apply([]store.Op{store.PutOp(cacheItem(t, pk, "ev_b", 1), store.Condition{})}, nil, 0)
	if c.stillSince(mark) {
		t.Error("after a write: still; want the query told")
	}
}

// A query filtered by type keeps exactly the records of its types (docs/api.md §4.1), tested
// by the code kept inline for the taxonomy's types and by name for one it no longer holds, as
// a record written before a type was retired would carry.
func TestTypeFilterKeepsItsTypesOnly(t *testing.T) {
	t.Parallel()
	expires := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	at := geo.Point{Lat: 48.85, Lon: 2.35}
	var recs []cachedRec
	for i, typ := range []string{"accident", "weather_hazard", "retired_type", "accident"} {
		ev := event.Event{ID: fmt.Sprintf("ev_%d_%s", i, typ), Type: typ, Lat: at.Lat, Lon: at.Lon, Version: 1, ExpiresAt: expires}
		rec, err := cacheRecord(indexItem(t, "area#live#cell", ev), true, new(slab))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	for _, c := range []struct {
		types []string
		want  string
	}{
		{[]string{"accident"}, "ev_0_accident ev_3_accident"},
		{[]string{"weather_hazard", "retired_type"}, "ev_1_weather_hazard ev_2_retired_type"},
		{[]string{"retired_type"}, "ev_2_retired_type"},
		{[]string{"no_such_type"}, ""},
		{nil, "ev_0_accident ev_1_weather_hazard ev_2_retired_type ev_3_accident"},
	} {
		m := newMatcher(AreaQuery{Center: at, Radius: 100, Types: c.types}, 0, 500, live)
		for i := range recs {
			m.add(&recs[i])
		}
		var ids []string
		for _, e := range m.result(true) {
			ids = append(ids, e.ID)
		}
		if got := strings.Join(ids, " "); got != c.want {
			t.Errorf("types %q kept %q; want %q", c.types, got, c.want)
		}
	}
}

// answerText is what an answer says: each event's id, distance and JSON, in order.
func answerText(evs []AreaEvent) string {
	var b strings.Builder
	for i := range evs {
		fmt.Fprintf(&b, "%s %v %s\n", evs[i].ID, evs[i].Distance(), evs[i].JSON())
	}
	return b.String()
}

// The answer is ordered by distance, then id, to the last bit, however close the distances,
// and capped at the nearest (docs/api.md §4.1 rule 3, §8): result sorts by the keys rounded to
// float32 first, and measures exactly only the points whose keys are too close to tell apart.
// The points lie on four bearings at distances a micrometre apart, so that many share a
// float32 key and some tie.
func TestResultOrdersCloseDistancesExactly(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 4))
	center := geo.Point{Lat: 48.1, Lon: 11.5}
	m := newMatcher(AreaQuery{Center: center, Radius: 9780}, 0, 300, live)
	type want struct {
		id string
		d  float64
	}
	var all []want
	for i := range 400 {
		p := geo.Destination(center, float64(r.IntN(4))*90, 1000+float64(r.IntN(50))*1e-6)
		e := AreaEvent{ID: fmt.Sprintf("ev_%03d", r.IntN(1000)) + fmt.Sprint(i), key: p.Unit().ChordSquared(m.cu),
			dist: math.NaN(), p0: p, cos: math.Cos(p.Lat * degToRad), m: m}
		m.found = append(m.found, e)
		m.ver = append(m.ver, 1)
		m.push(e.key)
		all = append(all, want{e.ID, geo.Distance(center, p)})
	}
	slices.SortFunc(all, func(a, b want) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.id, b.id)) })
	got := m.result(true)
	if len(got) != 300 {
		t.Fatalf("%d events; want the cap, 300", len(got))
	}
	for i := range got {
		if got[i].ID != all[i].id || got[i].Distance() != all[i].d {
			t.Fatalf("event %d: %s at %v m; want %s at %v m (nearest first, ties by id, as geo.Distance measures)",
				i, got[i].ID, got[i].Distance(), all[i].id, all[i].d)
		}
	}
}

// A partition whose events change again and again (votes, revisions) keeps its records'
// bytes within twice what its live records use, plus a chunk: a chunk lives while any record
// in it does, so the dead copies are compacted away. What a query took from the cache before
// stays as it was (docs/performance.md §5).
func TestPartSlabStaysBoundedUnderChanges(t *testing.T) {
	t.Parallel()
	const pk, n = "area#live#cell", 200
	var p part
	p.load(nil)
	put := func(id string, version int64) {
		t.Helper()
		if _, err := p.change(store.Op{Kind: store.OpPut, Item: cacheItem(t, pk, id, version)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(fmt.Sprintf("ev_%03d", i), 1)
	}
	m := newMatcher(AreaQuery{Center: geo.Point{Lat: 1, Lon: 2}, Radius: 1000}, 0, 500, live)
	m.addPart(p.groups)
	before := m.result(true)
	if len(before) != n {
		t.Fatalf("found %d events; want %d", len(before), n)
	}
	wantID, wantJSON := before[7].ID, string(before[7].JSON())

	for version := int64(2); version <= 60; version++ {
		for i := range n {
			put(fmt.Sprintf("ev_%03d", i), version)
		}
		if limit := 2*p.data + maxChunk; p.slab.held > limit {
			t.Fatalf("version %d: the slab holds %d bytes for %d live; want at most %d", version, p.slab.held, p.data, limit)
		}
	}
	if before[7].ID != wantID || string(before[7].JSON()) != wantJSON {
		t.Fatalf("an answer taken before the changes now reads %s %s; want %s %s", before[7].ID, before[7].JSON(), wantID, wantJSON)
	}
	got := map[string]int64{}
	for _, g := range p.groups {
		for _, r := range g.recs {
			got[r.id()] = r.version
			if at, ok := p.where[r.sk()]; !ok || p.groups[at.group].recs[at.i].sk() != r.sk() {
				t.Fatalf("record %s is not found by its sort key", r.sk())
			}
			var pub event.EventPublic
			js := appendUnpacked(nil, r.packed())
			if err := json.Unmarshal(js, &pub); err != nil || pub.EventID != r.id() || r.version != 60 {
				t.Fatalf("record %s renders %s (%v); want its event at version 60", r.id(), js, err)
			}
		}
	}
	if len(got) != n {
		t.Fatalf("the part holds %d events; want %d", len(got), n)
	}
}

// A part keeps each group's records in runs by kind, however records come, change type, go
// or expire, and finds each by its sort key: a filtered query reads only its types' runs, so
// a record out of its run, or lost by a move, is missed by every query asking for its type.
func TestPartKeepsKindRuns(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 4))
	types := append(taxonomy.IDs(), "retired_type")
	at := func() geo.Point { return geo.Point{Lat: 48.85 + r.Float64()*0.05, Lon: 2.35 + r.Float64()*0.05} }
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(id string) cachedRec {
		t.Helper()
		expires := now.Add(time.Duration(1+r.IntN(100)) * time.Minute)
		rec, err := cacheRecord(typedItem(t, "area#live#cell", id, types[r.IntN(len(types))], expires, at()), true, new(slab))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	var initial []cachedRec
	for i := range 300 {
		initial = append(initial, record(fmt.Sprintf("ev_%04d", i)))
	}
	var p part
	p.load(initial)
	want := map[string]int64{} // id -> expiry of the record the part must hold
	for _, rec := range initial {
		want[rec.id()] = rec.expires
	}
	check := func(step string) {
		t.Helper()
		got := map[string]int64{}
		for gi, g := range p.groups {
			if int(g.ends[len(g.ends)-1]) != len(g.recs) {
				t.Fatalf("%s: group %d's runs end at %d for %d records", step, gi, g.ends[len(g.ends)-1], len(g.recs))
			}
			for k := range g.ends {
				from, to := g.run(k)
				if from > to {
					t.Fatalf("%s: group %d's run of kind %d is [%d, %d)", step, gi, k, from, to)
				}
				for i := from; i < to; i++ {
					rec := &g.recs[i]
					if int(rec.kind) != k {
						t.Fatalf("%s: %s, of kind %d, lies in the run of kind %d", step, rec.id(), rec.kind, k)
					}
					if s, ok := p.where[rec.sk()]; !ok || s != (slot{int32(gi), i}) {
						t.Fatalf("%s: %s lies at %d/%d, found at %v", step, rec.id(), gi, i, s)
					}
					got[rec.id()] = rec.expires
				}
			}
		}
		if len(p.where) != len(got) || !maps.Equal(got, want) {
			t.Fatalf("%s: the part holds %d records (%d by key); want %d", step, len(got), len(p.where), len(want))
		}
	}
	check("load")
	for step := range 3000 {
		id := fmt.Sprintf("ev_%04d", r.IntN(400))
		switch r.IntN(3) {
		case 0, 1: // a new record, or a new copy of one held, perhaps of another type
			rec := record(id)
			p.put(rec)
			want[id] = rec.expires
		case 2:
			if s, ok := p.where["00l"+id]; ok {
				p.remove(s)
				delete(want, id)
			}
		}
		if step%500 == 499 {
			now = now.Add(10 * time.Minute)
			p.pruneAt = 0
			p.prune(now.UnixNano())
			maps.DeleteFunc(want, func(_ string, expires int64) bool { return expires <= now.UnixNano() })
		}
		check(fmt.Sprintf("step %d", step))
	}
}
