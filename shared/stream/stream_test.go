package stream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/stream/streamtest"
)

// docs/api.md §4.1 rule 7, §6, §10.2: the snapshot first (what GET /v1/events returns for the
// same filter, max_seconds 3300), then a delta per change: created on publish, updated on
// revision with the new extent, signal on a counted signal, ended on the deny quorum; every
// frame with an increasing id. The deltas come through the table's real change feed (the
// embedded store's, or DynamoDB Streams on DynamoDB Local).
func TestSnapshotThenDeltas(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		near := r.publish(t, r.liveKey, "accident", offset(center, 200))
		nearer := r.publish(t, r.otherKey, "object_on_road", offset(center, 50))
		r.publish(t, r.liveKey, "congestion", offset(center, 3000))         // outside 1000 m
		r.publish(t, r.sandboxKey, "accident", offset(center, 100))         // sandbox: not for a live key
		line := r.publish(t, r.liveKey, "road_damage", offset(center, 990)) // at the edge

		q := query(center, 1000)
		s, snap := r.mustOpen(t, q, r.liveKey)
		status, list, _ := r.do(t, http.MethodGet, "/v1/events?"+q, r.liveKey, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /v1/events: %d %s", status, list)
		}
		var want []json.RawMessage
		if err := json.Unmarshal(list, &want); err != nil {
			t.Fatal(err)
		}
		if got := ids(snap.Events); !slices.Equal(got, []string{nearer.EventID, near.EventID, line.EventID}) {
			t.Errorf("snapshot events %v; want %v (nearest first, live only, within 1000 m)", got,
				[]string{nearer.EventID, near.EventID, line.EventID})
		}
		gotJSON, _ := json.Marshal(snap.Events)
		wantJSON, _ := json.Marshal(want)
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("snapshot events\n%s\nwant what GET /v1/events returns\n%s", gotJSON, wantJSON)
		}
		if snap.MaxSeconds != 3300 || snap.At != event.FormatTime(tab.Clock.Now()) {
			t.Errorf("snapshot max_seconds %d at %q; want 3300 at %q", snap.MaxSeconds, snap.At, event.FormatTime(tab.Clock.Now()))
		}

		fresh := r.publish(t, r.liveKey, "stopped_vehicle", offset(center, 100))
		got := expectDelta(t, s, stream.KindCreated, fresh.EventID)
		if got.Status != event.StatusActive || got.Lat != fresh.Lat || got.Description == nil || *got.Description != *fresh.Description {
			t.Errorf("created delta %+v; want the published event", got)
		}

		to := offset(center, -300)
		r.revise(t, r.liveKey, fresh.EventID, to)
		if got := expectDelta(t, s, stream.KindUpdated, fresh.EventID); got.Lat != to.Lat || got.UpdatedAt == nil {
			t.Errorf("updated delta at lat %v, updated_at %v; want the new extent %v and updated_at set", got.Lat, got.UpdatedAt, to.Lat)
		}

		r.signal(t, r.otherKey, fresh.EventID, event.ActionConfirm, "v0")
		if got := expectDelta(t, s, stream.KindSignal, fresh.EventID); got.ConfirmCount != 1 || got.Verification != event.VerificationConfirmed {
			t.Errorf("signal delta confirm_count %d verification %s; want 1 confirmed", got.ConfirmCount, got.Verification)
		}
		for i := 1; i <= event.DenyQuorum; i++ {
			r.signal(t, r.otherKey, fresh.EventID, event.ActionDeny, fmt.Sprintf("v%d", i))
			kind := stream.KindSignal
			if i == event.DenyQuorum {
				kind = stream.KindEnded
			}
			got := expectDelta(t, s, kind, fresh.EventID)
			if got.DenyCount != i {
				t.Errorf("delta after denial %d: deny_count %d", i, got.DenyCount)
			}
			if kind == stream.KindEnded && got.Status != event.StatusExpired {
				t.Errorf("ended delta status %q; want expired (deny quorum)", got.Status)
			}
		}
		// A repeated signal changes nothing (docs/api.md §3) and sends nothing: the next delta is
		// the next change.
		after := r.publish(t, r.liveKey, "accident", offset(center, 10))
		r.signal(t, r.otherKey, after.EventID, event.ActionConfirm, "x")
		r.signal(t, r.otherKey, after.EventID, event.ActionConfirm, "x")
		expectDelta(t, s, stream.KindCreated, after.EventID)
		expectDelta(t, s, stream.KindSignal, after.EventID)
		marker := r.publish(t, r.liveKey, "accident", offset(center, 20))
		expectDelta(t, s, stream.KindCreated, marker.EventID)
	})
}

