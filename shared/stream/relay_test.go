package stream_test

import (
	"context"
	"testing"

	"github.com/roadevents/roadevents/shared/relay"
	"github.com/roadevents/roadevents/shared/relay/relaytest"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
)

// relayedFeed runs the relay from tab's feed into a fresh Log until the test ends, and returns
// the Log once the relay's starting gap is in it, for hubs to follow as streamers do.
func relayedFeed(t *testing.T, tab tables.Table) *relay.Log {
	t.Helper()
	log := relaytest.NewLog(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	wants := stream.EventsDecoder().(stream.KeyFilter).Wants
	go func() { done <- relay.Run(ctx, tab.Feed, log, wants) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay.Run = %v", err)
		}
	})
	relaytest.WaitStarted(t, log)
	return log
}

// docs/architecture.md §3 and docs/api.md §10.2 (Stream), resuming: streamers that follow the
// relay's log number the changes alike, so a client whose streamer went away resumes on another
// one: it is sent every delta it missed, in order and once, without a snapshot.
func TestResumeOnAnotherStreamer(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	log := relayedFeed(t, tab)
	a, b := newRig(t, tab, following(log)), newRig(t, tab, following(log))

	last := leaveAfterOneDelta(t, a)
	want := missWhileAway(t, a)
	s, status, body := b.open(t, query(center, 1000), b.liveKey, "Last-Event-ID", last)
	if s == nil {
		t.Fatalf("resume on the other streamer: %d %s", status, body)
	}
	expectMissed(t, s, want)
	if st := b.hub.Stats(); st.ResumedFromFeed+st.ResumedFromMemory != 1 {
		t.Errorf("stats of the other streamer %+v; want one stream resumed", st)
	}
}

// following is a rig whose hub follows feed (a streamer behind the relay), resuming streams.
func following(feed store.Feed) rigOptions {
	return rigOptions{resumeWindow: testResumeWindow, feed: func(store.Feed) store.Feed { return feed }}
}

// hold returns f held: its followers read nothing until held is closed.
func hold(f store.Replayer) *heldFeed { return &heldFeed{Replayer: f, held: make(chan struct{})} }

// heldFeed is a Replayer whose followers stop reading while held: a streamer that lags behind
// the others on the relay's log.
type heldFeed struct {
	store.Replayer
	held chan struct{} // closed when released
}

func (f *heldFeed) Follow(ctx context.Context) (store.Cursor, error) {
	cur, err := f.Replayer.Follow(ctx)
	return heldCursor{Cursor: cur, held: f.held}, err
}

type heldCursor struct {
	store.Cursor
	held chan struct{}
}

// After tells where the log was followed, as the log's own cursor does.
func (c heldCursor) After() uint64 { return c.Cursor.(store.PositionedCursor).After() }

func (c heldCursor) Next(ctx context.Context) (store.Change, error) {
	select {
	case <-c.held:
	case <-ctx.Done():
		return store.Change{}, ctx.Err()
	}
	return c.Cursor.Next(ctx)
}

// A client that comes back to a streamer that has not yet read as far along the log as the
// one it left is sent no snapshot and nothing twice: it already has every change up to its
// last frame, and its deltas begin after it as the lagging streamer catches up.
func TestResumeOnAStreamerThatLags(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	log := relayedFeed(t, tab)
	lagging := hold(log)
	a, b := newRig(t, tab, following(log)), newRig(t, tab, following(lagging))

	last := leaveAfterOneDelta(t, a) // b has read nothing of it
	s, status, body := b.open(t, query(center, 1000), b.liveKey, "Last-Event-ID", last)
	if s == nil {
		t.Fatalf("resume on the lagging streamer: %d %s", status, body)
	}
	next := a.publish(t, a.liveKey, "accident", offset(center, 40))
	close(lagging.held)
	expectMissed(t, s, []string{next.EventID})
}

// A stream opened before its streamer has read any change resumes from its snapshot's id: the
// snapshot stands where the streamer began to follow the log, not before the relay's gap.
func TestResumeFromASnapshotTakenBeforeAnyChange(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	log := relayedFeed(t, tab)
	held := hold(log)
	r := newRig(t, tab, following(held))
	s, status, body := r.open(t, query(center, 1000), r.liveKey)
	if s == nil {
		t.Fatalf("open: %d %s", status, body)
	}
	snap := s.Next(t)
	s.Close()
	close(held.held)
	missed := r.publish(t, r.liveKey, "accident", offset(center, 30))
	s, status, body = r.open(t, query(center, 1000), r.liveKey, "Last-Event-ID", snap.ID)
	if s == nil {
		t.Fatalf("resume: %d %s", status, body)
	}
	expectMissed(t, s, []string{missed.EventID})
}
