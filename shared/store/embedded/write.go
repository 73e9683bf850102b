package embedded

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// writeOp is one checked item write: every call that writes goes through apply as a list of
// these, a single Put, Delete or Update being a list of one.
type writeOp struct {
	kind   store.OpKind
	key    store.Key
	ik     []byte
	item   store.Item   // OpPut, normalized
	raw    []byte       // OpPut: item encoded (encodeItem) by the caller, not the committer
	update store.Update // OpUpdate, Set values normalized
	cond   store.Condition
}

// writeResult is what apply decided. apply may run more than once for one call (a group commit
// that failed is retried write by write), so it starts from a zero writeResult each time.
type writeResult struct {
	err     error      // a refusal decided in the transaction: condition failed, bad Add
	updated store.Item // the item after a single Update
}

// Put writes item if cond holds.
func (s *Store) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	op, err := putOp(item, cond)
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if _, err := s.write(ctx, []writeOp{op}, false); err != nil {
		return fmt.Errorf("put %s: %w", op.key, err)
	}
	return nil
}

// Delete removes the item with key k if cond holds; deleting an absent item is no error.
func (s *Store) Delete(ctx context.Context, k store.Key, cond store.Condition) error {
	if err := store.ValidateKey(k); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	op := writeOp{kind: store.OpDelete, key: k, ik: itemKey(k), cond: cond}
	if _, err := s.write(ctx, []writeOp{op}, false); err != nil {
		return fmt.Errorf("delete %s: %w", k, err)
	}
	return nil
}

// Update applies u to the item with key k, creating it when absent (an expired item counts as
// absent), if cond holds, and returns the item after the update.
func (s *Store) Update(ctx context.Context, k store.Key, u store.Update, cond store.Condition) (store.Item, error) {
	op, err := updateOp(k, u, cond)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	res, err := s.write(ctx, []writeOp{op}, false)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", k, err)
	}
	return res.updated, nil
}

// TransactWrite applies every operation or none.
func (s *Store) TransactWrite(ctx context.Context, ops []store.Op) error {
	wops, err := transactOps(ops)
	if err != nil {
		return fmt.Errorf("transact write: %w", err)
	}
	if _, err := s.write(ctx, wops, true); err != nil {
		return fmt.Errorf("transact write: %w", err)
	}
	return nil
}

func putOp(item store.Item, cond store.Condition) (writeOp, error) {
	it, err := store.Normalize(item)
	if err != nil {
		return writeOp{}, err
	}
	// Encoded here, in the caller's goroutine: the committer's work is serial (commit.go).
	raw, err := encodeItem(it)
	if err != nil {
		return writeOp{}, err
	}
	k := it.Key()
	return writeOp{kind: store.OpPut, key: k, ik: itemKey(k), item: it, raw: raw, cond: cond}, nil
}

// updateOp checks an update as DynamoDB's UpdateItem would: no key attribute, no attribute in
// two clauses ("two document paths overlap"), only supported values.
func updateOp(k store.Key, u store.Update, cond store.Condition) (writeOp, error) {
	if err := store.ValidateKey(k); err != nil {
		return writeOp{}, err
	}
	seen := map[string]string{}
	claim := func(name, clause string) error {
		switch {
		case name == "":
			return fmt.Errorf("%w: empty attribute name in %s", store.ErrInvalid, clause)
		case name == store.AttrPK || name == store.AttrSK:
			return fmt.Errorf("%w: %s of key attribute %q", store.ErrInvalid, clause, name)
		case seen[name] != "":
			return fmt.Errorf("%w: attribute %q in both %s and %s", store.ErrInvalid, name, seen[name], clause)
		}
		seen[name] = clause
		return nil
	}
	norm := store.Update{Add: u.Add, Remove: u.Remove}
	if len(u.Set) > 0 {
		norm.Set = make(map[string]any, len(u.Set))
	}
	for name, v := range u.Set {
		if err := claim(name, "Set"); err != nil {
			return writeOp{}, err
		}
		nv, err := store.NormalizeValue(v)
		if err != nil {
			return writeOp{}, fmt.Errorf("set %q: %w", name, err)
		}
		norm.Set[name] = nv
	}
	for name := range u.Add {
		if err := claim(name, "Add"); err != nil {
			return writeOp{}, err
		}
	}
	for _, name := range u.Remove {
		if err := claim(name, "Remove"); err != nil {
			return writeOp{}, err
		}
	}
	return writeOp{kind: store.OpUpdate, key: k, ik: itemKey(k), update: norm, cond: cond}, nil
}