// Every frame of a connection carries an id greater than the previous one (docs/api.md §10.2).
func TestFrameIDsIncrease(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t))
	s, _, _ := r.open(t, query(center, 1000), r.liveKey)
	var last int64
	check := func(f stream.Frame) {
		id, err := strconv.ParseInt(f.ID, 10, 64)
		if err != nil || id <= last {
			t.Fatalf("frame %s has id %q after %d; want an increasing id", f.Event, f.ID, last)
		}
		last = id
	}
	check(s.Next(t)) // snapshot
	r.timers.Fire(stream.KeepaliveInterval)
	check(s.Next(t))
	for range 3 {
		r.publish(t, r.liveKey, "accident", center)
		check(s.Next(t))
	}
	r.timers.Fire(stream.MaxConnectionAge)
	check(s.Next(t))
}

// docs/api.md §6 rule 5 and §10.2: a revision reaches every subscriber whose filter matches the
// old or the new extent (so one sees the event leave its area), and no other.
func TestRevisionReachesOldAndNewArea(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		from, to, elsewhere := center, offset(center, 4000), offset(center, 8000)
		ev := r.publish(t, r.liveKey, "accident", from)
		sOld, snapOld := r.mustOpen(t, query(from, 1000), r.liveKey)
		sNew, snapNew := r.mustOpen(t, query(to, 1000), r.liveKey)
		sFar, _ := r.mustOpen(t, query(elsewhere, 1000), r.liveKey)
		if len(snapOld.Events) != 1 || len(snapNew.Events) != 0 {
			t.Fatalf("snapshots hold %d and %d events; want 1 and 0", len(snapOld.Events), len(snapNew.Events))
		}
		r.revise(t, r.liveKey, ev.EventID, to)
		if got := expectDelta(t, sOld, stream.KindUpdated, ev.EventID); got.Lat != to.Lat {
			t.Errorf("old area's delta at lat %v; want the new extent %v", got.Lat, to.Lat)
		}
		expectDelta(t, sNew, stream.KindUpdated, ev.EventID)
		marker := r.publish(t, r.liveKey, "accident", elsewhere)
		expectDelta(t, sFar, stream.KindCreated, marker.EventID) // and nothing before it
	})
}

