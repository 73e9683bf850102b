package stream_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/stream/streamtest"
)

const testResumeWindow = 5 * time.Minute

// leaveAfterOneDelta opens a stream around center, reads its snapshot and the delta of one
// publish, closes it and returns the id of that delta's frame: where the client left off.
func leaveAfterOneDelta(t *testing.T, r *rig) string {
	t.Helper()
	s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
	ev := r.publish(t, r.liveKey, "accident", offset(center, 100))
	f := s.Next(t)
	if f.Event != stream.FrameEvent {
		t.Fatalf("frame %s; want the delta of %s", streamtest.Describe(f), ev.EventID)
	}
	s.Close()
	return f.ID
}

// missWhileAway makes 100 changes that a live stream around center must be sent, among
// changes it must not (outside its circle, in the sandbox): 60 publishes, 20 revisions and 20
// signals, and returns the ids of the events the 100 deltas are of, in order.
func missWhileAway(t *testing.T, r *rig) []string {
	t.Helper()
	var want, published []string
	for i := range 60 {
		ev := r.publish(t, r.liveKey, "accident", offset(center, float64(10+i*10)))
		published = append(published, ev.EventID)
		want = append(want, ev.EventID)
		if i%10 == 0 {
			r.publish(t, r.liveKey, "congestion", offset(center, 5000)) // outside 1000 m
			r.publish(t, r.sandboxKey, "accident", offset(center, 50))  // sandbox: not for a live key
		}
	}
	for _, id := range published[:20] {
		r.revise(t, r.liveKey, id, offset(center, 300))
		want = append(want, id)
	}
	for i, id := range published[20:40] {
		r.signal(t, r.otherKey, id, "confirm", fmt.Sprintf("reporter-%d", i))
		want = append(want, id)
	}
	return want
}

// expectMissed reads the next len(want) frames, which must be the deltas of want's events in
// order with increasing ids, and returns the id of the last.
func expectMissed(t *testing.T, s *streamtest.Stream, want []string) string {
	t.Helper()
	var last int64
	for i, id := range want {
		f := s.Next(t)
		if f.Event != stream.FrameEvent {
			t.Fatalf("frame %d: %s; want a delta of %s (no snapshot)", i, streamtest.Describe(f), id)
		}
		var got struct {
			Event struct {
				EventID string `json:"event_id"`
			} `json:"event"`
		}
		if err := json.Unmarshal(f.Data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Event.EventID != id {
			t.Fatalf("delta %d is of %s; want %s", i, got.Event.EventID, id)
		}
		n, err := strconv.ParseInt(f.ID, 10, 64)
		if err != nil || n <= last {
			t.Fatalf("delta %d has id %q after %d; want increasing ids", i, f.ID, last)
		}
		last = n
	}
	return strconv.FormatInt(last, 10)
}

// docs/api.md §10.2 (Stream), resuming: a client that reconnects naming the last frame it
// received, within the resume window, is sent every delta it missed that its filter and
// credential match, in order and once each, then the live deltas, without a snapshot; by the
// Last-Event-ID header or, for a browser's new EventSource, the last_event_id parameter.
func TestResumeSendsWhatWasMissed(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"header", "query"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, tables.Embedded(t), rigOptions{resumeWindow: testResumeWindow})
			last := leaveAfterOneDelta(t, r)
			want := missWhileAway(t, r)
			r.tab.Clock.Advance(testResumeWindow - time.Second)

			q := query(center, 1000)
			var header []string
			if how == "header" {
				header = []string{"Last-Event-ID", last}
			} else {
				q += "&last_event_id=" + last
			}
			s, status, body := r.open(t, q, r.liveKey, header...)
			if s == nil {
				t.Fatalf("resume: %d %s", status, body)
			}
			live := r.publish(t, r.liveKey, "accident", offset(center, 20))
			lastID := expectMissed(t, s, append(want, live.EventID)) // then the live delta
			s.Close()

			// Resuming from the last frame again misses nothing and repeats nothing: the live
			// delta after it comes next.
			s, status, body = r.open(t, query(center, 1000), r.liveKey, "Last-Event-ID", lastID)
			if s == nil {
				t.Fatalf("resume: %d %s", status, body)
			}
			next := r.publish(t, r.liveKey, "accident", offset(center, 30))
			expectMissed(t, s, []string{next.EventID})
		})
	}
}

