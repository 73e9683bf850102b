package storetest

import (
	"errors"

	"github.com/roadevents/roadevents/shared/store"
)

func conditionCases() []testCase {
	return []testCase{
		{"PutOnPresentItem", testConditionsOnPresent},
		{"PutOnAbsentItem", testConditionsOnAbsent},
		{"Delete", testConditionalDelete},
		{"Update", testConditionalUpdate},
		{"SingleWriteFailureIsConditionError", func(e *env) {
			k := e.key("p", "a")
			e.put(item(k))
			err := e.h.Table.Put(e.ctx, item(k), store.IfNotExists())
			if !errors.Is(err, store.ErrConditionFailed) {
				e.t.Fatalf("Put(IfNotExists) on a present item = %v; want ErrConditionFailed", err)
			}
			var ce *store.ConditionError
			if errors.As(err, &ce) && ce.Op != -1 {
				e.t.Errorf("ConditionError.Op of a single write = %d; want -1", ce.Op)
			}
		}},
	}
}

// condCase is a condition and whether it holds for the item the test set up.
type condCase struct {
	name  string
	cond  store.Condition
	holds bool
}

// presentConds are evaluated against presentItem.
func presentConds() []condCase {
	return []condCase{
		{"IfExists", store.IfExists(), true},
		{"IfNotExists", store.IfNotExists(), false},
		{"IfAttrExists", store.IfAttrExists("n"), true},
		{"IfAttrExistsMissing", store.IfAttrExists("zz"), false},
		{"IfAttrNotExistsMissing", store.IfAttrNotExists("zz"), true},
		{"IfAttrNotExists", store.IfAttrNotExists("n"), false},
		{"IfEqualNumber", store.IfEqual("n", 5), true},
		{"IfEqualNumberDiffers", store.IfEqual("n", 6), false},
		{"IfEqualWholeFloat", store.IfEqual("n", 5.0), true},
		{"IfEqualFloat", store.IfEqual("f", 2.5), true},
		{"IfEqualString", store.IfEqual("s", "m"), true},
		{"IfEqualStringDiffers", store.IfEqual("s", "M"), false},
		{"IfEqualOtherType", store.IfEqual("s", 5), false},
		{"IfEqualBool", store.IfEqual("b", true), true},
		{"IfEqualBytes", store.IfEqual("raw", []byte{1, 2}), true},
		{"IfEqualMissing", store.IfEqual("zz", 1), false},
		{"IfNotEqual", store.IfNotEqual("n", 6), true},
		{"IfNotEqualSame", store.IfNotEqual("n", 5), false},
		{"IfNotEqualMissing", store.IfNotEqual("zz", 1), true},
		{"IfNotEqualOtherType", store.IfNotEqual("s", 5), true},
		{"IfLess", store.IfLess("n", 6), true},
		{"IfLessSame", store.IfLess("n", 5), false},
		{"IfLessEqualSame", store.IfLessEqual("n", 5), true},
		{"IfLessEqualSmaller", store.IfLessEqual("n", 4), false},
		{"IfGreater", store.IfGreater("n", 4), true},
		{"IfGreaterSame", store.IfGreater("n", 5), false},
		{"IfGreaterEqualSame", store.IfGreaterEqual("n", 5), true},
		{"IfGreaterEqualBigger", store.IfGreaterEqual("n", 6), false},
		{"IfLessFloatVsInt", store.IfLess("f", 3), true},
		{"IfGreaterFloat", store.IfGreater("f", 2.4), true},
		{"IfLessNegative", store.IfLess("n", -1), false},
		{"IfLessString", store.IfLess("s", "n"), true},
		{"IfGreaterStringByBytes", store.IfGreater("s", "Z"), true},
		{"IfLessOtherType", store.IfLess("s", 5), false},
		{"IfLessMissing", store.IfLess("zz", 5), false},
		{"And", store.And(store.IfExists(), store.IfEqual("n", 5)), true},
		{"AndOneFails", store.And(store.IfExists(), store.IfEqual("n", 6)), false},
		{"Or", store.Or(store.IfNotExists(), store.IfEqual("n", 5)), true},
		{"OrNoneHolds", store.Or(store.IfNotExists(), store.IfEqual("n", 6)), false},
		{"Nested", store.And(store.Or(store.IfEqual("s", "x"), store.IfGreater("n", 1)), store.IfAttrNotExists("zz")), true},
		{"NestedFails", store.Or(store.And(store.IfEqual("s", "m"), store.IfLess("n", 1)), store.IfAttrExists("zz")), false},
	}
}

func presentItem(k store.Key) store.Item {
	return item(k, "n", int64(5), "s", "m", "f", 2.5, "b", true, "raw", []byte{1, 2}, "v", int64(1))
}