// docs/api.md §6 rules 1 and 6: filters (radius, type, min_confidence) and environments decide who
// gets a delta. A subscriber that must get nothing is checked with a marker published after:
// its next delta must be the marker's.
func TestFiltersAndEnvironments(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		type sub struct {
			name string
			s    *streamtest.Stream
		}
		open := func(name, q, key string) sub {
			s, _ := r.mustOpen(t, q, key)
			return sub{name, s}
		}
		liveAll := open("live, all types", query(center, 1000), r.liveKey)
		sandboxAll := open("sandbox, all types", query(center, 1000), r.sandboxKey)
		accidents := open("live, accidents only", query(center, 1000, "type", "accident"), r.liveKey)
		twoTypes := open("live, accident or congestion", query(center, 1000, "type", "accident", "type", "congestion"), r.liveKey)
		confident := open("live, confidence 0.7", query(center, 1000, "min_confidence", "0.7"), r.liveKey)
		small := open("live, 100 m", query(center, 100), r.liveKey)

		liveCongestion := r.publish(t, r.liveKey, "congestion", offset(center, 500))
		sandboxAccident := r.publish(t, r.sandboxKey, "accident", offset(center, 50))
		marker := r.publish(t, r.otherKey, "accident", offset(center, 50))
		confirmed := r.signal(t, r.liveKey, marker.EventID, event.ActionConfirm, "c1") // 0.75 >= 0.7

		want := map[string][]string{
			liveAll.name:    {liveCongestion.EventID, marker.EventID, marker.EventID},
			sandboxAll.name: {liveCongestion.EventID, sandboxAccident.EventID, marker.EventID, marker.EventID},
			accidents.name:  {marker.EventID, marker.EventID},
			twoTypes.name:   {liveCongestion.EventID, marker.EventID, marker.EventID},
			// 0.667 at publication is under 0.7: only the signal that lifted it to 0.75 arrives.
			confident.name: {marker.EventID},
			small.name:     {marker.EventID, marker.EventID},
		}
		if confirmed.Confidence < 0.7 {
			t.Fatalf("confidence after one confirmation %v; the case needs >= 0.7", confirmed.Confidence)
		}
		for _, sb := range []sub{liveAll, sandboxAll, accidents, twoTypes, confident, small} {
			var got []string
			for range want[sb.name] {
				_, ev := deltaOf(t, sb.s)
				got = append(got, ev.EventID)
			}
			if !slices.Equal(got, want[sb.name]) {
				t.Errorf("%s: deltas of %v; want %v", sb.name, got, want[sb.name])
			}
		}
	})
}

// docs/api.md §6 rule 4 and §3: natural expiry sends no delta, nor does the table's removal of
// expired items; a new snapshot no longer holds the event.
func TestNaturalExpirySendsNothing(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
		ev := r.publish(t, r.liveKey, "wrong_way_vehicle", center) // 20 min
		expectDelta(t, s, stream.KindCreated, ev.EventID)
		tab.Clock.Advance(21 * time.Minute)
		if st, ok := tab.Table.(*embedded.Store); ok {
			// The sweeper's TTL removals reach the feed as DynamoDB's would.
			if err := st.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		marker := r.publish(t, r.liveKey, "accident", center)
		expectDelta(t, s, stream.KindCreated, marker.EventID)
		_, snap := r.mustOpen(t, query(center, 1000), r.liveKey)
		if got := ids(snap.Events); !slices.Equal(got, []string{marker.EventID}) {
			t.Errorf("snapshot after expiry holds %v; want only %s", got, marker.EventID)
		}
	})
}

// docs/api.md §6 and §8: a keepalive every 20 s, with the dropped counter; bye
// max_connection_age with reconnect after 3300 s, then the end of the response; a reconnect
// gets a new, authoritative snapshot (rule 2).
func TestKeepaliveAndMaxAge(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
		for range 2 {
			tab.Clock.Advance(stream.KeepaliveInterval)
			r.timers.Fire(stream.KeepaliveInterval)
			var ka stream.KeepaliveData
			s.Expect(t, stream.FrameKeepalive, &ka)
			if ka.Dropped != 0 || ka.At != event.FormatTime(tab.Clock.Now()) {
				t.Errorf("keepalive %+v; want dropped 0 at %s", ka, event.FormatTime(tab.Clock.Now()))
			}
		}
		ev := r.publish(t, r.liveKey, "accident", center)
		expectDelta(t, s, stream.KindCreated, ev.EventID)

		if n := r.timers.Count(stream.MaxConnectionAge); n != 1 {
			t.Fatalf("%d end-of-life timers; want 1 for the one stream", n)
		}
		r.timers.Fire(stream.MaxConnectionAge)
		var bye stream.ByeData
		s.Expect(t, stream.FrameBye, &bye)
		if bye != (stream.ByeData{Reason: stream.ReasonMaxConnectionAge, Reconnect: true}) {
			t.Errorf("bye %+v; want max_connection_age, reconnect true", bye)
		}
		if f, err := s.NextErr(); !errors.Is(err, io.EOF) {
			t.Errorf("after bye: %v %v; want the end of the response", streamtest.Describe(f), err)
		}
		_, snap := r.mustOpen(t, query(center, 1000), r.liveKey)
		if got := ids(snap.Events); !slices.Equal(got, []string{ev.EventID}) {
			t.Errorf("snapshot on reconnect %v; want %s", got, ev.EventID)
		}
	})
}

