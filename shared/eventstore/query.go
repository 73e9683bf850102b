package eventstore

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/event"
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
	// Eventual reads the index eventually consistent (store.Query.Eventual): for half the
	// price, the answer may miss a change of the last moment. GET /v1/events allows it
	// (docs/architecture.md §2, consistency); a stream's snapshot must not, nor the duplicate
	// search.
	Eventual bool
}

// AreaEvent is one event an area query found.
type AreaEvent struct {
	ID string
	// key orders the events by distance without trigonometry: the squared chord from the
	// query's centre (geo.Unit.ChordSquared for a point, geo.ChordSquared of the distance for a
	// LineString), which rises with the distance.
	key float64
	// dist is the distance in metres, NaN for a point not measured yet (Distance). A point is
	// measured exactly only near the radius or near another event's distance (matcher.add,
	// nearer): the order and the cap need no more.
	dist float64
	// p0, cos and m let Distance measure a point: its position, the cosine of its latitude,
	// and the matcher, which holds the centre.
	p0  geo.Point
	cos float64
	m   *matcher
	// body is the event's EventPublic as GET /v1/events sends it, or packed as the area cache
	// keeps it (packJSON), unpacked as it is sent (AppendJSON).
	body   []byte
	packed bool
	// source identifies event.Event.Source (sourceID).
	source []byte
	// unrendered is the record of an event whose JSON result has still to render: one read
	// from the table for this query only (a cached record carries its JSON).
	unrendered *cachedRec
}

// Distance returns the distance in metres from the query's centre to the event's full extent
// (docs/api.md §4.1 rule 3), measured when first asked for a point; the result must not have
// been released.
func (e *AreaEvent) Distance() float64 {
	if math.IsNaN(e.dist) {
		e.dist = e.m.pointDistance(e.p0, e.cos)
	}
	return e.dist
}

// AppendJSON appends the event's EventPublic as GET /v1/events sends it.
func (e *AreaEvent) AppendJSON(b []byte) []byte {
	if e.packed {
		return appendUnpacked(b, e.body)
	}
	return append(b, e.body...)
}

// JSON returns the event's EventPublic as GET /v1/events sends it.
func (e *AreaEvent) JSON() []byte {
	if e.packed {
		return e.AppendJSON(nil)
	}
	return e.body
}

// AreaResult is the answer of an area query and what it cost.
type AreaResult struct {
	// Events are the matching events, nearest first (ties by id), at most
	// Options.MaxEventsPerQuery of them (docs/api.md §8: truncated silently).
	Events []AreaEvent
	// Level is the H3 resolution whose cells were read.
	Level int
	// Lookups is the number of table Queries the index took, or partitions found cached:
	// Cached of them; ItemsRead the index records they held.
	Lookups, Cached, ItemsRead int

	// m is the matcher Events live in, until Release.
	m *matcher
}

// Release gives the result's memory back for the next query; r.Events must not be used
// after. Copied out of the matcher, Events was half of what a query allocated
// (docs/performance.md §4). A result not released is collected as garbage, as any other.
func (r *AreaResult) Release() {
	if r.m != nil {
		r.m.release()
		r.m, r.Events = nil, nil
	}
}

// AppendJSON appends the events as a JSON array of EventPublic, the body of GET /v1/events,
// without encoding anything again.
func (r *AreaResult) AppendJSON(b []byte) []byte {
	// The packed events are gathered a batch at a time, then unpacked from the copy: the
	// copies, one after another, let the processor fetch many events from memory at once,
	// where unpacking each where it lies waited for each in turn. Unpacking in place took 2.5
	// times as long as copying whole JSON had; gathered, about as long. The batch is on the
	// stack: a buffer per answer was 117 KB for 500 events, allocated under load by most
	// answers, since a pool keeps few (docs/performance.md §5).
	var batch [4 << 10]byte
	gathers := func(e *AreaEvent) bool { return e.packed && len(e.body) <= len(batch) }
	b = append(b, '[')
	events := r.Events
	for i := 0; i < len(events); {
		end, n := i, 0 // the batch is events[i:end], its packed bytes batch[:n]
		for ; end < len(events); end++ {
			if e := &events[end]; gathers(e) {
				if n+len(e.body) > len(batch) {
					break
				}
				n += copy(batch[n:], e.body)
			}
		}
		for n = 0; i < end; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if e := &events[i]; gathers(e) {
				b = appendUnpacked(b, batch[n:n+len(e.body)])
				n += len(e.body)
			} else {
				b = e.AppendJSON(b) // not packed, or larger than a batch: where it lies
			}
		}
	}
	return append(b, ']')
}

