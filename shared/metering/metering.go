// Package metering counts consumption per organisation, environment and UTC day (docs/api.md §1:
// every read, publish, signal and stream connect; §10.3 UsageTotals adds tickets). No
// request is refused for it (docs/api.md §8 rule 2): it only counts, and a throttled signal is
// counted too (docs/api.md §8 rule 3; the signal handler counts before it asks the ceiling).
//
// # Counting without a write per request
//
// A Meter adds counts in memory and writes them in batches: every FlushInterval (5 s) a
// background flush turns everything counted since the last one into one atomic Add update
// per (organisation, environment, day) touched, and Close flushes what is left. A flush that
// fails keeps its counts for the next one. The cost is the exposure: if the process dies
// without Close, at most the counts of one flush interval (plus those of failed flushes) are
// lost. Counts are not exactly-once either: an Add that timed out after the table applied it
// is retried and counted twice. Both are acceptable for usage figures, not for money, which
// Stripe meters.
//
// On Lambda an instance can be frozen or dropped after any response, so in-memory counts may
// never be flushed. Options.WriteThrough makes every Count write its own Add before it
// returns (one table write per count: the price of not losing it); a failed write is kept
// and retried by the next Count, Flush or Close. A Lambda function instead turns the
// background flush off and calls Flush itself, in batches at the end of invocations and on
// SIGTERM (shared/app/lambdaapp), which loses at most one batch's counts when an instance dies
// without SIGTERM.
//
// # Storage layout and hot partitions
//
// Counts live under the organisation's partition (docs/architecture.md §2):
//
//	pk "org#<org_id>"  sk "usage#<environment>#<YYYY-MM-DD>#<shard>"
//	    org_id, environment, date, reads, publishes, signals, stream_connects, tickets, ttl
//
// Each write goes to one of Options.Shards items of the day chosen at random, so a busy
// organisation's flushes from many processes do not all queue on one item (docs/architecture.md
// §2, hot partitions); Read sums the shards with one Query. Items expire Options.Retention
// after their day (400 days: the console shows 90, billing the current month).
package metering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
)

// Counter names one kind of consumption; its value is the attribute name in the table and
// the field name of UsageTotals (docs/api.md §10.3).
type Counter string

// The counters of UsageTotals (docs/api.md §10.3).
const (
	Reads          Counter = "reads"
	Publishes      Counter = "publishes"
	Signals        Counter = "signals"
	StreamConnects Counter = "stream_connects"
	Tickets        Counter = "tickets"
)

// Counters lists every Counter in UsageTotals order.
var Counters = []Counter{Reads, Publishes, Signals, StreamConnects, Tickets}

// Defaults of Options.
const (
	DefaultFlushInterval = 5 * time.Second
	DefaultShards        = 4
	DefaultRetention     = 400 * 24 * time.Hour
	// MaxReadDays bounds one Read (the console's longest window is 90 days).
	MaxReadDays = 366
)

// DateFormat is how days are written, in keys and in Day.Date (docs/api.md §10.1: YYYY-MM-DD).
const DateFormat = "2006-01-02"

// flushTimeout bounds a background flush; flushWorkers bounds its concurrent writes.
const (
	flushTimeout = 30 * time.Second
	flushWorkers = 8
)

// ErrInvalid is returned by Read for arguments it cannot serve.
var ErrInvalid = errors.New("metering: invalid request")

// Totals are the five counters (docs/api.md §10.3 UsageTotals).
type Totals struct {
	Reads          int64
	Publishes      int64
	Signals        int64
	StreamConnects int64
	Tickets        int64
}

// Get returns the count of c.
func (t Totals) Get(c Counter) int64 {
	switch c {
	case Reads:
		return t.Reads
	case Publishes:
		return t.Publishes
	case Signals:
		return t.Signals
	case StreamConnects:
		return t.StreamConnects
	case Tickets:
		return t.Tickets
	}
	return 0
}

func (t *Totals) add(c Counter, n int64) {
	switch c {
	case Reads:
		t.Reads += n
	case Publishes:
		t.Publishes += n
	case Signals:
		t.Signals += n
	case StreamConnects:
		t.StreamConnects += n
	case Tickets:
		t.Tickets += n
	}
}

func (t *Totals) merge(o Totals) {
	for _, c := range Counters {
		t.add(c, o.Get(c))
	}
}

// Day is the usage of one UTC day (docs/api.md §10.3 UsageDay).
type Day struct {
	Date string // YYYY-MM-DD
	Totals
}

