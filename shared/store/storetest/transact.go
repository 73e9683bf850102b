package storetest

import (
	"errors"
	"fmt"

	"github.com/roadevents/roadevents/shared/store"
)

func transactCases() []testCase {
	return []testCase{
		{"AppliesEveryOp", func(e *env) {
			a, b, c, d := e.key("p", "a"), e.key("p", "b"), e.key("other", "c"), e.key("p", "d")
			e.put(item(b, "n", int64(1)))
			e.put(item(c, "v", "x"))
			e.put(item(d, "v", "x"))
			err := e.h.Table.TransactWrite(e.ctx, []store.Op{
				store.PutOp(item(a, "v", "new"), store.IfNotExists()),
				store.UpdateOp(b, store.Update{Add: map[string]int64{"n": 1}, Set: map[string]any{"s": "t"}}, store.IfExists()),
				store.DeleteOp(c, store.IfEqual("v", "x")),
				store.CheckOp(d, store.IfEqual("v", "x")),
			})
			if err != nil {
				e.t.Fatalf("TransactWrite = %v; want nil", err)
			}
			e.wantItem(a, item(a, "v", "new"))
			e.wantItem(b, item(b, "n", int64(2), "s", "t"))
			e.wantAbsent(c)
			e.wantItem(d, item(d, "v", "x"))
		}},
		{"UpdateCreatesAbsentItem", func(e *env) {
			k := e.key("p", "a")
			if err := e.h.Table.TransactWrite(e.ctx, []store.Op{
				store.UpdateOp(k, store.Update{Add: map[string]int64{"n": 1}}, store.Condition{}),
			}); err != nil {
				e.t.Fatalf("TransactWrite = %v; want nil", err)
			}
			e.wantItem(k, item(k, "n", int64(1)))
		}},
		{"OneFailedConditionRefusesAll", testTransactFailure},
		{"ExactlyMaxOps", func(e *env) {
			ops := make([]store.Op, store.MaxTransactOps)
			for i := range ops {
				ops[i] = store.PutOp(item(e.key("p", fmt.Sprintf("%03d", i))), store.IfNotExists())
			}
			if err := e.h.Table.TransactWrite(e.ctx, ops); err != nil {
				e.t.Fatalf("TransactWrite(%d ops) = %v; want nil", len(ops), err)
			}
			e.wantQueryCount(e.pk("p"), store.MaxTransactOps)
		}},
		{"Invalid", testTransactInvalid},
	}
}

func testTransactFailure(e *env) {
	for failAt := range 5 {
		p := fmt.Sprintf("fail%d", failAt)
		a, b, c, d := e.key(p, "a"), e.key(p, "b"), e.key(p, "c"), e.key(p, "d")
		e.put(item(b, "n", int64(1)))
		e.put(item(c, "v", "x"))
		e.put(item(d, "v", "x"))
		ops := []store.Op{
			store.PutOp(item(a, "v", "new"), store.IfNotExists()),
			store.UpdateOp(b, store.Update{Add: map[string]int64{"n": 1}}, store.Condition{}),
			store.DeleteOp(c, store.IfExists()),
			store.CheckOp(d, store.IfEqual("v", "x")),
			store.PutOp(item(e.key(p, "e"), "v", "new"), store.Condition{}),
		}
		// Make the operation at failAt one whose condition fails.
		ops[failAt].Cond = store.IfEqual("v", "not this")
		err := e.h.Table.TransactWrite(e.ctx, ops)
		if !errors.Is(err, store.ErrConditionFailed) {
			e.t.Errorf("failing op %d: TransactWrite = %v; want ErrConditionFailed", failAt, err)
			continue
		}
		var ce *store.ConditionError
		if !errors.As(err, &ce) {
			e.t.Errorf("failing op %d: TransactWrite error %v is not a *store.ConditionError", failAt, err)
		} else if ce.Op != failAt {
			e.t.Errorf("failing op %d: ConditionError.Op = %d; want %d", failAt, ce.Op, failAt)
		}
		// Nothing was written.
		e.wantAbsent(a)
		e.wantItem(b, item(b, "n", int64(1)))
		e.wantItem(c, item(c, "v", "x"))
		e.wantAbsent(e.key(p, "e"))
	}
}

func testTransactInvalid(e *env) {
	tooMany := make([]store.Op, store.MaxTransactOps+1)
	for i := range tooMany {
		tooMany[i] = store.PutOp(item(e.key("many", fmt.Sprintf("%03d", i))), store.Condition{})
	}
	k := e.key("p", "a")
	cases := []struct {
		name    string
		ops     []store.Op
		written store.Key // a key the refused transaction would have written
	}{
		{"TooManyOps", tooMany, e.key("many", "000")},
		{"SameItemTwice", []store.Op{
			store.PutOp(item(k), store.Condition{}),
			store.UpdateOp(e.key("p", "b"), store.Update{Add: map[string]int64{"n": 1}}, store.Condition{}),
			store.CheckOp(k, store.IfExists()),
		}, e.key("p", "b")},
		{"InvalidItem", []store.Op{
			store.PutOp(item(k), store.Condition{}),
			store.PutOp(item(e.key("p", "b"), "v", struct{}{}), store.Condition{}),
		}, k},
		{"InvalidKey", []store.Op{
			store.PutOp(item(k), store.Condition{}),
			store.DeleteOp(store.Key{PK: e.pk("p")}, store.Condition{}),
		}, k},
		{"InvalidUpdate", []store.Op{
			store.PutOp(item(k), store.Condition{}),
			store.UpdateOp(e.key("p", "b"), store.Update{Set: map[string]any{store.AttrSK: "x"}}, store.Condition{}),
		}, k},
		{"UnknownKind", []store.Op{
			store.PutOp(item(k), store.Condition{}),
			{Kind: store.OpKind(99), Key: e.key("p", "b")},
		}, k},
	}
	for _, c := range cases {
		if err := e.h.Table.TransactWrite(e.ctx, c.ops); !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("%s: TransactWrite = %v; want ErrInvalid", c.name, err)
		}
		e.wantAbsent(c.written)
	}
}

// wantQueryCount fails unless partition pk holds exactly n live items.
func (e *env) wantQueryCount(pk string, n int) {
	e.t.Helper()
	got, err := e.h.Table.Query(e.ctx, store.Query{PK: pk})
	if err != nil || len(got) != n {
		e.t.Errorf("Query(%q) = %d items, %v; want %d items", pk, len(got), err, n)
	}
}
