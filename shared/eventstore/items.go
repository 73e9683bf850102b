package eventstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/event"
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

	attrData    = "data"        // event and vote items: the record as JSON
	attrVersion = "version"     // event item: event.Event.Version, the optimistic-concurrency guard
	attrOrg     = "org_id"      // event item: the publishing organisation
	attrEnv     = "environment" // event item: live or sandbox
	attrCells   = "cells"       // event item: the cells its area index items are under
	attrRecord  = "d"           // area index item: the record of record.go
)

// EventKey is the key of the event item of event id. Other packages read events through the
// change feed (the stream) and need to recognise them; DecodeEvent reads one.
func EventKey(id string) store.Key { return store.Key{PK: eventPrefix + id, SK: eventSK} }

func voteKey(id, reporter string) store.Key {
	return store.Key{PK: eventPrefix + id, SK: votePrefix + reporter}
}

// areaPK is the partition of the area index for cell in environment env.
func areaPK(env, cell string) string { return areaPrefix + env + "#" + cell }

// IsEventItem tells whether an item (or a change record's key) is an event item.
func IsEventItem(k store.Key) bool {
	return k.SK == eventSK && len(k.PK) > len(eventPrefix) && k.PK[:len(eventPrefix)] == eventPrefix
}

// eventItem is the stored form of ev, indexed under cells.
func (s *Store) eventItem(ev event.Event, cells []string) (store.Item, error) {
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
		attrOrg:       ev.Org,
		attrEnv:       ev.Environment,
	}
	if len(cells) > 0 {
		it[attrCells] = cells
	}
	return it, nil
}

// DecodeEvent reads an event item (as Get returns it, or as a change record's image holds it).
func DecodeEvent(it store.Item) (event.Event, error) {
	ev, _, err := decodeEvent(it)
	return ev, err
}

// decodeEvent reads an event item and the cells its index items are under.
func decodeEvent(it store.Item) (event.Event, []string, error) {
	var ev event.Event
	if err := json.Unmarshal([]byte(it.String(attrData)), &ev); err != nil {
		return event.Event{}, nil, fmt.Errorf("decode event item %s: %w", it.Key(), err)
	}
	// The attribute is what the write was conditioned on; it wins over the JSON copy.
	ev.Version = it.Int(attrVersion)
	return ev, it.Strings(attrCells), nil
}

// voteItem is the stored form of a reporter's standing vote on event ev.
func (s *Store) voteItem(ev event.Event, v event.Vote) (store.Item, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode vote on %s: %w", ev.ID, err)
	}
	k := voteKey(ev.ID, v.Reporter)
	return store.Item{
		store.AttrPK:  k.PK,
		store.AttrSK:  k.SK,
		store.AttrTTL: s.keepUntil(ev),
		attrData:      string(data),
	}, nil
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

func decodeVote(it store.Item) (event.Vote, error) {
	var v event.Vote
	if err := json.Unmarshal([]byte(it.String(attrData)), &v); err != nil {
		return event.Vote{}, fmt.Errorf("decode vote item %s: %w", it.Key(), err)
	}
	return v, nil
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

// areaItem is the index item of ev under partition pk, carrying rec (record.go). Its TTL is the
// event's expiry, rounded up to the second: the table may drop it from then on, and reads filter on
// the exact expires_at in rec anyway (docs/api.md §3: expiry is when expires_at is reached, and
// DynamoDB deletes expired items up to days late).
func areaItem(pk, id string, expires time.Time, rec []byte) store.Item {
	return store.Item{
		store.AttrPK:  pk,
		store.AttrSK:  id,
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
