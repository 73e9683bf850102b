package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/roadevents/roadevents/shared/store"
)

// StreamsAPI is the part of the DynamoDB Streams client the feed uses;
// *dynamodbstreams.Client implements it.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ StreamsAPI = (*dynamodbstreams.Client)(nil)

// StreamOptions configures a StreamFeed; zero fields take the defaults.
type StreamOptions struct {
	// PollInterval is the pause between two empty reads of one shard. Default 250 ms: the
	// delivery target of docs/api.md §1 is p95 under one second from publication to subscriber, and
	// DynamoDB Streams allows about 5 GetRecords calls a second per shard, shared by at most
	// 2 readers.
	PollInterval time.Duration
	// DiscoverInterval is how often the stream is listed for new shards besides when a shard
	// ends (DynamoDB rolls shards over every few hours). Default 10 s.
	DiscoverInterval time.Duration
	// Buffer is how many changes a cursor holds that Next has not taken yet; past that the
	// shard readers wait. Default 256.
	Buffer int
	// Logger receives the feed's recoveries (a shard re-opened after its position was
	// trimmed); slog.Default() when nil.
	Logger *slog.Logger
}

// ErrCursorClosed is returned by Next after Close.
var ErrCursorClosed = errors.New("dynamodb: stream cursor closed")

// StreamFeed is the store.Feed of a table, read from its DynamoDB Stream (which CreateTable
// enables with NEW_AND_OLD_IMAGES).
type StreamFeed struct {
	api  StreamsAPI
	arn  string
	opts StreamOptions
}

var _ store.Feed = (*StreamFeed)(nil)

// NewStreamFeed returns the feed of the stream streamARN (see StreamARN).
func NewStreamFeed(api StreamsAPI, streamARN string, opts StreamOptions) *StreamFeed {
	if opts.PollInterval <= 0 {
		opts.PollInterval = 250 * time.Millisecond
	}
	if opts.DiscoverInterval <= 0 {
		opts.DiscoverInterval = 10 * time.Second
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &StreamFeed{api: api, arn: streamARN, opts: opts}
}

// Follow implements store.Feed. It takes an iterator at LATEST on every open shard before it
// returns, so every write committed afterwards is read; shards that open later (children of
// a split or rollover) are read from their start once their parent has been read to its end,
// which keeps the changes of one item in commit order.
func (f *StreamFeed) Follow(ctx context.Context) (store.Cursor, error) {
	shards, err := f.listShards(ctx)
	if err != nil {
		return nil, fmt.Errorf("follow stream %s: %w", f.arn, err)
	}
	type start struct{ id, iterator string }
	var starts []start
	known := make(map[string]bool, len(shards))
	done := make(map[string]bool, len(shards))
	for _, s := range shards {
		id := aws.ToString(s.ShardId)
		known[id] = true
		if s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil {
			done[id] = true // closed before Follow: it holds only older writes
			continue
		}
		it, err := f.iterator(ctx, id, streamtypes.ShardIteratorTypeLatest, "")
		if err != nil {
			return nil, fmt.Errorf("follow stream %s: %w", f.arn, err)
		}
		starts = append(starts, start{id, it})
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c := &streamCursor{
		feed:   f,
		ctx:    runCtx,
		cancel: cancel,
		out:    make(chan store.Change, f.opts.Buffer),
		failed: make(chan struct{}),
		wake:   make(chan struct{}, 1),
		known:  known,
		done:   done,
	}
	for _, s := range starts {
		c.startShard(s.id, s.iterator, streamtypes.ShardIteratorTypeLatest)
	}
	c.wg.Add(1)
	go c.discoverLoop()
	return c, nil
}

func (f *StreamFeed) listShards(ctx context.Context) ([]streamtypes.Shard, error) {
	var shards []streamtypes.Shard
	var after *string
	for {
		out, err := f.api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{
			StreamArn:             aws.String(f.arn),
			ExclusiveStartShardId: after,
		})
		if err != nil {
			return nil, fmt.Errorf("describe stream: %w", err)
		}
		if out.StreamDescription == nil {
			return shards, nil
		}
		shards = append(shards, out.StreamDescription.Shards...)
		after = out.StreamDescription.LastEvaluatedShardId
		if after == nil {
			return shards, nil
		}
	}
}

func (f *StreamFeed) iterator(ctx context.Context, shard string, typ streamtypes.ShardIteratorType, seq string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(f.arn),
		ShardId:           aws.String(shard),
		ShardIteratorType: typ,
	}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := f.api.GetShardIterator(ctx, in)
	if err != nil {
		return "", fmt.Errorf("shard iterator %s of shard %s: %w", typ, shard, err)
	}
	return aws.ToString(out.ShardIterator), nil
}

// streamCursor reads every shard of the stream in its own goroutine into one channel.
type streamCursor struct {
	feed   *StreamFeed
	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	out    chan store.Change
	wake   chan struct{} // a shard ended: look for its children now
	wg     sync.WaitGroup

	failOnce sync.Once
	failed   chan struct{}
	err      error

	mu    sync.Mutex
	known map[string]bool // shards being read, read, or skipped
	done  map[string]bool // shards read to their end, or closed before Follow
}

