package embedded

import (
	"bytes"

	"github.com/tidwall/btree"
	bolt "go.etcd.io/bbolt"
)

// What a read sees: bbolt's state plus the commits it does not hold yet (pending.go), newest
// first. The items, ttl and feed buckets are read through these types; the meta bucket only
// in bbolt.

// bucketID names the buckets that commits write.
type bucketID int

const (
	bItems bucketID = iota
	bTTL
	bFeed
	nBuckets
)

var bucketNames = [nBuckets][]byte{bItems: bucketItems, bTTL: bucketTTL, bFeed: bucketFeed}

// entry is a pending write of one key: its new value, or its deletion.
type entry struct {
	key, val []byte
	del      bool
}

func entryLess(a, b entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// treeDegree is smaller than the library's 32: the committer snapshots its live layer after
// every commit (layer.snapshot), so the next commit copies each node it changes, and a node
// of 8 costs a quarter of one of 32 to copy (docs/performance.md §6).
const treeDegree = 8

func newTree() *btree.BTreeG[entry] {
	return btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true, Degree: treeDegree})
}

// cursor is what bbolt's Cursor offers, so the reading code runs on either.
type cursor interface {
	First() (key, value []byte)
	Last() (key, value []byte)
	Seek(seek []byte) (key, value []byte)
	Next() (key, value []byte)
	Prev() (key, value []byte)
}

// view is a consistent read of the store: a bbolt read transaction and the pending layers
// that were not yet in bbolt when it began (Store.read). Values it returns are valid until the
// view ends.
type view struct {
	tx     *bolt.Tx
	layers []*layer // newest first
}

// get returns the value of key in bucket b, nil when absent.
func (v *view) get(b bucketID, key []byte) []byte {
	if e, ok := pendingEntry(v.layers, b, key); ok {
		if e.del {
			return nil
		}
		return e.val
	}
	return v.tx.Bucket(bucketNames[b]).Get(key)
}

// pendingEntry returns the newest pending write of key in bucket b of layers (newest first);
// ok is false when none of them wrote it, and bbolt's value stands.
func pendingEntry(layers []*layer, b bucketID, key []byte) (e entry, ok bool) {
	for _, l := range layers {
		if e, ok := l.trees[b].Get(entry{key: key}); ok {
			return e, true
		}
	}
	return entry{}, false
}

// cursor returns a cursor over bucket b as this view sees it.
func (v *view) cursor(b bucketID) cursor {
	base := v.tx.Bucket(bucketNames[b]).Cursor()
	var trees []*btree.BTreeG[entry]
	for _, l := range v.layers {
		if l.trees[b].Len() > 0 {
			trees = append(trees, l.trees[b])
		}
	}
	if len(trees) == 0 {
		return base
	}
	m := &mergeCursor{srcs: make([]mergeSource, 0, len(trees)+1), cur: -1}
	for _, t := range trees {
		it := t.Iter()
		m.srcs = append(m.srcs, mergeSource{tree: &it})
	}
	m.srcs = append(m.srcs, mergeSource{base: base})
	return m
}

// mergeSource is one input of a mergeCursor: a pending tree or bbolt's cursor, positioned at
// key (ok false when it has run off either end).
type mergeSource struct {
	tree *btree.IterG[entry]
	base *bolt.Cursor

	ok       bool
	key, val []byte
	del      bool
}

func (s *mergeSource) setTree(ok bool) {
	s.ok = ok
	if ok {
		e := s.tree.Item()
		s.key, s.val, s.del = e.key, e.val, e.del
	}
}

func (s *mergeSource) setBase(k, v []byte) {
	s.ok, s.key, s.val, s.del = k != nil, k, v, false
}

func (s *mergeSource) first() {
	if s.tree != nil {
		s.setTree(s.tree.First())
	} else {
		s.setBase(s.base.First())
	}
}

func (s *mergeSource) last() {
	if s.tree != nil {
		s.setTree(s.tree.Last())
	} else {
		s.setBase(s.base.Last())
	}
}

func (s *mergeSource) seek(k []byte) {
	if s.tree != nil {
		s.setTree(s.tree.Seek(entry{key: k}))
	} else {
		s.setBase(s.base.Seek(k))
	}
}

func (s *mergeSource) next() {
	if s.tree != nil {
		s.setTree(s.tree.Next())
	} else {
		s.setBase(s.base.Next())
	}
}

func (s *mergeSource) prev() {
	if s.tree != nil {
		s.setTree(s.tree.Prev())
	} else {
		s.setBase(s.base.Prev())
	}
}

// mergeCursor walks several sorted sources as one, in either direction (as LevelDB's merging
// iterator does). Where sources share a key the first, newest, wins; a deletion hides the key.
// Every source is positioned on the current key or beyond it in the direction of travel.
type mergeCursor struct {
	srcs    []mergeSource // newest first
	cur     int           // the source of the current key; -1 when off the end
	forward bool
}

func (m *mergeCursor) First() ([]byte, []byte) {
	for i := range m.srcs {
		m.srcs[i].first()
	}
	m.forward = true
	return m.settle()
}

func (m *mergeCursor) Last() ([]byte, []byte) {
	for i := range m.srcs {
		m.srcs[i].last()
	}
	m.forward = false
	return m.settle()
}

func (m *mergeCursor) Seek(k []byte) ([]byte, []byte) {
	for i := range m.srcs {
		m.srcs[i].seek(k)
	}
	m.forward = true
	return m.settle()
}

func (m *mergeCursor) Next() ([]byte, []byte) {
	if m.cur < 0 {
		return nil, nil
	}
	key := m.srcs[m.cur].key
	if !m.forward {
		// Bring every source to the first key after key.
		for i := range m.srcs {
			if i != m.cur {
				m.srcs[i].seek(key)
			}
		}
		m.forward = true
	}
	m.skip(key)
	return m.settle()
}

func (m *mergeCursor) Prev() ([]byte, []byte) {
	if m.cur < 0 {
		return nil, nil
	}
	key := m.srcs[m.cur].key
	if m.forward {
		// Bring every source to the last key before key.
		for i := range m.srcs {
			if i == m.cur {
				continue
			}
			s := &m.srcs[i]
			if s.seek(key); s.ok {
				s.prev()
			} else {
				s.last()
			}
		}
		m.forward = false
	}
	m.skip(key)
	return m.settle()
}

// skip moves every source on key one step in the direction of travel.
func (m *mergeCursor) skip(key []byte) {
	for i := range m.srcs {
		s := &m.srcs[i]
		if s.ok && bytes.Equal(s.key, key) {
			if m.forward {
				s.next()
			} else {
				s.prev()
			}
		}
	}
}

// settle makes the nearest key in the direction of travel current, stepping over deleted
// keys, and returns it.
func (m *mergeCursor) settle() ([]byte, []byte) {
	for {
		m.cur = -1
		for i := range m.srcs {
			s := &m.srcs[i]
			if !s.ok {
				continue
			}
			if m.cur < 0 {
				m.cur = i
				continue
			}
			c := bytes.Compare(s.key, m.srcs[m.cur].key)
			if (m.forward && c < 0) || (!m.forward && c > 0) {
				m.cur = i
			}
		}
		if m.cur < 0 {
			return nil, nil
		}
		s := &m.srcs[m.cur]
		if !s.del {
			return s.key, s.val
		}
		m.skip(s.key)
	}
}
