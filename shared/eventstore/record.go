package eventstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
)

// The record of an area index item holds what an area query needs to filter, measure, sort and
// answer without reading the event item (see the package doc, "Area index"), each thing once
// and compactly, since DynamoDB bills a query by the bytes of the items it reads
// (docs/operations.md §5). The event id and environment are in the item's sort key (areaKey).
//
//	format      1 byte   recordFormat
//	expires_at  8 bytes  Unix nanoseconds, big-endian
//	created_at  8 bytes  Unix nanoseconds, big-endian
//	version     uvarint  event.Event.Version (the newest copy wins a duplicate)
//	confirm     uvarint  confirm_count
//	deny        uvarint  deny_count; confidence and verification derive from the two
//	type        1 byte length, then the type id
//	source      8 bytes  the first bytes of the SHA-256 of event.Event.Source(): the merge search
//	                     (merge.go) passes over the reports of the searching source itself by it
//	extent      uvarint n, then the first position as two big-endian int32, lat and lon times
//	            1e5, then each next one as two zigzag varints, its difference from the one before
//	reach       4 bytes  LineStrings only: IEEE 754 float32, metres from the first position
//	                     within which the whole extent lies, rounded up
//	fields      uvarint, a bit per member of optionalMembers that is not null, then the JSON of
//	            each such member as encoding/json wrote it: uvarint length, then the text
//
// The answer of GET /v1/events is rendered from it (appendPublic), the very bytes
// json.Marshal(event.Public) gives, which record_test.go holds it to. Positions are exact:
// coordinates are stored rounded to 5 decimals (docs/api.md §2.2), so lat*1e5 is a whole number
// and dividing it by 1e5 gives back the very float64 that was rounded.
const recordFormat = 4

// recordHeader is the fixed part before version.
const recordHeader = 1 + 8 + 8

// errRecord reports an index record this version cannot read: a damaged item or one written
// by an incompatible version. The query skips it and logs.
var errRecord = errors.New("events: unreadable area index record")

// optionalMembers are the members of EventPublic a record stores as JSON when they are not
// null, in the order EventPublic lists them; the others derive from the record's own fields.
// source_kind is stored only when it is not "publisher".
var optionalMembers = [...]string{"heading", "road_ref", "severity", "description", "occurred_at",
	"source_kind", "feed_id", "license", "upstream_updated_at", "fetched_at", "updated_at",
	"merged_into", "subtype"}

// Indexes into optionalMembers.
const (
	optHeading = iota
	optRoadRef
	optSeverity
	optDescription
	optOccurredAt
	optSourceKind
	optFeedID
	optLicense
	optUpstreamUpdatedAt
	optFetchedAt
	optUpdatedAt
	optMergedInto
	optSubtype
	numOptional
)

// record is a parsed index record; its slices point into the item's bytes, but for ext.
type record struct {
	expires, created int64 // Unix nanoseconds
	version          int64
	confirm, deny    int
	confidence       float64
	reach            float64 // see reach
	typ              []byte
	source           []byte
	ext              []geo.Point
	fields           []byte // the optional members as stored
	typAt            int    // where in the record the type's length byte is
}

// sourceID identifies a source in a record: the first 8 bytes of the SHA-256 of
// event.Event.Source(). Two sources sharing it would only keep one's reports from being merged
// into the other's.
func sourceID(source string) []byte {
	sum := sha256.Sum256([]byte(source))
	return sum[:8]
}