// watcher is a stream 30 km from the rig's centre.
type watcher struct{ *streamtest.Stream }

func watchFarAway(t *testing.T, r *rig) watcher {
	t.Helper()
	w, _ := r.mustOpen(t, query(offset(center, 30000), 1000), r.liveKey)
	t.Cleanup(w.Close)
	return watcher{w}
}

// caughtUp returns once the hub has dispatched every change made so far: the watcher gets a
// marker published now, after all of them. A hub still behind the feed when a client resumes
// counts what it missed against what it has dispatched, and sends the rest live, in order,
// rather than a snapshot; the fallbacks are about changes the hub has seen.
func (w watcher) caughtUp(t *testing.T, r *rig) {
	t.Helper()
	marker := r.publish(t, r.liveKey, "accident", offset(center, 30000))
	for {
		if f := w.Next(t); strings.Contains(string(f.Data), marker.EventID) {
			return
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// docs/api.md §10.2 (Stream), resuming: a stream begins with a snapshot as always when the
// client was away longer than the resume window, named an id the server never gave, sent a
// Last-Event-ID that is no id of ours, or missed more deltas than a connection queues; and
// when the server resumes nothing (no window, or a change feed without positions).
func TestResumeFallsBackToASnapshot(t *testing.T) {
	t.Parallel()
	hidePositions := func(f store.Feed) store.Feed { return struct{ store.Feed }{f} }
	for _, tc := range []struct {
		name string
		opts rigOptions
		// away runs between leaving and coming back and returns the Last-Event-ID to send.
		away func(t *testing.T, r *rig, last string) string
	}{
		{"away longer than the window", rigOptions{resumeWindow: testResumeWindow}, func(t *testing.T, r *rig, last string) string {
			// The hub stamps a change when it dispatches it: the clock moves on only once it has.
			before := r.hub.Stats().Dispatched
			r.publish(t, r.liveKey, "accident", offset(center, 10))
			apitest.Eventually(t, "the hub dispatches the change", func() bool { return r.hub.Stats().Dispatched > before })
			r.tab.Clock.Advance(testResumeWindow + time.Second)
			return last
		}},
		{"an id from the future", rigOptions{resumeWindow: testResumeWindow}, func(t *testing.T, r *rig, last string) string {
			return strconv.FormatInt(mustInt(t, last)+1_000_000_000, 10)
		}},
		{"not an id", rigOptions{resumeWindow: testResumeWindow}, func(t *testing.T, r *rig, last string) string {
			return "ev_" + last
		}},
		{"more missed than a connection queues", rigOptions{resumeWindow: testResumeWindow}, func(t *testing.T, r *rig, last string) string {
			for i := range stream.QueueSize + 1 {
				r.publish(t, r.liveKey, "accident", offset(center, float64(i%900)))
			}
			return last
		}},
		{"resuming off", rigOptions{}, func(t *testing.T, r *rig, last string) string {
			r.publish(t, r.liveKey, "accident", offset(center, 10))
			return last
		}},
		{"a feed without positions", rigOptions{resumeWindow: testResumeWindow, feed: hidePositions}, func(t *testing.T, r *rig, last string) string {
			r.publish(t, r.liveKey, "accident", offset(center, 10))
			return last
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, tables.Embedded(t), tc.opts)
			last := leaveAfterOneDelta(t, r)
			w := watchFarAway(t, r)
			id := tc.away(t, r, last)
			w.caughtUp(t, r)
			s, status, body := r.open(t, query(center, 1000), r.liveKey, "Last-Event-ID", id)
			if s == nil {
				t.Fatalf("reconnect: %d %s", status, body)
			}
			if f := s.Next(t); f.Event != stream.FrameSnapshot {
				t.Fatalf("first frame %s; want a snapshot", streamtest.Describe(f))
			}
		})
	}
}

// docs/api.md §7: last_event_id is an integer; anything else is refused before the stream
// begins, as every bad query parameter is.
func TestResumeQueryParameterIsValidated(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t), rigOptions{resumeWindow: testResumeWindow})
	for _, v := range []string{"abc", "-1", "1.5"} {
		_, status, body := r.open(t, query(center, 1000)+"&last_event_id="+v, r.liveKey)
		if status != http.StatusUnprocessableEntity {
			t.Errorf("last_event_id=%s: %d %s; want 422", v, status, body)
		}
	}
}

