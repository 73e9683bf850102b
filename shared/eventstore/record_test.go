package eventstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// randomEvent is an active event with every optional field of EventPublic set or not at random,
// its strings holding what JSON must escape, its positions anywhere on the globe.
func randomEvent(r *rand.Rand, now time.Time) event.Event {
	maybe := func(s string) *string {
		if r.IntN(2) == 0 {
			return nil
		}
		return &s
	}
	moment := func() time.Time { return now.Add(time.Duration(r.Int64N(int64(48*time.Hour))) - 24*time.Hour) }
	maybeTime := func() *time.Time {
		if r.IntN(2) == 0 {
			return nil
		}
		t := moment().UTC()
		return &t
	}
	texts := []string{"A9", "<b>&amp;\"quoted\"</b>", "Straße 12 \u2028 ligne", "tab\there\nnew line", "\x01\x1f", "émoji 🚗", ""}
	types := taxonomy.All()
	p := geo.Point{Lat: geo.Round5(r.Float64()*180 - 90), Lon: geo.Round5(r.Float64()*360 - 180)}
	ev := event.Event{
		ID: event.NewID(), Org: "org_x", Environment: []string{event.EnvironmentLive, event.EnvironmentSandbox}[r.IntN(2)],
		SourceKind: event.SourcePublisher, Type: types[r.IntN(len(types))].ID, Lat: p.Lat, Lon: p.Lon,
		RoadRef: maybe(texts[r.IntN(len(texts))]), Description: maybe(texts[r.IntN(len(texts))]),
		Severity: maybe(event.SeverityHigh), Subtype: maybe("queue"), OccurredAt: maybeTime(), UpdatedAt: maybeTime(),
		CreatedAt: moment().UTC(), ExpiresAt: now.Add(time.Duration(1 + r.Int64N(int64(time.Hour)))).UTC(),
		Status: event.StatusActive, ConfirmCount: r.IntN(40), DenyCount: r.IntN(40), Version: 1 + r.Int64N(1000),
	}
	if r.IntN(2) == 0 {
		h := r.IntN(360)
		ev.Heading = &h
	}
	if r.IntN(4) == 0 {
		ev.SourceKind, ev.FeedID, ev.License = event.SourceFeed, maybe("feed-1"), maybe("CC-BY 4.0")
		ev.UpstreamUpdatedAt, ev.FetchedAt = maybeTime(), maybeTime()
	}
	if r.IntN(3) == 0 {
		coords := [][2]float64{{p.Lon, p.Lat}}
		for range 1 + r.IntN(20) {
			p = geo.Point{Lat: geo.Round5(max(-90, min(90, p.Lat+r.NormFloat64()*0.01))), Lon: geo.Round5(max(-180, min(180, p.Lon+r.NormFloat64()*0.01)))}
			coords = append(coords, [2]float64{p.Lon, p.Lat})
		}
		ev.Geometry = &event.LineString{Type: event.GeometryType, Coordinates: coords}
	}
	return ev
}

// An index record answers an area query with the very bytes GET /v1/events/{id} would send for
// the event as it was written (docs/api.md §2.3, §4.1 rule 3: the answer does not depend on how
// the index stores it), packed by the area cache or not, and keeps what the query filters and
// measures on.
func TestRecordRendersThePublicJSON(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(4, 4))
	now := time.Date(2040, 3, 1, 12, 0, 0, 123456789, time.UTC)
	var cut [len(packRuns)]int // the events each run was packed out of
	defer func() {
		for i, n := range cut {
			if n == 0 {
				t.Errorf("no event packed run %d (%q): the events do not test it", i, packRuns[i])
			}
		}
	}()
	for range 3000 {
		ev := randomEvent(r, now)
		b, err := encodeRecord(ev, now)
		if err != nil {
			t.Fatalf("encodeRecord(%+v) = %v", ev, err)
		}
		rec, err := parseRecord(b)
		if err != nil {
			t.Fatalf("parseRecord = %v", err)
		}
		var marks runMarks
		got, err := appendPublic(nil, ev.ID, ev.Environment, &rec, &marks)
		if err != nil {
			t.Fatalf("appendPublic = %v", err)
		}
		want, err := json.Marshal(ev.Public(now))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("rendered\n%s\nwant\n%s", got, want)
		}
		packed := packSearched(want)
		if got := appendUnpacked(nil, packed); !bytes.Equal(got, want) {
			t.Fatalf("packed and unpacked\n%s\nwant\n%s", got, want)
		}
		// Packed at appendPublic's marks, the JSON packs as a search for the runs packs it.
		if marked := packJSON(nil, got, &marks); !bytes.Equal(marked, packed) {
			t.Fatalf("packed at the marks %v\n%q\nwant, searched\n%q", marks, marked, packed)
		}
		for p, n := packed[1:], packed[0]; n > 0; n-- {
			l, k := binary.Uvarint(p)
			end := k + int(l)
			cut[p[end]]++
			p = p[end+1:]
		}
		if rec.expires != ev.ExpiresAt.UnixNano() || rec.version != ev.Version || string(rec.typ) != ev.Type ||
			rec.confidence != event.Confidence(ev.ConfirmCount, ev.DenyCount) || !bytes.Equal(rec.source, sourceID(ev.Source())) {
			t.Fatalf("parsed %+v; want the expiry, version, type, confidence and source of %+v", rec, ev)
		}
		if len(rec.ext) > 1 && rec.reach < geo.Distance(rec.ext[0], rec.ext[len(rec.ext)-1]) {
			t.Fatalf("reach %v shorter than the distance to the last position", rec.reach)
		}
	}
}

