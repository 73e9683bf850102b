package metering_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// noon is a day after tables.Start (so DynamoDB Local's own TTL never interferes).
var noon = time.Date(2040, 5, 10, 12, 0, 0, 0, time.UTC)

// manual returns a meter without a background flush: the test flushes.
func manual(t *testing.T, tab store.Table, clk *clock.Fake) *metering.Meter {
	t.Helper()
	m := metering.New(tab, metering.Options{Clock: clk, FlushInterval: -1})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func read(t *testing.T, m *metering.Meter, org, env string, from, to time.Time) []metering.Day {
	t.Helper()
	days, err := m.Read(t.Context(), org, env, from, to)
	if err != nil {
		t.Fatalf("Read(%s, %s, %s..%s) = %v; want nil", org, env, from.Format(metering.DateFormat), to.Format(metering.DateFormat), err)
	}
	return days
}

func flush(t *testing.T, m *metering.Meter) {
	t.Helper()
	if err := m.Flush(t.Context()); err != nil {
		t.Fatalf("Flush = %v; want nil", err)
	}
}

// TestCountAndFlush: docs/api.md §1: consumption is metered per organisation, per environment, per
// day; counts reach the table only when flushed (no write per request), and the counts of
// several processes add up.
func TestCountAndFlush(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		tab.Clock.Set(noon)
		ctx := t.Context()
		a := manual(t, tab, tab.Clock)
		b := manual(t, tab, tab.Clock) // a second process

		count := func(m *metering.Meter, org, env string, c metering.Counter, n int) {
			for range n {
				m.Count(ctx, org, env, c)
			}
		}
		count(a, "org_a", "live", metering.Reads, 7)
		count(a, "org_a", "live", metering.Publishes, 2)
		count(a, "org_a", "live", metering.Signals, 3)
		count(a, "org_a", "live", metering.StreamConnects, 1)
		count(a, "org_a", "live", metering.Tickets, 4)
		count(a, "org_a", "sandbox", metering.Reads, 5)
		count(b, "org_a", "live", metering.Reads, 10)
		count(b, "org_b", "live", metering.Reads, 1)

		if got := read(t, a, "org_a", "live", noon, noon); got[0].Totals != (metering.Totals{}) {
			t.Errorf("usage before any flush = %+v; want zeros (counting writes nothing)", got)
		}
		flush(t, a)
		if got, want := read(t, a, "org_a", "live", noon, noon), []metering.Day{{Date: "2040-05-10", Totals: metering.Totals{Reads: 7, Publishes: 2, Signals: 3, StreamConnects: 1, Tickets: 4}}}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("usage after process a flushed = %+v; want %+v", got, want)
		}
		flush(t, b)
		cases := []struct {
			org, env string
			want     metering.Totals
		}{
			{"org_a", "live", metering.Totals{Reads: 17, Publishes: 2, Signals: 3, StreamConnects: 1, Tickets: 4}},
			{"org_a", "sandbox", metering.Totals{Reads: 5}},
			{"org_b", "live", metering.Totals{Reads: 1}},
			{"org_b", "sandbox", metering.Totals{}},
		}
		for _, tc := range cases {
			if got := read(t, b, tc.org, tc.env, noon, noon)[0].Totals; got != tc.want {
				t.Errorf("usage of %s %s = %+v; want %+v", tc.org, tc.env, got, tc.want)
			}
		}

		// Many flushes spread over the shards of the day rather than one item.
		for range 20 {
			a.Count(ctx, "org_a", "live", metering.Reads)
			flush(t, a)
		}
		items, err := tab.Query(ctx, store.Query{PK: "org#org_a", Prefix: "usage#live#2040-05-10#"})
		if err != nil {
			t.Fatalf("Query = %v", err)
		}
		if len(items) < 2 || len(items) > metering.DefaultShards {
			t.Errorf("usage items of one day = %d; want 2..%d shards", len(items), metering.DefaultShards)
		}
		if got := read(t, a, "org_a", "live", noon, noon)[0].Reads; got != 37 {
			t.Errorf("reads summed over the shards = %d; want 37", got)
		}
	})
}

