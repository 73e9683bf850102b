package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/store"
)

func queryCases() []testCase {
	return []testCase{
		{"Selections", testQuerySelections},
		{"ByteOrder", func(e *env) {
			// Sort keys order by their bytes, as DynamoDB orders string sort keys.
			sks := []string{"b", "B", "a", "é", "aa", "a b", "a\x00", "0", "~"}
			for _, sk := range sks {
				e.put(item(e.key("p", sk)))
			}
			want := []string{"0", "B", "a", "a\x00", "a b", "aa", "b", "~", "é"}
			e.wantQuery(store.Query{PK: e.pk("p")}, want)
			e.wantQuery(store.Query{PK: e.pk("p"), Desc: true}, reversed(want))
		}},
		{"ReturnsWholeItems", func(e *env) {
			k := e.key("p", "a")
			it := item(k, "n", int64(1), "raw", []byte{7}, "list", []string{"x"})
			e.put(it)
			got, err := e.h.Table.Query(e.ctx, store.Query{PK: k.PK})
			if err != nil {
				e.t.Fatalf("Query = %v; want nil", err)
			}
			if len(got) != 1 || !sameItem(got[0], it) {
				e.t.Errorf("Query = %v; want [%s]", got, fmtItem(it))
			}
		}},
		{"Eventual", func(e *env) {
			// An eventually consistent query selects as a consistent one does (on DynamoDB it
			// may miss the last moment's writes; these were written before the test reads).
			for _, sk := range []string{"a", "b", "c"} {
				e.put(item(e.key("p", sk)))
			}
			e.wantQuery(store.Query{PK: e.pk("p"), Eventual: true}, []string{"a", "b", "c"})
			e.wantQuery(store.Query{PK: e.pk("p"), Prefix: "b", Eventual: true}, []string{"b"})
		}},
		{"EmptyPartition", func(e *env) {
			got, err := e.h.Table.Query(e.ctx, store.Query{PK: e.pk("nothing")})
			if err != nil || len(got) != 0 {
				e.t.Errorf("Query(empty partition) = %s, %v; want [] and nil", fmtItems(got), err)
			}
		}},
		{"Invalid", func(e *env) {
			cases := []struct {
				name string
				q    store.Query
			}{
				{"NoPartition", store.Query{Prefix: "a"}},
				{"PrefixAndFrom", store.Query{PK: e.pk("p"), Prefix: "a", From: "a"}},
				{"PrefixAndTo", store.Query{PK: e.pk("p"), Prefix: "a", To: "b"}},
				{"FromAfterTo", store.Query{PK: e.pk("p"), From: "b", To: "a"}},
				{"NegativeLimit", store.Query{PK: e.pk("p"), Limit: -1}},
			}
			for _, c := range cases {
				if err := c.q.Validate(); !errors.Is(err, store.ErrInvalid) {
					e.t.Errorf("%s: Validate = %v; want ErrInvalid", c.name, err)
				}
				if _, err := e.h.Table.Query(e.ctx, c.q); !errors.Is(err, store.ErrInvalid) {
					e.t.Errorf("%s: Query = %v; want ErrInvalid", c.name, err)
				}
			}
		}},
		{"ManyItemsAcrossPages", func(e *env) {
			// More items than one DynamoDB page holds when they are large, so an adapter must
			// follow pagination to honour the query.
			const n = 30
			big := make([]byte, 100*1024)
			e.putMany(n, func(i int) store.Item {
				return item(e.key("p", fmt.Sprintf("%03d", i)), "big", big)
			})
			got, err := e.h.Table.Query(e.ctx, store.Query{PK: e.pk("p")})
			if err != nil {
				e.t.Fatalf("Query = %v; want nil", err)
			}
			if len(got) != n {
				e.t.Fatalf("Query over %d items of 100 KiB returned %d items; want %d", n, len(got), n)
			}
			got, err = e.h.Table.Query(e.ctx, store.Query{PK: e.pk("p"), Limit: 25, Desc: true})
			if err != nil || len(got) != 25 || got[0].Key().SK != "029" || got[24].Key().SK != "005" {
				e.t.Errorf("Query(Limit 25, Desc) = %s, %v; want 029 down to 005", fmtItems(got), err)
			}
		}},
	}
}