// Area returns the active events of the networks the caller is served (docs/api.md §1: live for a
// live credential, live and sandbox for a sandbox credential) whose extent comes within
// q.Radius of q.Center and that pass q's filters, nearest first, capped silently at
// Options.MaxEventsPerQuery (docs/api.md §4.1 rule 3, §8).
//
// It reads only the area index: the cells covering the circle at FineLevel, each a prefix of
// its partition (consecutive ones in one table Query), or for a wide circle the partitions at
// CoarseLevel, several Queries at once, both environments of a cell in one. Each index item
// carries the event's type, confidence, expiry and extent, and what its public JSON needs, so the
// events are filtered, measured exactly (geo.DistanceToExtent) and answered without reading
// them. Expiry is checked against the clock here, whatever the table's TTL deletion has done
// (docs/api.md §3: an event is expired once expires_at is reached). A LineString indexed under
// several cells is answered once, in its newest copy. The index is read eventually consistent:
// an answer may miss a change of the last moment (docs/architecture.md §2, consistency).
//
// Wide circles read their partitions nearest first, in growing waves, and stop as soon as the
// cap is reached by events that no unread partition can beat: a 9780 m query over a dense city
// reads the few partitions around its centre, not all of them.
func (s *Store) Area(ctx context.Context, c Caller, q AreaQuery) (*AreaResult, error) {
	return s.area(ctx, c.environments(), q)
}

// area is Area over the events of the environments envs.
func (s *Store) area(ctx context.Context, envs []string, q AreaQuery) (*AreaResult, error) {
	if !q.Center.Valid() || !(q.Radius > 0) || q.Radius > s.maxRadius || math.IsNaN(q.MinConfidence) {
		return nil, fmt.Errorf("%w: centre %v, radius %v, min_confidence %v", ErrInvalidQuery, q.Center, q.Radius, q.MinConfidence)
	}
	cov, err := s.coverOf(q.Center, q.Radius)
	if err != nil {
		return nil, err
	}
	return s.areaIn(ctx, envs, q, cov, q.Eventual)
}

// coverOf is what a query of radius metres around center reads: with the area cache, whose
// partitions are read whole, the partitions kept for the centre's cell (covers.go); without,
// the cells of coverFor, each a range of its partition.
func (s *Store) coverOf(center geo.Point, radius float64) (cover, error) {
	if s.cache != nil {
		return s.covers.get(center, radius)
	}
	return coverFor(center, radius)
}

// areaIn answers q, checked already, from the index cells of cov, for the events of the
// environments envs. eventual lets the reads lag (store.Query.Eventual).
func (s *Store) areaIn(ctx context.Context, envs []string, q AreaQuery, cov cover, eventual bool) (*AreaResult, error) {
	res := &AreaResult{Level: cov.level}
	m := newMatcher(q, s.clock.Now().UnixNano(), s.maxPerQuery, envs)
	defer func() {
		if res.m == nil { // not answered: the caller gets no result to release
			m.release()
		}
	}()
	var (
		mark  uint64
		still bool
	)
	if s.cache != nil {
		mark, still = s.cache.still()
	}
	if cov.level == FineLevel {
		if err := s.readAreas(ctx, fineReads(cov.cells, envs), eventual, m, res); err != nil {
			return nil, err
		}
	} else {
		for _, wave := range waves(len(cov.cells)) {
			reads := make([]areaRead, 0, wave.n)
			for _, p := range cov.cells[wave.from : wave.from+wave.n] {
				reads = append(reads, areaRead{pk: areaPartition(p)})
			}
			if err := s.readAreas(ctx, reads, eventual, m, res); err != nil {
				return nil, err
			}
			if next := wave.from + wave.n; next < len(cov.cells) && m.complete(cov.dist[next]) {
				break
			}
		}
	}
	res.Events = m.result(still && res.Cached == res.Lookups && s.cache.stillSince(mark))
	if m.bad > 0 {
		s.log.ErrorContext(ctx, "events: skipped unreadable area index records", "count", m.bad)
	}
	res.m = m
	return res, nil
}

