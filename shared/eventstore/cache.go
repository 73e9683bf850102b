package eventstore

import (
	"errors"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// partCache keeps the area index partitions a process has read, decoded, so that a query over
// cells read before costs no table read at all. Reading an index item through store.Table
// builds a map and allocates several times per item, and a query at 1000 m reads about 380 of
// them: that, not the geometry, bounds the throughput of GET /v1/events on the embedded store
// (docs/performance.md §4).
//
// It is only correct in a process that is the only writer of the table's area index: every
// index write goes through Store.commit, which applies it to the cached partition (apply), so
// the cache never serves less than the table holds. That is `go run .` on the embedded store,
// whose file no other process can open while it runs (Options.CacheBytes); a table written by
// several processes (DynamoDB behind Lambdas) must not use it.
//
// Coherence within the process: a partition is filled from a table read only if every write
// that touched it since the read began is replayed on top (gen, pending), and no eviction
// happened meanwhile (epoch), so a slow reader cannot put back a partition older than a write
// it raced with.
type partCache struct {
	limit int64        // bytes; over it, partitions are evicted at random
	size  atomic.Int64 // bytes held
	epoch atomic.Uint64
	// adding and added count the calls that may add records (apply, fill) when they begin
	// and when they end, so that a query can tell none ran while it read (stillSince).
	adding, added atomic.Uint64
	seed          maphash.Seed
	shards        [64]cacheShard
}

type cacheShard struct {
	mu    sync.Mutex
	parts map[string]*part
}

// part is one partition: loaded, its records; not loaded, a place to count writes (gen) and,
// while a reader that missed reads the table, to keep them (pending).
type part struct {
	mu     sync.RWMutex
	gen    uint64 // writes applied or refused since the part was made
	loaded bool
	// While watching, every write applied to the unloaded part since gen was since is kept in
	// pending, so that a fill replays the writes its read may have missed instead of being
	// refused: a cell written more often than it can be read (a busy one, under the duplicate
	// search of every publish there) would otherwise never load.
	watching bool
	since    uint64
	pending  []pendingWrite
	groups   []group          // the records, by the grid square of their first position
	byKey    map[groupKey]int // grid square -> index in groups
	where    map[string]slot  // sort key -> place of its record
	bytes    int64
	pruneAt  int64 // Unix nanoseconds after which expired records are dropped (prune)
	// slab holds the records' bytes (cachedRec.data); data is what of them live records
	// use, the rest is dead (compact).
	slab slab
	data int64
}

// group is the records of a partition of one kind (points or LineStrings) whose first
// position lies in one grid square of groupStep degrees. A wide query measures the group once
// and skips all of its records when none can be near enough (matcher.addPart): the 500
// nearest events of a 9780 m query lie within a few kilometres, in a few of the hundred or so
// squares of the cells it reads.
type group struct {
	centre geo.Point // of the square, clamped to the poles' latitudes
	u      geo.Unit  // centre as a unit vector (addPart's lower bound)
	// span is a distance in metres within which every record of the group, whole extent
	// included, lies from centre: the largest distance of a first position plus its record's
	// reach, over the records ever put in the group. Removing a record leaves it as it was:
	// too large a span only skips less.
	span float64
	line bool // LineStrings; otherwise points
	// recs are ordered by kind, in runs: kind k's are recs[ends[k-1]:ends[k]] (from 0 for
	// kind 0), so that a query filtered by type reads only its types' records, and every
	// publish's duplicate search, which asks for its own type, a thirteenth of them.
	recs []cachedRec
	ends []int32 // one a kind
}

// run returns the bounds of kind k's records in g.recs.
func (g *group) run(k int) (from, to int32) {
	if k > 0 {
		from = g.ends[k-1]
	}
	return from, g.ends[k]
}

// groupKey names a grid square, latitude and longitude divided by groupStep and rounded down,
// and the kind of its records. Points and LineStrings are kept apart: a LineString's reach,
// often kilometres, would widen the span of the points' group and skip nothing.
type groupKey struct {
	lat, lon int32
	line     bool
}

// slot is where a record is: its group and its index there.
type slot struct{ group, i int32 }

// groupStep is the side of the grid squares in degrees: about 2.2 km by 1.4 km at 50°, some
// 160 events of the load test's city each. Every group costs a distance and a jump to its own
// records, which the processor cannot fetch ahead: with squares of 0.01° a filtered 9780 m
// query took half as long again, and 1 000 m and 9780 m ones no less (docs/performance.md §4).
// Much larger, a square would hold too many records nobody needs.
const groupStep = 0.02

func keyOf(r *cachedRec) groupKey {
	return groupKey{int32(math.Floor(r.p0.Lat / groupStep)), int32(math.Floor(r.p0.Lon / groupStep)), r.line != nil}
}

// put adds r to its group, or replaces the record of the same item. It returns the bytes the
// part grows by. The caller holds p.mu.
func (p *part) put(r cachedRec) (grown int64) {
	if at, ok := p.where[r.sk()]; ok {
		grown -= p.groups[at.group].recs[at.i].size
		p.remove(at)
	}
	k := keyOf(&r)
	gi, ok := p.byKey[k]
	if !ok {
		gi = len(p.groups)
		p.byKey[k] = gi
		c := geo.Point{Lat: min(90, max(-90, (float64(k.lat)+0.5)*groupStep)), Lon: (float64(k.lon) + 0.5) * groupStep}
		p.groups = append(p.groups, group{centre: c, u: c.Unit(), line: k.line, ends: make([]int32, kindCount)})
		grown += groupOverhead
	}
	g := &p.groups[gi]
	g.span = max(g.span, geo.Distance(g.centre, r.p0)+r.reach())
	if len(g.recs) == cap(g.recs) {
		// By an eighth, not append's double: a group's records live as long as the cache,
		// and the unused half of doubled arrays was a tenth of its memory.
		g.recs = slices.Grow(g.recs, max(4, len(g.recs)/8))
	}
	// r goes at the end of its kind's run. The first record of each later run moves to
	// that run's end to make room: one move a kind at most, not a shift of them all.
	g.recs = append(g.recs, cachedRec{})
	hole := int32(len(g.recs) - 1)
	for k := len(g.ends) - 1; k > int(r.kind); k-- {
		if first := g.ends[k-1]; first != hole {
			p.move(gi, first, hole)
			hole = first
		}
		g.ends[k]++
	}
	g.ends[r.kind]++
	g.recs[hole] = r
	p.where[r.sk()] = slot{int32(gi), hole}
	p.data += int64(len(r.data))
	grown += r.size
	p.bytes += grown
	return grown
}

// remove drops the record at at: the last of its kind's run takes its place, then the last
// of each later run the place that leaves, so that only records after at move. The caller
// holds p.mu and adjusts p.bytes.
func (p *part) remove(at slot) {
	g := &p.groups[at.group]
	delete(p.where, g.recs[at.i].sk())
	p.data -= int64(len(g.recs[at.i].data))
	hole := at.i
	for k := int(g.recs[at.i].kind); k < len(g.ends); k++ {
		if last := g.ends[k] - 1; last != hole {
			p.move(int(at.group), last, hole)
			hole = last
		}
		g.ends[k]--
	}
	g.recs[hole] = cachedRec{}
	g.recs = g.recs[:hole]
}

// move puts the record at from of group gi at to. The caller holds p.mu.
func (p *part) move(gi int, from, to int32) {
	g := &p.groups[gi]
	g.recs[to] = g.recs[from]
	p.where[g.recs[to].sk()] = slot{int32(gi), to}
}

// pendingWrite is a write applied to an unloaded part while it was watched, and the gen it
// made.
type pendingWrite struct {
	gen uint64
	op  store.Op
}

// maxPending bounds the writes a watched part keeps: a reader that never fills (its read
// failed) must not make the part grow for good. Past it, the part stops watching and the
// fills begun before are refused.
const maxPending = 64

// change applies a put or delete of an index item to the loaded part, and returns the bytes
// it grows by (negative when it shrinks). The caller holds p.mu.
func (p *part) change(op store.Op) (int64, error) {
	switch op.Kind {
	case store.OpPut:
		r, err := cacheRecord(op.Item, true, &p.slab)
		if err != nil {
			return 0, err
		}
		grown := p.put(r)
		p.compact()
		return grown, nil
	case store.OpDelete:
		at, ok := p.where[op.TargetKey().SK]
		if !ok {
			return 0, nil
		}
		size := p.groups[at.group].recs[at.i].size
		p.bytes -= size
		p.remove(at)
		p.compact()
		return -size, nil
	}
	return 0, nil
}

// keep records a write to the unloaded part if it is watched; a write whose outcome is
// unknown (err) ends the watch, as one too many does. The caller holds p.mu.
func (p *part) keep(op store.Op, err error) {
	if !p.watching {
		return
	}
	if err != nil || len(p.pending) == maxPending {
		p.watching, p.pending = false, nil
		return
	}
	p.pending = append(p.pending, pendingWrite{gen: p.gen, op: op})
}

// load makes the part hold recs, and returns their bytes. Their data stays where it is
// (cacheRecords' slab, which holds nothing else). The caller holds p.mu.
func (p *part) load(recs []cachedRec) int64 {
	p.loaded, p.groups, p.pruneAt, p.bytes, p.data = true, nil, 0, 0, 0
	p.byKey, p.where = map[groupKey]int{}, make(map[string]slot, len(recs))
	p.slab = slab{}
	// Kind by kind (a counting sort), so that each record joins the end of its group: put
	// then moves nothing.
	next := make([]int, kindCount+1) // then where the next record of each kind goes
	for i := range recs {
		next[recs[i].kind+1]++
	}
	for k := 1; k < len(next); k++ {
		next[k] += next[k-1]
	}
	order := make([]int32, len(recs))
	for i := range recs {
		order[next[recs[i].kind]] = int32(i)
		next[recs[i].kind]++
	}
	for _, i := range order {
		p.put(recs[i])
		p.slab.held += int64(len(recs[i].data))
	}
	return p.bytes
}

// unload forgets the records, and returns the bytes freed. The caller holds p.mu.
func (p *part) unload() int64 {
	freed := p.bytes
	p.loaded, p.groups, p.byKey, p.where, p.bytes, p.data = false, nil, nil, nil, 0, 0
	p.watching, p.pending, p.slab = false, nil, slab{}
	return freed
}

// compact copies the records' bytes into new chunks once the part's chunks hold more dead
// bytes than live ones, and a chunk's worth more: a chunk lives as long as any record in it,
// so records replaced, removed or expired would otherwise keep chunks of others alive without
// bound. The old chunks stay as they are for whoever still reads them (a query's answer). The
// caller holds p.mu.
func (p *part) compact() {
	if p.slab.held <= 2*p.data+maxChunk {
		return
	}
	var fresh slab
	clear(p.where)
	for gi := range p.groups {
		g := &p.groups[gi]
		for i := range g.recs {
			r := &g.recs[i]
			r.data = fresh.copy(r.data)
			p.where[r.sk()] = slot{int32(gi), int32(i)} // the key's bytes are the record's: moved too
		}
	}
	p.slab = fresh
}

// slab hands out pieces of larger chunks for the cache's records, which it never writes again:
// one allocation holds many records' bytes, among no short-lived objects, so that the records
// leave no pages of the heap mostly empty once a burst of publishing's garbage is collected
// (docs/performance.md §5), and strings over them are immutable as Go requires (cachedRec.sk).
type slab struct {
	free []byte // what is left of the current chunk
	next int    // the size of the next chunk
	held int64  // bytes of the chunks handed out from, and of records adopted (load)
}

// Chunks start small, for partitions of a few records, and double up to maxChunk.
const (
	minChunk = 1 << 10
	maxChunk = 64 << 10
)

// alloc returns n bytes of a chunk, n of capacity, zero.
func (s *slab) alloc(n int) []byte {
	if n > len(s.free) {
		s.next = min(maxChunk, max(minChunk, 2*s.next))
		size := max(n, s.next)
		s.free = make([]byte, size)
		s.held += int64(size)
	}
	b := s.free[:n:n]
	s.free = s.free[n:]
	return b
}

// copy returns a copy of b in a chunk.
func (s *slab) copy(b []byte) []byte {
	out := s.alloc(len(b))
	copy(out, b)
	return out
}

// pruneEvery is how often a loaded partition drops its expired records. The table's TTL
// deletions do not pass through this process's writes, so without it a partition would keep
// every record it ever held; queries filter expired records out either way.
const pruneEvery = int64(time.Minute)

// cachedRec is one index item, decoded. It holds two pointers, data and line, and a point's
// line is nil: the collector follows one pointer per cached point instead of a dozen (sort
// key, id, environment, the record's slices, JSON), and the records' arrays are mostly
// numbers it does not read (docs/performance.md §5).
type cachedRec struct {
	// p0 is the extent's first position, kept inline: it is what a query reads of most records
	// (points), and following a pointer to another cache line for each of thousands of
	// records costs memory latency on top of the distance.
	p0  geo.Point
	cos float64 // cosine of p0's latitude (pointDistance)
	// What matcher.add tests of every record it reads, u to line, lies together: a query
	// waits on memory for each record, and a filtered one reads tens of thousands.
	u          geo.Unit // p0 as a unit vector (matcher.add's chord tests)
	expires    int64    // the record's, Unix nanoseconds
	confidence float64
	// sandbox is the environment, kept inline (env): every record a query reads is tested
	// for it, and reading it from data cost a cache miss per record, a fifth of a query.
	sandbox bool
	kind    uint8 // typeKinds' code of the type, 0 for one the taxonomy does not hold (typ)
	line    *lineShape
	version int64
	// data is the item's sort key, then its record (record.go) in a record read for one query,
	// which renders only the events it answers; in a record the cache keeps, only the part of
	// its record that holds the type and source, then the event's EventPublic rendered once,
	// packed (the rest of the record is in the fields above and the JSON). One piece of a
	// slab, never written again.
	data          []byte
	skLen, recLen uint32 // recLen: of the record or its part
	typOff        uint32 // where the type is in the record (a byte of length before it)
	srcOff        uint32 // where the source is in the record (found reads it without data's bytes)
	size          int64
}

// typeKinds gives each type of the taxonomy a code from 1, so that a query filtered by type
// tests a record's code, kept inline, instead of reading its type from data: a cache miss per
// record, which a filtered query pays for every record it reads (docs/performance.md §4).
var typeKinds = func() map[string]uint8 {
	ids := taxonomy.IDs()
	if len(ids) > 63 {
		panic("eventstore: more types than a kind mask holds")
	}
	kinds := make(map[string]uint8, len(ids))
	for i, id := range ids {
		kinds[id] = uint8(i + 1)
	}
	return kinds
}()

// kindCount is how many codes typeKinds gives, 0 included.
var kindCount = len(typeKinds) + 1

// sk is the item's sort key. Its bytes are the slab's, never written again (slab). sk, id,
// packed and source only make slice headers: a query calls them for every record it finds,
// and reading data's bytes there cost a cache miss each.
func (c *cachedRec) sk() string { return unsafe.String(unsafe.SliceData(c.data), c.skLen) }

// id and env are the event's id and environment, from the sort key (parseAreaSK).
func (c *cachedRec) id() string { return c.sk()[3:] }

func (c *cachedRec) env() string {
	if c.sandbox {
		return event.EnvironmentSandbox
	}
	return event.EnvironmentLive
}

// record is the item's record, as stored, in a record read for one query; the part of it
// holding the type and source in one the cache keeps.
func (c *cachedRec) record() []byte { return c.data[c.skLen : c.skLen+c.recLen] }

// packed is the event's EventPublic packed (packJSON), or nil when the record was not kept.
func (c *cachedRec) packed() []byte {
	if int(c.skLen+c.recLen) == len(c.data) {
		return nil
	}
	return c.data[c.skLen+c.recLen:]
}

// typ is the event's type as the record holds it, and source its source (record.go).
func (c *cachedRec) typ() []byte {
	r := c.record()
	return r[c.typOff+1 : c.typOff+1+uint32(r[c.typOff])]
}

func (c *cachedRec) source() []byte { return c.record()[c.srcOff : c.srcOff+8] }

// reach is the record's: metres from p0 within which its whole extent lies.
func (c *cachedRec) reach() float64 {
	if c.line == nil {
		return 0
	}
	return c.line.reach
}

// lineShape is what matcher.add needs to measure a LineString quickly. Points, most records,
// do without it, which keeps their cached records small (docs/performance.md §5).
type lineShape struct {
	// The LineString lies between these latitudes (degrees): its vertices' range widened by
	// half its longest segment, as every point of a segment is within half its length of an
	// end. matcher.add uses it to skip the exact distance.
	latLo, latHi float64
	reach        float64 // the record's
	// Each vertex as a unit vector and half its longest segment: its distance is at least
	// the nearest vertex's less half (matcher.add).
	units   []geo.Unit
	halfSeg float64
	// path is the extent prepared for exact distances, in records that stay (the cache's);
	// nil otherwise, and matcher.add measures ext itself. Each cell's copy has its own, worth
	// its memory because a cached record is measured query after query
	// (docs/performance.md §5).
	path *geo.Path
	ext  []geo.Point // in records read for one query
}

// recOverhead is what a cached record costs besides its bytes (struct, map entry),
// lineOverhead what a LineString's shape adds, groupOverhead what a group costs, and
// partOverhead what a partition costs, loaded or not: counted so that the limit bounds the cache
// however many empty cells queries and writes touch.
const (
	recOverhead   = 176
	lineOverhead  = 64
	partOverhead  = 256
	groupOverhead = 224
)

func newPartCache(limit int64) *partCache {
	c := &partCache{limit: limit, seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].parts = map[string]*part{}
	}
	return c
}

