package events

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
)

// The record of an area index item holds everything an area query needs to filter, measure,
// sort and answer without reading the event item (see the package doc, "Area index"):
//
//	format      1 byte   recordFormat
//	expires_at  8 bytes  Unix nanoseconds, big-endian
//	version     8 bytes  event.Event.Version, big-endian (the newest copy wins a duplicate)
//	confidence  8 bytes  IEEE 754 bits of the served confidence (contract 2, 3 decimals)
//	type        1 byte length, then the type id
//	extent      uvarint n, then n positions of two big-endian int32: lat and lon times 1e5
//	body        the rest: the event's EventPublic as JSON, as GET /v1/events sends it
//
// Positions are exact: coordinates are stored rounded to 5 decimals (spec 2.2), so lat*1e5 is
// a whole number and dividing it by 1e5 gives back the very float64 that was rounded.
const recordFormat = 1

const recordHeader = 1 + 8 + 8 + 8 + 1

// errRecord reports an index record this version cannot read: a damaged item or one written
// by an incompatible version. The query skips it and logs.
var errRecord = errors.New("events: unreadable area index record")

// record is a parsed index record; its slices point into the item's bytes.
type record struct {
	expires    int64 // Unix nanoseconds
	version    int64
	confidence float64
	typ        []byte
	n          int    // positions in the extent
	points     []byte // 8 bytes per position
	body       []byte
}

// encodeRecord builds the record of ev, with body its EventPublic JSON.
func encodeRecord(ev event.Event, body []byte) ([]byte, error) {
	if len(ev.Type) > math.MaxUint8 {
		return nil, fmt.Errorf("event %s: type of %d bytes: %w", ev.ID, len(ev.Type), errRecord)
	}
	ext := ev.Extent()
	b := make([]byte, 0, recordHeader+len(ev.Type)+binary.MaxVarintLen64+8*len(ext)+len(body))
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.ExpiresAt.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(ev.Version))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(event.Confidence(ev.ConfirmCount, ev.DenyCount)))
	b = append(b, byte(len(ev.Type)))
	b = append(b, ev.Type...)
	b = binary.AppendUvarint(b, uint64(len(ext)))
	for _, p := range ext {
		b = binary.BigEndian.AppendUint32(b, uint32(int32(math.Round(p.Lat*1e5))))
		b = binary.BigEndian.AppendUint32(b, uint32(int32(math.Round(p.Lon*1e5))))
	}
	return append(b, body...), nil
}

// parseRecord reads a record without copying it.
func parseRecord(d []byte) (record, error) {
	if len(d) < recordHeader || d[0] != recordFormat {
		return record{}, errRecord
	}
	r := record{
		expires:    int64(binary.BigEndian.Uint64(d[1:])),
		version:    int64(binary.BigEndian.Uint64(d[9:])),
		confidence: math.Float64frombits(binary.BigEndian.Uint64(d[17:])),
	}
	tl := int(d[25])
	d = d[recordHeader:]
	if len(d) < tl {
		return record{}, errRecord
	}
	r.typ, d = d[:tl], d[tl:]
	n, k := binary.Uvarint(d)
	if k <= 0 || n == 0 || n > uint64(len(d)-k)/8 {
		return record{}, errRecord
	}
	d = d[k:]
	r.n = int(n)
	r.points, r.body = d[:8*r.n], d[8*r.n:]
	return r, nil
}

// point returns position i of the extent.
func (r record) point(i int) geo.Point {
	p := r.points[8*i:]
	return geo.Point{
		Lat: float64(int32(binary.BigEndian.Uint32(p))) / 1e5,
		Lon: float64(int32(binary.BigEndian.Uint32(p[4:]))) / 1e5,
	}
}

// distance is the distance from c to the record's extent (spec 4.1 rule 3: to the full
// extent), measured as geo.DistanceToExtent measures it everywhere; buf is scratch space for
// the positions.
func (r record) distance(c geo.Point, buf *[]geo.Point) float64 {
	ext := (*buf)[:0]
	for i := range r.n {
		ext = append(ext, r.point(i))
	}
	*buf = ext
	return geo.DistanceToExtent(c, ext)
}