// wave is a run of a cover's partitions read together.
type wave struct{ from, n int }

// waves groups n partitions, nearest first, in waves of 1, 1, 2, 2, 4, 4, 8... so that a query
// that finds its answer near its centre stops early, and one that does not still reads many
// at once.
func waves(n int) []wave {
	var out []wave
	for from, size := 0, 0; from < n; size++ {
		w := wave{from: from, n: min(1<<(size/2), n-from)}
		out = append(out, w)
		from += w.n
	}
	return out
}

// areaRead is one table Query of the area index: a whole partition (from empty), a prefix
// (from alone), or the range of sort keys from..to.
type areaRead struct {
	pk, from, to string
}

// query is the table Query of r.
func (r areaRead) query(eventual bool) store.Query {
	q := store.Query{PK: r.pk, Eventual: eventual}
	if r.to == "" {
		q.Prefix = r.from
	} else {
		q.From, q.To = r.from, r.to
	}
	return q
}

// fineReads returns the reads of cells at FineLevel, sorted as geo.CoverCircle returns them
// (and so grouped by partition, then by their digits): a run of cells whose sort keys follow one
// another is one range, a lone cell a prefix, narrowed to the environment when there is one.
func fineReads(cells []h3.Cell, envs []string) []areaRead {
	var reads []areaRead
	for i := 0; i < len(cells); {
		p, _ := cells[i].Parent(CoarseLevel) // a cell of a cover is valid
		j := i + 1
		for j < len(cells) && digitIndex(cells[j]) == digitIndex(cells[j-1])+1 && sameParent(cells[j], p) {
			j++
		}
		r := areaRead{pk: areaPartition(p), from: areaDigits(cells[i])}
		switch {
		case j > i+1:
			r.to = areaDigits(cells[j-1]) + "~" // past both environment letters
		case len(envs) == 1:
			r.from += envLetter(envs[0])
		}
		reads = append(reads, r)
		i = j
	}
	return reads
}

// digitIndex numbers a cell among the 49 descendants at FineLevel of its partition, in
// sort-key order.
func digitIndex(c h3.Cell) int {
	d := areaDigits(c)
	return int(d[0]-'0')*7 + int(d[1]-'0')
}

func sameParent(c, p h3.Cell) bool {
	q, err := c.Parent(CoarseLevel)
	return err == nil && q == p
}

// CacheBytes returns the memory the area cache holds, by its own count (0 without a cache).
func (s *Store) CacheBytes() int64 {
	if s.cache == nil {
		return 0
	}
	return s.cache.size.Load()
}

