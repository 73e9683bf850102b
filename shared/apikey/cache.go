package apikey

import "sync"

// maxCachedKeys bounds the lookup cache; past it the cache starts again empty, which costs
// one table read per key in use and keeps memory flat whatever keys are presented.
const maxCachedKeys = 16384

// lookupCache remembers the principals of keys that authenticated, by hash, so that a
// process that is the table's only writer (the embedded store: its file is locked while it is
// open) answers repeated authentications without a read transaction per request. It is only
// correct while every revocation goes through the same Keys (Revoke), which invalidates it.
//
// Spec 5 ("revocation effective on the next request") rests on the generation counter: a
// lookup notes the generation before it reads the table and stores its result only if no
// invalidation happened meanwhile. A read that raced a Revoke may have seen the key before
// the revocation committed; the invalidation after the commit bumps the generation, so that
// read is answered once (it began before Revoke returned) but never cached.
type lookupCache struct {
	mu      sync.RWMutex
	gen     uint64
	entries map[string]Principal // hash -> principal of an unrevoked key
}

func newLookupCache() *lookupCache {
	return &lookupCache{entries: map[string]Principal{}}
}

// get returns the cached principal of hash, if any.
func (c *lookupCache) get(hash string) (Principal, bool) {
	c.mu.RLock()
	p, ok := c.entries[hash]
	c.mu.RUnlock()
	return p, ok
}

// generation returns the current generation; call it before reading the table.
func (c *lookupCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put caches p under hash unless an invalidation happened since generation gen was read.
func (c *lookupCache) put(gen uint64, hash string, p Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.entries) >= maxCachedKeys {
		clear(c.entries)
	}
	c.entries[hash] = p
}

// invalidate forgets hash and makes every lookup in flight uncacheable.
func (c *lookupCache) invalidate(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, hash)
}
