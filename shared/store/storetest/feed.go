package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// The feed cases follow the feed, write, and read back the records of their own partitions,
// waiting at most feedWait for each; they never sleep. That a write emitted nothing is shown by
// the next write of the same item arriving first: the feed keeps one item's records in commit
// order (store.Feed), also across DynamoDB Streams shards.
func feedCases() []testCase {
	return []testCase{
		{"InsertModifyRemove", testFeedLifecycle},
		{"FollowStartsAtEnd", func(e *env) {
			before, after := e.key("p", "before"), e.key("p", "after")
			e.put(item(before))
			f := e.follow()
			e.put(item(after))
			f.want(change{Kind: store.ChangeInsert, Key: after, New: item(after)})
		}},
		{"SeveralItemsEachInOrder", testFeedSeveralItems},
		{"FailedWritesEmitNothing", func(e *env) {
			k := e.key("p", "a")
			f := e.follow()
			it := item(k, "v", int64(1))
			e.put(it)
			if err := e.h.Table.Put(e.ctx, item(k, "v", int64(2)), store.IfNotExists()); !errors.Is(err, store.ErrConditionFailed) {
				e.t.Fatalf("Put(IfNotExists) on a present item = %v; want ErrConditionFailed", err)
			}
			if _, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"v": 1}}, store.IfEqual("v", 5)); !errors.Is(err, store.ErrConditionFailed) {
				e.t.Fatalf("Update(IfEqual) = %v; want ErrConditionFailed", err)
			}
			if err := e.h.Table.Delete(e.ctx, k, store.IfNotExists()); !errors.Is(err, store.ErrConditionFailed) {
				e.t.Fatalf("Delete(IfNotExists) = %v; want ErrConditionFailed", err)
			}
			if err := e.h.Table.TransactWrite(e.ctx, []store.Op{
				store.UpdateOp(k, store.Update{Add: map[string]int64{"v": 1}}, store.Condition{}),
				store.CheckOp(e.key("p", "absent"), store.IfExists()),
			}); !errors.Is(err, store.ErrConditionFailed) {
				e.t.Fatalf("TransactWrite with a failing check = %v; want ErrConditionFailed", err)
			}
			if err := e.h.Table.Delete(e.ctx, k, store.Condition{}); err != nil {
				e.t.Fatalf("Delete = %v; want nil", err)
			}
			f.want(change{Kind: store.ChangeInsert, Key: k, New: it})
			f.want(change{Kind: store.ChangeRemove, Key: k, Old: it})
		}},
		{"DeleteOfAbsentItemEmitsNothing", func(e *env) {
			k := e.key("p", "a")
			f := e.follow()
			if err := e.h.Table.Delete(e.ctx, k, store.Condition{}); err != nil {
				e.t.Fatalf("Delete(absent) = %v; want nil", err)
			}
			e.put(item(k))
			f.want(change{Kind: store.ChangeInsert, Key: k, New: item(k)})
		}},
		{"UnchangingWriteEmitsNothing", func(e *env) {
			// DynamoDB Streams writes no record for a PutItem or UpdateItem that changes no data.
			k := e.key("p", "a")
			it := item(k, "v", "same", "n", int64(1))
			f := e.follow()
			e.put(it)
			e.put(it.Clone())
			if _, err := e.h.Table.Update(e.ctx, k, store.Update{Set: map[string]any{"v": "same"}, Remove: []string{"absent"}}, store.Condition{}); err != nil {
				e.t.Fatalf("Update(no change) = %v; want nil", err)
			}
			if _, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"n": 0}}, store.Condition{}); err != nil {
				e.t.Fatalf("Update(Add 0) = %v; want nil", err)
			}
			e.put(item(k, "v", "other", "n", int64(1)))
			f.want(change{Kind: store.ChangeInsert, Key: k, New: it})
			f.want(change{Kind: store.ChangeModify, Key: k, Old: it, New: item(k, "v", "other", "n", int64(1))})
		}},
		{"WaitingFollowerWakes", testFeedWaitingFollower},
		{"TransactionOneRecordPerWrittenItem", testFeedTransaction},
		{"NextHonoursContext", func(e *env) {
			f := e.follow()
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			if _, err := f.cur.Next(ctx); !errors.Is(err, context.Canceled) {
				e.t.Errorf("Next(cancelled context) = %v; want context.Canceled", err)
			}
		}},
	}
}