// readAreas feeds the matcher the records of reads. With a cache, their partitions are read
// whole, from the cache when it holds them, otherwise from the table, filling the cache; without,
// each read is one table Query, several at once.
func (s *Store) readAreas(ctx context.Context, reads []areaRead, eventual bool, m *matcher, res *AreaResult) error {
	var (
		missed  []areaRead
		tickets []ticket
	)
	for i, r := range reads {
		if s.cache == nil {
			missed = append(missed, r)
			continue
		}
		if i > 0 && reads[i-1].pk == r.pk {
			continue // read whole already
		}
		res.Lookups++
		hit, t := s.cache.view(r.pk, m.now, func(groups []group) {
			for i := range groups {
				res.ItemsRead += len(groups[i].recs)
			}
			m.addPart(groups)
		})
		if hit {
			res.Cached++
			continue
		}
		missed = append(missed, areaRead{pk: r.pk})
		tickets = append(tickets, t)
	}
	if s.cache == nil {
		res.Lookups += len(missed)
	}
	if len(missed) == 0 {
		return nil
	}
	parts, err := s.readPartitions(ctx, missed, eventual)
	if err != nil {
		return err
	}
	for i, items := range parts {
		res.ItemsRead += len(items)
		recs, bad := cacheRecords(items, s.cache != nil)
		m.bad += bad
		for i := range recs {
			m.add(&recs[i])
		}
		if s.cache != nil {
			s.cache.fill(tickets[i], recs)
		}
	}
	return nil
}