// testConditionsOnPresent puts a new version of an item under each condition: a condition that
// holds lets the write through, one that fails returns ErrConditionFailed and changes nothing.
func testConditionsOnPresent(e *env) {
	for _, c := range presentConds() {
		k := e.key("p", c.name)
		before := presentItem(k)
		e.put(before)
		after := item(k, "v", int64(2))
		err := e.h.Table.Put(e.ctx, after, c.cond)
		if c.holds {
			if err != nil {
				e.t.Errorf("%s: Put = %v; want nil (condition holds)", c.name, err)
				continue
			}
			e.wantItem(k, after)
			continue
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			e.t.Errorf("%s: Put = %v; want ErrConditionFailed", c.name, err)
		}
		e.wantItem(k, before)
	}
}

func testConditionsOnAbsent(e *env) {
	cases := []condCase{
		{"IfNotExists", store.IfNotExists(), true},
		{"IfExists", store.IfExists(), false},
		{"IfAttrExists", store.IfAttrExists("n"), false},
		{"IfAttrNotExists", store.IfAttrNotExists("n"), true},
		{"IfEqual", store.IfEqual("n", 5), false},
		{"IfNotEqual", store.IfNotEqual("n", 5), true},
		{"IfLess", store.IfLess("n", 5), false},
		{"IfGreaterEqual", store.IfGreaterEqual("n", 5), false},
		{"Or", store.Or(store.IfExists(), store.IfNotExists()), true},
		{"And", store.And(store.IfNotExists(), store.IfAttrNotExists("n")), true},
		{"AndFails", store.And(store.IfNotExists(), store.IfEqual("n", 5)), false},
	}
	for _, c := range cases {
		k := e.key("p", c.name)
		it := item(k, "v", int64(1))
		err := e.h.Table.Put(e.ctx, it, c.cond)
		if c.holds {
			if err != nil {
				e.t.Errorf("%s: Put(absent) = %v; want nil (condition holds)", c.name, err)
				continue
			}
			e.wantItem(k, it)
			continue
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			e.t.Errorf("%s: Put(absent) = %v; want ErrConditionFailed", c.name, err)
		}
		e.wantAbsent(k)
	}
}

func testConditionalDelete(e *env) {
	for _, c := range []condCase{
		{"IfEqual", store.IfEqual("n", 5), true},
		{"IfEqualFails", store.IfEqual("n", 6), false},
		{"IfExists", store.IfExists(), true},
		{"IfNotExists", store.IfNotExists(), false},
		{"Or", store.Or(store.IfEqual("n", 6), store.IfLess("f", 3)), true},
	} {
		k := e.key("p", c.name)
		before := presentItem(k)
		e.put(before)
		err := e.h.Table.Delete(e.ctx, k, c.cond)
		if c.holds {
			if err != nil {
				e.t.Errorf("%s: Delete = %v; want nil", c.name, err)
			}
			e.wantAbsent(k)
			continue
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			e.t.Errorf("%s: Delete = %v; want ErrConditionFailed", c.name, err)
		}
		e.wantItem(k, before)
	}
	// A delete that requires the item fails on an absent one.
	if err := e.h.Table.Delete(e.ctx, e.key("p", "absent"), store.IfExists()); !errors.Is(err, store.ErrConditionFailed) {
		e.t.Errorf("Delete(absent, IfExists) = %v; want ErrConditionFailed", err)
	}
}

func testConditionalUpdate(e *env) {
	u := store.Update{Set: map[string]any{"s": "changed"}, Add: map[string]int64{"n": 1}}
	for _, c := range []condCase{
		{"IfEqual", store.IfEqual("n", 5), true},
		{"IfEqualFails", store.IfEqual("n", 6), false},
		{"IfLess", store.IfLess("n", 10), true},
		{"IfAttrNotExistsFails", store.IfAttrNotExists("s"), false},
	} {
		k := e.key("p", c.name)
		before := presentItem(k)
		e.put(before)
		got, err := e.h.Table.Update(e.ctx, k, u, c.cond)
		if c.holds {
			if err != nil {
				e.t.Errorf("%s: Update = %v; want nil", c.name, err)
				continue
			}
			want := before.Clone()
			want["s"], want["n"] = "changed", int64(6)
			if !sameItem(got, want) {
				e.t.Errorf("%s: Update returned %s; want %s", c.name, fmtItem(got), fmtItem(want))
			}
			e.wantItem(k, want)
			continue
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			e.t.Errorf("%s: Update = %v; want ErrConditionFailed", c.name, err)
		}
		e.wantItem(k, before)
	}
	// An update that requires the item does not create it.
	k := e.key("p", "absent")
	if _, err := e.h.Table.Update(e.ctx, k, u, store.IfExists()); !errors.Is(err, store.ErrConditionFailed) {
		e.t.Errorf("Update(absent, IfExists) = %v; want ErrConditionFailed", err)
	}
	e.wantAbsent(k)
}
