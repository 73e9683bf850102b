package eventstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
)

// AreaQuery selects the active events around a point (docs/api.md §4.1, GET /v1/events).
type AreaQuery struct {
	Center geo.Point
	// Radius in metres, more than 0 and at most Options.MaxRadius.
	Radius float64
	// Types keeps events of these types only; empty keeps every type.
	Types []string
	// MinConfidence keeps events whose confidence is at least this (0..1).
	MinConfidence float64
}

// AreaEvent is one event an area query found.
type AreaEvent struct {
	ID string
	// Distance in metres from the query's centre to the event's full extent (docs/api.md §4.1 rule 3).
	Distance float64
	// JSON is the event's EventPublic as GET /v1/events sends it.
	JSON []byte
	// source is event.Event.Source, nil when the record predates it (record.go).
	source []byte
}

// AreaResult is the answer of an area query and what it cost.
type AreaResult struct {
	// Events are the matching events, nearest first (ties by id), at most
	// Options.MaxEventsPerQuery of them (docs/api.md §8: truncated silently).
	Events []AreaEvent
	// Level is the H3 resolution whose cells were read.
	Level int
	// Lookups is the number of index partitions read (one table Query each, unless the
	// partition was cached: Cached of them), and ItemsRead the index records they held.
	Lookups, Cached, ItemsRead int
}

// AppendJSON appends the events as a JSON array of EventPublic, the body of GET /v1/events,
// without encoding anything again.
func (r *AreaResult) AppendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, e := range r.Events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.JSON...)
	}
	return append(b, ']')
}

// Area returns the active events of the networks the caller is served (docs/api.md §1: live for a
// live credential, live and sandbox for a sandbox credential) whose extent comes within
// q.Radius of q.Center and that pass q's filters, nearest first, capped silently at
// Options.MaxEventsPerQuery (docs/api.md §4.1 rule 3, §8).
//
// It reads only the area index: the cells covering the circle at the level coverFor picks,
// one table Query per cell and environment, several at once. Each index item carries the
// event's type, confidence, expiry, extent and public JSON, so the events are filtered,
// measured exactly (geo.DistanceToExtent) and answered without reading them. Expiry is checked
// against the clock here, whatever the table's TTL deletion has done (docs/api.md §3: an event is
// expired once expires_at is reached). A LineString indexed under several cells is answered
// once, in its newest copy.
//
// At the coarse level, which large radii use, the cells are read nearest first, in growing
// waves, and reading stops as soon as the cap is reached by events that no unread cell can
// beat: a 9780 m query over a dense city reads the few cells around its centre, not all of
// them.
func (s *Store) Area(ctx context.Context, c Caller, q AreaQuery) (*AreaResult, error) {
	return s.area(ctx, c.environments(), q)
}

// area is Area over the partitions of the environments envs.
func (s *Store) area(ctx context.Context, envs []string, q AreaQuery) (*AreaResult, error) {
	if !q.Center.Valid() || !(q.Radius > 0) || q.Radius > s.maxRadius || math.IsNaN(q.MinConfidence) {
		return nil, fmt.Errorf("%w: centre %v, radius %v, min_confidence %v", ErrInvalidQuery, q.Center, q.Radius, q.MinConfidence)
	}
	cov, err := coverFor(q.Center, q.Radius)
	if err != nil {
		return nil, err
	}
	return s.areaIn(ctx, envs, q, cov)
}

