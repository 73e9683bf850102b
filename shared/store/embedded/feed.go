package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/roadevents/roadevents/shared/store"
)

var (
	_ store.PositionedCursor = (*Cursor)(nil)
	_ store.ImageFilter      = (*Cursor)(nil)
)

// ErrCursorClosed is returned by Next on a cursor that was closed.
var ErrCursorClosed = errors.New("embedded: cursor closed")

// cursorBatch is how many records a cursor reads per transaction.
const cursorBatch = 64

// Follow returns a cursor at the end of the feed: it delivers every change committed after
// Follow returns, in commit order (one total order, stronger than DynamoDB Streams' order per
// item).
func (s *Store) Follow(ctx context.Context) (store.Cursor, error) {
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	defer s.gate.RUnlock()
	return &Cursor{s: s, next: s.lastSeq() + 1, done: make(chan struct{})}, nil
}

// lastSeq is the last position ever assigned, even if trimmed since.
func (s *Store) lastSeq() uint64 {
	_, last := s.feedHead()
	return last
}

// feedHead returns the pending layers new views see and the feed's last position, as one.
func (s *Store) feedHead() ([]*layer, uint64) {
	s.viewMu.RLock()
	defer s.viewMu.RUnlock()
	return s.layers, s.feedSeq
}

var _ store.Replayer = (*Store)(nil)

// FollowAfter returns a cursor that delivers the feed from position pos+1 on; it fails with
// store.ErrReplay when that record was trimmed (Options.FeedRetention) or pos is past the last
// position assigned.
func (s *Store) FollowAfter(ctx context.Context, pos uint64) (store.Cursor, error) {
	if err := s.enter(ctx); err != nil {
		return nil, fmt.Errorf("follow after %d: %w", pos, err)
	}
	defer s.gate.RUnlock()
	last := s.lastSeq()
	if pos > last {
		return nil, fmt.Errorf("%w: position %d is past the feed's end, %d", store.ErrReplay, pos, last)
	}
	if pos < last {
		// The next record must still be there: positions are assigned without gaps, so the
		// first record kept tells whether pos+1 was trimmed.
		err := s.viewDo(func(v *view) error {
			k, _ := v.cursor(bFeed).First()
			if k == nil || binary.BigEndian.Uint64(k) > pos+1 {
				return fmt.Errorf("%w: position %d was trimmed", store.ErrReplay, pos+1)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return &Cursor{s: s, next: pos + 1, done: make(chan struct{})}, nil
}

// Last returns the position of the last change recorded.
func (s *Store) Last(ctx context.Context) (uint64, error) {
	if err := s.enter(ctx); err != nil {
		return 0, fmt.Errorf("last position: %w", err)
	}
	defer s.gate.RUnlock()
	return s.lastSeq(), nil
}

// Cursor reads the embedded store's feed forward. Next and Close may be called from different
// goroutines; Next itself is not for concurrent use.
type Cursor struct {
	s    *Store
	next uint64 // feed position of the next record to deliver
	buf  []store.Change
	// images, when set (FilterImages), tells which records' images to decode.
	images func(store.Key) bool

	done      chan struct{}
	closeOnce sync.Once
}

// Next returns the next change, waiting for one until ctx ends, the cursor is closed
// (ErrCursorClosed) or the store closes (ErrClosed). It returns ErrTrimmed when the next
// records were trimmed before this cursor read them.
func (c *Cursor) Next(ctx context.Context) (store.Change, error) {
	for {
		if err := ctx.Err(); err != nil {
			return store.Change{}, err
		}
		select {
		case <-c.done:
			return store.Change{}, ErrCursorClosed
		default:
		}
		if len(c.buf) > 0 {
			ch := c.buf[0]
			c.buf = c.buf[1:]
			return ch, nil
		}
		// Take the wake channel before reading, so a commit between the read and the wait
		// still wakes us.
		wake := c.s.wakeChan()
		if err := c.fill(ctx); err != nil {
			return store.Change{}, err
		}
		if len(c.buf) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return store.Change{}, ctx.Err()
		case <-c.done:
			return store.Change{}, ErrCursorClosed
		case <-c.s.closing:
			return store.Change{}, ErrClosed
		}
	}
}

// fill reads the records from position c.next on, up to cursorBatch of them.
func (c *Cursor) fill(ctx context.Context) error {
	if err := c.s.enter(ctx); err != nil {
		return err
	}
	defer c.s.gate.RUnlock()
	// A follower at the feed's head (the streams' hub, the webhooks' producer) reads from
	// memory: nothing yet, or its next records in the pending layers. Through bbolt, a read
	// transaction and a cursor merging the layers with it were made twice per change, once
	// on the delivery's path (docs/performance.md §8).
	layers, last := c.s.feedHead()
	if c.next > last {
		return nil
	}
	if err := c.fillPending(layers); err != nil || len(c.buf) > 0 {
		return err
	}
	return c.s.viewDo(func(v *view) error {
		cur := v.cursor(bFeed)
		want := c.next
		for k, v := cur.Seek(seqKey(want)); k != nil && len(c.buf) < cursorBatch; k, v = cur.Next() {
			if len(k) != 8 {
				return corrupt("feed key of %d bytes", len(k))
			}
			seq := binary.BigEndian.Uint64(k)
			if seq != want {
				// Positions are assigned without gaps in the writing transaction, so a gap
				// means the sweeper trimmed records this cursor had not read.
				return fmt.Errorf("%w: position %d, next available %d", ErrTrimmed, want, seq)
			}
			ch, err := decodeChangeImages(seq, v, c.images)
			if err != nil {
				return err
			}
			c.buf = append(c.buf, ch)
			want++
		}
		c.next = want
		return nil
	})
}

// fillPending reads the records from position c.next on from layers, into the empty c.buf.
// The layers hold the newest commits, so once the first record is there the records after it
// are too, up to the last the layers show. When the first is not there, or trimmed there,
// c.buf stays empty and the reading through bbolt finds it, or reports the trim.
func (c *Cursor) fillPending(layers []*layer) error {
	for len(c.buf) < cursorBatch {
		e, ok := pendingEntry(layers, bFeed, seqKey(c.next))
		if !ok || e.del {
			break
		}
		ch, err := decodeChangeImages(c.next, e.val, c.images)
		if err != nil {
			return err
		}
		c.buf = append(c.buf, ch)
		c.next++
	}
	return nil
}

// After is the position of the record before the first this cursor delivers (0 for none).
func (c *Cursor) After() uint64 { return c.next - 1 }

// FilterImages makes Next leave out the images of the changes whose key wants rejects: their
// decoding is most of what reading the feed costs. Call it before the first Next.
func (c *Cursor) FilterImages(wants func(store.Key) bool) { c.images = wants }

// Close ends the cursor: a Next in progress or later returns ErrCursorClosed.
func (c *Cursor) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return nil
}