// readPartitions runs the table Queries of reads, Options.Parallelism at a time, and returns
// their items in the order of reads.
func (s *Store) readPartitions(ctx context.Context, reads []areaRead, eventual bool) ([][]store.Item, error) {
	out := make([][]store.Item, len(reads))
	if len(reads) == 1 {
		items, err := s.table.Query(ctx, reads[0].query(eventual))
		if err != nil {
			return nil, fmt.Errorf("read area index %s: %w", reads[0].pk, err)
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
	for i, r := range reads {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			items, err := s.table.Query(ctx, r.query(eventual))
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("read area index %s: %w", r.pk, err)
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
	center geo.Point
	radius float64
	types  []string
	kinds  uint64 // the types' typeKinds codes, as bits
	// live and sandbox tell whether envs holds each environment: add tests a record's by them.
	live, sandbox bool
	minConf       float64
	now           int64 // Unix nanoseconds
	limit         int

	cos float64 // cosine of the centre's latitude

	found []AreaEvent
	ver   []int64        // version of found[i]
	seen  map[string]int // event id -> index in found
	far   map[string]int64
	top   []float64 // max-heap of the limit smallest keys found (AreaEvent.key)
	bad   int       // unreadable records skipped
	near  []uint64  // addPart's buffer (nearKey)

	// result's buffers: the sort keys, and the answer, which lives until AreaResult.Release.
	keys   []uint64
	sorted []AreaEvent

	cu             geo.Unit // the centre as a unit vector
	chordOf, chord float64  // boundChord's last bound and its answer
	edge           float64  // the squared chord of the radius less a metre (add)
	topOf, topM    float64  // bound's last limit-th key and its distance in metres
}

func newMatcher(q AreaQuery, now int64, limit int, envs []string) *matcher {
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
		keys:    m.keys[:0],
		sorted:  m.sorted[:0],
		cos:     math.Cos(q.Center.Lat * degToRad),
		cu:      q.Center.Unit(),
		chordOf: -1,
		topOf:   -1,
		edge:    geo.ChordSquared(q.Radius - 1),
	}
	for _, t := range q.Types {
		m.kinds |= 1 << typeKinds[t] // bit 0 for a type the taxonomy does not hold: run 0
	}
	m.live, m.sandbox = slices.Contains(envs, event.EnvironmentLive), slices.Contains(envs, event.EnvironmentSandbox)
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
// the cache may drop). m must not be used after, nor the slices it returned.
func (m *matcher) release() {
	clear(m.found)
	clear(m.sorted)
	clear(m.seen)
	clear(m.far)
	matchers.Put(m)
}

// degToRad is geo's conversion factor, so that pointDistance computes what geo.Distance does.
const degToRad = math.Pi / 180

// pointDistance is geo.Distance(m.center, p), the haversine distance, with the two latitude
// cosines computed once (per query and per cached record) instead of for every pair: the
// same operations on the same values, so the same result to the bit (TestPointDistance). It
// is asked for points near the radius and near ties only (add, nearer): measuring every point
// found was 8 % of a 1 000 m query's CPU in the server (docs/performance.md §4).
func (m *matcher) pointDistance(p geo.Point, cosLat float64) float64 {
	lat1, lat2 := m.center.Lat*degToRad, p.Lat*degToRad
	dLat := lat2 - lat1
	dLon := (p.Lon - m.center.Lon) * degToRad
	s1, s2 := math.Sin(dLat/2), math.Sin(dLon/2)
	h := s1*s1 + m.cos*cosLat*(s2*s2)
	return 2 * geo.EarthRadius * math.Asin(math.Sqrt(min(h, 1)))
}

// addPart considers the records of a cached partition, group by group, nearest first when
// the answer can fill, and skips the groups that cannot hold anything near enough: beyond the
// radius, or, once the answer is full, beyond its farthest event. It takes the points first:
// once they have filled the answer, most LineStrings are refused by their group, latitude
// band or reach without the exact distance, the dearest measure of a wide query. The answer
// does not depend on the order (result sorts and keeps the newest copy;
// TestAddPartAgreesWithAdd).
func (m *matcher) addPart(groups []group) {
	near, recs := m.near[:0], 0
	for i := range groups {
		g := &groups[i]
		if len(g.recs) == 0 {
			continue
		}
		// The chord less the span bounds the records' distances from below, without the
		// trigonometry of the exact distance: two fifths of a 1 000 m query's distances were
		// to groups. A metre of slack for rounding, as in add.
		if d := g.u.ChordMetres(m.cu) - g.span; d <= m.radius+1 {
			near = append(near, nearKey(d, i))
			recs += m.wanted(g)
		}
	}
	// Nearest first only pays once the bound can move, which takes limit events kept: each
	// record adds at most one. A partition whose near records cannot fill the answer is read
	// as it lies. Sorting the groups through a comparison function was a quarter of a
	// filtered 9780 m query's CPU (docs/performance.md §4).
	if len(m.top)+recs > m.limit {
		slices.Sort(near)
	}
	for _, lines := range []bool{false, true} {
		for _, k := range near {
			if nearDist(k) > m.bound()+1 {
				break // the groups left are farther still
			}
			if g := &groups[uint32(k)]; g.line == lines {
				m.addGroup(g)
			}
		}
	}
	m.near = near
}

// addGroup considers the records of g of the query's types: all of them when it asks for
// any type, else only its types' runs (group.recs). Testing every record's kind, a 9 780 m
// query for accidents took 1.8 times as long, and a publish's duplicate search, which asks
// for its own type, read all thirteen types around it (docs/performance.md §4).
func (m *matcher) addGroup(g *group) {
	if len(m.types) == 0 {
		for i := range g.recs {
			m.add(&g.recs[i])
		}
		return
	}
	for kinds := m.kinds; kinds != 0; kinds &= kinds - 1 {
		from, to := g.run(bits.TrailingZeros64(kinds))
		for i := from; i < to; i++ {
			m.add(&g.recs[i])
		}
	}
}

// wanted is how many of g's records addGroup considers. It walks the same runs rather than
// sharing an iterator with addGroup: through one (range over a function), the record loop of
// a 1 000 m query ran about 5 % slower.
func (m *matcher) wanted(g *group) int {
	if len(m.types) == 0 {
		return len(g.recs)
	}
	n := 0
	for kinds := m.kinds; kinds != 0; kinds &= kinds - 1 {
		from, to := g.run(bits.TrailingZeros64(kinds))
		n += int(to - from)
	}
	return n
}

// wants tells whether c is of one of the query's types: by its kind, or for a type the
// taxonomy does not hold, by its name.
func (m *matcher) wants(c *cachedRec) bool {
	if c.kind != 0 {
		return m.kinds&(1<<c.kind) != 0
	}
	return slices.ContainsFunc(m.types, func(t string) bool { return t == string(c.typ()) })
}

// nearKey names group i of a partition with d, a lower bound of its records' distances in
// metres: d rounded down to a float32, whose bits order as the numbers do (those not below
// zero, and no distance is), above i. The keys sort as integers, without the call of a
// comparison function at each step, and a rounded-down lower bound is still one.
func nearKey(d float64, i int) uint64 {
	d = max(d, 0)
	f := float32(d)
	if float64(f) > d {
		f = math.Nextafter32(f, 0)
	}
	return uint64(math.Float32bits(f))<<32 | uint64(uint32(i))
}

// nearDist is the lower bound of a nearKey.
func nearDist(k uint64) float64 { return float64(math.Float32frombits(uint32(k >> 32))) }

// add considers one index record.
func (m *matcher) add(c *cachedRec) {
	if c.expires <= m.now { // docs/api.md §3: expired once expires_at is reached
		return
	}
	if c.sandbox && !m.sandbox || !c.sandbox && !m.live {
		return // docs/api.md §1: a live credential is served live events only
	}
	if len(m.types) > 0 && !m.wants(c) {
		return
	}
	if c.confidence < m.minConf {
		return
	}
	var d float64
	if c.line == nil {
		// A point is under one cell of a level: it is measured once, and the rare copy read
		// across a concurrent change is dropped by result.
		// Most points beyond the bound (outside the circle, or, once limit events are found,
		// farther than the limit-th) are set aside by their chord, without the exact distance;
		// a cover's cells hold about twice the events its circle does. One nearer than the
		// radius by more than a metre, far more than the chord's rounding, is inside without
		// its exact distance either: its chord orders it (nearer). Within that metre the
		// radius is applied exactly, as geo.Distance measures.
		k := c.u.ChordSquared(m.cu)
		if k > m.boundChord() {
			return
		}
		d = math.NaN()
		if k >= m.edge {
			if d = m.pointDistance(c.p0, c.cos); d > m.radius {
				return
			}
		}
		m.found = append(m.found, m.event(c, k, d))
		m.ver = append(m.ver, c.version)
		m.push(k)
		return
	}
	// The distance is at least the meridian arc to the band of latitudes the extent lies in,
	// and at most reach more than the distance to its first position. Once limit events are
	// found, one farther than the limit-th cannot enter the answer, now or later (the
	// limit-th only comes nearer). These tests come first: they are cheaper than the lookups
	// of the id below, and what they refuse would be refused whatever those find.
	l := c.line
	gap := max(0, l.latLo-m.center.Lat, m.center.Lat-l.latHi) * degToRad * geo.EarthRadius
	limit := m.bound()
	if gap > limit {
		return
	}
	if c.u.ChordSquared(m.cu) > geo.ChordBound(limit+l.reach+1) {
		return
	}
	// A LineString is under many cells: it is measured once, in its newest copy.
	id := c.id()
	i, dup := m.seen[id]
	if dup && m.ver[i] >= c.version {
		return
	}
	if v, ok := m.far[id]; ok && v >= c.version {
		return // measured under another cell already, and out of range
	}
	// Every point of the extent is within halfSeg of a vertex: when every vertex is farther
	// than the range by more, so is the extent, and the exact distance is not needed.
	near := false
	within := geo.ChordBound(limit + l.halfSeg + 1)
	for _, u := range l.units {
		if u.ChordSquared(m.cu) <= within {
			near = true
			break
		}
	}
	// What is beyond the bound stays beyond it (the bound only comes nearer): the other
	// copies of this version need not be measured again.
	if !near {
		m.far[id] = c.version
		return
	}
	if l.path != nil {
		d = l.path.Distance(m.center)
	} else {
		d = geo.DistanceToExtent(m.center, l.ext)
	}
	// Past the radius is out; past the limit-th, by more than a rounding, too (result
	// orders the near ties exactly).
	if d > m.radius || d > m.bound()+1e-3 {
		m.far[id] = c.version
		return
	}
	k := geo.ChordSquared(d)
	if dup {
		m.found[i] = m.event(c, k, d)
		m.ver[i] = c.version
		return
	}
	m.seen[id] = len(m.found)
	m.found = append(m.found, m.event(c, k, d))
	m.ver = append(m.ver, c.version)
	m.push(k)
}

// event is the event of record c with key k at distance d (NaN: not measured): with its JSON
// when c is cached, else with c to render it from once it makes the answer (c lives as long
// as the query).
func (m *matcher) event(c *cachedRec, k, d float64) AreaEvent {
	e := AreaEvent{ID: c.id(), key: k, dist: d, p0: c.p0, cos: c.cos, m: m, body: c.packed(), source: c.source()}
	if e.body == nil {
		e.unrendered = c
	} else {
		e.packed = true
	}
	return e
}

// bound is the distance beyond which nothing can enter the answer: the radius, or once limit
// events are found, the limit-th's distance when it is nearer (from its key, to a rounding:
// the tests against it leave a metre's slack, or a millimetre's, and result orders exactly).
func (m *matcher) bound() float64 {
	if len(m.top) < m.limit {
		return m.radius
	}
	if k := m.top[0]; k != m.topOf {
		m.topOf, m.topM = k, 2*geo.EarthRadius*math.Asin(min(1, math.Sqrt(k)/2))
	}
	return min(m.radius, m.topM)
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
	return len(m.top) == m.limit && m.bound() < bound-geo.SampleSpacing/2-1
}

// push adds a key (AreaEvent.key) to the heap of the limit smallest.
func (m *matcher) push(k float64) {
	h := m.top
	if len(h) < m.limit {
		h = append(h, k)
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
	if k >= h[0] {
		return
	}
	h[0] = k
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
		// Only events at most as far as the limit-th can make the answer (with those whose
		// key only rounding tells from it).
		if len(m.top) < m.limit || e.key <= m.top[0] || closeKeys(e.key, m.top[0]) {
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
	// The keys, rounded to float32 (which keeps their order, ties aside), and the indices
	// sort as integers, without the calls of a comparison function that made sorting the
	// events a tenth of a 9780 m query; an insertion pass then orders the rare near ties
	// exactly.
	keys := slices.Grow(m.keys[:0], len(out))[:len(out)]
	for i, e := range out {
		keys[i] = uint64(math.Float32bits(float32(e.key)))<<32 | uint64(i)
	}
	slices.Sort(keys)
	sorted := slices.Grow(m.sorted[:0], len(keys))[:len(keys)]
	for i, k := range keys {
		sorted[i] = out[uint32(k)]
	}
	m.keys, m.sorted = keys, sorted
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && nearer(&sorted[j], &sorted[j-1]); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	sorted = sorted[:min(len(sorted), m.limit):min(len(sorted), m.limit)]
	out = sorted[:0]
	for _, e := range sorted {
		if c := e.unrendered; c != nil {
			r, err := parseRecord(c.record())
			var js []byte
			if err == nil {
				js, err = appendPublic(nil, c.id(), c.env(), &r, nil)
			}
			if err != nil {
				m.bad++
				continue
			}
			e.body, e.unrendered = js, nil
		}
		out = append(out, e)
	}
	return out
}

// nearer is the order of an answer: by distance, then by id. Keys farther apart than their
// rounding order the two as their distances do; only near ties are measured exactly.
func nearer(a, b *AreaEvent) bool {
	if !closeKeys(a.key, b.key) {
		return a.key < b.key
	}
	if da, db := a.Distance(), b.Distance(); da != db {
		return da < db
	}
	return a.ID < b.ID
}

// closeKeys tells whether keys a and b are too close for their order to be trusted: a key's
// rounding is below 1e-15 of the chord (its unit vectors' components are rounded to about
// 1e-16), and this allows a thousand times that, and 1e-9 of the key besides.
func closeKeys(a, b float64) bool {
	hi := max(a, b)
	return math.Abs(a-b) <= 1e-12*math.Sqrt(hi)+1e-9*hi
}