// docs/api.md §6: a keepalive every 20 s whether deltas were sent or not, so that at most 20 s
// pass after a frame of any kind before the next: a proxy that closes connections idle for 30 s
// must never see a stream silent that long. The tick that follows a delta still sends one.
func TestKeepaliveAfterDeltas(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t))
	s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
	for i := range 3 {
		ev := r.publish(t, r.liveKey, "accident", offset(center, float64(10*i)))
		expectDelta(t, s, stream.KindCreated, ev.EventID)
		r.timers.Fire(stream.KeepaliveInterval)
		f, err := nextWithin(s, 10*time.Second)
		if err != nil {
			t.Fatalf("tick %d after a delta: %v; want a keepalive", i+1, err)
		}
		if f.Event != stream.FrameKeepalive {
			t.Fatalf("tick %d after a delta: frame %s; want a keepalive", i+1, streamtest.Describe(f))
		}
	}
}

// docs/api.md §10.1 (compression): a stream is sent as it is even to a client that accepts
// compressed answers, so that each frame reaches it when written; a large snapshot included.
func TestStreamIsNotCompressed(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t))
	for i := range 10 {
		r.publish(t, r.liveKey, "accident", offset(center, float64(50*i)))
	}
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/v1/stream?"+query(center, 1000), nil)
	req.Header.Set("Authorization", "Bearer "+r.liveKey)
	req.Header.Set("Accept-Encoding", "gzip, zstd")
	s, resp, body := streamtest.Open(t, r.client, req)
	if s == nil {
		t.Fatalf("GET /v1/stream: %d %s", resp.StatusCode, body)
	}
	if got := s.Resp.Header.Get("Content-Encoding"); got != "" {
		t.Fatalf("stream Content-Encoding %q; want none", got)
	}
	if snap := s.Snapshot(t); len(snap.Events) != 10 {
		t.Errorf("snapshot of %d events; want 10", len(snap.Events))
	}
	r.timers.Fire(stream.KeepaliveInterval)
	s.Expect(t, stream.FrameKeepalive, nil)
}

// errNoFrame is nextWithin's answer when no frame came in time.
var errNoFrame = errors.New("no frame")

// nextWithin reads the next frame of s, or gives up after d with errNoFrame (the stream is then
// closed by the test's cleanup, which ends the read).
func nextWithin(s *streamtest.Stream, d time.Duration) (stream.Frame, error) {
	type read struct {
		f   stream.Frame
		err error
	}
	got := make(chan read, 1)
	go func() {
		f, err := s.NextErr()
		got <- read{f, err}
	}()
	select {
	case g := <-got:
		return g.f, g.err
	case <-time.After(d):
		return stream.Frame{}, fmt.Errorf("%w within %v", errNoFrame, d)
	}
}

// docs/api.md §6: bye snapshot_unavailable (reconnect true) when the initial state cannot be read,
// never an empty snapshot.
func TestSnapshotUnavailable(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		r.publish(t, r.liveKey, "accident", center)
		r.table.failQuery.Store(true)
		s, status, body := r.open(t, query(center, 1000), r.liveKey)
		if s == nil {
			t.Fatalf("GET /v1/stream: %d %s; want the stream to begin and say bye", status, body)
		}
		var bye stream.ByeData
		s.Expect(t, stream.FrameBye, &bye)
		if bye != (stream.ByeData{Reason: stream.ReasonSnapshotUnavailable, Reconnect: true}) {
			t.Errorf("bye %+v; want snapshot_unavailable, reconnect true", bye)
		}
		if _, err := s.NextErr(); !errors.Is(err, io.EOF) {
			t.Errorf("after bye: %v; want the end of the response", err)
		}
		r.table.failQuery.Store(false)
		if _, snap := r.mustOpen(t, query(center, 1000), r.liveKey); len(snap.Events) != 1 {
			t.Errorf("snapshot once the table is back holds %d events; want 1", len(snap.Events))
		}
	})
}

