package embedded

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/btree"
	bolt "go.etcd.io/bbolt"
)

// The model test of mergeCursor: a bbolt bucket of random short keys (from a small alphabet,
// so that the pending layers hit the same keys), one or two pending layers over it, and random
// walks of First/Last/Seek/Next/Prev compared step by step with refCursor, a bbolt-like cursor
// over the expected merged map.

const (
	mergeAlphabet = "abcd"
	// mergeDBSeeds bbolt contents times mergeLayerSeeds layer sets make the cases; every case
	// has its own fixed seeds, printed on failure, so that it reproduces.
	mergeDBSeeds    = 100
	mergeLayerSeeds = 20
	mergeWalks      = 3  // walks per case
	mergeWalkSteps  = 60 // calls per walk
)

type kv struct{ key, val []byte }

// refCursor is the reference: bbolt's Cursor semantics over a sorted slice. Seek finds the
// first key >= the target, Next from the last key and Prev from the first return nil, and once
// it has returned nil, Next and Prev return nil until First, Last or Seek repositions it (what
// mergeCursor does; bbolt itself differs there, see TestMergeCursorModel).
type refCursor struct {
	kvs []kv
	pos int // -1: off either end, or not positioned yet
}

func (r *refCursor) at() ([]byte, []byte) {
	if r.pos < 0 || r.pos >= len(r.kvs) {
		r.pos = -1
		return nil, nil
	}
	return r.kvs[r.pos].key, r.kvs[r.pos].val
}

func (r *refCursor) First() ([]byte, []byte) { r.pos = 0; return r.at() }

func (r *refCursor) Last() ([]byte, []byte) { r.pos = len(r.kvs) - 1; return r.at() }

func (r *refCursor) Seek(k []byte) ([]byte, []byte) {
	r.pos, _ = slices.BinarySearchFunc(r.kvs, k, func(e kv, k []byte) int { return bytes.Compare(e.key, k) })
	return r.at()
}

func (r *refCursor) Next() ([]byte, []byte) {
	if r.pos < 0 {
		return nil, nil
	}
	r.pos++
	return r.at()
}

func (r *refCursor) Prev() ([]byte, []byte) {
	if r.pos < 0 {
		return nil, nil
	}
	r.pos--
	return r.at()
}

var _ cursor = (*refCursor)(nil)

func randKey(rng *rand.Rand, alphabet string, minLen, maxLen int) []byte {
	k := make([]byte, minLen+rng.IntN(maxLen-minLen+1))
	for i := range k {
		k[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return k
}

// openModelDB opens a bbolt file for the cursor tests (no syncs: nothing here needs them).
func openModelDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "model.db"), 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		t.Fatalf("bolt.Open = %v; want nil", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close = %v; want nil", err)
		}
	})
	return db
}

// fillBase replaces the items bucket with random keys of 1 to maxLen bytes and returns its
// contents. Some contents are empty, some span many pages (long values), so that bbolt's cursor
// crosses page boundaries.
func fillBase(t *testing.T, db *bolt.DB, rng *rand.Rand, maxLen int) map[string][]byte {
	t.Helper()
	base := map[string][]byte{}
	density := []float64{0, 0.1, 0.5, 0.9}[rng.IntN(4)]
	pad := 0
	if rng.IntN(2) == 0 {
		pad = 200 + rng.IntN(200)
	}
	var all func(prefix []byte)
	all = func(prefix []byte) {
		if len(prefix) > 0 && rng.Float64() < density {
			base[string(prefix)] = []byte("base:" + string(prefix) + ":" + strings.Repeat("x", pad))
		}
		if len(prefix) == maxLen {
			return
		}
		for _, c := range []byte(mergeAlphabet) {
			all(append(slices.Clip(prefix), c))
		}
	}
	all(nil)
	err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketItems); err != nil && tx.Bucket(bucketItems) != nil {
			return err
		}
		bk, err := tx.CreateBucket(bucketItems)
		if err != nil {
			return err
		}
		for k, v := range base {
			if err := bk.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fill bbolt: %v", err)
	}
	return base
}

