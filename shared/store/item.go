package store

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// TimeFormat is how items hold a timestamp as text: UTC, fixed width to the nanosecond, so
// that comparing the text (in a sort key or a condition) orders as time does.
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// FormatTime writes t in TimeFormat, for an attribute or a sort key.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Item is one record of the table: attribute name to value. Values are string, int64,
// float64, bool, []byte or []string; int is accepted on write and stored as int64.
//
// Numbers follow DynamoDB: they are stored as decimal text and read back as int64 when the text
// is a whole number, float64 otherwise, so float64(3) reads back as int64(3). Float reads the
// number either way.
type Item map[string]any

// Key returns the item's key attributes.
func (it Item) Key() Key {
	pk, _ := it[AttrPK].(string)
	sk, _ := it[AttrSK].(string)
	return Key{PK: pk, SK: sk}
}

// String returns the string attribute name, or "" when absent or of another type.
func (it Item) String(name string) string {
	s, _ := it[name].(string)
	return s
}

// Int returns the integer attribute name, or 0.
func (it Item) Int(name string) int64 {
	switch v := it[name].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return 0
}

// Float returns the number attribute name, or 0.
func (it Item) Float(name string) float64 {
	switch v := it[name].(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

// Time returns the timestamp attribute name written by FormatTime, or the zero time when it
// is absent or not in TimeFormat.
func (it Item) Time(name string) time.Time {
	t, err := time.Parse(TimeFormat, it.String(name))
	if err != nil {
		return time.Time{}
	}
	return t
}

// Bool returns the boolean attribute name, or false.
func (it Item) Bool(name string) bool {
	b, _ := it[name].(bool)
	return b
}

// Bytes returns the binary attribute name, or nil.
func (it Item) Bytes(name string) []byte {
	b, _ := it[name].([]byte)
	return b
}

// Strings returns the string-list attribute name, or nil.
func (it Item) Strings(name string) []string {
	s, _ := it[name].([]string)
	return s
}

// Has tells whether the attribute is present.
func (it Item) Has(name string) bool {
	_, ok := it[name]
	return ok
}

// Clone returns a deep copy.
func (it Item) Clone() Item {
	if it == nil {
		return nil
	}
	out := make(Item, len(it))
	for k, v := range it {
		switch v := v.(type) {
		case []byte:
			out[k] = bytes.Clone(v)
		case []string:
			out[k] = append([]string(nil), v...)
		default:
			out[k] = v
		}
	}
	return out
}

// ExpiredAt tells whether the item's TTL is at or before unix second now.
func (it Item) ExpiredAt(now int64) bool {
	if !it.Has(AttrTTL) {
		return false
	}
	return it.Int(AttrTTL) <= now
}

// Normalize checks an item's key and attributes and returns a copy holding only the canonical
// value types (int becomes int64, a whole float64 becomes int64), so that both adapters store and
// return the same thing.
func Normalize(it Item) (Item, error) {
	k := it.Key()
	if err := ValidateKey(k); err != nil {
		return nil, err
	}
	out := make(Item, len(it))
	size := 0
	for name, v := range it {
		if name == "" {
			return nil, fmt.Errorf("%w: empty attribute name", ErrInvalid)
		}
		nv, err := NormalizeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		if name == AttrTTL {
			// DynamoDB's TTL only reads Number attributes; refusing anything else here keeps an
			// item from being expired by one adapter and kept by the other.
			if _, isInt := nv.(int64); !isInt {
				if _, isFloat := nv.(float64); !isFloat {
					return nil, fmt.Errorf("%w: attribute %q must be a number of Unix seconds, not %T", ErrInvalid, name, nv)
				}
			}
		}
		out[name] = nv
		size += len(name) + valueSize(nv)
	}
	if size > MaxItemBytes {
		return nil, fmt.Errorf("%w: item of %d bytes is over %d", ErrInvalid, size, MaxItemBytes)
	}
	return out, nil
}

// ValidateKey reports a key the table cannot hold.
func ValidateKey(k Key) error {
	switch {
	case k.PK == "" || k.SK == "":
		return fmt.Errorf("%w: empty key attribute in %q", ErrInvalid, k.String())
	case len(k.PK) > MaxKeyBytes || len(k.SK) > maxSortKeyBytes:
		return fmt.Errorf("%w: key over %d bytes", ErrInvalid, MaxKeyBytes)
	}
	return nil
}

// NormalizeValue returns the canonical form of one attribute value.
func NormalizeValue(v any) (any, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return v, nil
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: number %v", ErrInvalid, v)
		}
		return ParseNumber(FormatNumber(v))
	case []byte:
		// One canonical empty binary value: DynamoDB cannot tell nil from empty.
		return append([]byte{}, v...), nil
	case []string:
		if len(v) == 0 {
			return nil, fmt.Errorf("%w: empty string list", ErrInvalid)
		}
		return append([]string(nil), v...), nil
	}
	return nil, fmt.Errorf("%w: unsupported value type %T", ErrInvalid, v)
}

// FormatNumber writes a number as the decimal text both adapters store.
func FormatNumber(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	panic(fmt.Sprintf("store: FormatNumber(%T)", v))
}

// ParseNumber reads a stored number: int64 when whole and in range, float64 otherwise.
func ParseNumber(s string) (any, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: number %q", ErrInvalid, s)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), nil
	}
	return f, nil
}

// SortedNames returns the item's attribute names in order, for stable output.
func (it Item) SortedNames() []string {
	names := make([]string, 0, len(it))
	for k := range it {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func valueSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []byte:
		return len(v)
	case []string:
		n := 0
		for _, s := range v {
			n += len(s)
		}
		return n
	case bool:
		return 1
	}
	return 21
}