// encodeRecord builds the record of ev as it stands at now, when it is active (a record is
// written for an active event only).
func encodeRecord(ev event.Event, now time.Time) ([]byte, error) {
	pub := ev.Public(now)
	if pub.Status != event.StatusActive {
		return nil, fmt.Errorf("event %s is %s: %w", ev.ID, pub.Status, errRecord)
	}
	if len(ev.Type) > math.MaxUint8 {
		return nil, fmt.Errorf("event %s: type over 255 bytes: %w", ev.ID, errRecord)
	}
	ext := ev.Extent()
	if g := ev.Geometry; g != nil && (g.Type != event.GeometryType || g.Coordinates[0] != [2]float64{ev.Lon, ev.Lat}) {
		return nil, fmt.Errorf("event %s: geometry is not a LineString from its point: %w", ev.ID, errRecord)
	}
	var texts [numOptional][]byte
	var err error
	set := func(i int, v any, present bool) {
		if present && err == nil {
			texts[i], err = json.Marshal(v)
		}
	}
	set(optHeading, pub.Heading, pub.Heading != nil)
	set(optRoadRef, pub.RoadRef, pub.RoadRef != nil)
	set(optSeverity, pub.Severity, pub.Severity != nil)
	set(optDescription, pub.Description, pub.Description != nil)
	set(optOccurredAt, pub.OccurredAt, pub.OccurredAt != nil)
	set(optSourceKind, pub.SourceKind, pub.SourceKind != event.SourcePublisher)
	set(optFeedID, pub.FeedID, pub.FeedID != nil)
	set(optLicense, pub.License, pub.License != nil)
	set(optUpstreamUpdatedAt, pub.UpstreamUpdatedAt, pub.UpstreamUpdatedAt != nil)
	set(optFetchedAt, pub.FetchedAt, pub.FetchedAt != nil)
	set(optUpdatedAt, pub.UpdatedAt, pub.UpdatedAt != nil)
	set(optMergedInto, pub.MergedInto, pub.MergedInto != nil)
	set(optSubtype, pub.Subtype, pub.Subtype != nil)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}

	b := make([]byte, 0, 64+len(ev.Type)+8*len(ext))
	b = append(b, recordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.ExpiresAt.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(ev.CreatedAt.UnixNano()))
	b = binary.AppendUvarint(b, uint64(ev.Version))
	b = binary.AppendUvarint(b, uint64(ev.ConfirmCount))
	b = binary.AppendUvarint(b, uint64(ev.DenyCount))
	b = append(b, byte(len(ev.Type)))
	b = append(b, ev.Type...)
	b = append(b, sourceID(ev.Source())...)
	b = binary.AppendUvarint(b, uint64(len(ext)))
	var lat, lon int32
	for i, p := range ext {
		la, lo := int32(math.Round(p.Lat*1e5)), int32(math.Round(p.Lon*1e5))
		if i == 0 {
			b = binary.BigEndian.AppendUint32(b, uint32(la))
			b = binary.BigEndian.AppendUint32(b, uint32(lo))
		} else {
			b = binary.AppendVarint(b, int64(la)-int64(lat))
			b = binary.AppendVarint(b, int64(lo)-int64(lon))
		}
		lat, lon = la, lo
	}
	if len(ext) > 1 {
		b = binary.BigEndian.AppendUint32(b, math.Float32bits(reach(ext)))
	}
	var present uint64
	for i, t := range texts {
		if t != nil {
			present |= 1 << i
		}
	}
	b = binary.AppendUvarint(b, present)
	for _, t := range texts {
		if t != nil {
			b = binary.AppendUvarint(b, uint64(len(t)))
			b = append(b, t...)
		}
	}
	return b, nil
}