func (c *partCache) shard(pk string) *cacheShard {
	return &c.shards[maphash.String(c.seed, pk)%uint64(len(c.shards))]
}

// get returns the part of pk, making an empty one when there is none.
func (c *partCache) get(pk string) *part {
	sh := c.shard(pk)
	sh.mu.Lock()
	p := sh.parts[pk]
	created := p == nil
	if created {
		p = &part{}
		sh.parts[pk] = p
	}
	sh.mu.Unlock()
	if created && c.size.Add(partOverhead) > c.limit {
		c.evict()
	}
	return p
}

// ticket is what a reader that missed holds while it reads the table.
type ticket struct {
	pk    string
	p     *part
	gen   uint64
	epoch uint64
}

// view calls fn with the records of pk while they cannot change, when the partition is
// loaded; otherwise it returns a ticket for fill. now (Unix nanoseconds) decides pruning.
func (c *partCache) view(pk string, now int64, fn func([]group)) (hit bool, t ticket) {
	t.epoch = c.epoch.Load()
	p := c.get(pk)
	p.mu.RLock()
	if !p.loaded {
		p.mu.RUnlock()
		p.mu.Lock()
		if !p.watching {
			p.watching, p.since, p.pending = true, p.gen, nil
		}
		t = ticket{pk: pk, p: p, gen: p.gen, epoch: t.epoch}
		p.mu.Unlock()
		return false, t
	}
	fn(p.groups)
	stale := p.pruneAt <= now
	p.mu.RUnlock()
	if stale {
		p.mu.Lock()
		c.size.Add(-p.prune(now))
		p.mu.Unlock()
	}
	return true, ticket{}
}

