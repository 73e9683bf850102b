package stream_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
)

// fakeFeed hands out cursors the test feeds and breaks.
type fakeFeed struct {
	cursors chan *fakeCursor
}

type fakeCursor struct {
	changes chan store.Change
	fail    chan error
	closed  chan struct{}
	once    sync.Once
}

func (f *fakeFeed) Follow(ctx context.Context) (store.Cursor, error) {
	c := &fakeCursor{changes: make(chan store.Change), fail: make(chan error, 1), closed: make(chan struct{})}
	select {
	case f.cursors <- c:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeCursor) Next(ctx context.Context) (store.Change, error) {
	select {
	case ch := <-c.changes:
		return ch, nil
	case err := <-c.fail:
		return store.Change{}, err
	case <-ctx.Done():
		return store.Change{}, ctx.Err()
	}
}

func (c *fakeCursor) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

var errTrimmed = errors.New("test: records trimmed")

// When the feed fails, changes may have been lost: every subscription made before then is
// ended (Lost) and the hub is not Ready until it follows the feed again; subscriptions made
// afterwards get the changes of the new cursor. A record that cannot be decoded is skipped.
func TestRunFollowsAgainAfterTheFeedFails(t *testing.T) {
	t.Parallel()
	feed := &fakeFeed{cursors: make(chan *fakeCursor)}
	h := stream.NewHub(stream.HubOptions{
		Clock: clock.NewFake(t0), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RetryInterval: 1,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx, feed, testDecoder) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v at the end; want nil", err)
		}
	}()

	first := <-feed.cursors
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	before := subscribe(t, h, live, stream.Filter{Center: center, Radius: 1000})
	ev := newEvent(t, "ev_1", "accident", event.EnvironmentLive, center)
	first.changes <- store.Change{Kind: store.ChangeInsert, Key: testItem(ev).Key(), New: store.Item{store.AttrPK: "event#x", store.AttrSK: "event", "data": "{"}}
	first.changes <- store.Change{Kind: store.ChangeInsert, Key: testItem(ev).Key(), New: testItem(ev)}
	<-before.Notify()
	if q := before.Take(nil); len(q) != 1 || q[0].EventID != ev.ID {
		t.Fatalf("queued %d deltas; want the one decodable change", len(q))
	}

	first.fail <- errTrimmed
	<-before.Lost()
	<-first.closed
	second := <-feed.cursors
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	after := subscribe(t, h, live, stream.Filter{Center: center, Radius: 1000})
	ev2 := newEvent(t, "ev_2", "accident", event.EnvironmentLive, center)
	second.changes <- store.Change{Kind: store.ChangeInsert, Key: testItem(ev2).Key(), New: testItem(ev2)}
	<-after.Notify()
	if q := after.Take(nil); len(q) != 1 || q[0].EventID != ev2.ID {
		t.Errorf("new subscription queued %d deltas; want the change of the new cursor", len(q))
	}
	select {
	case <-after.Lost():
		t.Errorf("a subscription made after the feed came back is marked lost")
	default:
	}
}

// Drain makes the hub unready for good, so that a health check takes the process out of the
// load balancer while its streams say bye.
func TestDrainIsNotReady(t *testing.T) {
	t.Parallel()
	feed := &fakeFeed{cursors: make(chan *fakeCursor, 1)}
	h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx, feed, testDecoder)
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if !h.Ready() {
		t.Fatal("Ready() = false while following")
	}
	h.Drain()
	h.Drain()
	if h.Ready() {
		t.Errorf("Ready() = true after Drain; want false")
	}
	<-h.Draining()
}