// change is the part of a store.Change a test asserts; Seq and At are checked separately.
type change struct {
	Kind    store.ChangeKind
	Key     store.Key
	Old     store.Item
	New     store.Item
	Expired bool
}

func (c change) String() string {
	s := fmt.Sprintf("%s %s old=%s new=%s", c.Kind, c.Key, fmtItem(c.Old), fmtItem(c.New))
	if c.Expired {
		s += " expired"
	}
	return s
}

// follower reads the records of one subtest's partitions from a cursor.
type follower struct {
	e       *env
	cur     store.Cursor
	lastSeq map[store.Key]string
}

// follow starts following the feed, or skips the test when the adapter has none.
func (e *env) follow() *follower {
	e.t.Helper()
	if e.h.Feed == nil {
		e.t.Skip("storetest: the harness has no Feed")
	}
	cur, err := e.h.Feed.Follow(e.ctx)
	if err != nil {
		e.t.Fatalf("Follow = %v; want nil", err)
	}
	e.t.Cleanup(func() {
		if err := cur.Close(); err != nil {
			e.t.Errorf("Cursor.Close = %v; want nil", err)
		}
	})
	return &follower{e: e, cur: cur, lastSeq: map[store.Key]string{}}
}

// next returns the next record of this subtest's partitions, skipping other subtests' records
// (a shared table's feed carries them all). It checks the record's Seq and At.
func (f *follower) next() store.Change {
	f.e.t.Helper()
	ctx, cancel := context.WithTimeout(f.e.ctx, feedWait)
	defer cancel()
	for {
		c, err := f.cur.Next(ctx)
		if err != nil {
			f.e.t.Fatalf("Cursor.Next = %v; want a change record within %v", err, feedWait)
		}
		if !strings.HasPrefix(c.Key.PK, f.e.prefix) {
			continue
		}
		if c.Seq == "" {
			f.e.t.Errorf("record %s has an empty Seq", c.Kind)
		} else if last, ok := f.lastSeq[c.Key]; ok && compareSeq(c.Seq, last) <= 0 {
			f.e.t.Errorf("record %s of %s has Seq %q, not after the item's previous record %q", c.Kind, c.Key, c.Seq, last)
		}
		f.lastSeq[c.Key] = c.Seq
		if c.At.IsZero() {
			f.e.t.Errorf("record %s of %s has a zero At", c.Kind, c.Key)
		}
		return c
	}
}

// want fails unless the next record of this subtest is want.
func (f *follower) want(want change) {
	f.e.t.Helper()
	f.check(f.next(), want)
}

func (f *follower) check(c store.Change, want change) {
	f.e.t.Helper()
	got := change{Kind: c.Kind, Key: c.Key, Old: c.Old, New: c.New, Expired: c.Expired}
	if got.Kind != want.Kind || got.Key != want.Key || got.Expired != want.Expired ||
		!sameItem(got.Old, want.Old) || !sameItem(got.New, want.New) ||
		(want.Old == nil) != (len(got.Old) == 0) || (want.New == nil) != (len(got.New) == 0) {
		f.e.t.Errorf("change record:\n got %s\nwant %s", got, want)
	}
}

// compareSeq orders two feed positions. DynamoDB Streams sequence numbers are decimal strings
// of varying length, so a longer one is later; the embedded feed uses fixed-width decimals.
func compareSeq(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func testFeedLifecycle(e *env) {
	k := e.key("p", "a")
	f := e.follow()
	v1 := item(k, "v", int64(1), "s", "x")
	e.put(v1)
	v2, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"v": 1}, Remove: []string{"s"}}, store.Condition{})
	if err != nil {
		e.t.Fatalf("Update = %v; want nil", err)
	}
	if err := e.h.Table.Delete(e.ctx, k, store.Condition{}); err != nil {
		e.t.Fatalf("Delete = %v; want nil", err)
	}
	f.want(change{Kind: store.ChangeInsert, Key: k, New: v1})
	f.want(change{Kind: store.ChangeModify, Key: k, Old: v1, New: item(k, "v", int64(2))})
	f.want(change{Kind: store.ChangeRemove, Key: k, Old: v2})
}