// testQuerySelections runs every kind of selection, in both orders, with and without a limit,
// over a partition with a neighbour whose key extends it (partition isolation).
func testQuerySelections(e *env) {
	sks := []string{"a", "b/1", "b/2", "b/3", "c", "d"}
	for _, sk := range sks {
		e.put(item(e.key("q", sk), "part", "q"))
		// "q1" starts with "q": a key encoding that mixes partitions would leak these.
		e.put(item(e.key("q1", sk), "part", "q1"))
	}
	e.put(item(e.key("q-", "b/0"), "part", "q-"))
	pk := e.pk("q")
	cases := []struct {
		name string
		q    store.Query
		want []string
	}{
		{"All", store.Query{PK: pk}, sks},
		{"AllDesc", store.Query{PK: pk, Desc: true}, reversed(sks)},
		{"AllLimit", store.Query{PK: pk, Limit: 2}, []string{"a", "b/1"}},
		{"AllDescLimit", store.Query{PK: pk, Desc: true, Limit: 2}, []string{"d", "c"}},
		{"LimitOverCount", store.Query{PK: pk, Limit: 100}, sks},
		{"Prefix", store.Query{PK: pk, Prefix: "b/"}, []string{"b/1", "b/2", "b/3"}},
		{"PrefixDesc", store.Query{PK: pk, Prefix: "b/", Desc: true}, []string{"b/3", "b/2", "b/1"}},
		{"PrefixLimit", store.Query{PK: pk, Prefix: "b/", Limit: 2}, []string{"b/1", "b/2"}},
		{"PrefixDescLimit", store.Query{PK: pk, Prefix: "b/", Desc: true, Limit: 2}, []string{"b/3", "b/2"}},
		{"PrefixWholeKey", store.Query{PK: pk, Prefix: "c"}, []string{"c"}},
		{"PrefixNoMatch", store.Query{PK: pk, Prefix: "bb"}, nil},
		{"PrefixAfterAll", store.Query{PK: pk, Prefix: "z", Desc: true}, nil},
		{"From", store.Query{PK: pk, From: "b/2"}, []string{"b/2", "b/3", "c", "d"}},
		{"FromDesc", store.Query{PK: pk, From: "b/2", Desc: true}, []string{"d", "c", "b/3", "b/2"}},
		{"FromLimit", store.Query{PK: pk, From: "b/2", Limit: 1}, []string{"b/2"}},
		{"FromDescLimit", store.Query{PK: pk, From: "b/2", Desc: true, Limit: 3}, []string{"d", "c", "b/3"}},
		{"FromBetweenKeys", store.Query{PK: pk, From: "b/25"}, []string{"b/3", "c", "d"}},
		{"FromAfterAll", store.Query{PK: pk, From: "e"}, nil},
		{"To", store.Query{PK: pk, To: "b/2"}, []string{"a", "b/1", "b/2"}},
		{"ToDesc", store.Query{PK: pk, To: "b/2", Desc: true}, []string{"b/2", "b/1", "a"}},
		{"ToLimit", store.Query{PK: pk, To: "b/2", Limit: 2}, []string{"a", "b/1"}},
		{"ToDescLimit", store.Query{PK: pk, To: "b/2", Desc: true, Limit: 2}, []string{"b/2", "b/1"}},
		{"ToBetweenKeys", store.Query{PK: pk, To: "b/25", Desc: true}, []string{"b/2", "b/1", "a"}},
		{"ToBeforeAll", store.Query{PK: pk, To: "0"}, nil},
		{"ToAfterAll", store.Query{PK: pk, To: "z", Desc: true}, reversed(sks)},
		{"Range", store.Query{PK: pk, From: "b/1", To: "c"}, []string{"b/1", "b/2", "b/3", "c"}},
		{"RangeDesc", store.Query{PK: pk, From: "b/1", To: "c", Desc: true}, []string{"c", "b/3", "b/2", "b/1"}},
		{"RangeLimit", store.Query{PK: pk, From: "b/1", To: "c", Limit: 2}, []string{"b/1", "b/2"}},
		{"RangeDescLimit", store.Query{PK: pk, From: "b/1", To: "c", Desc: true, Limit: 2}, []string{"c", "b/3"}},
		{"RangeOneKey", store.Query{PK: pk, From: "c", To: "c"}, []string{"c"}},
		{"RangeEmpty", store.Query{PK: pk, From: "b/4", To: "b/9"}, nil},
	}
	for _, c := range cases {
		e.t.Run(c.name, func(t *testing.T) {
			sub := *e
			sub.t = t
			sub.wantQuery(c.q, c.want)
		})
	}
	e.wantQuery(store.Query{PK: e.pk("q1"), Prefix: "b/", Desc: true}, []string{"b/3", "b/2", "b/1"})
	e.wantQuery(store.Query{PK: e.pk("q-")}, []string{"b/0"})
}