var _ store.Cursor = (*streamCursor)(nil)

// Next implements store.Cursor.
func (c *streamCursor) Next(ctx context.Context) (store.Change, error) {
	select {
	case ch := <-c.out:
		return ch, nil
	default:
	}
	select {
	case ch := <-c.out:
		return ch, nil
	case <-ctx.Done():
		return store.Change{}, ctx.Err()
	case <-c.ctx.Done():
		return store.Change{}, ErrCursorClosed
	case <-c.failed:
		return store.Change{}, c.err
	}
}

// Close implements store.Cursor: it stops the shard readers and waits for them.
func (c *streamCursor) Close() error {
	c.cancel()
	c.wg.Wait()
	return nil
}

func (c *streamCursor) fail(err error) {
	c.failOnce.Do(func() {
		c.err = fmt.Errorf("stream %s: %w", c.feed.arn, err)
		close(c.failed)
	})
}

// startShard reads shard from iterator (of type typ) in a new goroutine.
func (c *streamCursor) startShard(id, iterator string, typ streamtypes.ShardIteratorType) {
	c.wg.Add(1)
	go c.readShard(id, iterator, typ)
}

// readShard polls one shard until it ends, the cursor closes, or an error that retrying will
// not cure.
func (c *streamCursor) readShard(id, iterator string, typ streamtypes.ShardIteratorType) {
	defer c.wg.Done()
	f := c.feed
	var last string // sequence number of the last record delivered
	backoff := f.opts.PollInterval
	trims := 0 // TrimmedDataAccessExceptions since the last successful read
	for {
		out, err := f.api.GetRecords(c.ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(iterator)})
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			var expired *streamtypes.ExpiredIteratorException
			var trimmed *streamtypes.TrimmedDataAccessException
			var limit *streamtypes.LimitExceededException
			var internal *streamtypes.InternalServerError
			switch {
			case errors.As(err, &expired):
				// Iterators live 15 minutes; a reader held up by a slow consumer resumes
				// after the last record it delivered. One that delivered nothing yet was
				// never held up (it polls far more often), so it starts where it started.
				if last != "" {
					iterator, err = f.iterator(c.ctx, id, streamtypes.ShardIteratorTypeAfterSequenceNumber, last)
				} else {
					iterator, err = f.iterator(c.ctx, id, typ, "")
				}
				if errors.As(err, &trimmed) {
					// The last record delivered is itself older than the trim point.
					iterator, err = c.reopenTrimmed(id, err, trims, "")
					typ = streamtypes.ShardIteratorTypeTrimHorizon
					trims++
				}
				if err != nil && c.ctx.Err() == nil {
					c.fail(err)
					return
				}
				continue
			case errors.As(err, &trimmed):
				// The iterator points before the shard's trim horizon (records older than 24 h
				// are removed), or, on DynamoDB Local, it was taken on the stream of a table
				// never written to. Either way every record still in the shard comes after the
				// reader's position, so TRIM_HORIZON resumes with all of them and repeats none;
				// LATEST would skip the ones still there. A reader that has delivered a record
				// first tries right after it, which is exact when that record is still there
				// (and keeps an emulator's spurious trim from replaying the shard). What was
				// trimmed is gone whatever the reader does: subscribers learn nothing of it, as
				// after a dropped delta, and their next snapshot (at most max_seconds away,
				// docs/api.md §6 rule 2) is the truth. A reader 24 h behind cannot happen here
				// anyway: the hub never blocks it.
				if trims > 0 && sleep(c.ctx, backoff) != nil {
					return
				}
				if trims > 0 {
					backoff = min(2*backoff, 5*time.Second)
				}
				iterator, err = c.reopenTrimmed(id, err, trims, last)
				if err != nil {
					if c.ctx.Err() == nil {
						c.fail(err)
					}
					return
				}
				typ = streamtypes.ShardIteratorTypeTrimHorizon
				trims++
				continue
			case errors.As(err, &limit), errors.As(err, &internal):
				if sleep(c.ctx, backoff) != nil {
					return
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			c.fail(fmt.Errorf("read shard %s: %w", id, err))
			return
		}
		backoff = f.opts.PollInterval
		trims = 0
		for _, r := range out.Records {
			ch, err := changeFromRecord(r)
			if err != nil {
				c.fail(fmt.Errorf("read shard %s: %w", id, err))
				return
			}
			select {
			case c.out <- ch:
			case <-c.ctx.Done():
				return
			}
			last = aws.ToString(r.Dynamodb.SequenceNumber)
		}
		if out.NextShardIterator == nil {
			c.shardDone(id)
			return
		}
		iterator = *out.NextShardIterator
		if len(out.Records) == 0 && sleep(c.ctx, f.opts.PollInterval) != nil {
			return
		}
	}
}

