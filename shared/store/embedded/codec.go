package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// On-disk layout (format 1). Every value is written by this file and read back only through
// it; a record that does not parse is reported as ErrCorrupt, never a panic.
//
//	items bucket: itemKey(pk, sk) -> encodeItem(item)
//	ttl bucket:   ttlKey(ttl, n) -> itemKey (expiry index the sweeper walks in time order; n is
//	              the bucket's sequence, so new entries append; files written before also hold
//	              ttl+itemKey -> "" entries, read back alike)
//	feed bucket:  8-byte big-endian sequence -> encodeChange(record)
//	meta bucket:  "format" -> "1"; "wal" -> 8-byte big-endian position of the last
//	              write-ahead log record the file holds (wal.go, pending.go)
//
// Items are a version byte, then the attributes in name order, each a name, a type tag and a
// payload. Numbers are kept as the decimal text of store.FormatNumber, as DynamoDB keeps them,
// so a number reads back exactly as the other adapter returns it.
const (
	itemVersion   = 1
	changeVersion = 1
)

// Type tags of encoded attribute values.
const (
	tagString = 'S'
	tagNumber = 'N'
	tagBytes  = 'B'
	tagTrue   = 'T'
	tagFalse  = 'F'
	tagList   = 'L'
)

// ErrCorrupt is returned when a stored record cannot be decoded: the file was damaged or written
// by an incompatible version.
var ErrCorrupt = errors.New("embedded: corrupt record")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// itemKey is the bbolt key of an item: the partition key's length, the partition key, then the
// sort key. The length prefix keeps partitions apart ("ab" never mixes with "a"+"b...") and,
// within one partition, keys sort by the sort key's bytes, as DynamoDB sorts string sort keys.
func itemKey(k store.Key) []byte {
	b := make([]byte, 0, 2+len(k.PK)+len(k.SK))
	return append(partitionPrefix(b, k.PK), k.SK...)
}

// partitionPrefix appends the part of an item key shared by every item of partition pk.
func partitionPrefix(b []byte, pk string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(pk))) // store.MaxKeyBytes fits in 16 bits
	return append(b, pk...)
}

// ttlKey is an expiry-index key: the TTL, ordered as a signed number, then n, a number that only
// grows (the bucket's sequence). Entries of one TTL second are thus appended in write order: an
// item key there instead (random, as event ids are) would scatter every commit's entries over
// the pages of that second, about 1.5 page writes of the 8 a publish made (scripts/load.sh).
func ttlKey(ttl int64, n uint64) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(ttl)^(1<<63))
	return binary.BigEndian.AppendUint64(b, n)
}

// ttlOf returns the TTL of an item in Unix seconds, and whether it has one; store.Normalize
// only admits numbers there.
func ttlOf(it store.Item) (int64, bool) {
	if it == nil || !it.Has(store.AttrTTL) {
		return 0, false
	}
	return it.Int(store.AttrTTL), true
}