// TestDayBoundary: days are UTC days, and a count belongs to the day it was made, whenever
// it is flushed. Read returns a dense series, zero days included (docs/api.md §4.4 usage).
func TestDayBoundary(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ctx := t.Context()
		midnight := time.Date(2040, 5, 11, 0, 0, 0, 0, time.UTC)
		tab.Clock.Set(midnight.Add(-time.Second)) // 23:59:59 on the 10th
		m := manual(t, tab, tab.Clock)
		m.Count(ctx, "org_d", "live", metering.Reads)
		tab.Clock.Advance(time.Second) // 00:00:00 on the 11th
		m.Count(ctx, "org_d", "live", metering.Reads)
		m.Count(ctx, "org_d", "live", metering.Signals)
		tab.Clock.Advance(2 * 24 * time.Hour) // the 13th
		flush(t, m)

		// A zone other than UTC changes nothing: days are UTC days.
		from := time.Date(2040, 5, 9, 20, 0, 0, 0, time.FixedZone("UTC-5", -5*3600)) // the 10th, 01:00 UTC
		got := read(t, m, "org_d", "live", from, midnight.Add(2*24*time.Hour))
		want := []metering.Day{
			{Date: "2040-05-10", Totals: metering.Totals{Reads: 1}},
			{Date: "2040-05-11", Totals: metering.Totals{Reads: 1, Signals: 1}},
			{Date: "2040-05-12"},
			{Date: "2040-05-13"},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Read 10th..13th = %+v; want %+v", got, want)
		}
		if sum := metering.Sum(got); sum != (metering.Totals{Reads: 2, Signals: 1}) {
			t.Errorf("Sum = %+v; want reads 2, signals 1", sum)
		}
	})
}

// TestBackgroundFlushAndClose: the default mode flushes on its timer and on Close, so counts
// reach the table without a write per request.
func TestBackgroundFlushAndClose(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	tab.Clock.Set(noon)
	ticks := make(chan time.Time) // unbuffered: a second send returns only once the first flush is done
	m := metering.New(tab, metering.Options{Clock: tab.Clock, Ticks: ticks})
	ctx := t.Context()
	m.Count(ctx, "org_t", "live", metering.Publishes)
	m.Count(ctx, "org_t", "live", metering.Publishes)
	ticks <- noon
	ticks <- noon
	if got := read(t, m, "org_t", "live", noon, noon)[0].Publishes; got != 2 {
		t.Errorf("publishes after a timer flush = %d; want 2", got)
	}
	m.Count(ctx, "org_t", "live", metering.Publishes)
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close = %v; want nil", err)
	}
	if got := read(t, m, "org_t", "live", noon, noon)[0].Publishes; got != 3 {
		t.Errorf("publishes after Close = %d; want 3 (Close flushes)", got)
	}
	m.Count(ctx, "org_t", "live", metering.Publishes)
	if got := read(t, m, "org_t", "live", noon, noon)[0].Publishes; got != 4 {
		t.Errorf("publishes counted after Close = %d; want 4 (written through)", got)
	}
}

// TestWriteThrough: the Lambda mode writes every count before Count returns, since the
// instance may be frozen after the response.
func TestWriteThrough(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		tab.Clock.Set(noon)
		m := metering.New(tab, metering.Options{Clock: tab.Clock, WriteThrough: true})
		defer m.Close(context.Background())
		for i := range 3 {
			m.Count(t.Context(), "org_w", "sandbox", metering.StreamConnects)
			if got := read(t, m, "org_w", "sandbox", noon, noon)[0].StreamConnects; got != int64(i+1) {
				t.Errorf("stream connects after count %d, with no flush = %d; want %d", i+1, got, i+1)
			}
		}
	})
}

// flaky is a table whose updates fail while down is set.
type flaky struct {
	store.Table
	down atomic.Bool
}

func (f *flaky) Update(ctx context.Context, k store.Key, u store.Update, c store.Condition) (store.Item, error) {
	if f.down.Load() {
		return nil, errors.New("throttled")
	}
	return f.Table.Update(ctx, k, u, c)
}

