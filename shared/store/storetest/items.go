package storetest

import (
	"errors"
	"math"
	"strings"

	"github.com/roadevents/roadevents/shared/store"
)

func itemCases() []testCase {
	return []testCase{
		{"RoundTripEveryType", testRoundTrip},
		{"GetAbsentIsNotFound", func(e *env) {
			_, err := e.h.Table.Get(e.ctx, e.key("p", "nobody"))
			if !errors.Is(err, store.ErrNotFound) {
				e.t.Errorf("Get(absent) = %v; want ErrNotFound", err)
			}
		}},
		{"PutReplacesWholeItem", func(e *env) {
			k := e.key("p", "a")
			e.put(item(k, "keep", "x", "drop", int64(1)))
			e.put(item(k, "keep", "y"))
			e.wantItem(k, item(k, "keep", "y"))
		}},
		{"DeleteRemovesAndAbsentIsNoError", func(e *env) {
			k := e.key("p", "a")
			e.put(item(k, "v", int64(1)))
			if err := e.h.Table.Delete(e.ctx, k, store.Condition{}); err != nil {
				e.t.Fatalf("Delete(present) = %v; want nil", err)
			}
			e.wantAbsent(k)
			if err := e.h.Table.Delete(e.ctx, k, store.Condition{}); err != nil {
				e.t.Errorf("Delete(absent) = %v; want nil", err)
			}
		}},
		{"StoredItemIsACopy", func(e *env) {
			// The caller may reuse its slices after Put and may change what Get returned: neither
			// must change the stored item.
			k := e.key("p", "a")
			raw := []byte{1, 2, 3}
			list := []string{"x", "y"}
			e.put(item(k, "raw", raw, "list", list))
			raw[0], list[0] = 9, "changed"
			got := e.get(k)
			got.Bytes("raw")[1] = 9
			got["extra"] = "added"
			e.wantItem(k, item(k, "raw", []byte{1, 2, 3}, "list", []string{"x", "y"}))
		}},
		{"InvalidItems", testInvalidItems},
		{"InvalidKeysOnEveryCall", testInvalidKeys},
	}
}

// testRoundTrip writes one attribute of every supported type and reads back the canonical
// values (store.Item: int is stored as int64, a whole float64 reads back as int64).
func testRoundTrip(e *env) {
	k := e.key("p", "types")
	e.put(item(k,
		"s", "héllo, wörld",
		"empty", "",
		"i", int64(-42),
		"max", int64(math.MaxInt64),
		"min", int64(math.MinInt64),
		"int", 7,
		"f", 2.5,
		"neg", -0.125,
		"whole", float64(3),
		"t", true,
		"no", false,
		"raw", []byte{0, 1, 2, 254, 255},
		"nilraw", []byte(nil),
		"list", []string{"b", "a", "b", ""},
	))
	want := item(k,
		"s", "héllo, wörld",
		"empty", "",
		"i", int64(-42),
		"max", int64(math.MaxInt64),
		"min", int64(math.MinInt64),
		"int", int64(7),
		"f", 2.5,
		"neg", -0.125,
		"whole", int64(3),
		"t", true,
		"no", false,
		"raw", []byte{0, 1, 2, 254, 255},
		"nilraw", []byte{},
		"list", []string{"b", "a", "b", ""},
	)
	got := e.get(k)
	// DynamoDB cannot tell a nil binary value from an empty one: both adapters return empty.
	if b, ok := got["nilraw"].([]byte); !ok || b == nil {
		e.t.Errorf("Get(%s)[nilraw] = %#v; want []byte{} (non-nil, empty)", k, got["nilraw"])
	}
	for _, name := range want.SortedNames() {
		if !sameItem(store.Item{name: got[name]}, store.Item{name: want[name]}) {
			e.t.Errorf("Get(%s)[%q] = %#v; want %#v", k, name, got[name], want[name])
		}
	}
	if len(got) != len(want) {
		e.t.Errorf("Get(%s) = %s; want %s", k, fmtItem(got), fmtItem(want))
	}
}

func testInvalidItems(e *env) {
	k := e.key("p", "a")
	cases := []struct {
		name string
		item store.Item
	}{
		{"NoPartitionKey", store.Item{store.AttrSK: "a", "v": "x"}},
		{"NoSortKey", store.Item{store.AttrPK: k.PK, "v": "x"}},
		{"EmptySortKey", item(store.Key{PK: k.PK, SK: ""}, "v", "x")},
		{"NumericSortKey", store.Item{store.AttrPK: k.PK, store.AttrSK: int64(1)}},
		{"UnsupportedType", item(k, "v", struct{}{})},
		{"Int32", item(k, "v", int32(1))},
		{"Map", item(k, "v", map[string]any{"a": "b"})},
		{"Nil", item(k, "v", nil)},
		{"EmptyStringList", item(k, "v", []string{})},
		{"NaN", item(k, "v", math.NaN())},
		{"Infinity", item(k, "v", math.Inf(1))},
		{"EmptyAttributeName", item(k, "", "x")},
		{"NonNumericTTL", item(k, store.AttrTTL, "tomorrow")},
		{"OverSize", item(k, "v", make([]byte, store.MaxItemBytes+1024))},
		{"KeyOverSize", item(store.Key{PK: k.PK, SK: strings.Repeat("k", store.MaxKeyBytes+1)})},
	}
	for _, c := range cases {
		err := e.h.Table.Put(e.ctx, c.item, store.Condition{})
		if !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("%s: Put = %v; want ErrInvalid", c.name, err)
		}
	}
	e.wantAbsent(k)
}

func testInvalidKeys(e *env) {
	bad := []store.Key{{PK: "", SK: "a"}, {PK: e.pk("p"), SK: ""}}
	for _, k := range bad {
		if _, err := e.h.Table.Get(e.ctx, k); !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("Get(%q) = %v; want ErrInvalid", k, err)
		}
		if err := e.h.Table.Delete(e.ctx, k, store.Condition{}); !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("Delete(%q) = %v; want ErrInvalid", k, err)
		}
		if _, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"n": 1}}, store.Condition{}); !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("Update(%q) = %v; want ErrInvalid", k, err)
		}
		if _, err := e.h.Table.BatchGet(e.ctx, []store.Key{k}); !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("BatchGet(%q) = %v; want ErrInvalid", k, err)
		}
	}
}