func transactOps(ops []store.Op) ([]writeOp, error) {
	if len(ops) == 0 || len(ops) > store.MaxTransactOps {
		return nil, fmt.Errorf("%w: %d operations, want 1 to %d", store.ErrInvalid, len(ops), store.MaxTransactOps)
	}
	out := make([]writeOp, len(ops))
	seen := make(map[store.Key]int, len(ops))
	for i, op := range ops {
		var (
			w   writeOp
			err error
		)
		switch op.Kind {
		case store.OpPut:
			w, err = putOp(op.Item, op.Cond)
		case store.OpUpdate:
			w, err = updateOp(op.Key, op.Update, op.Cond)
		case store.OpDelete, store.OpCheck:
			err = store.ValidateKey(op.Key)
			w = writeOp{kind: op.Kind, key: op.Key, ik: itemKey(op.Key), cond: op.Cond}
		default:
			err = fmt.Errorf("%w: unknown operation kind %d", store.ErrInvalid, op.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		if j, dup := seen[w.key]; dup {
			// DynamoDB refuses a transaction that names one item twice.
			return nil, fmt.Errorf("%w: operations %d and %d both on %s", store.ErrInvalid, j, i, w.key)
		}
		seen[w.key] = i
		out[i] = w
	}
	return out, nil
}

// write commits ops in one transaction, with their change records (install wakes the
// followers). Concurrent writes share a transaction and its fsync (commit.go).
func (s *Store) write(ctx context.Context, ops []writeOp, transact bool) (writeResult, error) {
	if err := s.enter(ctx); err != nil {
		return writeResult{}, err
	}
	defer s.gate.RUnlock()
	var res writeResult
	fn := func(w *wtx) error {
		res = writeResult{}
		return s.apply(w, ops, transact, &res)
	}
	if err := s.commit(fn); err != nil {
		return writeResult{}, err
	}
	return res, res.err
}

// pending is one item write decided by apply's first pass.
type pending struct {
	op        *writeOp
	stored    store.Item // as stored before the write, even if expired (DynamoDB's old image)
	storedRaw []byte     // stored, encoded: bbolt's memory, valid while the transaction lasts
	next      store.Item // after the write; nil deletes
	nextRaw   []byte     // next, encoded
}

// apply checks every condition first and writes only if all hold, so a refused call writes
// nothing. Refusals go in res.err and apply returns nil: an error return would roll back the
// whole group commit and re-run every write in it alone. Only storage failures are errors.
func (s *Store) apply(w *wtx, ops []writeOp, transact bool, res *writeResult) error {
	at, now := s.now()
	plan := make([]pending, 0, len(ops))
	for i := range ops {
		op := &ops[i]
		storedRaw := w.get(bItems, op.ik)
		var stored store.Item
		if storedRaw != nil {
			var err error
			if stored, err = decodeItem(storedRaw); err != nil {
				return fmt.Errorf("read %s: %w", op.key, err)
			}
		}
		live := stored
		if live.ExpiredAt(now) {
			live = nil
		}
		if !op.cond.Eval(live) {
			idx := -1
			if transact {
				idx = i
			}
			res.err = &store.ConditionError{Op: idx}
			return nil
		}
		p := pending{op: op, stored: stored, storedRaw: storedRaw}
		switch op.kind {
		case store.OpCheck:
			continue
		case store.OpPut:
			p.next, p.nextRaw = op.item, op.raw
		case store.OpUpdate:
			next, err := applyUpdate(op.key, live, op.update)
			if err != nil {
				res.err = err
				if transact {
					res.err = fmt.Errorf("operation %d: %w", i, err)
				}
				return nil
			}
			if p.nextRaw, err = encodeItem(next); err != nil {
				return fmt.Errorf("encode %s: %w", op.key, err)
			}
			p.next = next
			if !transact {
				res.updated = next
			}
		}
		plan = append(plan, p)
	}
	for _, p := range plan {
		if err := s.commitItem(w, p, at); err != nil {
			return err
		}
	}
	return nil
}

// applyUpdate returns the item that u makes of live (nil when absent or expired: the update
// then starts from the key alone, as UpdateItem creates an absent item).
func applyUpdate(k store.Key, live store.Item, u store.Update) (store.Item, error) {
	next := live.Clone()
	if next == nil {
		next = store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK}
	}
	for name, v := range u.Set {
		next[name] = v
	}
	for name, d := range u.Add {
		switch cur := next[name].(type) {
		case nil:
			next[name] = d
		case int64:
			if (d > 0 && cur > math.MaxInt64-d) || (d < 0 && cur < math.MinInt64-d) {
				return nil, fmt.Errorf("%w: add %d to %q overflows", store.ErrInvalid, d, name)
			}
			next[name] = cur + d
		case float64:
			next[name] = cur + float64(d)
		default:
			return nil, fmt.Errorf("%w: add to %q, which holds a %T, not a number", store.ErrInvalid, name, cur)
		}
	}
	for _, name := range u.Remove {
		delete(next, name)
	}
	// Normalize makes sums canonical (a whole float becomes int64) and checks size and TTL.
	return store.Normalize(next)
}

// commitItem writes one item change, keeps the expiry index in step and appends the change
// record. A delete of an absent item and a write that changes nothing append none, as
// DynamoDB Streams writes none for them. Items are
// canonical (store.Normalize) and so is their encoding, so equal encodings are equal items.
func (s *Store) commitItem(w *wtx, p pending, at time.Time) error {
	var kind store.ChangeKind
	switch {
	case p.next == nil && p.stored == nil:
		return nil
	case p.next == nil:
		kind = store.ChangeRemove
	case p.stored != nil && bytes.Equal(p.storedRaw, p.nextRaw):
		return nil
	case p.stored == nil:
		kind = store.ChangeInsert
	default:
		kind = store.ChangeModify
	}
	rec, err := encodeChangeRaw(at, kind, false, p.op.key, p.storedRaw, p.nextRaw)
	if err != nil {
		return err
	}
	if p.next == nil {
		w.del(bItems, p.op.ik)
	} else {
		w.put(bItems, p.op.ik, p.nextRaw)
	}
	indexTTL(w, p.op.ik, p.stored, p.next)
	appendRecord(w, rec)
	return nil
}

// indexTTL adds an expiry-index entry for an item whose TTL is new or changed. An entry is never
// deleted by a write: one left behind by a TTL change or a delete is dropped by the sweeper,
// which lets the item decide, and a write then costs one append rather than a delete at a
// random place in the index too.
func indexTTL(w *wtx, ik []byte, old, next store.Item) {
	oldTTL, hadOld := ttlOf(old)
	newTTL, hasNew := ttlOf(next)
	if !hasNew || (hadOld && oldTTL == newTTL) {
		return
	}
	w.put(bTTL, ttlKey(newTTL, w.nextSequence(bTTL)), ik)
}

// appendChange adds a record at the next feed position, inside the writing transaction.
func appendChange(w *wtx, c store.Change) error {
	raw, err := encodeChange(c)
	if err != nil {
		return err
	}
	appendRecord(w, raw)
	return nil
}

// appendRecord adds an encoded change record (encodeChange, encodeChangeRaw) at the next feed
// position.
func appendRecord(w *wtx, rec []byte) { w.put(bFeed, seqKey(w.nextSequence(bFeed)), rec) }
