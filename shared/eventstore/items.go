package eventstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Key prefixes and attribute names of the items this package writes (see the package doc).
const (
	eventPrefix = "event#"
	eventSK     = "event"
	votePrefix  = "vote#"
	entryPrefix = "log#"
	areaPrefix  = "area#"

	attrData    = "data"    // event, signal and history items: the record as JSON
	attrVersion = "version" // event item: event.Event.Version, the optimistic-concurrency guard
	attrCells   = "idx"     // event item: the cells its area index items are under (areaCells)
	attrRecord  = "d"       // area index item: the record of record.go
)

// EventKey is the key of the event item of event id. Other packages read events through the
// change feed (the stream) and need to recognise them; DecodeEvent reads one.
func EventKey(id string) store.Key { return store.Key{PK: eventPrefix + id, SK: eventSK} }

// standingVote selects the newest signal item of reporter on event id: its standing vote
// (signalItem), or the vote item "vote#<reporter>" that versions before kept alone, with its
// entry apart, which sorts before the reporter's signal items. No other reporter's item sorts
// between: a reporter identity holds no character below '#'.
func standingVote(id, reporter string) store.Query {
	prefix := votePrefix + reporter
	return store.Query{PK: eventPrefix + id, From: prefix, To: prefix + "#~", Desc: true, Limit: 1}
}

// areaKey is the key of the index item of event id, of environment env, under cell c at
// FineLevel: in the partition of c's parent at CoarseLevel, its sort key c's own digits at the
// two levels between (areaDigits), the environment's letter, the id. A query at FineLevel reads
// a cell as a prefix of a partition, and consecutive cells as one range; one at CoarseLevel reads
// whole partitions; both environments share a partition, so a sandbox credential, served both
// (docs/api.md §1), reads each once.
func areaKey(c h3.Cell, env, id string) (store.Key, error) {
	parent, err := c.Parent(CoarseLevel)
	if err != nil {
		return store.Key{}, fmt.Errorf("partition of cell %s: %w", c, err)
	}
	return store.Key{PK: areaPartition(parent), SK: areaDigits(c) + envLetter(env) + id}, nil
}

// areaPartition is the partition of the area index of cell p at CoarseLevel.
func areaPartition(p h3.Cell) string { return areaPrefix + geo.CellString(p) }

// areaDigits are the two H3 digits of cell c at FineLevel below its parent at CoarseLevel, as
// text ("00" to "66"): the sort-key prefix of its index items. H3 keeps the digit of resolution r
// in bits 3*(15-r) to 3*(15-r)+2.
func areaDigits(c h3.Cell) string {
	d := func(res int) byte { return '0' + byte(uint64(c)>>(3*(15-res))&7) }
	return string([]byte{d(CoarseLevel + 1), d(FineLevel)})
}

// envLetter is the letter of environment env in an index item's sort key.
func envLetter(env string) string {
	if env == event.EnvironmentSandbox {
		return "s"
	}
	return "l"
}

// parseAreaSK reads an index item's sort key: the environment and the event id.
func parseAreaSK(sk string) (env, id string, ok bool) {
	if len(sk) < 4 {
		return "", "", false
	}
	switch sk[2] {
	case 'l':
		env = event.EnvironmentLive
	case 's':
		env = event.EnvironmentSandbox
	default:
		return "", "", false
	}
	return env, sk[3:], true
}

// IsEventPartition tells whether pk is the partition of an event: its item, history and
// signals.
func IsEventPartition(pk string) bool {
	return len(pk) > len(eventPrefix) && pk[:len(eventPrefix)] == eventPrefix
}

// IsEventItem tells whether an item (or a change record's key) is an event item.
func IsEventItem(k store.Key) bool {
	return k.SK == eventSK && IsEventPartition(k.PK)
}

