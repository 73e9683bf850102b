package stream_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
)

// gateCursor tells the test when the hub waits in Next, so that the test can act at exactly
// that point: after every earlier record was handled, before the next one is read.
type gateCursor struct {
	waiting chan struct{}
	changes chan store.Change
}

func (c *gateCursor) Next(ctx context.Context) (store.Change, error) {
	select {
	case c.waiting <- struct{}{}:
	case <-ctx.Done():
		return store.Change{}, ctx.Err()
	}
	select {
	case ch := <-c.changes:
		return ch, nil
	case <-ctx.Done():
		return store.Change{}, ctx.Err()
	}
}

func (c *gateCursor) Close() error { return nil }

type gateFeed struct{ cur *gateCursor }

func (f gateFeed) Follow(context.Context) (store.Cursor, error) { return f.cur, nil }

// countingDecoder counts the records the hub asks it to decode; it keeps testDecoder's key
// filter.
type countingDecoder struct {
	stream.KeyFilter
	decoded atomic.Int64
}

func (d *countingDecoder) Decode(ch store.Change) (stream.EventChange, bool, error) {
	d.decoded.Add(1)
	return testDecoder.Decode(ch)
}

// The hub decodes nothing while no subscription exists and never decodes a record that is
// not an event item, yet a subscriber that registered while the hub waited for the feed's
// next record gets that record (docs/architecture.md §3: register, snapshot, deltas): the
// write it carries was committed after the subscriber registered, so its snapshot could not
// hold it. A hub that checked for subscribers before waiting for the record would skip it.
func TestEmptyHubSkipsWithoutLosingChanges(t *testing.T) {
	t.Parallel()
	cur := &gateCursor{waiting: make(chan struct{}), changes: make(chan store.Change)}
	dec := &countingDecoder{KeyFilter: testDecoder.(stream.KeyFilter)}
	h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.Run(ctx, gateFeed{cur}, dec) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v at the end; want nil", err)
		}
	}()
	// send hands the hub one record once it waits for it, and returns once the hub has
	// handled it (it waits for the record after).
	send := func(ch store.Change) {
		<-cur.waiting
		cur.changes <- ch
	}
	insert := func(id string) store.Change {
		it := testItem(newEvent(t, id, "accident", event.EnvironmentLive, center))
		return store.Change{Kind: store.ChangeInsert, Key: it.Key(), New: it}
	}
	index := store.Change{Kind: store.ChangeInsert, Key: store.Key{PK: "area#live#871f8d7a4ffffff", SK: "ev_x"}, New: store.Item{}}

	send(insert("ev_unwatched"))
	send(index)
	<-cur.waiting // ev_unwatched and the index item are handled
	if got := dec.decoded.Load(); got != 0 {
		t.Errorf("decoded %d records with no subscription; want 0", got)
	}
	if got := h.Stats().Skipped; got != 1 {
		t.Errorf("Stats().Skipped = %d; want 1 (the event item; the index item is no event)", got)
	}

	// The hub now waits for the next record: a subscriber registers, then the write commits.
	s := subscribe(t, h, live, stream.Filter{Center: center, Radius: 1000})
	cur.changes <- insert("ev_after_subscribe")
	send(index)
	if q := s.Take(nil); len(q) != 1 || q[0].EventID != "ev_after_subscribe" {
		ids := []string{}
		for _, d := range q {
			ids = append(ids, d.EventID)
		}
		t.Fatalf("queued %v; want [ev_after_subscribe], committed after the subscriber registered", ids)
	}
	if got := dec.decoded.Load(); got != 1 {
		t.Errorf("decoded %d records; want 1: the event item, not the index items", got)
	}

	s.Close()
	send(insert("ev_after_close"))
	<-cur.waiting
	if got := dec.decoded.Load(); got != 1 {
		t.Errorf("decoded %d records after the last subscriber left; want still 1", got)
	}
	if got := h.Stats().Skipped; got != 2 {
		t.Errorf("Stats().Skipped = %d; want 2", got)
	}
}