// areaIn answers q, checked already, from the index cells of cov.
func (s *Store) areaIn(ctx context.Context, envs []string, q AreaQuery, cov cover) (*AreaResult, error) {
	res := &AreaResult{Level: cov.level}
	m := newMatcher(q, s.clock.Now().UnixNano(), s.maxPerQuery)
	defer m.release()
	var (
		mark  uint64
		still bool
	)
	if s.cache != nil {
		mark, still = s.cache.still()
	}

	waves := [][]h3.Cell{cov.cells}
	var bounds []float64 // lower bound of the distance to the first cell of each wave
	if cov.level != levels[0] && len(cov.cells) > 1 {
		var err error
		waves, bounds, err = nearestFirst(q.Center, cov)
		if err != nil {
			return nil, err
		}
	}
	for i, wave := range waves {
		pks := make([]string, 0, len(wave)*len(envs))
		for _, cell := range wave {
			for _, env := range envs {
				pks = append(pks, areaPK(env, geo.CellString(cell)))
			}
		}
		res.Lookups += len(pks)
		if err := s.readWave(ctx, pks, m, res); err != nil {
			return nil, err
		}
		if i+1 < len(waves) && m.complete(bounds[i+1]) {
			break
		}
	}
	if m.bad > 0 {
		s.log.ErrorContext(ctx, "events: skipped unreadable area index records", "count", m.bad)
	}
	res.Events = m.result(still && res.Cached == res.Lookups && s.cache.stillSince(mark))
	return res, nil
}

// nearestFirst orders the cover's cells by their distance from center and groups them in
// waves of 1, 1, 2, 2, 4, 4, 8... cells. bounds[i] is a lower bound of the distance from center
// to anything indexed in wave i or later.
func nearestFirst(center geo.Point, cov cover) ([][]h3.Cell, []float64, error) {
	origin, err := h3.LatLngToCell(h3.NewLatLng(center.Lat, center.Lon), cov.level)
	if err != nil {
		return nil, nil, fmt.Errorf("cell of %v: %w", center, err)
	}
	type ranked struct {
		cell h3.Cell
		dist float64
	}
	cells := make([]ranked, len(cov.cells))
	for i, cell := range cov.cells {
		cells[i].cell = cell
		if cell == origin {
			continue // it holds the centre: distance 0
		}
		// The centre lies outside this cell, so every point of the cell is at least as far as
		// the nearest point of its boundary (cell edges are great-circle arcs).
		d, err := geo.DistanceToBoundary(center, cell)
		if err != nil {
			return nil, nil, fmt.Errorf("distance to cell %s: %w", cell, err)
		}
		cells[i].dist = d
	}
	slices.SortFunc(cells, func(a, b ranked) int { return cmp.Compare(a.dist, b.dist) })
	var (
		waves  [][]h3.Cell
		bounds []float64
	)
	for i, size := 0, 0; i < len(cells); size++ {
		n := min(1<<(size/2), len(cells)-i)
		wave := make([]h3.Cell, n)
		for j := range n {
			wave[j] = cells[i+j].cell
		}
		waves = append(waves, wave)
		bounds = append(bounds, cells[i].dist)
		i += n
	}
	return waves, bounds, nil
}

// CacheBytes returns the memory the area cache holds, by its own count (0 without a cache).
func (s *Store) CacheBytes() int64 {
	if s.cache == nil {
		return 0
	}
	return s.cache.size.Load()
}

// readWave feeds the matcher the records of the partitions pks: from the cache when it holds
// them, otherwise from the table (several at once), filling the cache.
func (s *Store) readWave(ctx context.Context, pks []string, m *matcher, res *AreaResult) error {
	var (
		missed  []string
		tickets []ticket
	)
	for _, pk := range pks {
		if s.cache == nil {
			missed = append(missed, pk)
			continue
		}
		hit, t := s.cache.view(pk, m.now, func(groups []group) {
			for i := range groups {
				res.ItemsRead += len(groups[i].recs)
			}
			m.addPart(groups)
		})
		if hit {
			res.Cached++
			continue
		}
		missed = append(missed, pk)
		tickets = append(tickets, t)
	}
	if len(missed) == 0 {
		return nil
	}
	parts, err := s.readPartitions(ctx, missed)
	if err != nil {
		return err
	}
	for i, items := range parts {
		res.ItemsRead += len(items)
		var recs []cachedRec
		if s.cache != nil {
			recs = make([]cachedRec, 0, len(items))
		}
		for _, it := range items {
			r, err := cacheRecord(it, s.cache != nil)
			if err != nil {
				m.bad++
				continue
			}
			m.add(&r)
			if recs != nil {
				recs = append(recs, r)
			}
		}
		if s.cache != nil {
			s.cache.fill(tickets[i], recs)
		}
	}
	return nil
}