// parseRecord reads a record; only the extent is copied out of d.
func parseRecord(d []byte) (record, error) {
	if len(d) < recordHeader || d[0] != recordFormat {
		return record{}, errRecord
	}
	r := record{
		expires: int64(binary.BigEndian.Uint64(d[1:])),
		created: int64(binary.BigEndian.Uint64(d[9:])),
	}
	rd := reader{b: d[recordHeader:]}
	r.version = int64(rd.uvarint())
	r.confirm, r.deny = int(rd.uvarint()), int(rd.uvarint())
	r.typAt = len(d) - len(rd.b)
	r.typ = rd.bytes(int(rd.byte()))
	r.source = rd.bytes(8)
	n := rd.uvarint()
	if rd.bad || n == 0 || n > uint64(len(rd.b)) {
		return record{}, errRecord
	}
	r.ext = make([]geo.Point, n)
	lat, lon := int64(int32(binary.BigEndian.Uint32(rd.bytes(4)))), int64(int32(binary.BigEndian.Uint32(rd.bytes(4))))
	for i := range r.ext {
		if i > 0 {
			lat, lon = lat+rd.varint(), lon+rd.varint()
		}
		r.ext[i] = geo.Point{Lat: float64(lat) / 1e5, Lon: float64(lon) / 1e5}
	}
	if n > 1 {
		r.reach = float64(math.Float32frombits(binary.BigEndian.Uint32(rd.bytes(4))))
	}
	r.fields = rd.b
	if rd.bad {
		return record{}, errRecord
	}
	r.confidence = event.Confidence(r.confirm, r.deny)
	return r, nil
}

// reader reads a record's fields in turn; bad is set, and zeros returned, once the bytes run
// out or a varint is malformed.
type reader struct {
	b   []byte
	bad bool
}

// bytes returns the next n bytes; once bad, zeros for the fixed-size reads (n up to 8) and
// nil for the others.
func (r *reader) bytes(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		var zeros [8]byte
		if n <= len(zeros) {
			return zeros[:n]
		}
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) byte() byte { return r.bytes(1)[0] }

func (r *reader) uvarint() uint64 {
	v, k := binary.Uvarint(r.b)
	if r.bad || k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *reader) varint() int64 {
	v, k := binary.Varint(r.b)
	if r.bad || k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return v
}