// prune drops the records expired at now, if it is time to, and returns the bytes freed.
// The caller holds p.mu.
func (p *part) prune(now int64) (freed int64) {
	if !p.loaded || p.pruneAt > now {
		return 0
	}
	p.pruneAt = now + pruneEvery
	for gi := range p.groups {
		g := &p.groups[gi]
		for i := 0; i < len(g.recs); {
			if r := g.recs[i]; r.expires <= now {
				freed += r.size
				p.remove(slot{int32(gi), int32(i)})
				continue
			}
			i++
		}
	}
	p.bytes -= freed
	p.compact()
	return freed
}

// still returns a mark for stillSince, and whether no record is being added now.
func (c *partCache) still() (mark uint64, ok bool) {
	done := c.added.Load()
	mark = c.adding.Load()
	return mark, mark == done
}

// stillSince tells whether no record was added since still returned mark. A query whose
// partitions all came from the cache, with nothing added from still to stillSince, saw each
// point at most once: a point has one record (a LineString's several copies are told apart by
// the matcher anyway). Only a change between two of its reads can show a point twice, moved.
func (c *partCache) stillSince(mark uint64) bool {
	return c.adding.Load() == mark
}

// fill stores the records read from the table for a ticket's partition, with the writes
// applied since the ticket replayed on top (a record the read already held is put again,
// the same), unless those writes were not all kept or an eviction came in between: the
// records might then be older than what the table holds.
func (c *partCache) fill(t ticket, recs []cachedRec) {
	c.adding.Add(1)
	defer c.added.Add(1)
	var bytes int64
	p := t.p
	p.mu.Lock()
	ok := !p.loaded && c.epoch.Load() == t.epoch && (p.gen == t.gen || p.watching && t.gen >= p.since)
	if ok {
		bytes = p.load(recs)
		for _, w := range p.pending {
			if w.gen <= t.gen {
				continue
			}
			grown, err := p.change(w.op)
			if err != nil {
				bytes -= p.unload()
				ok = false
				break
			}
			bytes += grown
		}
		p.watching, p.pending = false, nil
	}
	p.mu.Unlock()
	if ok && c.size.Add(bytes) > c.limit {
		c.evict()
	}
}