// readPartitions queries every partition of pks, Options.Parallelism at a time, and returns
// their items in the order of pks.
func (s *Store) readPartitions(ctx context.Context, pks []string) ([][]store.Item, error) {
	out := make([][]store.Item, len(pks))
	if len(pks) == 1 {
		items, err := s.table.Query(ctx, store.Query{PK: pks[0]})
		if err != nil {
			return nil, fmt.Errorf("read area index %s: %w", pks[0], err)
		}
		out[0] = items
		return out, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, s.parallelism)
	)
	for i, pk := range pks {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			items, err := s.table.Query(ctx, store.Query{PK: pk})
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("read area index %s: %w", pk, err)
					cancel()
				}
				mu.Unlock()
				return
			}
			out[i] = items
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return out, nil
}

// matcher filters index items into the answer of one query.
type matcher struct {
	center  geo.Point
	radius  float64
	types   []string
	minConf float64
	now     int64 // Unix nanoseconds
	limit   int

	cos float64 // cosine of the centre's latitude

	found []AreaEvent
	ver   []int64        // version of found[i]
	seen  map[string]int // event id -> index in found
	far   map[string]int64
	top   []float64   // max-heap of the limit smallest distances found
	bad   int         // unreadable records skipped
	near  []nearGroup // addPart's buffer

	cu             geo.Unit // the centre as a unit vector
	chordOf, chord float64  // boundChord's last bound and its answer
}

func newMatcher(q AreaQuery, now int64, limit int) *matcher {
	m := matchers.Get().(*matcher)
	*m = matcher{
		center:  q.Center,
		radius:  q.Radius,
		types:   q.Types,
		minConf: q.MinConfidence,
		now:     now,
		limit:   limit,
		seen:    m.seen,
		found:   m.found[:0],
		ver:     m.ver[:0],
		far:     m.far, // LineStrings measured out of range, by version
		top:     m.top[:0],
		near:    m.near[:0],
		cos:     math.Cos(q.Center.Lat * degToRad),
		cu:      q.Center.Unit(),
		chordOf: -1,
	}
	return m
}

// matchers keeps matchers between queries: their slices and maps, grown to a wide query's
// thousand candidates, were most of the memory a query allocated, and the collections that
// allocation caused slowed every query in flight (docs/performance.md §4).
var matchers = sync.Pool{New: func() any {
	return &matcher{seen: map[string]int{}, far: map[string]int64{},
		found: make([]AreaEvent, 0, 256), ver: make([]int64, 0, 256)}
}}

// release returns m to matchers, forgetting the events it found (they point into records
// the cache may drop). m must not be used after, nor the slices it returned but result's.
func (m *matcher) release() {
	clear(m.found)
	clear(m.seen)
	clear(m.far)
	matchers.Put(m)
}

// degToRad is geo's conversion factor, so that pointDistance computes what geo.Distance does.
const degToRad = math.Pi / 180

// pointDistance is geo.Distance(m.center, p), the haversine distance, with the two latitude
// cosines computed once (per query and per cached record) instead of for every pair: the
// same operations on the same values, so the same result to the bit (TestPointDistance). Most
// events are points, and their distances were most of a wide query's time.
func (m *matcher) pointDistance(p geo.Point, cosLat float64) float64 {
	lat1, lat2 := m.center.Lat*degToRad, p.Lat*degToRad
	dLat := lat2 - lat1
	dLon := (p.Lon - m.center.Lon) * degToRad
	s1, s2 := math.Sin(dLat/2), math.Sin(dLon/2)
	h := s1*s1 + m.cos*cosLat*(s2*s2)
	return 2 * geo.EarthRadius * math.Asin(math.Sqrt(min(h, 1)))
}