// reopenTrimmed returns an iterator of shard id, whose position was trimmed (cause): right
// after last, the last record delivered, when that is still in the shard, else at the trim
// horizon. It logs the first of a run of trims only, so that a horizon that keeps moving past
// the reader (or an emulator that keeps saying so) does not flood the log.
func (c *streamCursor) reopenTrimmed(id string, cause error, trims int, last string) (string, error) {
	if trims == 0 {
		c.feed.opts.Logger.Warn("dynamodb stream: shard position trimmed; reading on from the oldest record left",
			"stream", c.feed.arn, "shard", id, "cause", cause.Error())
	}
	if last != "" {
		it, err := c.feed.iterator(c.ctx, id, streamtypes.ShardIteratorTypeAfterSequenceNumber, last)
		var trimmed *streamtypes.TrimmedDataAccessException
		if err == nil || !errors.As(err, &trimmed) {
			return it, err
		}
	}
	it, err := c.feed.iterator(c.ctx, id, streamtypes.ShardIteratorTypeTrimHorizon, "")
	if err != nil {
		return "", fmt.Errorf("read shard %s after a trim: %w", id, err)
	}
	return it, nil
}

// shardDone records that a shard has been read to its end, so its children may start.
func (c *streamCursor) shardDone(id string) {
	c.mu.Lock()
	c.done[id] = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *streamCursor) discoverLoop() {
	defer c.wg.Done()
	ticker := time.NewTicker(c.feed.opts.DiscoverInterval)
	defer ticker.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-ticker.C:
		case <-c.wake:
		}
		if err := c.discover(); err != nil && c.ctx.Err() == nil {
			var gone *streamtypes.ResourceNotFoundException
			if errors.As(err, &gone) {
				c.fail(err)
				return
			}
			// Anything else (throttling, a network blip) is tried again at the next tick.
		}
	}
}

// discover starts reading the shards that appeared since Follow, from their start, each once
// its parent (when this cursor reads it) has ended.
func (c *streamCursor) discover() error {
	shards, err := c.feed.listShards(c.ctx)
	if err != nil {
		return err
	}
	listed := make(map[string]bool, len(shards))
	for _, s := range shards {
		listed[aws.ToString(s.ShardId)] = true
	}
	c.mu.Lock()
	var ready []string
	for _, s := range shards {
		id, parent := aws.ToString(s.ShardId), aws.ToString(s.ParentShardId)
		if c.known[id] {
			continue
		}
		// A parent that is listed must be read to its end first; a parent that is not
		// listed has been trimmed away and holds nothing this cursor could read.
		if parent != "" && listed[parent] && !c.done[parent] {
			continue
		}
		c.known[id] = true
		ready = append(ready, id)
	}
	c.mu.Unlock()
	for _, id := range ready {
		it, err := c.feed.iterator(c.ctx, id, streamtypes.ShardIteratorTypeTrimHorizon, "")
		if err != nil {
			c.mu.Lock()
			delete(c.known, id) // try again at the next discovery
			c.mu.Unlock()
			return err
		}
		c.startShard(id, it, streamtypes.ShardIteratorTypeTrimHorizon)
	}
	return nil
}

// seqWidth is the longest sequence number DynamoDB Streams issues; Seq is padded to it so
// that comparing two Seq strings orders them as the numbers they are.
const seqWidth = 40

// changeFromRecord converts a stream record with the adapter's value mapping.
func changeFromRecord(r streamtypes.Record) (store.Change, error) {
	sr := r.Dynamodb
	if sr == nil {
		return store.Change{}, fmt.Errorf("record %s without a body", aws.ToString(r.EventID))
	}
	keys, err := unmarshalStreamItem(sr.Keys)
	if err != nil {
		return store.Change{}, fmt.Errorf("record %s keys: %w", aws.ToString(r.EventID), err)
	}
	ch := store.Change{
		Seq:  padSeq(aws.ToString(sr.SequenceNumber)),
		Kind: store.ChangeKind(r.EventName),
		Key:  keys.Key(),
		At:   aws.ToTime(sr.ApproximateCreationDateTime).UTC(),
	}
	if ch.Old, err = unmarshalStreamItem(sr.OldImage); err != nil {
		return store.Change{}, fmt.Errorf("record %s old image: %w", aws.ToString(r.EventID), err)
	}
	if ch.New, err = unmarshalStreamItem(sr.NewImage); err != nil {
		return store.Change{}, fmt.Errorf("record %s new image: %w", aws.ToString(r.EventID), err)
	}
	// TTL deletions are the service's own: userIdentity {type Service, principalId
	// dynamodb.amazonaws.com}.
	if id := r.UserIdentity; id != nil {
		ch.Expired = aws.ToString(id.Type) == "Service" && aws.ToString(id.PrincipalId) == "dynamodb.amazonaws.com"
	}
	return ch, nil
}

func padSeq(s string) string {
	if len(s) >= seqWidth {
		return s
	}
	return strings.Repeat("0", seqWidth-len(s)) + s
}