// modelCase is one set of layers over a bbolt bucket, with the merged map they must show.
type modelCase struct {
	layers []*layer // newest first
	want   []kv     // merged, sorted
	direct bool     // build the mergeCursor by hand, empty trees included
	desc   string
}

func buildCase(rng *rand.Rand, base map[string][]byte, maxLen int, nLayers int) modelCase {
	baseKeys := slices.Sorted(maps.Keys(base))
	smallNodes := rng.IntN(3) == 0 // deep trees: exercise the iterators' moves between nodes
	c := modelCase{direct: nLayers > 0 && rng.IntN(4) == 0}
	for i := range nLayers {
		l := newLayer([nBuckets]uint64{})
		if smallNodes {
			l.trees[bItems] = btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true, Degree: 2})
		}
		n := 0
		if rng.IntN(8) != 0 { // some layers are empty
			n = 1 + rng.IntN(40)
		}
		for range n {
			var k []byte
			if len(baseKeys) > 0 && rng.IntN(2) == 0 {
				k = []byte(baseKeys[rng.IntN(len(baseKeys))]) // override or delete a bbolt key
			} else {
				k = randKey(rng, mergeAlphabet, 1, maxLen)
			}
			e := entry{key: k}
			if rng.IntN(10) < 3 {
				e.del = true
			} else {
				e.val = fmt.Appendf(nil, "layer%d:%s:%d", i, k, rng.IntN(1000))
			}
			l.trees[bItems].Set(e)
		}
		c.layers = append(c.layers, l)
	}
	merged := maps.Clone(base)
	for i := len(c.layers) - 1; i >= 0; i-- { // oldest first, so the newest wins
		c.layers[i].trees[bItems].Scan(func(e entry) bool {
			if e.del {
				delete(merged, string(e.key))
			} else {
				merged[string(e.key)] = e.val
			}
			return true
		})
	}
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		c.want = append(c.want, kv{[]byte(k), merged[k]})
	}
	var b strings.Builder
	for i, l := range c.layers {
		fmt.Fprintf(&b, " layer%d:", i)
		l.trees[bItems].Scan(func(e entry) bool {
			if e.del {
				fmt.Fprintf(&b, " -%s", e.key)
			} else {
				fmt.Fprintf(&b, " +%s", e.key)
			}
			return true
		})
	}
	c.desc = fmt.Sprintf("bbolt keys %q;%s", baseKeys, b.String())
	return c
}

// cursorFor returns the cursor under test: view.cursor's, or one built the same way by hand
// with empty trees kept (view.cursor drops them).
func (c modelCase) cursorFor(tx *bolt.Tx) cursor {
	v := &view{tx: tx, layers: c.layers}
	if !c.direct {
		return v.cursor(bItems)
	}
	m := &mergeCursor{cur: -1}
	for _, l := range c.layers {
		it := l.trees[bItems].Iter()
		m.srcs = append(m.srcs, mergeSource{tree: &it})
	}
	m.srcs = append(m.srcs, mergeSource{base: tx.Bucket(bucketItems).Cursor()})
	return m
}

// TestMergeCursorModel checks that the cursor over bbolt and the pending layers behaves as a
// bbolt cursor over the merged map (newest layer wins, deletions hide keys), through random
// walks mixing both directions, seeks to absent keys and steps past either end; and that
// view.get reads the same map. The cases without layers check the reference against bbolt
// itself.
func TestMergeCursorModel(t *testing.T) {
	t.Parallel()
	db := openModelDB(t)
	for ds := range mergeDBSeeds {
		maxLen := 2 + ds%3
		base := fillBase(t, db, rand.New(rand.NewPCG(uint64(ds), 0)), maxLen)
		func() {
			tx, err := db.Begin(false)
			if err != nil {
				t.Fatalf("Begin = %v; want nil", err)
			}
			defer func() { _ = tx.Rollback() }()
			for ls := range mergeLayerSeeds {
				rng := rand.New(rand.NewPCG(uint64(ds), uint64(ls)+1))
				nLayers := 0
				if ls > 0 {
					nLayers = 1 + rng.IntN(2)
				}
				c := buildCase(rng, base, maxLen, nLayers)
				checkGet(t, fmt.Sprintf("dbSeed %d, layerSeed %d", ds, ls), &view{tx: tx, layers: c.layers}, c.want, maxLen)
				for walk := range mergeWalks {
					cur := c.cursorFor(tx)
					// view.cursor returns bbolt's own cursor when no layer has an entry.
					_, bboltOnly := cur.(*bolt.Cursor)
					if nLayers == 0 && !bboltOnly {
						t.Fatalf("view.cursor without layers = %T; want *bolt.Cursor", cur)
					}
					runWalk(t, fmt.Sprintf("dbSeed %d, layerSeed %d, walk %d, %T (%s)", ds, ls, walk, cur, c.desc),
						rng, cur, &refCursor{kvs: c.want}, maxLen, bboltOnly)
				}
			}
		}()
	}
}

