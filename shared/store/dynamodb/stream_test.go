package dynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
)

// These tests run the feed against an in-memory stand-in for DynamoDB Streams, to cover what
// DynamoDB Local never does: shards that split, iterators that expire, TTL deletions.

// fakeStreams is one stream whose shards the test opens, fills and closes. GetRecords returns
// one record per call, so a shard with many records takes many polls.
type fakeStreams struct {
	mu      sync.Mutex
	shards  []*fakeShard
	seq     int
	expire  map[string]bool // shard: the next GetRecords fails with ExpiredIteratorException
	failAll error           // every GetRecords fails with this
	listed  chan struct{}   // a signal after each full listing of the shards
}

type fakeShard struct {
	id, parent string
	records    []streamtypes.Record
	closed     bool
}

var _ dynamodb.StreamsAPI = (*fakeStreams)(nil)

func newFakeStreams() *fakeStreams {
	// Sequence numbers start just below a power of ten, so they change length: a Seq
	// compared as text must still order them.
	return &fakeStreams{seq: 97, expire: map[string]bool{}, listed: make(chan struct{}, 100)}
}

func (f *fakeStreams) shard(id string) *fakeShard {
	for _, s := range f.shards {
		if s.id == id {
			return s
		}
	}
	return nil
}

// open adds an open shard, child of parent ("" for none).
func (f *fakeStreams) open(id, parent string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shards = append(f.shards, &fakeShard{id: id, parent: parent})
}

func (f *fakeStreams) close(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shard(id).closed = true
}

// write appends a record of item key pk|sk with attribute v to shard id.
func (f *fakeStreams) write(id, kind, sk string, v int, ttl bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	img := map[string]streamtypes.AttributeValue{
		"pk": &streamtypes.AttributeValueMemberS{Value: "p"},
		"sk": &streamtypes.AttributeValueMemberS{Value: sk},
		"v":  &streamtypes.AttributeValueMemberN{Value: strconv.Itoa(v)},
	}
	rec := streamtypes.Record{
		EventID:   aws.String(fmt.Sprint(f.seq)),
		EventName: streamtypes.OperationType(kind),
		Dynamodb: &streamtypes.StreamRecord{
			Keys: map[string]streamtypes.AttributeValue{
				"pk": &streamtypes.AttributeValueMemberS{Value: "p"},
				"sk": &streamtypes.AttributeValueMemberS{Value: sk},
			},
			SequenceNumber:              aws.String(strconv.Itoa(f.seq)),
			ApproximateCreationDateTime: aws.Time(time.Unix(1700000000, 0)),
		},
	}
	if kind == "REMOVE" {
		rec.Dynamodb.OldImage = img
	} else {
		rec.Dynamodb.NewImage = img
	}
	if ttl {
		rec.UserIdentity = &streamtypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")}
	}
	s := f.shard(id)
	s.records = append(s.records, rec)
}

// DescribeStream lists one shard per page, so that the feed must follow the pages.
func (f *fakeStreams) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	if in.ExclusiveStartShardId != nil {
		for j, s := range f.shards {
			if s.id == *in.ExclusiveStartShardId {
				i = j + 1
			}
		}
	}
	desc := &streamtypes.StreamDescription{}
	if i < len(f.shards) {
		s := f.shards[i]
		sh := streamtypes.Shard{ShardId: aws.String(s.id), SequenceNumberRange: &streamtypes.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if s.parent != "" {
			sh.ParentShardId = aws.String(s.parent)
		}
		if s.closed {
			sh.SequenceNumberRange.EndingSequenceNumber = aws.String("999999")
		}
		desc.Shards = []streamtypes.Shard{sh}
		if i+1 < len(f.shards) {
			desc.LastEvaluatedShardId = aws.String(s.id)
		}
	}
	if desc.LastEvaluatedShardId == nil {
		select {
		case f.listed <- struct{}{}:
		default:
		}
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (f *fakeStreams) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.shard(aws.ToString(in.ShardId))
	if s == nil {
		return nil, &streamtypes.ResourceNotFoundException{Message: aws.String("no shard")}
	}
	pos := 0
	switch in.ShardIteratorType {
	case streamtypes.ShardIteratorTypeLatest:
		pos = len(s.records)
	case streamtypes.ShardIteratorTypeAfterSequenceNumber:
		pos = -1
		for i, r := range s.records {
			if *r.Dynamodb.SequenceNumber == aws.ToString(in.SequenceNumber) {
				pos = i + 1
			}
		}
		if pos < 0 {
			return nil, fmt.Errorf("fake: no record %s", aws.ToString(in.SequenceNumber))
		}
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprintf("%s@%d", s.id, pos))}, nil
}