// packSearched packs js as packJSON does, finding each run with a search instead of marks:
// what packJSON must do for the JSON appendPublic writes.
func packSearched(js []byte) []byte {
	var marks runMarks
	from := 0
	for i, run := range packRuns {
		marks[i] = -1
		if j := strings.Index(string(js[from:]), run); j >= 0 {
			marks[i] = from + j
			from += j + len(run)
		}
	}
	return packJSON(nil, js, &marks)
}

// The area cache keeps a publisher's point, the most common event, in well under half its JSON
// (docs/performance.md §5): the member names and nulls every such point repeats are not kept.
func TestPackedPointIsSmall(t *testing.T) {
	t.Parallel()
	now := time.Date(2040, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for _, env := range []string{event.EnvironmentLive, event.EnvironmentSandbox} {
		h := 270
		ev := event.Event{ID: event.NewID(), Org: "org_x", Environment: env, SourceKind: event.SourcePublisher,
			Type: "accident", Lat: 48.13712, Lon: 11.57541, Heading: &h, Status: event.StatusActive,
			CreatedAt: now, ExpiresAt: now.Add(2 * time.Hour), Version: 1}
		js, err := json.Marshal(ev.Public(now))
		if err != nil {
			t.Fatal(err)
		}
		packed := packSearched(js)
		if len(packed)*2 > len(js) {
			t.Errorf("a point of %s packs %d bytes into %d; want under half:\n%q", env, len(js), len(packed), packed)
		}
		if got := appendUnpacked(nil, packed); !bytes.Equal(got, js) {
			t.Errorf("unpacked\n%s\nwant\n%s", got, js)
		}
	}
}

// A damaged record, cut short anywhere, is refused as unreadable, never misread or a panic.
func TestRecordCutShortIsUnreadable(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	now := time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)
	for range 200 {
		ev := randomEvent(r, now)
		b, err := encodeRecord(ev, now)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(b) {
			rec, err := parseRecord(b[:n])
			if err == nil {
				_, err = appendPublic(nil, ev.ID, ev.Environment, &rec, nil)
			}
			if !errors.Is(err, errRecord) {
				t.Fatalf("record of %d bytes cut to %d: %v; want errRecord", len(b), n, err)
			}
		}
	}
}

// An answer's body holds every event's JSON in order, however its packed events fall into the
// batches AreaResult.AppendJSON gathers them in: many small ones, events read for the query
// alone (not packed), and one packed event larger than a batch (a long LineString).
func TestAnswerBodyUnpacksEveryBatch(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(6, 6))
	now := time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)
	var res AreaResult
	var want [][]byte
	for i := range 300 {
		ev := randomEvent(r, now)
		if i == 150 || i == 0 {
			coords := make([][2]float64, 400)
			for j := range coords {
				coords[j] = [2]float64{geo.Round5(10 + float64(j)*0.001), geo.Round5(50 + float64(j)*0.0007)}
			}
			ev.Geometry = &event.LineString{Type: event.GeometryType, Coordinates: coords}
		}
		js, err := json.Marshal(ev.Public(now))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, js)
		e := AreaEvent{ID: ev.ID, body: js}
		if i%7 != 3 {
			e.body, e.packed = packSearched(js), true
		}
		if i == 150 && len(e.body) <= 4<<10 {
			t.Fatalf("the long LineString packs into %d bytes; want more than a batch", len(e.body))
		}
		res.Events = append(res.Events, e)
	}
	if got, w := string(res.AppendJSON(nil)), "["+string(bytes.Join(want, []byte(",")))+"]"; got != w {
		t.Fatalf("body of %d bytes differs from the %d bytes of the events' JSON", len(got), len(w))
	}
}

// MayBeMerged is false only for event items that do not hold a merged event: the webhook
// feed skips decoding on its word (docs/webhooks.md §1, a publication merged at once), so a
// merged event it missed would be a lost delivery.
func TestMayBeMergedMissesNoMergedEvent(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	now := time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)
	s := &Store{}
	statuses := []string{event.StatusActive, event.StatusExpired, event.StatusInvalidated, event.StatusMerged}
	skipped := 0
	for range 2000 {
		ev := randomEvent(r, now)
		ev.Status = statuses[r.IntN(len(statuses))]
		if ev.Status == event.StatusMerged {
			into := event.NewID()
			ev.MergedInto = &into
		}
		it, err := s.eventItem(ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := DecodeEvent(it)
		if err != nil {
			t.Fatal(err)
		}
		switch may := MayBeMerged(it); {
		case decoded.Status == event.StatusMerged && !may:
			t.Fatalf("MayBeMerged is false for a merged event:\n%s", it.String(attrData))
		case !may:
			skipped++
		}
	}
	if skipped < 1000 {
		t.Errorf("MayBeMerged spared %d decodings of 2000 events, three quarters not merged", skipped)
	}
}