// A resumed stream's deltas are those of its own filter and credential: a sandbox key, which
// is served both environments (docs/api.md §6 rule 6), gets the sandbox event it missed; a live
// key's stream over another circle gets none of these.
func TestResumeKeepsTheFilter(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t), rigOptions{resumeWindow: testResumeWindow})
	far := offset(center, 20000)
	s, _ := r.mustOpen(t, query(far, 1000), r.liveKey)
	// Nothing is published there: a keepalive gives the id to resume from.
	r.timers.Fire(stream.KeepaliveInterval)
	ka := s.Next(t)
	s.Close()
	sand, _ := r.mustOpen(t, query(center, 1000), r.sandboxKey)
	r.publish(t, r.liveKey, "accident", offset(center, 10))
	f := sand.Next(t)
	sand.Close()

	missed := r.publish(t, r.sandboxKey, "accident", offset(center, 20))
	s, status, body := r.open(t, query(center, 1000), r.sandboxKey, "Last-Event-ID", f.ID)
	if s == nil {
		t.Fatalf("resume: %d %s", status, body)
	}
	expectMissed(t, s, []string{missed.EventID})

	s, status, body = r.open(t, query(far, 1000), r.liveKey, "Last-Event-ID", ka.ID)
	if s == nil {
		t.Fatalf("resume: %d %s", status, body)
	}
	marker := r.publish(t, r.liveKey, "accident", geo.Point{Lat: far.Lat, Lon: far.Lon})
	expectMissed(t, s, []string{marker.EventID})
}

// A resuming stream is served from the deltas the hub dispatched lately while they reach back
// to its last frame (no decoding again, so thousands coming back together cost little), and
// from the feed read again when they do not: after a spell without subscribers, whose changes
// the hub did not decode. Both send the same deltas.
func TestResumeFromMemoryOrFromTheFeed(t *testing.T) {
	t.Parallel()
	for _, fromMemory := range []bool{true, false} {
		t.Run(fmt.Sprintf("from memory %v", fromMemory), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, tables.Embedded(t), rigOptions{resumeWindow: testResumeWindow})
			if fromMemory {
				r.mustOpen(t, query(offset(center, 20000), 1000), r.liveKey) // someone stays
			}
			last := leaveAfterOneDelta(t, r)
			if !fromMemory {
				deadline := time.Now().Add(30 * time.Second)
				for r.hub.Stats().Subscribers > 0 {
					if time.Now().After(deadline) {
						t.Fatal("the closed stream's subscription is still there after 30 s")
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			var want []string
			for i := range 3 {
				want = append(want, r.publish(t, r.liveKey, "accident", offset(center, float64(100+i))).EventID)
			}
			s, status, body := r.open(t, query(center, 1000), r.liveKey, "Last-Event-ID", last)
			if s == nil {
				t.Fatalf("resume: %d %s", status, body)
			}
			expectMissed(t, s, want)
			st := r.hub.Stats()
			if fromMemory && st.ResumedFromMemory != 1 || !fromMemory && st.ResumedFromFeed != 1 {
				t.Errorf("stats %+v; want the stream resumed from memory %v", st, fromMemory)
			}
		})
	}
}

// docs/api.md §10.2 (Stream): a change the snapshot already shows is not sent again, even when
// the hub reads it from the feed only after the snapshot, and after the first keepalive: every
// change the feed had recorded when the snapshot was read is in it.
func TestSnapshotCoversWhatTheHubHasYetToRead(t *testing.T) {
	t.Parallel()
	var held *heldFeed
	r := newRig(t, tables.Embedded(t), rigOptions{resumeWindow: testResumeWindow, feed: func(f store.Feed) store.Feed {
		held = hold(f.(store.Replayer))
		return held
	}})
	shown := r.publish(t, r.liveKey, "accident", offset(center, 100))
	s, snap := r.mustOpen(t, query(center, 1000), r.liveKey)
	if got := ids(snap.Events); len(got) != 1 || got[0] != shown.EventID {
		t.Fatalf("snapshot %v; want %s", got, shown.EventID)
	}
	r.timers.Fire(stream.KeepaliveInterval)
	if f := s.Next(t); f.Event != stream.FrameKeepalive {
		t.Fatalf("frame %s; want the keepalive", streamtest.Describe(f))
	}
	close(held.held)
	next := r.publish(t, r.liveKey, "accident", offset(center, 200))
	expectMissed(t, s, []string{next.EventID})
}
