package dynamodb

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/roadevents/roadevents/shared/store"
)

// exprBuilder collects the placeholder names (#n0) and values (:v0) of one request's
// expressions, so that attribute names that are DynamoDB reserved words (ttl, name, status...)
// and values of any kind can appear in them.
type exprBuilder struct {
	now    int64 // Unix seconds that liveness is judged at
	names  map[string]string
	byName map[string]string
	values map[string]types.AttributeValue
	nowRef string
}

func newExprBuilder(now int64) *exprBuilder {
	return &exprBuilder{now: now}
}

// name returns the placeholder of attribute n, one per distinct name.
func (b *exprBuilder) name(n string) string {
	if p, ok := b.byName[n]; ok {
		return p
	}
	if b.names == nil {
		b.names = map[string]string{}
		b.byName = map[string]string{}
	}
	p := "#n" + strconv.Itoa(len(b.names))
	b.names[p] = n
	b.byName[n] = p
	return p
}

// value returns a new placeholder holding av.
func (b *exprBuilder) value(av types.AttributeValue) string {
	if b.values == nil {
		b.values = map[string]types.AttributeValue{}
	}
	p := ":v" + strconv.Itoa(len(b.values))
	b.values[p] = av
	return p
}

// nowValue returns the placeholder of the current Unix second, shared by every use.
func (b *exprBuilder) nowValue() string {
	if b.nowRef == "" {
		b.nowRef = b.value(&types.AttributeValueMemberN{Value: strconv.FormatInt(b.now, 10)})
	}
	return b.nowRef
}

// Names returns the ExpressionAttributeNames, nil when none (DynamoDB rejects an empty map).
func (b *exprBuilder) Names() map[string]string {
	if len(b.names) == 0 {
		return nil
	}
	return b.names
}

// Values returns the ExpressionAttributeValues, nil when none.
func (b *exprBuilder) Values() map[string]types.AttributeValue {
	if len(b.values) == 0 {
		return nil
	}
	return b.values
}

// live is true when a live item has the key: present and not past its TTL (store package doc:
// an item whose TTL is at or before now is absent, deleted or not).
func (b *exprBuilder) live() string {
	ttl := b.name(store.AttrTTL)
	return fmt.Sprintf("(attribute_exists(%s) AND (attribute_not_exists(%s) OR %s > %s))",
		b.name(store.AttrPK), ttl, ttl, b.nowValue())
}

// dead is the negation of live: no item, or one past its TTL.
func (b *exprBuilder) dead() string {
	return fmt.Sprintf("(attribute_not_exists(%s) OR %s <= %s)",
		b.name(store.AttrPK), b.name(store.AttrTTL), b.nowValue())
}

// notExpired holds when there is no item or a live one: it guards an UpdateItem, which would
// otherwise merge into the attributes of an expired item instead of starting afresh.
func (b *exprBuilder) notExpired() string {
	ttl := b.name(store.AttrTTL)
	return fmt.Sprintf("(attribute_not_exists(%s) OR attribute_not_exists(%s) OR %s > %s)",
		b.name(store.AttrPK), ttl, ttl, b.nowValue())
}

// expired holds when an item is stored but past its TTL.
func (b *exprBuilder) expired() string {
	return fmt.Sprintf("(attribute_exists(%s) AND %s <= %s)",
		b.name(store.AttrPK), b.name(store.AttrTTL), b.nowValue())
}

// never is a condition that cannot hold, for an Or of nothing.
func (b *exprBuilder) never() string {
	pk := b.name(store.AttrPK)
	return fmt.Sprintf("(attribute_exists(%s) AND attribute_not_exists(%s))", pk, pk)
}

// condition returns the condition expression of c, "" when c always holds. It gives the
// expression the meaning store.Condition.Eval has, with items past their TTL seen as absent.
func (b *exprBuilder) condition(c store.Condition) (string, error) {
	if alwaysHolds(c) {
		// Checked before building anything: a placeholder registered for a part that then
		// drops out would be unused, and DynamoDB refuses unused placeholders.
		return "", nil
	}
	switch c.Op() {
	case store.CondItemExists:
		return b.live(), nil
	case store.CondItemNotExists:
		return b.dead(), nil
	case store.CondAttrExists:
		return fmt.Sprintf("(%s AND attribute_exists(%s))", b.live(), b.name(c.Attr())), nil
	case store.CondAttrNotExists:
		return fmt.Sprintf("(%s OR attribute_not_exists(%s))", b.dead(), b.name(c.Attr())), nil
	case store.CondAnd, store.CondOr:
		return b.junction(c)
	}
	if c.Attr() == "" {
		return "", fmt.Errorf("%w: condition on an empty attribute name", store.ErrInvalid)
	}
	av, err := marshalValue(c.Value())
	if err != nil {
		return "", fmt.Errorf("condition on %q: %w", c.Attr(), err)
	}
	a, v := b.name(c.Attr()), b.value(av)
	switch c.Op() {
	case store.CondNotEqual:
		// Holds for an absent item or attribute, as Eval says; DynamoDB's <> alone would not
		// see an expired item as absent.
		return fmt.Sprintf("(%s OR attribute_not_exists(%s) OR %s <> %s)", b.dead(), a, a, v), nil
	case store.CondEqual:
		return fmt.Sprintf("(%s AND %s = %s)", b.live(), a, v), nil
	case store.CondLess:
		return fmt.Sprintf("(%s AND %s < %s)", b.live(), a, v), nil
	case store.CondLessEqual:
		return fmt.Sprintf("(%s AND %s <= %s)", b.live(), a, v), nil
	case store.CondGreater:
		return fmt.Sprintf("(%s AND %s > %s)", b.live(), a, v), nil
	case store.CondGreaterEqual:
		return fmt.Sprintf("(%s AND %s >= %s)", b.live(), a, v), nil
	}
	return "", fmt.Errorf("%w: unknown condition operator %d", store.ErrInvalid, c.Op())
}