func (f *fakeStreams) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAll != nil {
		return nil, f.failAll
	}
	id, p, _ := strings.Cut(aws.ToString(in.ShardIterator), "@")
	pos, _ := strconv.Atoi(p)
	if f.expire[id] {
		delete(f.expire, id)
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("expired")}
	}
	s := f.shard(id)
	out := &dynamodbstreams.GetRecordsOutput{}
	if pos < len(s.records) {
		out.Records = s.records[pos : pos+1]
		pos++
	}
	if !s.closed || pos < len(s.records) {
		out.NextShardIterator = aws.String(fmt.Sprintf("%s@%d", id, pos))
	}
	return out, nil
}

func followFake(t *testing.T, f *fakeStreams) store.Cursor {
	t.Helper()
	feed := dynamodb.NewStreamFeed(f, "arn:fake", dynamodb.StreamOptions{PollInterval: time.Millisecond, DiscoverInterval: time.Millisecond})
	cur, err := feed.Follow(t.Context())
	if err != nil {
		t.Fatalf("Follow = %v; want nil", err)
	}
	t.Cleanup(func() {
		if err := cur.Close(); err != nil {
			t.Errorf("Close = %v; want nil", err)
		}
	})
	return cur
}

// next returns the next change, failing the test when none comes within a generous bound
// (a bound against hanging, not a speed assertion).
func next(t *testing.T, cur store.Cursor) store.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := cur.Next(ctx)
	if err != nil {
		t.Fatalf("Next = %v; want a change", err)
	}
	return c
}

// summary is a change as "KIND sk v" for comparing sequences.
func summary(c store.Change) string {
	img := c.New
	if img == nil {
		img = c.Old
	}
	s := fmt.Sprintf("%s %s %d", c.Kind, c.Key.SK, img.Int("v"))
	if c.Expired {
		s += " expired"
	}
	return s
}

func TestStreamFeedStartsAtLatest(t *testing.T) {
	t.Parallel()
	f := newFakeStreams()
	f.open("old", "")
	f.write("old", "INSERT", "a", 1, false)
	f.close("old")
	f.open("s1", "old")
	f.write("s1", "MODIFY", "a", 2, false) // before Follow: not delivered
	cur := followFake(t, f)
	f.write("s1", "MODIFY", "a", 3, false)
	if got, want := summary(next(t, cur)), "MODIFY a 3"; got != want {
		t.Errorf("first change after Follow = %q; want %q (records written before Follow are skipped)", got, want)
	}
}

// TestStreamFeedChildShardAfterParent: after a split, an item's records continue in a child
// shard; the child is read only once the parent is read to its end, so they stay in order.
func TestStreamFeedChildShardAfterParent(t *testing.T) {
	t.Parallel()
	f := newFakeStreams()
	f.open("parent", "")
	cur := followFake(t, f)
	// The children, with their records, are listed while the parent still has records to
	// come: a feed that read them at once would deliver a's last value first.
	f.open("left", "parent")
	f.open("right", "parent")
	const n = 20
	f.write("left", "MODIFY", "a", n, false)
	f.write("right", "INSERT", "b", 1, false)
	waitListings(t, f, 3) // the feed has seen the children
	for v := range n {
		f.write("parent", "MODIFY", "a", v, false)
	}
	f.close("parent")
	var gotA []int64
	sawB := false
	for range n + 2 {
		c := next(t, cur)
		switch c.Key.SK {
		case "a":
			gotA = append(gotA, c.New.Int("v"))
		case "b":
			sawB = true
		}
	}
	for i, v := range gotA {
		if v != int64(i) {
			t.Fatalf("values of item a in delivery order = %v; want 0 to %d in order", gotA, n)
		}
	}
	if len(gotA) != n+1 || !sawB {
		t.Errorf("delivered %d records of a (want %d) and b: %v", len(gotA), n+1, sawB)
	}
}

