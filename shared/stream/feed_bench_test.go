package stream_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
)

// loopCursor replays records until it has delivered n of them, then reports done and waits.
type loopCursor struct {
	records []store.Change
	n, i    int
	done    chan struct{}
}

func (c *loopCursor) Next(ctx context.Context) (store.Change, error) {
	if c.i == c.n {
		close(c.done)
		<-ctx.Done()
		return store.Change{}, ctx.Err()
	}
	ch := c.records[c.i%len(c.records)]
	c.i++
	return ch, nil
}

func (c *loopCursor) Close() error { return nil }

type loopFeed struct{ cur *loopCursor }

func (f loopFeed) Follow(context.Context) (store.Cursor, error) { return f.cur, nil }

// BenchmarkRunPublishes measures what the hub spends on the feed records of one publish: the
// event item and its two area-index items (levels 8 and 6), as the events store writes them,
// with no subscriber (the usual state of a server that also serves streams) and with 1 000
// subscribers over a 20 km square. One op is one publish (three records).
func BenchmarkRunPublishes(b *testing.B) {
	const perPublish = 3
	evs := make([]store.Change, 0, 256*perPublish)
	for i := range 256 {
		p := geo.Point{Lat: geo.Round5(center.Lat - 0.09 + 0.18*float64(i%16)/16), Lon: geo.Round5(center.Lon - 0.135 + 0.27*float64(i/16)/16)}
		it := testItem(newEvent(b, fmt.Sprintf("ev_%d", i), "accident", event.EnvironmentLive, p))
		evs = append(evs, store.Change{Kind: store.ChangeInsert, Key: it.Key(), New: it})
		for _, lvl := range []string{"8", "6"} {
			k := store.Key{PK: "area#live#" + lvl + fmt.Sprint(i), SK: fmt.Sprintf("ev_%d", i)}
			evs = append(evs, store.Change{Kind: store.ChangeInsert, Key: k, New: store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK, "rec": "x"}})
		}
	}
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			for i := range n {
				p := geo.Point{Lat: center.Lat - 0.09 + 0.18*float64(i%100)/100, Lon: center.Lon - 0.135 + 0.27*float64(i/100%100)/100}
				s, err := h.Subscribe(live, stream.Filter{Center: p, Radius: 1000})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
			}
			cur := &loopCursor{records: evs, n: b.N * perPublish, done: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ResetTimer()
			go h.Run(ctx, loopFeed{cur}, testDecoder)
			<-cur.done
			b.StopTimer()
		})
	}
}
