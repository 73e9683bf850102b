package storetest

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/roadevents/roadevents/shared/store"
)

func updateCases() []testCase {
	return []testCase{
		{"SetAddRemove", func(e *env) {
			k := e.key("p", "a")
			e.put(item(k, "a", "x", "n", int64(1), "r", "gone"))
			got, err := e.h.Table.Update(e.ctx, k, store.Update{
				Set:    map[string]any{"a": "y", "new": 2.5, "whole": float64(4), "count": 3},
				Add:    map[string]int64{"n": 2, "c": 5},
				Remove: []string{"r", "never-there"},
			}, store.Condition{})
			if err != nil {
				e.t.Fatalf("Update = %v; want nil", err)
			}
			want := item(k, "a", "y", "new", 2.5, "whole", int64(4), "count", int64(3), "n", int64(3), "c", int64(5))
			if !sameItem(got, want) {
				e.t.Errorf("Update returned %s; want %s", fmtItem(got), fmtItem(want))
			}
			e.wantItem(k, want)
		}},
		{"CreatesAbsentItem", func(e *env) {
			k := e.key("p", "a")
			got, err := e.h.Table.Update(e.ctx, k, store.Update{
				Set: map[string]any{"x": "y"},
				Add: map[string]int64{"count": 1},
			}, store.Condition{})
			if err != nil {
				e.t.Fatalf("Update(absent) = %v; want nil", err)
			}
			want := item(k, "x", "y", "count", int64(1))
			if !sameItem(got, want) {
				e.t.Errorf("Update(absent) returned %s; want %s", fmtItem(got), fmtItem(want))
			}
			e.wantItem(k, want)
		}},
		{"AddNegativeAndToFloat", func(e *env) {
			k := e.key("p", "a")
			e.put(item(k, "n", int64(1), "f", 0.5))
			got, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"n": -3, "f": 2}}, store.Condition{})
			if err != nil {
				e.t.Fatalf("Update = %v; want nil", err)
			}
			want := item(k, "n", int64(-2), "f", 2.5)
			if !sameItem(got, want) {
				e.t.Errorf("Update returned %s; want %s", fmtItem(got), fmtItem(want))
			}
		}},
		{"Invalid", testInvalidUpdates},
	}
}

func testInvalidUpdates(e *env) {
	k := e.key("p", "a")
	before := item(k, "s", "text", "n", int64(1))
	e.put(before)
	cases := []struct {
		name string
		u    store.Update
	}{
		{"SetPartitionKey", store.Update{Set: map[string]any{store.AttrPK: "other"}}},
		{"SetSortKey", store.Update{Set: map[string]any{store.AttrSK: "other"}}},
		{"RemoveSortKey", store.Update{Remove: []string{store.AttrSK}}},
		{"AddToPartitionKey", store.Update{Add: map[string]int64{store.AttrPK: 1}}},
		{"AddToString", store.Update{Add: map[string]int64{"s": 1}}},
		{"SetUnsupportedType", store.Update{Set: map[string]any{"v": struct{}{}}}},
		{"SetEmptyName", store.Update{Set: map[string]any{"": "x"}}},
		{"SetAndRemoveSameAttribute", store.Update{Set: map[string]any{"s": "x"}, Remove: []string{"s"}}},
		{"SetAndAddSameAttribute", store.Update{Set: map[string]any{"n": 1}, Add: map[string]int64{"n": 1}}},
		{"AddAndRemoveSameAttribute", store.Update{Add: map[string]int64{"n": 1}, Remove: []string{"n"}}},
	}
	for _, c := range cases {
		if _, err := e.h.Table.Update(e.ctx, k, c.u, store.Condition{}); !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("%s: Update = %v; want ErrInvalid", c.name, err)
		}
	}
	e.wantItem(k, before)
}

// concurrencyN is how many goroutines race in the concurrency cases.
const concurrencyN = 50

func concurrencyCases() []testCase {
	return []testCase{
		{"RacingAddsAllCount", func(e *env) {
			// Atomic counters: every Add is applied once, and each caller sees its own result.
			k := e.key("p", "counter")
			results := make([]int64, concurrencyN)
			errs := make([]error, concurrencyN)
			var wg sync.WaitGroup
			for i := range concurrencyN {
				wg.Go(func() {
					it, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"n": 1}}, store.Condition{})
					results[i], errs[i] = it.Int("n"), err
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					e.t.Fatalf("goroutine %d: Update = %v; want nil", i, err)
				}
			}
			if got := e.get(k).Int("n"); got != concurrencyN {
				e.t.Errorf("counter after %d racing Adds = %d; want %d", concurrencyN, got, concurrencyN)
			}
			sort.Slice(results, func(i, j int) bool { return results[i] < results[j] })
			for i, n := range results {
				if n != int64(i+1) {
					e.t.Errorf("values returned by the racing Adds, sorted: position %d = %d; want %d (each Add returns its own result)", i, n, i+1)
					break
				}
			}
		}},
		{"RacingPutIfNotExistsOneWinner", func(e *env) {
			k := e.key("p", "lock")
			errs := make([]error, concurrencyN)
			var wg sync.WaitGroup
			for i := range concurrencyN {
				wg.Go(func() {
					errs[i] = e.h.Table.Put(e.ctx, item(k, "owner", fmt.Sprint(i)), store.IfNotExists())
				})
			}
			wg.Wait()
			winner, failed := -1, 0
			for i, err := range errs {
				switch {
				case err == nil && winner >= 0:
					e.t.Errorf("goroutines %d and %d both won Put(IfNotExists)", winner, i)
				case err == nil:
					winner = i
				case errors.Is(err, store.ErrConditionFailed):
					failed++
				default:
					e.t.Errorf("goroutine %d: Put(IfNotExists) = %v; want nil or ErrConditionFailed", i, err)
				}
			}
			if winner < 0 || failed != concurrencyN-1 {
				e.t.Fatalf("racing Put(IfNotExists): winner %d, %d ErrConditionFailed; want one winner and %d failures", winner, failed, concurrencyN-1)
			}
			if got, want := e.get(k).String("owner"), fmt.Sprint(winner); got != want {
				e.t.Errorf("owner after the race = %q; want the winner %q", got, want)
			}
		}},
	}
}