// publicScratch holds buffers cacheRecord renders into before packing the JSON into the slab.
var publicScratch = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// appendPublic appends the EventPublic JSON of the record's event, of id and environment env:
// json.Marshal(ev.Public(at)) as encodeRecord saw it. With marks, it notes where in that JSON
// each of packRuns would begin, for packJSON.
func appendPublic(b []byte, id, env string, r *record, marks *runMarks) ([]byte, error) {
	var opt [numOptional][]byte
	rd := reader{b: r.fields}
	present := rd.uvarint()
	for i := range opt {
		if present&(1<<i) != 0 {
			opt[i] = rd.bytes(int(rd.uvarint()))
		}
	}
	if rd.bad || present>>numOptional != 0 {
		return b, errRecord
	}
	base := len(b)
	mark := func(run, back int) {
		if marks != nil {
			marks[run] = len(b) - back - base
		}
	}
	member := func(name string) { b = append(append(append(b, ",\""...), name...), "\":"...) }
	optional := func(i int) {
		member(optionalMembers[i])
		if opt[i] == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, opt[i]...)
		}
	}
	b = append(b, `{"event_id":`...)
	b = appendString(b, id)
	mark(0, 1) // at the id's closing quote
	b = append(b, `,"schema_version":`...)
	b = strconv.AppendInt(b, event.SchemaVersion, 10)
	member("type")
	b = appendString(b, string(r.typ))
	member("lat")
	b = appendFloat(b, r.ext[0].Lat)
	member("lon")
	b = appendFloat(b, r.ext[0].Lon)
	mark(1, 0)
	member("geometry")
	if len(r.ext) == 1 {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"type":"`+event.GeometryType+`","coordinates":[`...)
		for i, p := range r.ext {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = appendFloat(b, p.Lon)
			b = append(b, ',')
			b = appendFloat(b, p.Lat)
			b = append(b, ']')
		}
		b = append(b, "]}"...)
	}
	for i := optHeading; i <= optOccurredAt; i++ {
		if i == optRoadRef {
			mark(2, 0)
		}
		optional(i)
	}
	member("created_at")
	b = appendString(b, event.FormatTime(time.Unix(0, r.created)))
	member("expires_at")
	b = appendString(b, event.FormatTime(time.Unix(0, r.expires)))
	mark(3, 1) // at the time's closing quote
	member("source_kind")
	if opt[optSourceKind] == nil {
		b = appendString(b, event.SourcePublisher)
	} else {
		b = append(b, opt[optSourceKind]...)
	}
	for i := optFeedID; i <= optFetchedAt; i++ {
		optional(i)
	}
	member("status")
	b = appendString(b, event.StatusActive)
	member("verification")
	b = appendString(b, event.Verification(r.confirm, r.deny))
	member("confidence")
	b = appendFloat(b, r.confidence)
	member("confirm_count")
	b = strconv.AppendInt(b, int64(r.confirm), 10)
	member("deny_count")
	b = strconv.AppendInt(b, int64(r.deny), 10)
	mark(4, 0)
	mark(5, 0)
	optional(optUpdatedAt)
	optional(optMergedInto)
	member("environment")
	b = appendString(b, env)
	optional(optSubtype)
	return append(b, '}'), nil
}

// packRuns are the longest stretches of EventPublic's JSON that are the same for every point a
// publisher reports (the members that are null then, and the constant ones between them), in
// the order they appear. The area cache keeps each event's JSON without them (packJSON): a
// point's 575 bytes become about 240, since the member names were most of it
// (docs/performance.md §5).
var packRuns = [...]string{
	`","schema_version":1,"type":"`,
	`,"geometry":null,"heading":`,
	`,"road_ref":null,"severity":null,"description":null,"occurred_at":null,"created_at":"`,
	`","source_kind":"publisher","feed_id":null,"license":null,"upstream_updated_at":null,"fetched_at":null,"status":"active","verification":"`,
	`,"updated_at":null,"merged_into":null,"environment":"live","subtype":null}`,
	`,"updated_at":null,"merged_into":null,"environment":"sandbox","subtype":null}`,
}

// runMarks are where in a JSON each of packRuns would begin, as appendPublic wrote it.
type runMarks [len(packRuns)]int

// packJSON appends js packed: the number of packRuns it holds (a run it lacks stays in
// place), then for each the bytes before it, as a uvarint length and the bytes, and the run's
// index; then the bytes after the last. The lengths spare appendUnpacked a search for the
// runs, which cost as much as the rest of unpacking. Each run is compared only where marks
// (appendPublic's) put it: searching for the runs was a seventh of the CPU of loading records
// into the area cache (docs/performance.md §5).
func packJSON(b, js []byte, marks *runMarks) []byte {
	count, cut := len(b), 0 // cut: the bytes of the JSON consumed
	b = append(b, 0)
	for i, run := range packRuns {
		// As a string: []byte(run) copied the longer runs, four allocations a record.
		rest := unsafe.String(unsafe.SliceData(js), len(js))
		if at := marks[i] - cut; at >= 0 && strings.HasPrefix(rest[min(at, len(rest)):], run) {
			b = binary.AppendUvarint(b, uint64(at))
			b = append(append(b, js[:at]...), byte(i))
			js = js[at+len(run):]
			cut += at + len(run)
			b[count]++
		}
	}
	return append(b, js...)
}

// appendUnpacked appends the JSON that packJSON packed into p. p is the cache's own, never
// damaged.
func appendUnpacked(b, p []byte) []byte {
	n := int(p[0])
	p = p[1:]
	for range n {
		l, k := uint64(p[0]), 1
		if l >= 0x80 {
			l, k = binary.Uvarint(p)
		}
		end := k + int(l)
		b = append(append(b, p[k:end]...), packRuns[p[end]]...)
		p = p[end+1:]
	}
	return append(b, p...)
}

// appendString appends s as a JSON string, as encoding/json writes it: quoted as it is when it
// holds nothing that needs escaping (ids, types, times), else by encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendFloat appends f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-07 as e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
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