// apply brings the cache up to date with a transaction this process ran: puts and deletes of
// area index items update their loaded partitions. err is the transaction's outcome: a
// refused one (a condition failed) wrote nothing; any other failure may or may not have
// written, so its partitions are dropped and read again. now (Unix nanoseconds) decides
// pruning.
func (c *partCache) apply(ops []store.Op, err error, now int64) {
	var ce *store.ConditionError
	if errors.As(err, &ce) {
		return
	}
	c.adding.Add(1)
	defer c.added.Add(1)
	var delta int64
	for _, op := range ops {
		k := op.TargetKey()
		if !strings.HasPrefix(k.PK, areaPrefix) {
			continue
		}
		p := c.get(k.PK)
		p.mu.Lock()
		p.gen++
		switch {
		case !p.loaded:
			p.keep(op, err)
		case err != nil:
			delta -= p.unload()
		default:
			grown, perr := p.change(op)
			if perr != nil {
				delta -= p.unload()
				break
			}
			delta += grown
		}
		delta -= p.prune(now)
		p.mu.Unlock()
	}
	if c.size.Add(delta) > c.limit {
		c.evict()
	}
}

// evict drops partitions at random (map order) until the cache holds at most 90 % of its
// limit. Dropping a part forgets its gen, so the epoch moves and fills begun before are
// refused.
func (c *partCache) evict() {
	c.epoch.Add(1)
	target := c.limit / 10 * 9
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for pk, p := range sh.parts {
			if c.size.Load() <= target {
				sh.mu.Unlock()
				return
			}
			p.mu.Lock()
			c.size.Add(-p.unload() - partOverhead)
			p.mu.Unlock()
			delete(sh.parts, pk)
		}
		sh.mu.Unlock()
	}
}

