package events

import (
	"errors"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
)

// partCache keeps the area index partitions a process has read, decoded, so that a query over
// cells read before costs no table read at all. Reading an index item through store.Table
// costs about 2 µs (a map and several allocations per item), and a query at 1000 m reads about
// 380 of them: that, not the geometry, bounds the throughput of GET /v1/events on the embedded
// store.
//
// It is only correct in a process that is the only writer of the table's area index: every
// index write goes through Store.commit, which applies it to the cached partition (apply), so
// the cache never serves less than the table holds. That is `go run .` on the embedded store,
// whose file no other process can open while it runs (Options.CacheBytes); a table written by
// several processes (DynamoDB behind Lambdas) must not use it.
//
// Coherence within the process: a partition is filled from a table read only if no write
// touched it since the read began (gen), and no eviction happened meanwhile (epoch), so a slow
// reader cannot put back a partition older than a write it raced with.
type partCache struct {
	limit  int64        // bytes; over it, partitions are evicted at random
	size   atomic.Int64 // bytes held
	epoch  atomic.Uint64
	seed   maphash.Seed
	shards [64]cacheShard
}

type cacheShard struct {
	mu    sync.Mutex
	parts map[string]*part
}

// part is one partition: loaded, its records; not loaded, a place to count writes (gen).
type part struct {
	mu      sync.RWMutex
	gen     uint64 // writes applied or refused since the part was made
	loaded  bool
	recs    []cachedRec
	idx     map[string]int // event id -> index in recs
	bytes   int64
	pruneAt int64 // Unix nanoseconds after which expired records are dropped (prune)
}

// pruneEvery is how often a loaded partition drops its expired records. The table's TTL
// deletions do not pass through this process's writes, so without it a partition would keep
// every record it ever held; queries filter expired records out either way.
const pruneEvery = int64(time.Minute)

// cachedRec is one index item, decoded; its record points into the item's bytes, which
// nothing modifies.
type cachedRec struct {
	// p0 is ext[0], kept inline: it is what a query reads of most records (points), and
	// following ext to another cache line for each of thousands of records costs memory
	// latency on top of the distance.
	p0  geo.Point
	cos float64 // cosine of p0's latitude (pointDistance)
	id  string
	rec record
	ext []geo.Point // the record's extent, decoded once
	// A LineString lies between these latitudes (degrees): its vertices' range widened by
	// half its longest segment, as every point of a segment is within half its length of an
	// end. matcher.add uses it to skip the exact distance.
	latLo, latHi float64
	// For a LineString, the cosine of each vertex's latitude and half its longest segment:
	// its distance is at least the nearest vertex's less half (matcher.add).
	coss    []float64
	halfSeg float64
	// path is a LineString's extent prepared for exact distances, in records that stay (the
	// cache's); nil otherwise, and matcher.add measures ext itself. Each cell's copy has its
	// own: the whole 100 000-event city takes 122 MB of cache with them, 104 MB without.
	path *geo.Path
	size int64
}

// recOverhead is what a cached record costs besides its bytes (struct, id, map entry), and
// partOverhead what a partition costs, loaded or not: counted so that the limit bounds the
// cache however many empty cells queries and writes touch.
const (
	recOverhead  = 176
	partOverhead = 256
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
func (c *partCache) view(pk string, now int64, fn func([]cachedRec)) (hit bool, t ticket) {
	t.epoch = c.epoch.Load()
	p := c.get(pk)
	p.mu.RLock()
	if !p.loaded {
		t = ticket{pk: pk, p: p, gen: p.gen, epoch: t.epoch}
		p.mu.RUnlock()
		return false, t
	}
	fn(p.recs)
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
	for i := 0; i < len(p.recs); {
		if r := p.recs[i]; r.rec.expires <= now {
			freed += r.size
			p.remove(i)
			continue
		}
		i++
	}
	p.bytes -= freed
	return freed
}

// remove drops record i, moving the last one into its place. The caller holds p.mu and
// adjusts p.bytes.
func (p *part) remove(i int) {
	delete(p.idx, p.recs[i].id)
	last := len(p.recs) - 1
	if i != last {
		p.recs[i] = p.recs[last]
		p.idx[p.recs[i].id] = i
	}
	p.recs[last] = cachedRec{}
	p.recs = p.recs[:last]
}

// fill stores the records read from the table for a ticket's partition, unless a write or an
// eviction came in between (the records might then be older than what the table holds).
func (c *partCache) fill(t ticket, recs []cachedRec) {
	var bytes int64
	for _, r := range recs {
		bytes += r.size
	}
	t.p.mu.Lock()
	ok := !t.p.loaded && t.p.gen == t.gen && c.epoch.Load() == t.epoch
	if ok {
		t.p.loaded, t.p.recs, t.p.bytes, t.p.pruneAt = true, recs, bytes, 0
		t.p.idx = make(map[string]int, len(recs))
		for i, r := range recs {
			t.p.idx[r.id] = i
		}
	}
	t.p.mu.Unlock()
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
		case err != nil:
			delta -= p.bytes
			p.loaded, p.recs, p.idx, p.bytes = false, nil, nil, 0
		case op.Kind == store.OpPut:
			r, perr := cacheRecord(op.Item, true)
			if perr != nil {
				delta -= p.bytes
				p.loaded, p.recs, p.idx, p.bytes = false, nil, nil, 0
				break
			}
			delta += r.size
			p.bytes += r.size
			if i, ok := p.idx[k.SK]; ok {
				delta -= p.recs[i].size
				p.bytes -= p.recs[i].size
				p.recs[i] = r
			} else {
				p.idx[k.SK] = len(p.recs)
				p.recs = append(p.recs, r)
			}
		case op.Kind == store.OpDelete:
			if i, ok := p.idx[k.SK]; ok {
				delta -= p.recs[i].size
				p.bytes -= p.recs[i].size
				p.remove(i)
			}
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
			c.size.Add(-p.bytes - partOverhead)
			p.loaded, p.recs, p.idx, p.bytes = false, nil, nil, 0
			p.mu.Unlock()
			delete(sh.parts, pk)
		}
		sh.mu.Unlock()
	}
}

// cacheRecord decodes an index item, with a prepared path when it is to be kept (the cache's
// records are measured by query after query; a record read for one query is not worth it).
func cacheRecord(it store.Item, keep bool) (cachedRec, error) {
	d := it.Bytes(attrRecord)
	r, err := parseRecord(d)
	if err != nil {
		return cachedRec{}, err
	}
	id := it.String(store.AttrSK)
	ext := r.extent()
	c := cachedRec{id: id, rec: r, ext: ext, p0: ext[0], cos: math.Cos(ext[0].Lat * degToRad),
		latLo: ext[0].Lat, latHi: ext[0].Lat, size: int64(len(d)+len(id)+16*r.n) + recOverhead}
	if len(ext) == 1 {
		return c, nil
	}
	var seg float64
	c.coss = make([]float64, len(ext))
	c.coss[0] = c.cos
	for i := 1; i < len(ext); i++ {
		c.latLo, c.latHi = min(c.latLo, ext[i].Lat), max(c.latHi, ext[i].Lat)
		seg = max(seg, geo.Distance(ext[i-1], ext[i]))
		c.coss[i] = math.Cos(ext[i].Lat * degToRad)
	}
	c.halfSeg = seg/2 + 1
	widen := c.halfSeg / geo.EarthRadius / degToRad
	c.latLo, c.latHi = c.latLo-widen, c.latHi+widen
	c.size += int64(8 * len(ext))
	if keep {
		c.path = geo.NewPath(ext)
		c.size += c.path.Bytes()
	}
	return c, nil
}
