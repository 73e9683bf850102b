// Package relay carries the table's changes to every streamer through a Redis Stream (on AWS,
// ElastiCache for Valkey), so that the stream tier grows with its connections while one relay
// reads the table's stream (docs/architecture.md §3). The relay (Run) appends each change a
// streamer needs to the Log under the next number of one counter; each streamer's hub follows
// the Log as its change feed. The numbers are one order of all changes, so the Log is a
// store.Replayer and streams resume on it as on the embedded store (docs/api.md §10.2 (Stream),
// resuming).
package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// DefaultMaxLen is how many changes the Log keeps, about: at 200 changes a second, over an
// hour, well past the resume window; Redis trims the oldest as it appends.
const DefaultMaxLen = 1_000_000

// ErrGap is returned by a cursor that reached a gap in the Log: the relay restarted and may
// have missed changes meanwhile, so a hub ends its streams and their clients take a snapshot.
var ErrGap = errors.New("relay: changes may be missing here (the relay restarted)")

// Log is a Redis Stream of change records, numbered 1, 2, 3... as entry ids n-0. A second key
// holds the last number given out. Both keys lie in one hash slot, since one script writes
// both and a cluster (ElastiCache Serverless is one) refuses a script whose keys it would have
// to split.
type Log struct {
	rdb    *redis.Client
	key    string
	maxLen int64
}

var (
	_ store.Feed             = (*Log)(nil)
	_ store.Replayer         = (*Log)(nil)
	_ store.PositionedCursor = (*cursor)(nil)
)

// NewLog returns the Log named name on rdb, keeping about maxLen changes (DefaultMaxLen when 0).
func NewLog(rdb *redis.Client, name string, maxLen int64) *Log {
	if maxLen <= 0 {
		maxLen = DefaultMaxLen
	}
	return &Log{rdb: rdb, key: name, maxLen: maxLen}
}

// counterKey is "{name}:last": a cluster places a key by the part between braces alone when it
// has one, so this lies in the slot of name, which has none (config refuses braces in it).
func (l *Log) counterKey() string { return "{" + l.key + "}:last" }

// Key is the name of the Log's Redis Stream.
func (l *Log) Key() string { return l.key }

// Drop deletes the Log and its counter: for tests, which each make one.
func (l *Log) Drop(ctx context.Context) error {
	return l.rdb.Del(ctx, l.key, l.counterKey()).Err()
}

// appendScript gives each record the next number and appends it, in one step, so that two
// relays (an old one ending, a new one starting) never interleave their numbers. ARGV[1] is
// the length to trim to, then one field name and value per record.
var appendScript = redis.NewScript(`
local last = 0
for i = 2, #ARGV, 2 do
  last = redis.call('INCR', KEYS[2])
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], last .. '-0', ARGV[i], ARGV[i+1])
end
return last
`)

// Append adds changes to the Log, in order.
func (l *Log) Append(ctx context.Context, changes []store.Change) error {
	args := make([]any, 0, 1+2*len(changes))
	args = append(args, l.maxLen)
	for _, c := range changes {
		raw, err := embedded.EncodeChange(c)
		if err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		args = append(args, fieldChange, raw)
	}
	return l.run(ctx, args)
}

// AppendGap marks that changes may be missing from here on (a relay starting: what the table
// recorded before it followed the table's stream did not reach the Log).
func (l *Log) AppendGap(ctx context.Context) error {
	return l.run(ctx, []any{l.maxLen, fieldGap, "1"})
}

func (l *Log) run(ctx context.Context, args []any) error {
	if err := appendScript.Run(ctx, l.rdb, []string{l.key, l.counterKey()}, args...).Err(); err != nil {
		return fmt.Errorf("relay: append to %s: %w", l.key, err)
	}
	return nil
}

// Entry fields: a change record (embedded.EncodeChange), or a gap.
const (
	fieldChange = "c"
	fieldGap    = "gap"
)

// Last returns the last number given out, 0 when none.
func (l *Log) Last(ctx context.Context) (uint64, error) {
	v, err := l.rdb.Get(ctx, l.counterKey()).Uint64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("relay: read %s: %w", l.counterKey(), err)
	}
	return v, nil
}

// Follow returns a cursor after the last change appended.
func (l *Log) Follow(ctx context.Context) (store.Cursor, error) {
	last, err := l.Last(ctx)
	if err != nil {
		return nil, err
	}
	return l.cursor(last), nil
}

