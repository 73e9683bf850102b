package store

import "fmt"

// Condition guards a write. The zero Condition always holds. Conditions see an item past its
// TTL as absent, as reads do.
//
// Build conditions with the functions below; adapters read them through Op, Attr, Value and
// Subs (the dynamodb adapter turns them into a condition expression, the embedded adapter
// evaluates them with Eval).
type Condition struct {
	op    CondOp
	attr  string
	value any
	subs  []Condition
}

// CondOp is the operator of a Condition.
type CondOp int

// The condition operators.
const (
	CondNone          CondOp = iota // always holds
	CondItemExists                  // a live item has the key
	CondItemNotExists               // no live item has the key
	CondAttrExists                  // the live item has the attribute
	CondAttrNotExists               // no live item, or it lacks the attribute
	CondEqual                       // the live item's attribute equals the value
	CondNotEqual                    // no live item, the attribute is absent, or it differs
	CondLess                        // the live item's number or string attribute is < value
	CondLessEqual                   // ... <= value
	CondGreater                     // ... > value
	CondGreaterEqual                // ... >= value
	CondAnd
	CondOr
)

// IfExists holds when a live item has the key.
func IfExists() Condition { return Condition{op: CondItemExists} }

// IfNotExists holds when no live item has the key.
func IfNotExists() Condition { return Condition{op: CondItemNotExists} }

// IfAttrExists holds when the live item has attribute name.
func IfAttrExists(name string) Condition { return Condition{op: CondAttrExists, attr: name} }

// IfAttrNotExists holds when there is no live item or it lacks attribute name.
func IfAttrNotExists(name string) Condition { return Condition{op: CondAttrNotExists, attr: name} }

// IfEqual holds when the live item's attribute name equals v.
func IfEqual(name string, v any) Condition { return cmp(CondEqual, name, v) }

// IfNotEqual holds unless the live item's attribute name equals v.
func IfNotEqual(name string, v any) Condition { return cmp(CondNotEqual, name, v) }

// IfLess holds when the live item's attribute name is less than v.
func IfLess(name string, v any) Condition { return cmp(CondLess, name, v) }

// IfLessEqual holds when the live item's attribute name is at most v.
func IfLessEqual(name string, v any) Condition { return cmp(CondLessEqual, name, v) }

// IfGreater holds when the live item's attribute name is more than v.
func IfGreater(name string, v any) Condition { return cmp(CondGreater, name, v) }

// IfGreaterEqual holds when the live item's attribute name is at least v.
func IfGreaterEqual(name string, v any) Condition { return cmp(CondGreaterEqual, name, v) }

// And holds when every one of cs holds.
func And(cs ...Condition) Condition { return Condition{op: CondAnd, subs: cs} }

// Or holds when any one of cs holds.
func Or(cs ...Condition) Condition { return Condition{op: CondOr, subs: cs} }

func cmp(op CondOp, name string, v any) Condition {
	nv, err := NormalizeValue(v)
	if err != nil {
		panic("store: condition value: " + err.Error())
	}
	switch nv.(type) {
	case bool, []string:
		// DynamoDB refuses an ordered comparison of these; refuse it here for both adapters.
		if op != CondEqual && op != CondNotEqual {
			panic(fmt.Sprintf("store: ordered comparison of a %T value", nv))
		}
	}
	return Condition{op: op, attr: name, value: nv}
}

// Op returns the condition's operator.
func (c Condition) Op() CondOp { return c.op }

// Attr returns the attribute the condition tests.
func (c Condition) Attr() string { return c.attr }

// Value returns the value the attribute is compared with.
func (c Condition) Value() any { return c.value }

// Subs returns the parts of an And or Or.
func (c Condition) Subs() []Condition { return c.subs }

// IsZero tells whether the condition always holds.
func (c Condition) IsZero() bool { return c.op == CondNone }

// Eval tells whether c holds for the item currently stored (nil when absent); the caller has
// already turned an item past its TTL into nil.
func (c Condition) Eval(live Item) bool {
	switch c.op {
	case CondNone:
		return true
	case CondItemExists:
		return live != nil
	case CondItemNotExists:
		return live == nil
	case CondAttrExists:
		return live != nil && live.Has(c.attr)
	case CondAttrNotExists:
		return live == nil || !live.Has(c.attr)
	case CondAnd:
		for _, s := range c.subs {
			if !s.Eval(live) {
				return false
			}
		}
		return true
	case CondOr:
		for _, s := range c.subs {
			if s.Eval(live) {
				return true
			}
		}
		return false
	}
	if live == nil || !live.Has(c.attr) {
		return c.op == CondNotEqual
	}
	order, comparable := compareValues(live[c.attr], c.value)
	switch c.op {
	case CondEqual:
		return comparable && order == 0
	case CondNotEqual:
		return !comparable || order != 0
	case CondLess:
		return comparable && order < 0
	case CondLessEqual:
		return comparable && order <= 0
	case CondGreater:
		return comparable && order > 0
	case CondGreaterEqual:
		return comparable && order >= 0
	}
	return false
}

// compareValues orders two canonical values of the same kind as DynamoDB does (numbers by
// value, strings and bytes by their bytes); values of different kinds are not comparable.
func compareValues(a, b any) (int, bool) {
	switch a := a.(type) {
	case int64, float64:
		var fa, fb float64
		fa = Item{"v": a}.Float("v")
		switch b := b.(type) {
		case int64:
			if ai, ok := a.(int64); ok {
				return cmpOrdered(ai, b), true
			}
			fb = float64(b)
		case float64:
			fb = b
		default:
			return 0, false
		}
		return cmpOrdered(fa, fb), true
	case string:
		bs, ok := b.(string)
		if !ok {
			return 0, false
		}
		return cmpOrdered(a, bs), true
	case bool:
		bb, ok := b.(bool)
		if !ok {
			return 0, false
		}
		if a == bb {
			return 0, true
		}
		return 1, true
	case []byte:
		bb, ok := b.([]byte)
		if !ok {
			return 0, false
		}
		return bytesCompare(a, bb), true
	case []string:
		bb, ok := b.([]string)
		if !ok || len(a) != len(bb) {
			return 1, ok
		}
		for i := range a {
			if a[i] != bb[i] {
				return 1, true
			}
		}
		return 0, true
	}
	return 0, false
}

func cmpOrdered[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func bytesCompare(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return cmpOrdered(int64(a[i]), int64(b[i]))
		}
	}
	return cmpOrdered(int64(len(a)), int64(len(b)))
}