// checkGet checks view.get against the merged map for every key of up to maxLen+1 bytes.
func checkGet(t *testing.T, name string, v *view, want []kv, maxLen int) {
	t.Helper()
	wantMap := map[string][]byte{}
	for _, e := range want {
		wantMap[string(e.key)] = e.val
	}
	var all func(prefix []byte)
	all = func(prefix []byte) {
		if len(prefix) > 0 {
			if got, want := v.get(bItems, prefix), wantMap[string(prefix)]; !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("%s: get(%q) = %q; want %q", name, prefix, got, want)
			}
		}
		if len(prefix) <= maxLen {
			for _, c := range []byte(mergeAlphabet) {
				all(append(slices.Clip(prefix), c))
			}
		}
	}
	all(nil)
}

// runWalk makes random calls on got and want and fails at the first difference. bboltOnly
// keeps the walk from stepping on after a nil: bbolt's cursor then stays on the end it ran
// off (Prev from the first key returns nil, and a following Next the second key), where
// mergeCursor and refCursor return nil until repositioned. The store's readers never step on
// after a nil.
func runWalk(t *testing.T, name string, rng *rand.Rand, got, want cursor, maxLen int, bboltOnly bool) {
	t.Helper()
	var history []string
	off := true // the last call returned nil, or nothing was called yet
	for range mergeWalkSteps {
		op := rng.IntN(10)
		if off && (bboltOnly || len(history) == 0) {
			op = rng.IntN(4) // reposition: a fresh cursor is not stepped (see TestMergeCursorUnpositioned)
		}
		var call string
		var gk, gv, wk, wv []byte
		switch op {
		case 0:
			call = "First()"
			gk, gv = got.First()
			wk, wv = want.First()
		case 1:
			call = "Last()"
			gk, gv = got.Last()
			wk, wv = want.Last()
		case 2, 3:
			var k []byte
			switch rng.IntN(6) {
			case 0:
				k = nil
			case 1:
				k = []byte{}
			default:
				// "e" sorts after every key; lengths up to maxLen+1 miss every key too.
				k = randKey(rng, mergeAlphabet+"e", 1, maxLen+1)
			}
			call = fmt.Sprintf("Seek(%q)", k)
			gk, gv = got.Seek(k)
			wk, wv = want.Seek(k)
		case 4, 5, 6:
			call = "Next()"
			gk, gv = got.Next()
			wk, wv = want.Next()
		default:
			call = "Prev()"
			gk, gv = got.Prev()
			wk, wv = want.Prev()
		}
		history = append(history, fmt.Sprintf("%s=%q", call, gk))
		if !bytes.Equal(gk, wk) || !bytes.Equal(gv, wv) || (gk == nil) != (wk == nil) {
			t.Fatalf("%s: after %s:\n%s = (%q, %q); want (%q, %q)",
				name, strings.Join(history[:len(history)-1], " "), call, gk, gv, wk, wv)
		}
		off = wk == nil
	}
}