// waitListings waits until the feed has listed the stream's shards n more times; the listing
// that began after the last change to the shards is then over, and acted on.
func waitListings(t *testing.T, f *fakeStreams, n int) {
	t.Helper()
	for range len(f.listed) {
		<-f.listed
	}
	timeout := time.After(30 * time.Second)
	for range n {
		select {
		case <-f.listed:
		case <-timeout:
			t.Fatal("the feed did not list the stream's shards")
		}
	}
}

// TestStreamFeedRefreshesExpiredIterator: an iterator that expired is replaced by one after
// the last delivered record: nothing is lost or repeated.
func TestStreamFeedRefreshesExpiredIterator(t *testing.T) {
	t.Parallel()
	f := newFakeStreams()
	f.open("s", "")
	cur := followFake(t, f)
	f.write("s", "INSERT", "a", 1, false)
	if got := summary(next(t, cur)); got != "INSERT a 1" {
		t.Fatalf("first change = %q; want INSERT a 1", got)
	}
	f.mu.Lock()
	f.expire["s"] = true
	f.mu.Unlock()
	f.write("s", "MODIFY", "a", 2, false)
	f.write("s", "REMOVE", "a", 2, false)
	for _, want := range []string{"MODIFY a 2", "REMOVE a 2"} {
		if got := summary(next(t, cur)); got != want {
			t.Errorf("change after the iterator expired = %q; want %q", got, want)
		}
	}
}

func TestStreamFeedRecordConversion(t *testing.T) {
	t.Parallel()
	f := newFakeStreams()
	f.open("s", "")
	cur := followFake(t, f)
	f.write("s", "INSERT", "a", 1, false) // seq 98
	f.write("s", "REMOVE", "a", 1, true)  // seq 99: TTL
	f.write("s", "INSERT", "a", 2, false) // seq 100: longer number
	f.write("s", "REMOVE", "a", 2, false) // seq 101: a caller's delete
	var got []store.Change
	for range 4 {
		got = append(got, next(t, cur))
	}
	want := []string{"INSERT a 1", "REMOVE a 1 expired", "INSERT a 2", "REMOVE a 2"}
	for i, c := range got {
		if s := summary(c); s != want[i] {
			t.Errorf("change %d = %q; want %q", i, s, want[i])
		}
		if c.Key != (store.Key{PK: "p", SK: "a"}) {
			t.Errorf("change %d key = %v; want p|a", i, c.Key)
		}
		if !c.At.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("change %d At = %v; want the record's creation time", i, c.At)
		}
		if i > 0 && c.Seq <= got[i-1].Seq {
			t.Errorf("Seq of change %d = %q, not after %q as text", i, c.Seq, got[i-1].Seq)
		}
	}
	if got[1].New != nil || got[1].Old.Int("v") != 1 {
		t.Errorf("REMOVE images: old %v new %v; want the old item only", got[1].Old, got[1].New)
	}
}

func TestStreamFeedFatalErrorEndsNext(t *testing.T) {
	t.Parallel()
	f := newFakeStreams()
	f.open("s", "")
	cur := followFake(t, f)
	f.mu.Lock()
	f.failAll = &streamtypes.TrimmedDataAccessException{Message: aws.String("trimmed")}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := cur.Next(ctx)
	var trimmed *streamtypes.TrimmedDataAccessException
	if !errors.As(err, &trimmed) {
		t.Errorf("Next after the stream failed = %v; want the TrimmedDataAccessException", err)
	}
}

func TestStreamCursorClose(t *testing.T) {
	t.Parallel()
	f := newFakeStreams()
	f.open("s", "")
	feed := dynamodb.NewStreamFeed(f, "arn:fake", dynamodb.StreamOptions{PollInterval: time.Millisecond})
	cur, err := feed.Follow(t.Context())
	if err != nil {
		t.Fatalf("Follow = %v; want nil", err)
	}
	if err := cur.Close(); err != nil {
		t.Fatalf("Close = %v; want nil", err)
	}
	if _, err := cur.Next(t.Context()); !errors.Is(err, dynamodb.ErrCursorClosed) {
		t.Errorf("Next after Close = %v; want ErrCursorClosed", err)
	}
	if err := cur.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
}