// eventItem is the stored form of ev, indexed under cells. The content as first published is
// left out while the current fields still say the same (event.Event.Published: the event then
// derives it), so that an event is not stored twice until a revision changes it: a write is
// billed by the kilobyte (docs/operations.md §5).
func (s *Store) eventItem(ev event.Event, cells []h3.Cell) (store.Item, error) {
	if ev.Published != nil {
		current := ev
		current.Published = nil
		if _, differs := event.FirstDifference(current, *ev.Published); !differs {
			ev.Published = nil
		}
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	k := EventKey(ev.ID)
	it := store.Item{
		store.AttrPK:  k.PK,
		store.AttrSK:  k.SK,
		store.AttrTTL: s.keepUntil(ev),
		attrData:      string(data),
		attrVersion:   ev.Version,
	}
	if len(cells) > 0 {
		b := make([]byte, 0, 8*len(cells))
		for _, c := range cells {
			b = binary.BigEndian.AppendUint64(b, uint64(c))
		}
		it[attrCells] = b
	}
	return it, nil
}

// mergedMark is how an event item's JSON (encoding/json, no spaces) holds a merged status.
var mergedMark = `"status":"` + event.StatusMerged + `"`

// MayBeMerged tells, without decoding it, whether an event item can hold a merged event: false
// means it does not. true may come from the mark anywhere in the JSON, so decode to be sure.
// It spares the change feed's readers the decoding of every publish (docs/performance.md §13).
func MayBeMerged(it store.Item) bool {
	return strings.Contains(it.String(attrData), mergedMark)
}

// DecodeEvent reads an event item (as Get returns it, or as a change record's image holds it).
func DecodeEvent(it store.Item) (event.Event, error) {
	ev, _, err := decodeEvent(it)
	return ev, err
}

// decodeEvent reads an event item and the cells its index items are under.
func decodeEvent(it store.Item) (event.Event, []h3.Cell, error) {
	var ev event.Event
	if err := json.Unmarshal([]byte(it.String(attrData)), &ev); err != nil {
		return event.Event{}, nil, fmt.Errorf("decode event item %s: %w", it.Key(), err)
	}
	// The attribute is what the write was conditioned on; it wins over the JSON copy.
	ev.Version = it.Int(attrVersion)
	b := it.Bytes(attrCells)
	if len(b)%8 != 0 {
		return event.Event{}, nil, fmt.Errorf("decode event item %s: cells of %d bytes", it.Key(), len(b))
	}
	var cells []h3.Cell
	for i := 0; i < len(b); i += 8 {
		cells = append(cells, h3.Cell(binary.BigEndian.Uint64(b[i:])))
	}
	return ev, cells, nil
}

// signalRecord is what a change made by a reporter's vote stores: the vote, which stands until
// the reporter's next, and the change's history entry. Both are one item, written by the change's
// transaction, which so has one member fewer (docs/operations.md §5):
//
//	pk "event#<event_id>"  sk "vote#<reporter>#<time>#<version>"  data {"vote":…, "entry":…}, ttl
//
// The reporter's standing vote is its newest (standingVote); the history is these entries and
// the log# items of the other changes (Evidence).
type signalRecord struct {
	Vote  event.Vote  `json:"vote"`
	Entry event.Entry `json:"entry"`
}

// signalItem is the stored form of r, the signal that made ev's version.
func (s *Store) signalItem(ev event.Event, r signalRecord) (store.Item, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode vote on %s: %w", ev.ID, err)
	}
	return store.Item{
		store.AttrPK:  eventPrefix + ev.ID,
		store.AttrSK:  fmt.Sprintf("%s%s#%020d#%020d", votePrefix, r.Vote.Reporter, r.Entry.At.UnixNano(), ev.Version),
		store.AttrTTL: s.keepUntil(ev),
		attrData:      string(data),
	}, nil
}

// decodeSignal reads a signal item: the vote, and the entry with its place in the history
// (order, as the sort key of a log# item has it), or no entry for a vote item of versions
// before, whose entry is a log# item.
func decodeSignal(it store.Item) (v event.Vote, e *event.Entry, order string, err error) {
	data := []byte(it.String(attrData))
	rest := strings.TrimPrefix(it.String(store.AttrSK), votePrefix)
	if _, order, ok := strings.Cut(rest, "#"); ok {
		var r signalRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return event.Vote{}, nil, "", fmt.Errorf("decode vote item %s: %w", it.Key(), err)
		}
		return r.Vote, &r.Entry, order, nil
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return event.Vote{}, nil, "", fmt.Errorf("decode vote item %s: %w", it.Key(), err)
	}
	return v, nil, "", nil
}

