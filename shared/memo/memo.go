// Package memo keeps the results of computations that never change for their key and are
// asked for again and again, such as the shapes of H3 cells or the partitions that cover a
// circle, in a map bounded by a number of entries. A full map is emptied and refilled rather
// than evicting by use: the keys a workload revisits fill it again at once, and the map needs
// no bookkeeping on the path of a hit, which is one read lock.
package memo

import "sync"

// Map is a bounded map, safe for concurrent use. Values are shared between callers, who must
// not change them.
type Map[K comparable, V any] struct {
	mu    sync.RWMutex
	m     map[K]V
	limit int
}

// New returns an empty Map of at most limit entries (at least one).
func New[K comparable, V any](limit int) *Map[K, V] {
	return &Map[K, V]{m: map[K]V{}, limit: max(1, limit)}
}

// Get returns the value kept for k, and whether there is one.
func (c *Map[K, V]) Get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// Put keeps v for k, emptying the map first when it is full.
func (c *Map[K, V]) Put(k K, v V) {
	c.mu.Lock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.limit {
		clear(c.m)
	}
	c.m[k] = v
	c.mu.Unlock()
}

// Len returns the number of entries kept.
func (c *Map[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
