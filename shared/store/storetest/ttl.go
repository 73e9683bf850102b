package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// The TTL cases move the harness clock and never sleep: an item whose AttrTTL is at or before
// the clock is invisible whether or not anything deleted it (package store doc).
func ttlCases() []testCase {
	return []testCase{
		{"HiddenFromEveryReadAtExpiry", func(e *env) {
			k, keep := e.key("p", "a"), e.key("p", "b")
			it := item(k, store.AttrTTL, e.ttlIn(time.Minute))
			e.put(it)
			e.put(item(keep))
			e.h.Clock.Advance(time.Minute - time.Second)
			e.wantItem(k, it)
			e.wantQuery(store.Query{PK: k.PK}, []string{"a", "b"})

			e.h.Clock.Advance(time.Second) // now == ttl: expired ("at or before")
			e.wantAbsent(k)
			e.wantQuery(store.Query{PK: k.PK}, []string{"b"})
			e.wantQuery(store.Query{PK: k.PK, Prefix: "a"}, nil)
			e.wantQuery(store.Query{PK: k.PK, Desc: true, Limit: 1}, []string{"b"})
			got, err := e.h.Table.BatchGet(e.ctx, []store.Key{k, keep})
			if err != nil || len(got) != 1 || got[0].Key() != keep {
				e.t.Errorf("BatchGet(expired, live) = %v, %v; want only the live item", keysOf(got), err)
			}
		}},
		{"NoTTLOrFutureTTLStays", func(e *env) {
			never, later := e.key("p", "never"), e.key("p", "later")
			e.put(item(never))
			e.put(item(later, store.AttrTTL, e.ttlIn(48*time.Hour)))
			e.h.Clock.Advance(47 * time.Hour)
			e.get(never)
			e.get(later)
			e.h.Clock.Advance(10 * 365 * 24 * time.Hour)
			e.get(never)
			e.wantAbsent(later)
		}},
		{"RenewedTTLKeepsItem", func(e *env) {
			k := e.key("p", "session")
			e.put(item(k, store.AttrTTL, e.ttlIn(time.Minute)))
			if _, err := e.h.Table.Update(e.ctx, k, store.Update{Set: map[string]any{store.AttrTTL: e.ttlIn(time.Hour)}}, store.IfExists()); err != nil {
				e.t.Fatalf("Update(renew TTL) = %v; want nil", err)
			}
			e.h.Clock.Advance(2 * time.Minute)
			e.get(k)
		}},
		{"ConditionsSeeExpiredAsAbsent", func(e *env) {
			k := e.key("p", "a")
			e.put(item(k, "n", int64(5), store.AttrTTL, e.ttlIn(time.Second)))
			e.h.Clock.Advance(time.Second)
			for _, c := range []condCase{
				{"IfExists", store.IfExists(), false},
				{"IfAttrExists", store.IfAttrExists("n"), false},
				{"IfEqual", store.IfEqual("n", 5), false},
				{"IfAttrNotExists", store.IfAttrNotExists("n"), true},
				{"IfNotEqual", store.IfNotEqual("n", 5), true},
			} {
				err := e.h.Table.TransactWrite(e.ctx, []store.Op{store.CheckOp(k, c.cond)})
				if c.holds && err != nil {
					e.t.Errorf("%s on an expired item: TransactWrite(Check) = %v; want nil", c.name, err)
				}
				if !c.holds && !errors.Is(err, store.ErrConditionFailed) {
					e.t.Errorf("%s on an expired item: TransactWrite(Check) = %v; want ErrConditionFailed", c.name, err)
				}
			}
			if err := e.h.Table.Delete(e.ctx, k, store.IfExists()); !errors.Is(err, store.ErrConditionFailed) {
				e.t.Errorf("Delete(expired, IfExists) = %v; want ErrConditionFailed", err)
			}
			fresh := item(k, "v", "fresh")
			if err := e.h.Table.Put(e.ctx, fresh, store.IfNotExists()); err != nil {
				e.t.Fatalf("Put(IfNotExists) over an expired item = %v; want nil", err)
			}
			e.wantItem(k, fresh)
		}},
		{"UpdateOfExpiredStartsFresh", func(e *env) {
			// A rate-limit counter that expired must restart at zero, not carry on from the
			// expired count: Update treats the expired item as absent, as every read does.
			k := e.key("p", "counter")
			e.put(item(k, "n", int64(7), "old", "x", store.AttrTTL, e.ttlIn(time.Second)))
			e.h.Clock.Advance(time.Second)
			got, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"n": 1}}, store.Condition{})
			if err != nil {
				e.t.Fatalf("Update(expired) = %v; want nil", err)
			}
			want := item(k, "n", int64(1))
			if !sameItem(got, want) {
				e.t.Errorf("Update(expired) returned %s; want %s", fmtItem(got), fmtItem(want))
			}
			e.wantItem(k, want)
		}},
		{"QueryLimitCountsLiveItems", func(e *env) {
			for i := range 6 {
				it := item(e.key("p", fmt.Sprint(i)))
				if i < 3 {
					it[store.AttrTTL] = e.ttlIn(time.Second)
				}
				e.put(it)
			}
			e.h.Clock.Advance(time.Hour)
			e.wantQuery(store.Query{PK: e.pk("p"), Limit: 2}, []string{"3", "4"})
			e.wantQuery(store.Query{PK: e.pk("p"), Limit: 2, To: "4"}, []string{"3", "4"})
			e.wantQuery(store.Query{PK: e.pk("p"), Limit: 4, Desc: true}, []string{"5", "4", "3"})
		}},
	}
}