// cacheRecords decodes the index items of a partition read from the table, as cacheRecord
// does, into one slab of their own, and counts those it could not.
func cacheRecords(items []store.Item, keep bool) (recs []cachedRec, bad int) {
	recs = make([]cachedRec, 0, len(items))
	var sl slab
	for _, it := range items {
		r, err := cacheRecord(it, keep, &sl)
		if err != nil {
			bad++
			continue
		}
		recs = append(recs, r)
	}
	return recs, bad
}

// cacheRecord decodes an index item into sl, with its packed JSON and a prepared path when it is to
// be kept (the cache's records are answered and measured by query after query; a record read
// for one query is not worth either).
func cacheRecord(it store.Item, keep bool, sl *slab) (cachedRec, error) {
	d := it.Bytes(attrRecord)
	r, err := parseRecord(d)
	if err != nil {
		return cachedRec{}, err
	}
	sk := it.String(store.AttrSK)
	env, id, ok := parseAreaSK(sk)
	if !ok {
		return cachedRec{}, errRecord
	}
	var js []byte
	if keep {
		bp := publicScratch.Get().(*[]byte)
		defer publicScratch.Put(bp)
		var marks runMarks
		if *bp, err = appendPublic((*bp)[:0], id, env, &r, &marks); err != nil {
			return cachedRec{}, err
		}
		full := *bp
		js = packJSON(full[len(full):], full, &marks) // after the JSON, in the same buffer
	}
	rec, typOff := d, r.typAt
	if keep {
		// In the record, the source follows the type (record.go).
		rec, typOff = d[r.typAt:r.typAt+1+len(r.typ)+len(r.source)], 0
	}
	data := sl.alloc(len(sk) + len(rec) + len(js))
	n := copy(data, sk)
	n += copy(data[n:], rec)
	copy(data[n:], js)
	ext := r.ext
	c := cachedRec{p0: ext[0], cos: math.Cos(ext[0].Lat * degToRad), u: ext[0].Unit(),
		expires: r.expires, version: r.version, confidence: r.confidence,
		data: data, skLen: uint32(len(sk)), recLen: uint32(len(rec)), typOff: uint32(typOff), srcOff: uint32(typOff + 1 + len(r.typ)), sandbox: env == event.EnvironmentSandbox,
		kind: typeKinds[string(r.typ)], size: int64(len(data)) + recOverhead}
	if len(ext) == 1 {
		return c, nil
	}
	var seg float64
	l := &lineShape{latLo: ext[0].Lat, latHi: ext[0].Lat, reach: r.reach, units: make([]geo.Unit, len(ext))}
	l.units[0] = c.u
	for i := 1; i < len(ext); i++ {
		l.latLo, l.latHi = min(l.latLo, ext[i].Lat), max(l.latHi, ext[i].Lat)
		seg = max(seg, geo.Distance(ext[i-1], ext[i]))
		l.units[i] = ext[i].Unit()
	}
	l.halfSeg = seg/2 + 1
	widen := l.halfSeg / geo.EarthRadius / degToRad
	l.latLo, l.latHi = l.latLo-widen, l.latHi+widen
	c.size += int64(24*len(ext)) + lineOverhead
	if keep {
		l.path = geo.NewPath(ext)
		c.size += l.path.Bytes()
	} else {
		l.ext = ext
	}
	c.line = l
	return c, nil
}
