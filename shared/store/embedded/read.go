package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/roadevents/roadevents/shared/store"
)

// Get returns the live item with key k, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if err := store.ValidateKey(k); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("get %s: %w", k, err)
	}
	defer s.gate.RUnlock()
	_, now := s.now()
	var it store.Item
	err := s.viewDo(func(v *view) error {
		var err error
		it, err = liveItem(v.get(bItems, itemKey(k)), now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", k, err)
	}
	if it == nil {
		return nil, fmt.Errorf("get %s: %w", k, store.ErrNotFound)
	}
	return it, nil
}

// storedItem decodes an item as stored, expired or not; nil when raw is (no item).
func storedItem(raw []byte) (store.Item, error) {
	if raw == nil {
		return nil, nil
	}
	return decodeItem(raw)
}

// liveItem decodes a stored item unless it is absent or expired at now (then nil): an item
// past its TTL is invisible whether or not the sweeper has deleted it yet (package store doc).
func liveItem(raw []byte, now int64) (store.Item, error) {
	it, err := storedItem(raw)
	if err != nil || it == nil || it.ExpiredAt(now) {
		return nil, err
	}
	return it, nil
}

// Query returns the live items of one partition selected by q, in sort-key byte order. It reads
// consistently whatever q.Eventual says: the embedded store has no replicas to lag.
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("query %q: %w", q.PK, err)
	}
	defer s.gate.RUnlock()
	_, now := s.now()
	var out []store.Item
	err := s.viewDo(func(v *view) error {
		var err error
		out, err = query(v.cursor(bItems), q, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", q.PK, err)
	}
	return out, nil
}

// Partitions names the partitions whose key begins with prefix (store.PartitionLister), in
// key order within each key length: item keys begin with their partition key's length, so
// each length is one seek, and each partition found is skipped past with another.
func (s *Store) Partitions(ctx context.Context, prefix string) ([]string, error) {
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("partitions %q: %w", prefix, err)
	}
	defer s.gate.RUnlock()
	var out []string
	err := s.viewDo(func(v *view) error {
		c := v.cursor(bItems)
		for n := max(1, len(prefix)); n <= store.MaxKeyBytes; n++ {
			start := binary.BigEndian.AppendUint16(nil, uint16(n))
			k, _ := c.Seek(append(start, prefix...))
			for k != nil && len(k) >= 2+n && bytes.HasPrefix(k, start) && bytes.HasPrefix(k[2:], []byte(prefix)) {
				out = append(out, string(k[2:2+n]))
				next := prefixEnd(k[:2+n])
				if next == nil {
					break
				}
				k, _ = c.Seek(next)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("partitions %q: %w", prefix, err)
	}
	return out, nil
}

func query(c cursor, q store.Query, now int64) ([]store.Item, error) {
	part := partitionPrefix(nil, q.PK)
	// inRange tells whether a sort key of the partition, met in the query's order, still
	// belongs to the selection; the first one that does not ends the scan.
	inRange := func(sk []byte) bool {
		switch {
		case q.Prefix != "":
			return bytes.HasPrefix(sk, []byte(q.Prefix))
		case q.Desc:
			return q.From == "" || string(sk) >= q.From
		default:
			return q.To == "" || string(sk) <= q.To
		}
	}
	var k, v []byte
	if q.Desc {
		k, v = seekLast(c, part, q)
	} else {
		k, v = c.Seek(append(append([]byte(nil), part...), q.Prefix+q.From...))
	}
	var out []store.Item
	for ; k != nil && bytes.HasPrefix(k, part); k, v = step(c, q.Desc) {
		if !inRange(k[len(part):]) {
			break
		}
		it, err := decodeItem(v)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", k, err)
		}
		if it.ExpiredAt(now) {
			continue
		}
		out = append(out, it)
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func step(c cursor, desc bool) ([]byte, []byte) {
	if desc {
		return c.Prev()
	}
	return c.Next()
}

// seekLast positions c at the last key of partition part that a descending query may return:
// the greatest key <= To, or the greatest key starting with the prefix (or in the partition).
func seekLast(c cursor, part []byte, q store.Query) ([]byte, []byte) {
	if q.To != "" {
		bound := append(append([]byte(nil), part...), q.To...)
		k, v := c.Seek(bound)
		if k != nil && bytes.Equal(k, bound) {
			return k, v
		}
		if k == nil {
			return c.Last()
		}
		return c.Prev()
	}
	upper := prefixEnd(append(append([]byte(nil), part...), q.Prefix...))
	if upper == nil {
		return c.Last()
	}
	if k, _ := c.Seek(upper); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// prefixEnd returns the smallest key greater than every key starting with p, or nil when there
// is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// BatchGet returns the live items among keys, in the order of keys, each key once. The embedded
// store reads them all in one transaction, so there is no per-request limit to split around.
func (s *Store) BatchGet(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	for _, k := range keys {
		if err := store.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("batch get: %w", err)
		}
	}
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("batch get: %w", err)
	}
	defer s.gate.RUnlock()
	_, now := s.now()
	seen := make(map[store.Key]bool, len(keys))
	var out []store.Item
	err := s.viewDo(func(v *view) error {
		for _, k := range keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			it, err := liveItem(v.get(bItems, itemKey(k)), now)
			if err != nil {
				return fmt.Errorf("item %s: %w", k, err)
			}
			if it != nil {
				out = append(out, it)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("batch get: %w", err)
	}
	return out, nil
}