// junction builds an And or an Or that does not always hold (condition checked that): parts
// that always hold drop out of an And, and an Or of nothing never holds (as Eval).
func (b *exprBuilder) junction(c store.Condition) (string, error) {
	var parts []string
	for _, s := range c.Subs() {
		if alwaysHolds(s) {
			continue
		}
		e, err := b.condition(s)
		if err != nil {
			return "", err
		}
		parts = append(parts, e)
	}
	switch len(parts) {
	case 0:
		return b.never(), nil
	case 1:
		return parts[0], nil
	}
	sep := " OR "
	if c.Op() == store.CondAnd {
		sep = " AND "
	}
	return "(" + strings.Join(parts, sep) + ")", nil
}

// alwaysHolds tells whether c holds whatever is stored: the zero Condition, an And of such
// conditions (or of nothing), an Or with one among its parts.
func alwaysHolds(c store.Condition) bool {
	switch c.Op() {
	case store.CondNone:
		return true
	case store.CondAnd:
		for _, s := range c.Subs() {
			if !alwaysHolds(s) {
				return false
			}
		}
		return true
	case store.CondOr:
		for _, s := range c.Subs() {
			if alwaysHolds(s) {
				return true
			}
		}
	}
	return false
}

// both joins two condition expressions with AND, either of which may be "".
func both(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " AND " + b
}

// update returns the update expression of u on an item with key k: SET for Set, ADD for the
// counters (ADD counts an absent attribute as 0, as store.Update says), REMOVE for Remove.
func (b *exprBuilder) update(u store.Update) (string, error) {
	if err := validateUpdate(u); err != nil {
		return "", err
	}
	var sets, adds, removes []string
	for _, name := range sortedKeys(u.Set) {
		nv, err := store.NormalizeValue(u.Set[name])
		if err != nil {
			return "", fmt.Errorf("update attribute %q: %w", name, err)
		}
		if name == store.AttrTTL && !isNumber(nv) {
			// As store.Normalize: DynamoDB's TTL ignores a ttl that is no number.
			return "", fmt.Errorf("%w: update attribute %q to %T, not a number", store.ErrInvalid, name, nv)
		}
		av, err := marshalValue(nv)
		if err != nil {
			return "", fmt.Errorf("update attribute %q: %w", name, err)
		}
		sets = append(sets, b.name(name)+" = "+b.value(av))
	}
	for _, name := range sortedKeys(u.Add) {
		adds = append(adds, b.name(name)+" "+b.value(&types.AttributeValueMemberN{Value: store.FormatNumber(u.Add[name])}))
	}
	for _, name := range u.Remove {
		removes = append(removes, b.name(name))
	}
	var clauses []string
	if len(sets) > 0 {
		clauses = append(clauses, "SET "+strings.Join(sets, ", "))
	}
	if len(adds) > 0 {
		clauses = append(clauses, "ADD "+strings.Join(adds, ", "))
	}
	if len(removes) > 0 {
		clauses = append(clauses, "REMOVE "+strings.Join(removes, ", "))
	}
	return strings.Join(clauses, " "), nil
}

// validateUpdate refuses what DynamoDB would refuse with a ValidationException, before the
// call, so both adapters answer store.ErrInvalid: a key attribute changed, or one attribute
// named twice.
func validateUpdate(u store.Update) error {
	seen := map[string]bool{}
	check := func(name string) error {
		switch {
		case name == "":
			return fmt.Errorf("%w: update of an empty attribute name", store.ErrInvalid)
		case name == store.AttrPK || name == store.AttrSK:
			return fmt.Errorf("%w: update of key attribute %q", store.ErrInvalid, name)
		case seen[name]:
			return fmt.Errorf("%w: update names attribute %q twice", store.ErrInvalid, name)
		}
		seen[name] = true
		return nil
	}
	for name := range u.Set {
		if err := check(name); err != nil {
			return err
		}
	}
	for name := range u.Add {
		if err := check(name); err != nil {
			return err
		}
	}
	for _, name := range u.Remove {
		if err := check(name); err != nil {
			return err
		}
	}
	return nil
}

// freshItem is the item an update creates when no live item has key k: the key, the Set
// attributes and the counters starting from 0.
func freshItem(k store.Key, u store.Update) (store.Item, error) {
	it := store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK}
	for name, v := range u.Set {
		it[name] = v
	}
	for name, d := range u.Add {
		it[name] = d
	}
	return store.Normalize(it)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
