package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ForgetValue removes, from every item q selects, each attribute other than the key whose value
// is the string v, compared case-insensitively: how a record that names an erased person (an
// e-mail address in created_by_email, invited_by_email...) stops naming them (docs/privacy.md
// §6). rewrite, when not nil, may change an item's other attributes too (a JSON document that
// holds v); it returns the attributes to set, or nil. Each item is updated on condition that
// what is removed or rewritten is as read, and read again when it changed meanwhile.
func ForgetValue(ctx context.Context, t Table, q Query, v string, rewrite func(Item) map[string]any) error {
	for range 4 {
		items, err := t.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("store: read %s %s to forget a value: %w", q.PK, q.Prefix, err)
		}
		changed := false
		for _, it := range items {
			u, cond, ok := forgetUpdate(it, v, rewrite)
			if !ok {
				continue
			}
			_, err := t.Update(ctx, it.Key(), u, cond)
			if errors.Is(err, ErrConditionFailed) {
				changed = true
				continue
			}
			if err != nil {
				return fmt.Errorf("store: forget a value in %s %s: %w", it.Key().PK, it.Key().SK, err)
			}
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("store: forget a value in %s %s: %w", q.PK, q.Prefix, ErrConflict)
}

// forgetUpdate is the update that makes it stop holding v, with its condition; ok is false
// when it holds none.
func forgetUpdate(it Item, v string, rewrite func(Item) map[string]any) (u Update, cond Condition, ok bool) {
	var conds []Condition
	for _, name := range it.SortedNames() {
		if name == AttrPK || name == AttrSK {
			continue
		}
		if s, isString := it[name].(string); isString && strings.EqualFold(s, v) {
			u.Remove = append(u.Remove, name)
			conds = append(conds, IfEqual(name, s))
		}
	}
	if rewrite != nil {
		u.Set = rewrite(it)
		for name := range u.Set {
			conds = append(conds, IfEqual(name, it[name]))
		}
	}
	if len(conds) == 0 {
		return Update{}, Condition{}, false
	}
	return u, And(conds...), true
}

// DeleteKeys deletes the items of keys, unconditionally, as many in one transaction as the
// store takes: how an organisation's records go when it is deleted (docs/privacy.md §6).
func DeleteKeys(ctx context.Context, t Table, keys []Key) error {
	for len(keys) > 0 {
		n := min(len(keys), MaxTransactOps)
		ops := make([]Op, n)
		for i, k := range keys[:n] {
			ops[i] = DeleteOp(k, Condition{})
		}
		var err error
		for range 4 {
			if err = t.TransactWrite(ctx, ops); !errors.Is(err, ErrConflict) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("store: delete %d items: %w", n, err)
		}
		keys = keys[n:]
	}
	return nil
}

// DeleteSelected deletes every item q selects (DeleteKeys).
func DeleteSelected(ctx context.Context, t Table, q Query) error {
	items, err := t.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("store: read %s %s to delete it: %w", q.PK, q.Prefix, err)
	}
	keys := make([]Key, len(items))
	for i, it := range items {
		keys[i] = it.Key()
	}
	return DeleteKeys(ctx, t, keys)
}