// Options configure a Meter; the zero value is ready to use.
type Options struct {
	// Clock decides the UTC day a count belongs to; clock.System when nil.
	Clock clock.Clock
	// Logger receives flush failures; slog.Default() when nil.
	Logger *slog.Logger
	// Shards is how many items share one organisation's day (DefaultShards when 0 or less).
	Shards int
	// FlushInterval is the time between background flushes: DefaultFlushInterval when 0; no
	// background flush when negative (the caller calls Flush).
	FlushInterval time.Duration
	// Ticks, when not nil, replaces the background timer: a flush runs for each value
	// received. For tests, and for callers with a schedule of their own.
	Ticks <-chan time.Time
	// WriteThrough makes Count write before it returns, for Lambda (see the package doc).
	WriteThrough bool
	// Retention is how long after its day a usage item is kept (DefaultRetention when 0 or less).
	Retention time.Duration
}

// bucket is what one flush writes one update for.
type bucket struct {
	org, env, day string
}

// Meter counts usage. It is safe for concurrent use.
type Meter struct {
	table        store.Table
	clock        clock.Clock
	log          *slog.Logger
	shards       int
	retention    time.Duration
	writeThrough bool

	mu      sync.Mutex
	pending map[bucket]Totals
	closed  bool

	stop      chan struct{}
	loopDone  chan struct{}
	closeOnce sync.Once
}

// New returns a Meter writing to table, with its background flush running unless
// opts.WriteThrough or a negative opts.FlushInterval says otherwise. Call Close at shutdown.
func New(table store.Table, opts Options) *Meter {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Shards <= 0 {
		opts.Shards = DefaultShards
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	m := &Meter{
		table:        table,
		clock:        opts.Clock,
		log:          opts.Logger,
		shards:       opts.Shards,
		retention:    opts.Retention,
		writeThrough: opts.WriteThrough,
		pending:      map[bucket]Totals{},
		stop:         make(chan struct{}),
		loopDone:     make(chan struct{}),
	}
	ticks := opts.Ticks
	if ticks == nil && !opts.WriteThrough && opts.FlushInterval > 0 {
		ticker := time.NewTicker(opts.FlushInterval)
		ticks = ticker.C
		go func() {
			<-m.loopDone
			ticker.Stop()
		}()
	}
	if ticks == nil {
		close(m.loopDone)
		return m
	}
	go m.loop(ticks)
	return m
}

func (m *Meter) loop(ticks <-chan time.Time) {
	defer close(m.loopDone)
	for {
		select {
		case <-m.stop:
			return
		case <-ticks:
			ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
			if err := m.Flush(ctx); err != nil {
				m.log.LogAttrs(ctx, slog.LevelWarn, "metering: flush failed; counts kept for the next one", slog.String("error", err.Error()))
			}
			cancel()
		}
	}
}

// Count counts one unit of c for organisation org in environment env ("live" or "sandbox"),
// on today's UTC date. It never fails a request: with WriteThrough a failed write is logged
// and kept for the next attempt; a count with an empty organisation or an unknown
// environment is a caller bug, logged and dropped.
func (m *Meter) Count(ctx context.Context, org, env string, c Counter) {
	if org == "" || (env != "live" && env != "sandbox") || !validCounter(c) {
		m.log.LogAttrs(ctx, slog.LevelError, "metering: count dropped: bad organisation, environment or counter",
			slog.String("org_id", org), slog.String("environment", env), slog.String("counter", string(c)))
		return
	}
	b := bucket{org: org, env: env, day: m.clock.Now().UTC().Format(DateFormat)}
	var one Totals
	one.add(c, 1)

	m.mu.Lock()
	through := m.writeThrough || m.closed
	if !through {
		t := m.pending[b]
		t.merge(one)
		m.pending[b] = t
	}
	m.mu.Unlock()
	if !through {
		return
	}
	// Write through: this count reaches the table before Count returns, and earlier failed
	// writes get another chance.
	ctx = context.WithoutCancel(ctx)
	if err := m.write(ctx, b, one); err != nil {
		m.keep(b, one)
		m.log.LogAttrs(ctx, slog.LevelWarn, "metering: write failed; count kept for the next attempt",
			slog.String("org_id", org), slog.String("error", err.Error()))
		return
	}
	if m.hasPending() {
		if err := m.Flush(ctx); err != nil {
			m.log.LogAttrs(ctx, slog.LevelWarn, "metering: flush of kept counts failed", slog.String("error", err.Error()))
		}
	}
}

// Flush writes every count held in memory, one Add update per (organisation, environment,
// day), and returns when they are written. Counts whose write failed are kept for the next
// Flush, and the error says how many writes failed.
func (m *Meter) Flush(ctx context.Context) error {
	m.mu.Lock()
	batch := m.pending
	m.pending = map[bucket]Totals{}
	m.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	var (
		wg     sync.WaitGroup
		errMu  sync.Mutex
		errs   []error
		tokens = make(chan struct{}, flushWorkers)
	)
	for b, t := range batch {
		tokens <- struct{}{}
		wg.Go(func() {
			defer func() { <-tokens }()
			if err := m.write(ctx, b, t); err != nil {
				m.keep(b, t)
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("metering: %d of %d writes failed: %w", len(errs), len(batch), errors.Join(errs...))
	}
	return nil
}

// Close stops the background flush and flushes what is left. Counts made after Close are
// written through, one write each.
func (m *Meter) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		close(m.stop)
	})
	select {
	case <-m.loopDone:
	case <-ctx.Done():
		return fmt.Errorf("metering: close: %w", ctx.Err())
	}
	return m.Flush(ctx)
}

// write adds t to a random shard of b's day.
func (m *Meter) write(ctx context.Context, b bucket, t Totals) error {
	day, err := time.Parse(DateFormat, b.day)
	if err != nil {
		return fmt.Errorf("metering: day %q: %w", b.day, err)
	}
	add := map[string]int64{}
	for _, c := range Counters {
		if n := t.Get(c); n != 0 {
			add[string(c)] = n
		}
	}
	_, err = m.table.Update(ctx, usageKey(b.org, b.env, b.day, rand.IntN(m.shards)), store.Update{
		Add: add,
		Set: map[string]any{
			"org_id":      b.org,
			"environment": b.env,
			"date":        b.day,
			store.AttrTTL: day.Add(24*time.Hour + m.retention).Unix(),
		},
	}, store.Condition{})
	if err != nil {
		return fmt.Errorf("metering: add usage of %s %s %s: %w", b.org, b.env, b.day, err)
	}
	return nil
}

func (m *Meter) keep(b bucket, t Totals) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.pending[b]
	cur.merge(t)
	m.pending[b] = cur
}

