package eventstore

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
//	confidence  8 bytes  IEEE 754 bits of the served confidence (docs/api.md §10.2, 3 decimals)
//	reach       4 bytes  IEEE 754 float32: metres from the first position within which the
//	                     whole extent lies (0 for a point), rounded up
//	type        1 byte length, then the type id
//	source      1 byte length, then event.Event.Source (format 3 on): the merge search
//	            (merge.go) passes over the reports of the searching source itself by it
//	extent      uvarint n, then n positions of two big-endian int32: lat and lon times 1e5
//	body        the rest: the event's EventPublic as JSON, as GET /v1/events sends it
//
// Positions are exact: coordinates are stored rounded to 5 decimals (docs/api.md §2.2), so lat*1e5
// is a whole number and dividing it by 1e5 gives back the very float64 that was rounded. Format 1
// (without reach) was never released beyond development data folders; such records are skipped as
// unreadable. Format 2 (without source) is read, its source unknown.
const recordFormat = 3

const recordHeader = 1 + 8 + 8 + 8 + 4 + 1

// errRecord reports an index record this version cannot read: a damaged item or one written
// by an incompatible version. The query skips it and logs.
var errRecord = errors.New("events: unreadable area index record")

// record is a parsed index record; its slices point into the item's bytes.
type record struct {
	expires    int64 // Unix nanoseconds
	version    int64
	confidence float64
	reach      float64 // see reach
	typ        []byte
	source     []byte // nil in a format 2 record
	n          int    // positions in the extent
	points     []byte // 8 bytes per position
	body       []byte
}

// encodeRecord builds the record of ev, with body its EventPublic JSON.
func encodeRecord(ev event.Event, body []byte) ([]byte, error) {
	source := ev.Source()
	if len(ev.Type) > math.MaxUint8 || len(source) > math.MaxUint8 {
		return nil, fmt.Errorf("event %s: type or source over 255 bytes: %w", ev.ID, errRecord)
	}
	ext := ev.Extent()
	b := make([]byte, 0, recordHeader+len(ev.Type)+1+len(source)+binary.MaxVarintLen64+8*len(ext)+len(body))
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.ExpiresAt.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(ev.Version))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(event.Confidence(ev.ConfirmCount, ev.DenyCount)))
	b = binary.BigEndian.AppendUint32(b, math.Float32bits(reach(ext)))
	b = append(b, byte(len(ev.Type)))
	b = append(b, ev.Type...)
	b = append(b, byte(len(source)))
	b = append(b, source...)
	b = binary.AppendUvarint(b, uint64(len(ext)))
	for _, p := range ext {
		b = binary.BigEndian.AppendUint32(b, uint32(int32(math.Round(p.Lat*1e5))))
		b = binary.BigEndian.AppendUint32(b, uint32(int32(math.Round(p.Lon*1e5))))
	}
	return append(b, body...), nil
}

// parseRecord reads a record without copying it.
func parseRecord(d []byte) (record, error) {
	if len(d) < recordHeader || d[0] != recordFormat && d[0] != 2 {
		return record{}, errRecord
	}
	format := d[0]
	r := record{
		expires:    int64(binary.BigEndian.Uint64(d[1:])),
		version:    int64(binary.BigEndian.Uint64(d[9:])),
		confidence: math.Float64frombits(binary.BigEndian.Uint64(d[17:])),
		reach:      float64(math.Float32frombits(binary.BigEndian.Uint32(d[25:]))),
	}
	tl := int(d[29])
	d = d[recordHeader:]
	if len(d) < tl {
		return record{}, errRecord
	}
	r.typ, d = d[:tl], d[tl:]
	if format >= 3 {
		if len(d) < 1 || len(d) < 1+int(d[0]) {
			return record{}, errRecord
		}
		sl := int(d[0])
		r.source, d = d[1:1+sl], d[1+sl:]
	}
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

// reach is a radius around the extent's first position that holds the whole extent: every
// point of a segment is within half its length of one of its ends, so the farthest vertex
// plus half the longest segment, with a metre for rounding, rounded up to a float32. An area
// query skips the exact distance to a LineString that this already puts out of range.
func reach(ext []geo.Point) float32 {
	if len(ext) < 2 {
		return 0
	}
	var far, seg float64
	for i := 1; i < len(ext); i++ {
		far = max(far, geo.Distance(ext[0], ext[i]))
		seg = max(seg, geo.Distance(ext[i-1], ext[i]))
	}
	r := far + seg/2 + 1
	f := float32(r)
	if float64(f) < r {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// extent returns the record's positions.
func (r record) extent() []geo.Point {
	ext := make([]geo.Point, r.n)
	for i := range ext {
		ext[i] = r.point(i)
	}
	return ext
}