// ttlEntry reads an expiry-index entry: the TTL and the key of the item it names.
func ttlEntry(k, v []byte) (int64, []byte, error) {
	if len(k) < 8 {
		return 0, nil, corrupt("expiry index key of %d bytes", len(k))
	}
	ik := v
	if len(v) == 0 {
		ik = k[8:] // an entry written before ttlKey had its sequence number
	}
	return int64(binary.BigEndian.Uint64(k) ^ (1 << 63)), ik, nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// formatSeq is the Change.Seq of feed position seq: fixed-width decimal, so that positions
// compare as strings and as DynamoDB Streams' decimal sequence numbers do.
func formatSeq(seq uint64) string { return fmt.Sprintf("%020d", seq) }

// encodeItem writes a canonical item (store.Normalize) in format 1.
func encodeItem(it store.Item) ([]byte, error) {
	b := make([]byte, 0, 64+16*len(it))
	b = append(b, itemVersion)
	b = binary.AppendUvarint(b, uint64(len(it)))
	for _, name := range it.SortedNames() {
		b = appendString(b, name)
		switch v := it[name].(type) {
		case string:
			b = appendString(append(b, tagString), v)
		case int64, float64:
			b = appendString(append(b, tagNumber), store.FormatNumber(v))
		case []byte:
			b = appendBytes(append(b, tagBytes), v)
		case bool:
			if v {
				b = append(b, tagTrue)
			} else {
				b = append(b, tagFalse)
			}
		case []string:
			b = append(b, tagList)
			b = binary.AppendUvarint(b, uint64(len(v)))
			for _, s := range v {
				b = appendString(b, s)
			}
		default:
			return nil, fmt.Errorf("encode attribute %q: %w: type %T", name, store.ErrInvalid, v)
		}
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendBytes is appendString of a byte slice, without converting it to a string first.
func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads an encoded record; every read checks bounds, so a damaged record gives an
// error, never a panic. It copies what it returns: bbolt's memory is only valid inside a
// transaction.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = corrupt(format, args...)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of elements that each take at least one byte, so it cannot exceed
// what is left; this bounds allocations on a damaged record.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("count %d over %d remaining bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length %d over %d remaining bytes", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) uint64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// decodeItem reads an item written by encodeItem.
func decodeItem(raw []byte) (store.Item, error) {
	d := &decoder{b: raw}
	it, err := d.item()
	if err == nil && len(d.b) != 0 {
		err = corrupt("%d trailing bytes after item", len(d.b))
	}
	return it, err
}

func (d *decoder) item() (store.Item, error) {
	if v := d.byte(); d.err == nil && v != itemVersion {
		return nil, corrupt("item format %d, want %d", v, itemVersion)
	}
	n := d.count()
	it := make(store.Item, n)
	for range n {
		name := d.string()
		if d.err != nil {
			break
		}
		if _, dup := it[name]; dup {
			d.fail("attribute %q twice", name)
			break
		}
		switch tag := d.byte(); tag {
		case tagString:
			it[name] = d.string()
		case tagNumber:
			s := d.string()
			if d.err != nil {
				break
			}
			num, err := store.ParseNumber(s)
			if err != nil {
				d.fail("attribute %q: number %q", name, s)
				break
			}
			it[name] = num
		case tagBytes:
			it[name] = slices.Clone(d.bytes())
		case tagTrue:
			it[name] = true
		case tagFalse:
			it[name] = false
		case tagList:
			m := d.count()
			list := make([]string, 0, m)
			for range m {
				list = append(list, d.string())
			}
			it[name] = list
		default:
			d.fail("attribute %q: unknown type tag %#x", name, tag)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := store.ValidateKey(it.Key()); err != nil {
		return nil, corrupt("item without a valid key: %v", err)
	}
	return it, nil
}

// Change kinds as stored.
const (
	kindInsert = 'I'
	kindModify = 'M'
	kindRemove = 'R'
)

// Flags of a stored change.
const (
	flagExpired = 1 << iota
	flagOld
	flagNew
)

// encodeChange writes a change record: its time first (8 bytes, Unix nanoseconds), so that the
// sweeper can trim old records without decoding them, then the kind, key and images.
func encodeChange(c store.Change) ([]byte, error) {
	var oldRaw, newRaw []byte
	var err error
	if c.Old != nil {
		if oldRaw, err = encodeItem(c.Old); err != nil {
			return nil, fmt.Errorf("encode change of %s: %w", c.Key, err)
		}
	}
	if c.New != nil {
		if newRaw, err = encodeItem(c.New); err != nil {
			return nil, fmt.Errorf("encode change of %s: %w", c.Key, err)
		}
	}
	return encodeChangeRaw(c.At, c.Kind, c.Expired, c.Key, oldRaw, newRaw)
}

// encodeChangeRaw is encodeChange with the images already encoded (encodeItem; nil for no
// image), as the writer has them: the old image as stored, the new one as it is written. The
// committer then encodes nothing twice (commit.go: its work is serial).
func encodeChangeRaw(at time.Time, kind store.ChangeKind, expired bool, k store.Key, oldRaw, newRaw []byte) ([]byte, error) {
	b := make([]byte, 0, 8+3+2*binary.MaxVarintLen64+len(k.PK)+len(k.SK)+2*binary.MaxVarintLen64+len(oldRaw)+len(newRaw))
	b = binary.BigEndian.AppendUint64(b, uint64(at.UnixNano()))
	b = append(b, changeVersion)
	switch kind {
	case store.ChangeInsert:
		b = append(b, kindInsert)
	case store.ChangeModify:
		b = append(b, kindModify)
	case store.ChangeRemove:
		b = append(b, kindRemove)
	default:
		return nil, fmt.Errorf("encode change: unknown kind %q", kind)
	}
	var flags byte
	if expired {
		flags |= flagExpired
	}
	if oldRaw != nil {
		flags |= flagOld
	}
	if newRaw != nil {
		flags |= flagNew
	}
	b = append(b, flags)
	b = appendString(b, k.PK)
	b = appendString(b, k.SK)
	for _, img := range [][]byte{oldRaw, newRaw} {
		if img != nil {
			b = appendBytes(b, img)
		}
	}
	return b, nil
}

// changeTime reads the time of a stored change without decoding the rest.
func changeTime(raw []byte) (time.Time, error) {
	if len(raw) < 8 {
		return time.Time{}, corrupt("change record of %d bytes", len(raw))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(raw))).UTC(), nil
}

// decodeChange reads a change record stored at feed position seq.
func decodeChange(seq uint64, raw []byte) (store.Change, error) {
	return decodeChangeImages(seq, raw, nil)
}

// decodeChangeImages is decodeChange that decodes the images only of the records whose key
// images accepts (all of them when images is nil); the others come without Old and New.
func decodeChangeImages(seq uint64, raw []byte, images func(store.Key) bool) (store.Change, error) {
	d := &decoder{b: raw}
	c := store.Change{Seq: formatSeq(seq)}
	nanos := d.uint64()
	if v := d.byte(); d.err == nil && v != changeVersion {
		return c, corrupt("change format %d, want %d", v, changeVersion)
	}
	switch kind := d.byte(); kind {
	case kindInsert:
		c.Kind = store.ChangeInsert
	case kindModify:
		c.Kind = store.ChangeModify
	case kindRemove:
		c.Kind = store.ChangeRemove
	default:
		d.fail("unknown change kind %#x", kind)
	}
	flags := d.byte()
	c.Key.PK = d.string()
	c.Key.SK = d.string()
	decode := d.err == nil && (images == nil || images(c.Key))
	var err error
	if flags&flagOld != 0 && d.err == nil {
		if raw := d.bytes(); decode {
			if c.Old, err = decodeItem(raw); err != nil {
				d.fail("old image: %v", err)
			}
		}
	}
	if flags&flagNew != 0 && d.err == nil {
		if raw := d.bytes(); decode {
			if c.New, err = decodeItem(raw); err != nil {
				d.fail("new image: %v", err)
			}
		}
	}
	if d.err != nil {
		return store.Change{}, fmt.Errorf("feed record %d: %w", seq, d.err)
	}
	if len(d.b) != 0 {
		return store.Change{}, corrupt("feed record %d: %d trailing bytes", seq, len(d.b))
	}
	if nanos > math.MaxInt64 {
		return store.Change{}, corrupt("feed record %d: time out of range", seq)
	}
	c.At = time.Unix(0, int64(nanos)).UTC()
	c.Expired = flags&flagExpired != 0
	return c, nil
}

// EncodeChange writes c in the feed's record format, for a process that carries the embedded
// store's change records elsewhere (the stream relay: docs/architecture.md §3).
func EncodeChange(c store.Change) ([]byte, error) { return encodeChange(c) }

// DecodeChange reads a record written by EncodeChange as the change at feed position seq.
func DecodeChange(seq uint64, raw []byte) (store.Change, error) { return decodeChange(seq, raw) }