// TestMergeCursorSteps checks hand-picked walks whose answers are easy to see: deletions at
// either end and in the middle, a layer overriding bbolt, and turning round at each end.
func TestMergeCursorSteps(t *testing.T) {
	t.Parallel()
	db := openModelDB(t)
	base := map[string]string{"a": "base-a", "b": "base-b", "c": "base-c", "d": "base-d", "e": "base-e"}
	if err := db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucket(bucketItems)
		if err != nil {
			return err
		}
		for k, v := range base {
			if err := bk.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("fill bbolt: %v", err)
	}
	newest := newLayer([nBuckets]uint64{})
	older := newLayer([nBuckets]uint64{})
	set := func(l *layer, k, v string, del bool) {
		l.trees[bItems].Set(entry{key: []byte(k), val: []byte(v), del: del})
	}
	set(older, "a", "", true)         // first bbolt key deleted
	set(older, "c", "older-c", false) // overridden again by newest
	set(newest, "c", "newest-c", false)
	set(older, "cc", "older-cc", false) // new key, deleted by newest
	set(newest, "cc", "", true)
	set(newest, "e", "", true) // last bbolt key deleted
	set(older, "f", "older-f", false)
	set(newest, "bb", "", true) // deletes nothing
	// Merged: b=base-b c=newest-c d=base-d f=older-f.

	tx, err := db.Begin(false)
	if err != nil {
		t.Fatalf("Begin = %v; want nil", err)
	}
	defer func() { _ = tx.Rollback() }()
	tests := []struct {
		name  string
		calls string // space-separated: F L N P S<key>
		want  string // the keys returned, "-" for nil
	}{
		{"forward", "F N N N N N", "b c d f - -"},
		{"backward", "L P P P P P", "f d c b - -"},
		{"turn at the end", "F N N N N P", "b c d f - -"},
		{"turn on the last", "L N", "f -"},
		{"turn on the first", "F P N", "b - -"},
		{"zigzag", "F N P N N P P N", "b c b c d c b c"},
		{"seek deleted", "Sa N Scc P Se P", "b c d c f d"},
		{"seek past the end", "Sg P Sz N", "- - - -"},
		{"seek then back", "Sd P P N", "d c b c"},
		{"last then seek", "L Sbb N P", "f c d c"},
	}
	for _, tt := range tests {
		c := (&view{tx: tx, layers: []*layer{newest, older}}).cursor(bItems)
		var got []string
		for call := range strings.FieldsSeq(tt.calls) {
			var k, v []byte
			switch call[0] {
			case 'F':
				k, v = c.First()
			case 'L':
				k, v = c.Last()
			case 'N':
				k, v = c.Next()
			case 'P':
				k, v = c.Prev()
			case 'S':
				k, v = c.Seek([]byte(call[1:]))
			default:
				t.Fatalf("unknown call %q", call)
			}
			if k == nil {
				got = append(got, "-")
				continue
			}
			got = append(got, string(k))
			wantVal := map[string]string{"b": "base-b", "c": "newest-c", "d": "base-d", "f": "older-f"}[string(k)]
			if string(v) != wantVal {
				t.Errorf("%s: %s value of %q = %q; want %q", tt.name, call, k, v, wantVal)
			}
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("%s: %s = %s; want %s", tt.name, tt.calls, g, tt.want)
		}
	}
}

// TestMergeCursorUnpositioned checks Next and Prev on a cursor nothing has positioned yet:
// bbolt's Cursor returns nil for both, and so must the merged cursor (view.cursor returns
// either, depending on whether there are pending writes).
func TestMergeCursorUnpositioned(t *testing.T) {
	t.Parallel()
	db := openModelDB(t)
	if err := db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucket(bucketItems)
		if err != nil {
			return err
		}
		return bk.Put([]byte("a"), []byte("base-a"))
	}); err != nil {
		t.Fatalf("fill bbolt: %v", err)
	}
	l := newLayer([nBuckets]uint64{})
	l.trees[bItems].Set(entry{key: []byte("a"), del: true})
	tx, err := db.Begin(false)
	if err != nil {
		t.Fatalf("Begin = %v; want nil", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, layers := range [][]*layer{nil, {l}} {
		for _, step := range []string{"Next", "Prev"} {
			c := (&view{tx: tx, layers: layers}).cursor(bItems)
			var k, v []byte
			if step == "Next" {
				k, v = c.Next()
			} else {
				k, v = c.Prev()
			}
			if k != nil || v != nil {
				t.Errorf("%d layers: %s() on a new %T = (%q, %q); want (nil, nil)", len(layers), step, c, k, v)
			}
		}
	}
}