// addPart considers the records of a cached partition, group by group, nearest first, and
// skips the groups that cannot hold anything near enough: beyond the radius, or, once the
// answer is full, beyond its farthest event. It takes the points first: once they have
// filled the answer, most LineStrings are refused by their group, latitude band or reach
// without the exact distance, the dearest measure of a wide query. The answer does not depend
// on the order (result sorts and keeps the newest copy; TestAddPartAgreesWithAdd).
func (m *matcher) addPart(groups []group) {
	near := m.near[:0]
	for i := range groups {
		g := &groups[i]
		if len(g.recs) == 0 {
			continue
		}
		// A metre of slack for rounding, as in add.
		if d := m.pointDistance(g.centre, g.cos) - g.span; d <= m.radius+1 {
			near = append(near, nearGroup{d, i})
		}
	}
	slices.SortFunc(near, func(a, b nearGroup) int { return cmp.Compare(a.dist, b.dist) })
	for _, lines := range []bool{false, true} {
		for _, n := range near {
			if n.dist > m.bound()+1 {
				break // the groups left are farther still
			}
			if g := &groups[n.group]; g.line == lines {
				for i := range g.recs {
					m.add(&g.recs[i])
				}
			}
		}
	}
	m.near = near
}

// nearGroup is a group of a partition and a lower bound of its records' distances.
type nearGroup struct {
	dist  float64
	group int
}

// add considers one index record.
func (m *matcher) add(c *cachedRec) {
	r := &c.rec
	if r.expires <= m.now { // docs/api.md §3: expired once expires_at is reached
		return
	}
	if len(m.types) > 0 && !slices.ContainsFunc(m.types, func(t string) bool { return t == string(r.typ) }) {
		return
	}
	if r.confidence < m.minConf {
		return
	}
	var d float64
	if r.n == 1 {
		// A point is under one cell of a level: it is measured once, and the rare copy read
		// across a concurrent change is dropped by result.
		// Most points beyond the bound (outside the circle, or, once limit events are found,
		// farther than the limit-th) are set aside by their chord, without the exact distance;
		// a cover's cells hold about twice the events its circle does.
		if c.u.ChordSquared(m.cu) > m.boundChord() {
			return
		}
		if d = m.pointDistance(c.p0, c.cos); d > m.bound() {
			return
		}
		m.found = append(m.found, AreaEvent{ID: c.id, Distance: d, JSON: r.body, source: r.source})
		m.ver = append(m.ver, r.version)
		m.push(d)
		return
	}
	// The distance is at least the meridian arc to the band of latitudes the extent lies in,
	// and at most reach more than the distance to its first position. Once limit events are
	// found, one farther than the limit-th cannot enter the answer, now or later (the
	// limit-th only comes nearer). These tests come first: they are cheaper than the lookups
	// of the id below, and what they refuse would be refused whatever those find.
	gap := max(0, c.latLo-m.center.Lat, m.center.Lat-c.latHi) * degToRad * geo.EarthRadius
	limit := m.bound()
	if gap > limit {
		return
	}
	if c.u.ChordSquared(m.cu) > geo.ChordSquared(limit+r.reach+1) {
		return
	}
	// A LineString is under many cells: it is measured once, in its newest copy.
	i, dup := m.seen[c.id]
	if dup && m.ver[i] >= r.version {
		return
	}
	if v, ok := m.far[c.id]; ok && v >= r.version {
		return // measured under another cell already, and out of range
	}
	// Every point of the extent is within halfSeg of a vertex: when every vertex is farther
	// than the range by more, so is the extent, and the exact distance is not needed.
	near := false
	within := geo.ChordSquared(limit + c.halfSeg + 1)
	for _, u := range c.units {
		if u.ChordSquared(m.cu) <= within {
			near = true
			break
		}
	}
	// What is beyond the bound stays beyond it (the bound only comes nearer): the other
	// copies of this version need not be measured again.
	if !near {
		m.far[c.id] = r.version
		return
	}
	if c.path != nil {
		d = c.path.Distance(m.center)
	} else {
		d = geo.DistanceToExtent(m.center, c.ext)
	}
	if d > m.bound() {
		m.far[c.id] = r.version
		return
	}
	if dup {
		m.found[i] = AreaEvent{ID: c.id, Distance: d, JSON: r.body, source: r.source}
		m.ver[i] = r.version
		return
	}
	m.seen[c.id] = len(m.found)
	m.found = append(m.found, AreaEvent{ID: c.id, Distance: d, JSON: r.body, source: r.source})
	m.ver = append(m.ver, r.version)
	m.push(d)
}