// testFeedSeveralItems interleaves writes to three items; each item's records arrive in its
// commit order (records of different items may interleave in any order).
func testFeedSeveralItems(e *env) {
	keys := []store.Key{e.key("p", "a"), e.key("p", "b"), e.key("q", "c")}
	const rounds = 4
	f := e.follow()
	for r := range rounds {
		for _, k := range keys {
			if r == 0 {
				e.put(item(k, "n", int64(0)))
				continue
			}
			if _, err := e.h.Table.Update(e.ctx, k, store.Update{Add: map[string]int64{"n": 1}}, store.Condition{}); err != nil {
				e.t.Fatalf("Update(%s) = %v; want nil", k, err)
			}
		}
	}
	got := map[store.Key][]store.Change{}
	for range rounds * len(keys) {
		c := f.next()
		got[c.Key] = append(got[c.Key], c)
	}
	for _, k := range keys {
		if len(got[k]) != rounds {
			e.t.Errorf("%d records for %s; want %d", len(got[k]), k, rounds)
			continue
		}
		for r, c := range got[k] {
			want := change{Kind: store.ChangeModify, Key: k, Old: item(k, "n", int64(r-1)), New: item(k, "n", int64(r))}
			if r == 0 {
				want = change{Kind: store.ChangeInsert, Key: k, New: item(k, "n", int64(0))}
			}
			f.check(c, want)
		}
	}
}

func testFeedTransaction(e *env) {
	a, b, c, d := e.key("p", "a"), e.key("p", "b"), e.key("p", "c"), e.key("q", "d")
	e.put(item(c, "v", "x"))
	e.put(item(d, "v", "x"))
	f := e.follow()
	err := e.h.Table.TransactWrite(e.ctx, []store.Op{
		store.PutOp(item(a, "v", "new"), store.IfNotExists()),
		store.UpdateOp(b, store.Update{Add: map[string]int64{"n": 1}}, store.Condition{}),
		store.DeleteOp(c, store.IfExists()),
		store.CheckOp(d, store.IfExists()),
	})
	if err != nil {
		e.t.Fatalf("TransactWrite = %v; want nil", err)
	}
	// The check wrote nothing: the next record of d is this put's.
	e.put(item(d, "v", "y"))
	want := map[store.Key]change{
		a: {Kind: store.ChangeInsert, Key: a, New: item(a, "v", "new")},
		b: {Kind: store.ChangeInsert, Key: b, New: item(b, "n", int64(1))},
		c: {Kind: store.ChangeRemove, Key: c, Old: item(c, "v", "x")},
		d: {Kind: store.ChangeModify, Key: d, Old: item(d, "v", "x"), New: item(d, "v", "y")},
	}
	seen := map[store.Key]bool{}
	for range len(want) {
		got := f.next()
		w, ok := want[got.Key]
		if !ok || seen[got.Key] {
			e.t.Errorf("unexpected change record %s %s", got.Kind, got.Key)
			continue
		}
		seen[got.Key] = true
		f.check(got, w)
	}
}

// testFeedSweep expires one item among live ones and runs the sweeper: the feed reports a
// REMOVE marked Expired with the item's last image, and nothing for the live items.
func testFeedSweep(e *env) {
	if e.h.Sweep == nil {
		e.t.Fatal("storetest: RunSweep needs a Harness with Sweep")
	}
	gone, live, forever := e.key("p", "gone"), e.key("p", "live"), e.key("p", "forever")
	goneItem := item(gone, "v", "x", store.AttrTTL, e.ttlIn(time.Minute))
	liveItem := item(live, store.AttrTTL, e.ttlIn(time.Hour))
	e.put(goneItem)
	e.put(liveItem)
	e.put(item(forever))
	f := e.follow()
	e.h.Clock.Advance(time.Minute)
	if err := e.h.Sweep(e.ctx); err != nil {
		e.t.Fatalf("Sweep = %v; want nil", err)
	}
	f.want(change{Kind: store.ChangeRemove, Key: gone, Old: goneItem, Expired: true})
	e.wantAbsent(gone)
	e.get(live)
	e.get(forever)
	// Sweeping again finds nothing; the next records are these deletes by a caller.
	if err := e.h.Sweep(e.ctx); err != nil {
		e.t.Fatalf("second Sweep = %v; want nil", err)
	}
	for _, k := range []store.Key{live, forever} {
		if err := e.h.Table.Delete(e.ctx, k, store.Condition{}); err != nil {
			e.t.Fatalf("Delete(%s) = %v; want nil", k, err)
		}
	}
	want := map[store.Key]change{
		live:    {Kind: store.ChangeRemove, Key: live, Old: liveItem},
		forever: {Kind: store.ChangeRemove, Key: forever, Old: item(forever)},
	}
	for range len(want) {
		got := f.next()
		w, ok := want[got.Key]
		if !ok {
			e.t.Errorf("unexpected change record %s %s (expired=%v)", got.Kind, got.Key, got.Expired)
			continue
		}
		delete(want, got.Key)
		f.check(got, w)
	}
}