func (m *Meter) hasPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending) > 0
}

// Read returns the usage of organisation org in environment env for every UTC day from the
// date of from to the date of to, both included, oldest first: a dense series with zero days
// included (docs/api.md §4.4 usage). It reads what has been flushed, from every process.
func (m *Meter) Read(ctx context.Context, org, env string, from, to time.Time) ([]Day, error) {
	first := truncateDay(from)
	last := truncateDay(to)
	switch {
	case org == "" || (env != "live" && env != "sandbox"):
		return nil, fmt.Errorf("%w: organisation %q, environment %q", ErrInvalid, org, env)
	case last.Before(first):
		return nil, fmt.Errorf("%w: from %s after to %s", ErrInvalid, first.Format(DateFormat), last.Format(DateFormat))
	case last.Sub(first) >= MaxReadDays*24*time.Hour:
		return nil, fmt.Errorf("%w: more than %d days", ErrInvalid, MaxReadDays)
	}
	prefix := skPrefix(env)
	items, err := m.table.Query(ctx, store.Query{
		PK:   orgPartition(org),
		From: prefix + first.Format(DateFormat),
		To:   prefix + last.Format(DateFormat) + "#~", // "~" sorts after every shard number
	})
	if err != nil {
		return nil, fmt.Errorf("metering: read usage of %s %s: %w", org, env, err)
	}
	sums := map[string]Totals{}
	for _, it := range items {
		date := it.String("date")
		t := sums[date]
		for _, c := range Counters {
			t.add(c, it.Int(string(c)))
		}
		sums[date] = t
	}
	var days []Day
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		date := d.Format(DateFormat)
		days = append(days, Day{Date: date, Totals: sums[date]})
	}
	return days, nil
}

// Sum adds up days (docs/api.md §10.3 UsageSeries.totals).
func Sum(days []Day) Totals {
	var t Totals
	for _, d := range days {
		t.merge(d.Totals)
	}
	return t
}

func truncateDay(t time.Time) time.Time {
	y, mo, d := t.UTC().Date()
	return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
}

func validCounter(c Counter) bool {
	for _, k := range Counters {
		if c == k {
			return true
		}
	}
	return false
}

// orgPartition is the organisation's partition, shared with its other records.
func orgPartition(org string) string { return "org#" + org }

func skPrefix(env string) string { return "usage#" + env + "#" }

func usageKey(org, env, day string, shard int) store.Key {
	return store.Key{PK: orgPartition(org), SK: fmt.Sprintf("%s%s#%02d", skPrefix(env), day, shard)}
}