// entryItem is the stored form of an entry of ev's history, written by the change that made
// ev's version. Its sort key orders the history by time, then version; suffix tells apart two
// entries of one version (the ids of duplicates merged in by an organisation that had
// confirmed already).
func (s *Store) entryItem(ev event.Event, e event.Entry, suffix string) (store.Item, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode history of %s: %w", ev.ID, err)
	}
	return store.Item{
		store.AttrPK:  eventPrefix + ev.ID,
		store.AttrSK:  fmt.Sprintf("%s%020d#%020d#%s", entryPrefix, e.At.UnixNano(), ev.Version, suffix),
		store.AttrTTL: s.keepUntil(ev),
		attrData:      string(data),
	}, nil
}

// entryOp is the put of ev's history entry e, written by the change that made ev's version.
func (s *Store) entryOp(ev event.Event, e event.Entry) (store.Op, error) {
	it, err := s.entryItem(ev, e, "")
	return store.PutOp(it, store.Condition{}), err
}

// keepUntil is the TTL of an event's own items (the event and its votes), in Unix seconds:
// Retention past the latest moment the event can leave active, created_at plus its type's
// ceiling (docs/api.md §2.1). It never moves, so the votes of an event always expire with it and a
// client_event_id reused after both are gone starts from nothing. docs/api.md §10.2 asks for 7 days
// after the event left active; Retention (14 days by default) is past that wherever in its
// life the event ended.
func (s *Store) keepUntil(ev event.Event) int64 {
	return ev.CreatedAt.Add(ceiling(ev.Type) + s.retention).Unix()
}

// ceiling is the longest life of an event of type typ; an unknown type gets the longest
// ceiling there is, so nothing is deleted early.
func ceiling(typ string) time.Duration {
	if t, ok := taxonomy.Lookup(typ); ok {
		return t.Ceiling
	}
	var longest time.Duration
	for _, t := range taxonomy.All() {
		longest = max(longest, t.Ceiling)
	}
	return longest
}

// areaItem is the index item at k, carrying rec (record.go). Its TTL is the event's expiry,
// rounded up to the second: the table may drop it from then on, and reads filter on the exact
// expires_at in rec anyway (docs/api.md §3: expiry is when expires_at is reached, and DynamoDB
// deletes expired items up to days late).
func areaItem(k store.Key, expires time.Time, rec []byte) store.Item {
	return store.Item{
		store.AttrPK:  k.PK,
		store.AttrSK:  k.SK,
		store.AttrTTL: ceilUnix(expires),
		attrRecord:    rec,
	}
}

func ceilUnix(t time.Time) int64 {
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return sec
}

// DecodeEntry reads an entry of an event's history from a changed item (the change feed's new
// image), for readers of the feed that act on what happened to an event (the webhook
// producer): a log# item, or a vote# item that holds the entry of its signal. ok is false for
// any other item, and for a vote item of versions that kept the entry apart.
func DecodeEntry(it store.Item) (eventID string, e event.Entry, ok bool, err error) {
	k := it.Key()
	if !strings.HasPrefix(k.PK, eventPrefix) {
		return "", event.Entry{}, false, nil
	}
	eventID = strings.TrimPrefix(k.PK, eventPrefix)
	switch {
	case strings.HasPrefix(k.SK, entryPrefix):
		if err := json.Unmarshal([]byte(it.String(attrData)), &e); err != nil {
			return "", event.Entry{}, false, fmt.Errorf("decode history item %s: %w", k, err)
		}
		return eventID, e, true, nil
	case strings.HasPrefix(k.SK, votePrefix):
		_, entry, _, err := decodeSignal(it)
		if err != nil || entry == nil {
			return "", event.Entry{}, false, err
		}
		return eventID, *entry, true, nil
	}
	return "", event.Entry{}, false, nil
}

// AreaEventID returns the id of the event an area index item is of, for readers of the
// change feed: the item's TTL is the event's expires_at, so its removal by expiry tells that
// the event expired on its own (the webhook producer's event.expired).
func AreaEventID(k store.Key) (string, bool) {
	if !strings.HasPrefix(k.PK, areaPrefix) || len(k.SK) <= 3 {
		return "", false
	}
	// Two digits, the environment's letter, then the id.
	return k.SK[3:], event.ValidID(k.SK[3:])
}