// TestFailedWritesAreKept: a failed flush keeps its counts for the next one, and so does a
// failed write-through; nothing is lost or counted twice.
func TestFailedWritesAreKept(t *testing.T) {
	t.Parallel()
	for _, through := range []bool{false, true} {
		t.Run(fmt.Sprintf("WriteThrough=%v", through), func(t *testing.T) {
			t.Parallel()
			tab := tables.Embedded(t)
			tab.Clock.Set(noon)
			f := &flaky{Table: tab}
			m := metering.New(f, metering.Options{Clock: tab.Clock, FlushInterval: -1, WriteThrough: through})
			ctx := t.Context()
			f.down.Store(true)
			m.Count(ctx, "org_f", "live", metering.Reads)
			m.Count(ctx, "org_f", "live", metering.Reads)
			if err := m.Flush(ctx); err == nil {
				t.Errorf("Flush with the table down = nil; want an error")
			}
			if got := read(t, m, "org_f", "live", noon, noon)[0].Reads; got != 0 {
				t.Errorf("reads stored while down = %d; want 0", got)
			}
			f.down.Store(false)
			m.Count(ctx, "org_f", "live", metering.Reads) // with write-through, this also retries the kept counts
			if !through {
				flush(t, m)
			}
			if got := read(t, m, "org_f", "live", noon, noon)[0].Reads; got != 3 {
				t.Errorf("reads once the table is back = %d; want 3", got)
			}
			if err := m.Close(ctx); err != nil {
				t.Errorf("Close = %v; want nil", err)
			}
			if got := read(t, m, "org_f", "live", noon, noon)[0].Reads; got != 3 {
				t.Errorf("reads after Close = %d; want 3 (no count written twice)", got)
			}
		})
	}
}

// TestConcurrentCountsAndFlushes: counts made while flushes run are neither lost nor doubled.
func TestConcurrentCountsAndFlushes(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	tab.Clock.Set(noon)
	m := manual(t, tab, tab.Clock)
	ctx := t.Context()
	const counters, each = 20, 50
	var wg sync.WaitGroup
	for range counters {
		wg.Go(func() {
			for range each {
				m.Count(ctx, "org_c", "live", metering.Signals)
			}
		})
	}
	stop := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		var err error
		for {
			select {
			case <-stop:
				flushed <- err
				return
			default:
				if ferr := m.Flush(ctx); ferr != nil {
					err = ferr
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	if err := <-flushed; err != nil {
		t.Fatalf("Flush = %v; want nil", err)
	}
	flush(t, m)
	if got := read(t, m, "org_c", "live", noon, noon)[0].Signals; got != counters*each {
		t.Errorf("signals = %d; want %d", got, counters*each)
	}
}

func TestReadRefuses(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	m := manual(t, tab, tab.Clock)
	cases := []struct {
		name     string
		org, env string
		from, to time.Time
	}{
		{"EmptyOrg", "", "live", noon, noon},
		{"UnknownEnvironment", "o", "prod", noon, noon},
		{"Reversed", "o", "live", noon, noon.AddDate(0, 0, -1)},
		{"TooLong", "o", "live", noon.AddDate(0, 0, -metering.MaxReadDays), noon},
	}
	for _, tc := range cases {
		if _, err := m.Read(t.Context(), tc.org, tc.env, tc.from, tc.to); !errors.Is(err, metering.ErrInvalid) {
			t.Errorf("Read(%s) = %v; want ErrInvalid", tc.name, err)
		}
	}
	if days, err := m.Read(t.Context(), "o", "live", noon.AddDate(0, 0, -89), noon); err != nil || len(days) != 90 {
		t.Errorf("Read(90 days) = %d days, %v; want 90, nil", len(days), err)
	}
}

// BenchmarkCount measures what a request pays for metering in the default mode: an
// in-memory add, no table write.
func BenchmarkCount(b *testing.B) {
	tab := tables.Embedded(b)
	m := metering.New(tab, metering.Options{Clock: tab.Clock, FlushInterval: -1})
	defer m.Close(context.Background())
	ctx := b.Context()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Count(ctx, "org_bench", "live", metering.Reads)
		}
	})
}