// testSweepLatestTTL rewrites items with another TTL, or none, before the sweeper runs: only
// the TTL an item has when the sweeper comes decides, whatever it had before. A marker written
// after each sweep shows that the sweep's records were all the ones wanted.
func testSweepLatestTTL(e *env) {
	renewed, shortened, recreated := e.key("p", "renewed"), e.key("p", "shortened"), e.key("p", "recreated")
	e.put(item(renewed, store.AttrTTL, e.ttlIn(time.Minute)))
	renewedItem := item(renewed, store.AttrTTL, e.ttlIn(time.Hour))
	e.put(renewedItem)
	e.put(item(shortened, store.AttrTTL, e.ttlIn(time.Hour)))
	shortenedItem := item(shortened, store.AttrTTL, e.ttlIn(time.Minute))
	e.put(shortenedItem)
	e.put(item(recreated, store.AttrTTL, e.ttlIn(time.Minute)))
	if err := e.h.Table.Delete(e.ctx, recreated, store.Condition{}); err != nil {
		e.t.Fatalf("Delete(%s) = %v; want nil", recreated, err)
	}
	e.put(item(recreated))
	f := e.follow()
	sweepThenMark := func(after time.Duration, marker string) {
		e.t.Helper()
		e.h.Clock.Advance(after)
		if err := e.h.Sweep(e.ctx); err != nil {
			e.t.Fatalf("Sweep = %v; want nil", err)
		}
		e.put(item(e.key("marker", marker)))
	}

	sweepThenMark(time.Minute, "1")
	f.want(change{Kind: store.ChangeRemove, Key: shortened, Old: shortenedItem, Expired: true})
	f.want(change{Kind: store.ChangeInsert, Key: e.key("marker", "1"), New: item(e.key("marker", "1"))})
	e.get(renewed)
	e.get(recreated)

	sweepThenMark(time.Hour, "2")
	f.want(change{Kind: store.ChangeRemove, Key: renewed, Old: renewedItem, Expired: true})
	f.want(change{Kind: store.ChangeInsert, Key: e.key("marker", "2"), New: item(e.key("marker", "2"))})
	e.get(recreated)
}

// testFeedWaitingFollower has a reader wait in Next before each write, as the streamer does:
// every write must wake it. Each write waits until the reader has its previous record, so the
// reader is almost always already waiting when the next write commits.
func testFeedWaitingFollower(e *env) {
	f := e.follow()
	const n = 5
	type result struct {
		c   store.Change
		err error
	}
	got := make(chan result)
	ctx, cancel := context.WithTimeout(e.ctx, feedWait)
	defer cancel()
	go func() {
		for {
			c, err := f.cur.Next(ctx)
			if err == nil && !strings.HasPrefix(c.Key.PK, e.prefix) {
				continue
			}
			select {
			case got <- result{c, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for i := range n {
		k := e.key("p", fmt.Sprint(i))
		e.put(item(k))
		select {
		case r := <-got:
			if r.err != nil {
				e.t.Fatalf("Next while waiting for write %d = %v; want its record", i, r.err)
			}
			f.check(r.c, change{Kind: store.ChangeInsert, Key: k, New: item(k)})
		case <-ctx.Done():
			e.t.Fatalf("no record for write %d within %v: a waiting follower was not woken", i, feedWait)
		}
	}
}