// wantQuery fails unless q returns exactly the items of q.PK with sort keys want, in order.
func (e *env) wantQuery(q store.Query, want []string) {
	e.t.Helper()
	got, err := e.h.Table.Query(e.ctx, q)
	if err != nil {
		e.t.Errorf("Query(%+v) = %v; want nil", q, err)
		return
	}
	gotSKs := make([]string, 0, len(got))
	for _, it := range got {
		if it.Key().PK != q.PK {
			e.t.Errorf("Query(%+v) returned an item of partition %q", q, it.Key().PK)
		}
		gotSKs = append(gotSKs, it.Key().SK)
	}
	if len(want) == 0 {
		want = []string{}
	}
	if !reflect.DeepEqual(gotSKs, want) {
		e.t.Errorf("Query(%+v) sort keys = %q; want %q", q, gotSKs, want)
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// putMany writes n items made by mk, a few at a time.
func (e *env) putMany(n int, mk func(i int) store.Item) {
	e.t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = e.h.Table.Put(e.ctx, mk(i), store.Condition{})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.t.Fatalf("putting %d items: %v", n, err)
	}
}

func batchGetCases() []testCase {
	return []testCase{
		{"OrderMissingAndRepeats", func(e *env) {
			k1, k2, k3 := e.key("p", "1"), e.key("p", "2"), e.key("other", "3")
			e.put(item(k1, "v", "one"))
			e.put(item(k2, "v", "two"))
			e.put(item(k3, "v", "three"))
			keys := []store.Key{k3, k1, e.key("p", "missing"), k2, k1, k3}
			got, err := e.h.Table.BatchGet(e.ctx, keys)
			if err != nil {
				e.t.Fatalf("BatchGet = %v; want nil", err)
			}
			want := []store.Item{item(k3, "v", "three"), item(k1, "v", "one"), item(k2, "v", "two")}
			if !reflect.DeepEqual(got, want) {
				e.t.Errorf("BatchGet(%v) = %v; want %v", keys, got, want)
			}
		}},
		{"Empty", func(e *env) {
			got, err := e.h.Table.BatchGet(e.ctx, nil)
			if err != nil || len(got) != 0 {
				e.t.Errorf("BatchGet(nil) = %v, %v; want [] and nil", got, err)
			}
		}},
		{"MoreThanOneRequest", func(e *env) {
			const n = store.MaxBatchGet + 50
			e.putMany(n, func(i int) store.Item { return item(e.key("p", fmt.Sprintf("%04d", i)), "i", i) })
			order := rand.Perm(n)
			keys := make([]store.Key, 0, n+10)
			for _, i := range order {
				keys = append(keys, e.key("p", fmt.Sprintf("%04d", i)))
				if i%20 == 0 {
					keys = append(keys, e.key("p", fmt.Sprintf("missing%d", i)))
				}
			}
			got, err := e.h.Table.BatchGet(e.ctx, keys)
			if err != nil {
				e.t.Fatalf("BatchGet(%d keys) = %v; want nil", len(keys), err)
			}
			if len(got) != n {
				e.t.Fatalf("BatchGet(%d keys, %d present) returned %d items; want %d", len(keys), n, len(got), n)
			}
			for j, it := range got {
				if want := int64(order[j]); it.Int("i") != want {
					e.t.Fatalf("BatchGet item %d = %s; want i=%d (items in the order of the keys)", j, fmtItem(it), want)
				}
			}
		}},
	}
}