// bound is the distance beyond which nothing can enter the answer: the radius, or once limit
// events are found, the limit-th's distance when it is nearer.
func (m *matcher) bound() float64 {
	if len(m.top) == m.limit {
		return min(m.radius, m.top[0])
	}
	return m.radius
}

// boundChord is geo.ChordSquared(m.bound()+1): a point whose chord to the centre is longer is
// farther than the bound. It is computed again only when the bound has moved.
func (m *matcher) boundChord() float64 {
	if b := m.bound(); b != m.chordOf {
		m.chordOf, m.chord = b, geo.ChordSquared(b+1)
	}
	return m.chord
}

// complete tells whether the events found already hold the answer, when every unread cell
// is at least bound metres away. An unread event has an index sample within
// geo.SampleSpacing/2 of its nearest point (geo.IndexCells), in an unread cell, so it is at
// least bound - SampleSpacing/2 away; once limit events are nearer than that (with a metre
// of slack for rounding), none of them can be displaced.
func (m *matcher) complete(bound float64) bool {
	return len(m.top) == m.limit && m.top[0] < bound-geo.SampleSpacing/2-1
}

// push adds a distance to the heap of the limit smallest.
func (m *matcher) push(d float64) {
	h := m.top
	if len(h) < m.limit {
		h = append(h, d)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p] >= h[i] {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		m.top = h
		return
	}
	if d >= h[0] {
		return
	}
	h[0] = d
	for i := 0; ; {
		l, r, big := 2*i+1, 2*i+2, i
		if l < len(h) && h[l] > h[big] {
			big = l
		}
		if r < len(h) && h[r] > h[big] {
			big = r
		}
		if big == i {
			break
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// result returns the events found, nearest first, ties by id, each once (its newest copy),
// capped. unique says that no event can have been found twice, and the copies need not be
// looked for.
func (m *matcher) result(unique bool) []AreaEvent {
	kept, ver := m.found[:0], m.ver[:0]
	for i, e := range m.found {
		// Only events at most as far as the limit-th can make the answer.
		if len(m.top) < m.limit || e.Distance <= m.top[0] {
			kept, ver = append(kept, e), append(ver, m.ver[i])
		}
	}
	out := kept
	if !unique {
		// A point read twice across a concurrent change (moved from a cell read later to one
		// read earlier): keep its newest copy.
		newest := make(map[string]int, len(kept))
		out = kept[:0]
		for i, e := range kept {
			j, dup := newest[e.ID]
			switch {
			case !dup:
				newest[e.ID] = len(out)
				out = append(out, e)
				ver[len(out)-1] = ver[i]
			case ver[i] > ver[j]:
				out[j] = e
				ver[j] = ver[i]
			}
		}
	}
	// The distances, rounded to float32 (which keeps their order, ties aside), and the
	// indices sort as integers, without the calls of a comparison function that made sorting
	// the events a tenth of a 9780 m query; an insertion pass then orders the rare ties
	// exactly.
	keys := make([]uint64, len(out))
	for i, e := range out {
		keys[i] = uint64(math.Float32bits(float32(e.Distance)))<<32 | uint64(i)
	}
	slices.Sort(keys)
	sorted := make([]AreaEvent, len(keys))
	for i, k := range keys {
		sorted[i] = out[uint32(k)]
	}
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && nearer(&sorted[j], &sorted[j-1]); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	return sorted[:min(len(sorted), m.limit):min(len(sorted), m.limit)]
}

// nearer is the order of an answer: by distance, then by id.
func nearer(a, b *AreaEvent) bool {
	if a.Distance != b.Distance {
		return a.Distance < b.Distance
	}
	return a.ID < b.ID
}