// FollowAfter returns a cursor at the change after pos; store.ErrReplay when pos is past the
// last number given out or the change after it was trimmed.
func (l *Log) FollowAfter(ctx context.Context, pos uint64) (store.Cursor, error) {
	last, err := l.Last(ctx)
	if err != nil {
		return nil, err
	}
	if pos > last {
		return nil, fmt.Errorf("%w: position %d is past the log's end, %d", store.ErrReplay, pos, last)
	}
	if pos < last {
		first, err := l.rdb.XRangeN(ctx, l.key, "-", "+", 1).Result()
		if err != nil {
			return nil, fmt.Errorf("relay: read %s: %w", l.key, err)
		}
		if len(first) == 0 {
			return nil, fmt.Errorf("%w: the log is empty", store.ErrReplay)
		}
		if n, err := entryNumber(first[0].ID); err != nil || n > pos+1 {
			return nil, fmt.Errorf("%w: position %d was trimmed", store.ErrReplay, pos+1)
		}
	}
	return l.cursor(pos), nil
}

func (l *Log) cursor(after uint64) *cursor {
	return &cursor{l: l, next: after + 1, done: make(chan struct{})}
}

// entryNumber reads the number of entry id n-0.
func entryNumber(id string) (uint64, error) {
	n, seq, ok := strings.Cut(id, "-")
	if !ok || seq != "0" {
		return 0, fmt.Errorf("relay: entry id %q is not a number of the log", id)
	}
	return strconv.ParseUint(n, 10, 64)
}

// readBlock is how long one read waits for new entries before the cursor checks whether it
// was closed.
const readBlock = time.Second

// cursor reads the Log forward from next.
type cursor struct {
	l    *Log
	next uint64
	buf  []store.Change
	// err ends the cursor once buf, what came before it, has been read.
	err error

	done      chan struct{}
	closeOnce sync.Once
}

// Next returns the next change, waiting for one until ctx ends or the cursor is closed. It
// fails with ErrGap at a gap, and with store.ErrReplay when the next changes were trimmed.
func (c *cursor) Next(ctx context.Context) (store.Change, error) {
	for len(c.buf) == 0 {
		if c.err != nil {
			return store.Change{}, c.err
		}
		select {
		case <-c.done:
			return store.Change{}, errors.New("relay: cursor closed")
		default:
		}
		if err := ctx.Err(); err != nil {
			return store.Change{}, err
		}
		streams, err := c.l.rdb.XRead(ctx, &redis.XReadArgs{
			Streams: []string{c.l.key, strconv.FormatUint(c.next-1, 10) + "-0"},
			Count:   256,
			Block:   readBlock,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return store.Change{}, fmt.Errorf("relay: read %s: %w", c.l.key, err)
		}
	read:
		for _, s := range streams {
			for _, m := range s.Messages {
				if c.err = c.take(m); c.err != nil {
					break read
				}
			}
		}
	}
	ch := c.buf[0]
	c.buf = c.buf[1:]
	return ch, nil
}

// take decodes one entry into the buffer.
func (c *cursor) take(m redis.XMessage) error {
	n, err := entryNumber(m.ID)
	if err != nil {
		return err
	}
	if n != c.next {
		return fmt.Errorf("%w: change %d, next available %d", store.ErrReplay, c.next, n)
	}
	c.next++
	if _, ok := m.Values[fieldGap]; ok {
		return fmt.Errorf("%w: at %d", ErrGap, n)
	}
	raw, ok := m.Values[fieldChange].(string)
	if !ok {
		return fmt.Errorf("relay: entry %s holds no change", m.ID)
	}
	ch, err := embedded.DecodeChange(n, []byte(raw))
	if err != nil {
		return fmt.Errorf("relay: entry %s: %w", m.ID, err)
	}
	c.buf = append(c.buf, ch)
	return nil
}

// After is the number of the entry before the first this cursor delivers.
func (c *cursor) After() uint64 { return c.next - 1 }

// Close ends the cursor: a Next in progress returns within readBlock.
func (c *cursor) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return nil
}

// Client connects to the Redis at rawURL (redis://host:port, or rediss:// for TLS).
func Client(rawURL string) (*redis.Client, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("relay: the Redis address: %w", err)
	}
	return redis.NewClient(opts), nil
}
