package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/relay"
	"github.com/roadevents/roadevents/shared/relay/relaytest"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// wantTest keeps the items the tests write under partition "ev#" and leaves the others out,
// as the relay leaves out what no stream hub reads.
func wantTest(k store.Key) bool { return strings.HasPrefix(k.PK, "ev#") }

// startRelay runs the relay from tab's feed into log until the test ends.
func startRelay(t *testing.T, tab tables.Table, log *relay.Log) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx, tab.Feed, log, wantTest) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay.Run = %v; want nil once stopped", err)
		}
	})
}

// next reads the next change within a minute.
func next(t *testing.T, cur store.Cursor) store.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := cur.Next(ctx)
	if err != nil {
		t.Fatalf("Next = %v", err)
	}
	return ch
}

func put(t *testing.T, tab tables.Table, pk string, n int) {
	t.Helper()
	if err := tab.Put(context.Background(), store.Item{store.AttrPK: pk, store.AttrSK: "x", "n": n}, store.Condition{}); err != nil {
		t.Fatal(err)
	}
}

// The relay carries the changes a hub reads, in commit order, with their images, numbered
// 1, 2, 3... after the gap it starts with; the others stay out.
func TestRelayCarriesChangesInOrder(t *testing.T) {
	t.Parallel()
	log := relaytest.NewLog(t, 0)
	tab := tables.Embedded(t)
	cur, err := log.Follow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	startRelay(t, tab, log)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cur.Next(ctx); !errors.Is(err, relay.ErrGap) {
		t.Fatalf("first entry: %v; want the relay's starting gap", err)
	}
	cur.Close()
	// A cursor ends at a gap; a hub follows the log again, after it.
	if cur, err = log.FollowAfter(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		put(t, tab, "other#"+strconv.Itoa(i), i) // not carried
		put(t, tab, "ev#"+strconv.Itoa(i), i)
	}
	var last uint64
	for i := range 5 {
		ch := next(t, cur)
		pos, err := strconv.ParseUint(ch.Seq, 10, 64)
		if err != nil || pos <= last {
			t.Fatalf("change %d at %q after %d; want increasing numbers", i, ch.Seq, last)
		}
		last = pos
		if ch.Key.PK != "ev#"+strconv.Itoa(i) || ch.Kind != store.ChangeInsert || ch.New.Int("n") != int64(i) {
			t.Fatalf("change %d = %+v; want the insert of ev#%d", i, ch, i)
		}
	}
}

// A Log is read again from any position it still holds (store.Replayer); a position past its
// end, or one whose next change was trimmed, is refused; and no reader passes a gap.
func TestLogFollowAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := relaytest.NewLog(t, 0)
	var changes []store.Change
	for i := range 10 {
		changes = append(changes, store.Change{Kind: store.ChangeInsert, Key: store.Key{PK: "ev#" + strconv.Itoa(i), SK: "x"},
			New: store.Item{store.AttrPK: "ev#" + strconv.Itoa(i), store.AttrSK: "x"}, At: time.Unix(int64(i), 0)})
	}
	if err := log.Append(ctx, changes); err != nil {
		t.Fatal(err)
	}
	cur, err := log.FollowAfter(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	for i := 7; i <= 10; i++ {
		if ch := next(t, cur); ch.Key.PK != "ev#"+strconv.Itoa(i-1) {
			t.Fatalf("after 6: %s; want ev#%d", ch.Key.PK, i-1)
		}
	}
	cur.Close()
	if _, err := log.FollowAfter(ctx, 11); !errors.Is(err, store.ErrReplay) {
		t.Errorf("FollowAfter past the end = %v; want ErrReplay", err)
	}
	if err := log.AppendGap(ctx); err != nil {
		t.Fatal(err)
	}
	if err := log.Append(ctx, changes[:1]); err != nil {
		t.Fatal(err)
	}
	cur, err = log.FollowAfter(ctx, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	next(t, cur) // 10
	if _, err := cur.Next(ctx); !errors.Is(err, relay.ErrGap) {
		t.Fatalf("reading across the gap: %v; want ErrGap", err)
	}
}

// Redis keeps about maxLen changes; a position whose next change is gone is refused.
func TestLogTrims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := relaytest.NewLog(t, 100)
	for b := range 10 {
		var batch []store.Change
		for i := range 100 {
			k := store.Key{PK: fmt.Sprintf("ev#%d-%d", b, i), SK: "x"}
			batch = append(batch, store.Change{Kind: store.ChangeInsert, Key: k, New: store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK}})
		}
		if err := log.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.FollowAfter(ctx, 1); !errors.Is(err, store.ErrReplay) {
		t.Errorf("FollowAfter a trimmed position = %v; want ErrReplay", err)
	}
	if _, err := log.FollowAfter(ctx, 990); err != nil {
		t.Errorf("FollowAfter a kept position = %v; want a cursor", err)
	}
}