// docs/architecture.md §3: a subscriber registers before it reads its snapshot, so a change
// committed while the snapshot is read is not lost: the event is in the snapshot or comes as a
// delta, and not both (the snapshot already showing it, the delta is not sent again).
func TestNoChangeLostBetweenSnapshotAndFirstDelta(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		var during event.EventPublic
		hook := func() { during = r.publish(t, r.liveKey, "accident", offset(center, 30)) }
		r.table.afterQuery.Store(&hook)
		s, snap := r.mustOpen(t, query(center, 1000), r.liveKey)
		if during.EventID == "" {
			t.Fatal("the snapshot read no area partition")
		}
		inSnapshot := slices.Contains(ids(snap.Events), during.EventID)
		marker := r.publish(t, r.liveKey, "accident", offset(center, 40))
		_, first := deltaOf(t, s)
		switch {
		case inSnapshot && first.EventID != marker.EventID:
			t.Errorf("first delta of %s; want the marker %s: %s is in the snapshot already", first.EventID, marker.EventID, during.EventID)
		case !inSnapshot && first.EventID != during.EventID:
			t.Fatalf("first delta of %s; want %s, committed while the snapshot was read and not in it", first.EventID, during.EventID)
		case !inSnapshot:
			expectDelta(t, s, stream.KindCreated, marker.EventID)
		}
	})
}

// Shutdown (daemon.Options.OnShutdown): every open stream says bye with reconnect and ends;
// a stream opened while draining says bye at once.
func TestDrain(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t))
	s1, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
	s2, _ := r.mustOpen(t, query(offset(center, 5000), 1000), r.sandboxKey)
	r.hub.Drain()
	for _, s := range []*streamtest.Stream{s1, s2} {
		var bye stream.ByeData
		s.Expect(t, stream.FrameBye, &bye)
		if !bye.Reconnect {
			t.Errorf("bye %+v; want reconnect true", bye)
		}
		if _, err := s.NextErr(); !errors.Is(err, io.EOF) {
			t.Errorf("after bye: %v; want the end of the response", err)
		}
	}
	s3, status, _ := r.open(t, query(center, 1000), r.liveKey)
	if s3 == nil {
		t.Fatalf("GET /v1/stream while draining: %d; want 200 and a bye", status)
	}
	var bye stream.ByeData
	s3.Expect(t, stream.FrameBye, &bye)
	if bye.Reason != stream.ReasonSnapshotUnavailable || !bye.Reconnect {
		t.Errorf("bye while draining %+v; want snapshot_unavailable, reconnect", bye)
	}
}

// Over HTTP/2 a stream cannot take its connection over; it writes through the ResponseWriter
// and flushes, with the same frames.
func TestStreamOverHTTP2(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t), rigOptions{http2: true})
	before := r.publish(t, r.liveKey, "accident", center)
	s, snap := r.mustOpen(t, query(center, 1000), r.liveKey)
	if s.Resp.ProtoMajor != 2 {
		t.Fatalf("protocol %s; want HTTP/2", s.Resp.Proto)
	}
	if got := ids(snap.Events); !slices.Equal(got, []string{before.EventID}) {
		t.Errorf("snapshot %v; want %s", got, before.EventID)
	}
	r.timers.Fire(stream.KeepaliveInterval)
	s.Expect(t, stream.FrameKeepalive, nil)
	ev := r.publish(t, r.liveKey, "accident", center)
	expectDelta(t, s, stream.KindCreated, ev.EventID)
	r.hub.Drain()
	var bye stream.ByeData
	s.Expect(t, stream.FrameBye, &bye)
	if _, err := s.NextErr(); !errors.Is(err, io.EOF) {
		t.Errorf("after bye: %v; want the end of the response", err)
	}
}
