// Package storetest is the one conformance suite that every store adapter runs, so that the
// embedded store and DynamoDB behave the same (docs/architecture.md §2: one conformance suite
// runs against both adapters, and a behaviour difference is a bug). Where the two could differ,
// DynamoDB's documented behaviour is the reference.
//
// An adapter's tests call Run with a function that opens a Harness:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Harness { ... })
//	}
//
// Run calls open once per subtest and runs the subtests in parallel. Every subtest writes only
// to partitions whose keys start with a prefix unique to it, so open may hand out a fresh table
// each time or adapters over one shared table; feed tests ignore records of other partitions.
// Each Harness must have its own Clock, because TTL subtests move it.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
)

// Harness is one adapter under test.
type Harness struct {
	// Table is the adapter under test.
	Table store.Table
	// Feed is the change feed of Table.
	Feed store.Feed
	// Clock is the clock Table uses to decide TTL expiry; subtests advance it.
	Clock *clock.Fake
	// Sweep runs the adapter's TTL sweeper once, now; nil when the adapter has none (DynamoDB
	// deletes expired items on its own schedule), and then the sweep subtests are skipped.
	Sweep func(ctx context.Context) error
}

// feedWait bounds every wait for a change record, so that a record that never comes fails the
// test instead of hanging it. It is generous because DynamoDB Local's stream is slow.
const feedWait = 30 * time.Second

// Run runs the conformance suite against the adapter that open returns.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"Items", itemCases()},
		{"Conditions", conditionCases()},
		{"Update", updateCases()},
		{"Concurrency", concurrencyCases()},
		{"Query", queryCases()},
		{"BatchGet", batchGetCases()},
		{"TransactWrite", transactCases()},
		{"TTL", ttlCases()},
		{"Feed", feedCases()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(newEnv(t, open(t)))
				})
			}
		})
	}
}

// RunSweep runs the cases of an adapter whose TTL deletion the test controls (Harness.Sweep):
// the sweeper deletes expired items and the feed reports each as a REMOVE with Expired set.
// They are not part of Run because DynamoDB deletes expired items on its own clock, days late;
// its TTL records are marked Expired from the stream's userIdentity instead (tested without a
// server in the dynamodb package).
func RunSweep(t *testing.T, open func(t *testing.T) Harness) {
	t.Run("SweepEmitsExpiredRemove", func(t *testing.T) {
		t.Parallel()
		testFeedSweep(newEnv(t, open(t)))
	})
	t.Run("SweepGoesByTheLatestTTL", func(t *testing.T) {
		t.Parallel()
		testSweepLatestTTL(newEnv(t, open(t)))
	})
}

type testCase struct {
	name string
	run  func(e *env)
}

// env is what one subtest works with: the harness, a context, and a partition prefix nobody
// else uses.
type env struct {
	t      *testing.T
	h      Harness
	ctx    context.Context
	prefix string
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	if h.Table == nil || h.Clock == nil {
		t.Fatal("storetest: open returned a Harness without Table or Clock")
	}
	return &env{t: t, h: h, ctx: t.Context(), prefix: uniquePrefix(t.Name())}
}

// uniquePrefix returns a partition-key prefix unique to one subtest run, readable in a table dump.
func uniquePrefix(name string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	name = strings.NewReplacer("/", ".", " ", "_").Replace(name)
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	return "st#" + hex.EncodeToString(b[:]) + "#" + name + "#"
}

// pk returns a partition key of this subtest.
func (e *env) pk(name string) string { return e.prefix + name }

// key returns a key in partition name of this subtest.
func (e *env) key(partition, sk string) store.Key {
	return store.Key{PK: e.pk(partition), SK: sk}
}

// item returns an item at k with the given attributes (name, value pairs).
func item(k store.Key, kv ...any) store.Item {
	it := store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK}
	for i := 0; i+1 < len(kv); i += 2 {
		it[kv[i].(string)] = kv[i+1]
	}
	return it
}

func (e *env) put(it store.Item) {
	e.t.Helper()
	if err := e.h.Table.Put(e.ctx, it, store.Condition{}); err != nil {
		e.t.Fatalf("Put(%s) = %v; want nil", fmtItem(it), err)
	}
}

func (e *env) get(k store.Key) store.Item {
	e.t.Helper()
	got, err := e.h.Table.Get(e.ctx, k)
	if err != nil {
		e.t.Fatalf("Get(%s) = %v; want the item", k, err)
	}
	return got
}

// wantItem fails unless the live item at k is exactly want.
func (e *env) wantItem(k store.Key, want store.Item) {
	e.t.Helper()
	got, err := e.h.Table.Get(e.ctx, k)
	if err != nil {
		e.t.Fatalf("Get(%s) = %v; want %s", k, err, fmtItem(want))
	}
	if !sameItem(got, want) {
		e.t.Errorf("Get(%s) = %s; want %s", k, fmtItem(got), fmtItem(want))
	}
}

// wantAbsent fails unless no live item has key k.
func (e *env) wantAbsent(k store.Key) {
	e.t.Helper()
	got, err := e.h.Table.Get(e.ctx, k)
	if !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("Get(%s) = %s, %v; want ErrNotFound", k, fmtItem(got), err)
	}
}

// ttlIn returns a TTL attribute value d from the harness clock's now, in Unix seconds.
func (e *env) ttlIn(d time.Duration) int64 { return e.h.Clock.Now().Add(d).Unix() }

// sameItem compares two items as stored values; nil and empty items are the same.
func sameItem(a, b store.Item) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// fmtItem prints an item with its value types, in name order, so that int64(3) and
// float64(3) can be told apart in a failure message.
func fmtItem(it store.Item) string {
	if it == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, name := range it.SortedNames() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %#v", name, it[name])
	}
	b.WriteString("}")
	return b.String()
}

// fmtItems prints a list of items by sort key, the way most query failures are easiest to read.
func fmtItems(items []store.Item) string {
	sks := make([]string, len(items))
	for i, it := range items {
		sks[i] = fmt.Sprintf("%s|%s", strings.TrimPrefix(it.Key().PK, commonPrefix(items)), it.Key().SK)
	}
	return "[" + strings.Join(sks, " ") + "]"
}

func commonPrefix(items []store.Item) string {
	if len(items) == 0 {
		return ""
	}
	p := items[0].Key().PK
	if i := strings.LastIndex(p, "#"); i >= 0 {
		return p[:i+1]
	}
	return ""
}

// keysOf returns the keys of items, in order.
func keysOf(items []store.Item) []store.Key {
	out := make([]store.Key, len(items))
	for i, it := range items {
		out[i] = it.Key()
	}
	return out
}
