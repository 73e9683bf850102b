package eventstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// Run with (about a minute to load the city once, then each benchmark):
//
//	go test -run '^$' -bench . -benchtime 2000x ./shared/eventstore/
//
// The city is the load test's dataset (city_test.go): 100 000 active events over 50 km x
// 50 km on the embedded store. lookups/op is the index partitions a query reads (one table
// Query each), items/op the index items they hold, events/op the answer's length.

const bigCityEvents = 100_000

var bigCity struct {
	once  sync.Once
	dir   string
	table *embedded.Store
	store *eventstore.Store // with the area cache, as go run . has it; the city's only writer
	plain *eventstore.Store // without
	err   error
}

// TestMain removes the benchmark city's folder (a copy when the city is kept), which outlives
// any one benchmark.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigCity.table != nil {
		bigCity.table.Close()
	}
	if bigCity.dir != "" {
		os.RemoveAll(bigCity.dir)
	}
	os.Exit(code)
}

// cityStore returns the loaded benchmark city, loading it on first use. With
// EVENTS_BENCH_CITY=<folder> the city is loaded into that folder once and each run works on a
// copy of it, so that what BenchmarkPublish adds does not reach the next run: runs of two
// builds in turn start from the same city (the events never expire: the store's clock stands
// still at tables.Start).
func cityStore(b *testing.B) *eventstore.Store {
	b.Helper()
	bigCity.once.Do(func() {
		bigCity.dir, bigCity.err = os.MkdirTemp("", "events-bench-")
		if bigCity.err != nil {
			return
		}
		kept, keep := os.LookupEnv("EVENTS_BENCH_CITY")
		if keep {
			var city string
			if city, bigCity.err = keptCity(b, kept); bigCity.err != nil {
				return
			}
			if bigCity.err = os.CopyFS(bigCity.dir, os.DirFS(city)); bigCity.err != nil {
				return
			}
		}
		var clk *clock.Fake
		bigCity.table, bigCity.store, clk, bigCity.err = openCity(filepath.Join(bigCity.dir, "store.db"))
		if bigCity.err != nil {
			return
		}
		bigCity.plain, bigCity.err = eventstore.New(bigCity.table, eventstore.Options{IDKey: testIDKey, Clock: clk})
		if bigCity.err != nil || keep {
			return
		}
		loadCity(b, bigCity.store, liveCaller, 0, bigCityEvents)
	})
	if bigCity.err != nil {
		b.Fatal(bigCity.err)
	}
	return bigCity.store
}

// keptCity returns the folder in dir that holds the loaded city, loading it there unless it
// holds it already, and closing it: a closed store has every commit in its file and an empty
// log, so copies of the folder open as it is. A file marks the city whole; a folder without it,
// from a run stopped while loading, is loaded afresh.
func keptCity(b *testing.B, dir string) (string, error) {
	city := filepath.Join(dir, "city")
	marker := filepath.Join(city, "loaded")
	if _, err := os.Stat(marker); err == nil {
		return city, nil
	}
	if err := os.RemoveAll(city); err != nil {
		return "", err
	}
	table, s, _, err := openCity(filepath.Join(city, "store.db"))
	if err != nil {
		return "", err
	}
	loadCity(b, s, liveCaller, 0, bigCityEvents)
	if err := table.Close(); err != nil {
		return "", err
	}
	return city, os.WriteFile(marker, nil, 0o644)
}

// openCity opens the city's store at path, with the area cache as go run . has it, on a clock
// that stands still.
func openCity(path string) (*embedded.Store, *eventstore.Store, *clock.Fake, error) {
	clk := clock.NewFake(tables.Start)
	table, err := embedded.Open(path, embedded.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		return nil, nil, nil, err
	}
	opts := eventstore.Options{IDKey: testIDKey, Clock: clk, CacheBytes: 512 << 20, SoleWriter: true}
	s, err := eventstore.New(table, opts)
	if err != nil {
		table.Close()
		return nil, nil, nil, err
	}
	return table, s, clk, nil
}

var (
	testIDKey  = []byte("0123456789abcdef0123456789abcdef")
	liveCaller = eventstore.Caller{Org: "org_bench", Environment: event.EnvironmentLive}
)

// benchmarkQuery runs area queries at random centres of the city from 64 goroutines, as
// scripts/load.sh does with 64 clients, so ns/op is the inverse of the throughput on this
// machine's cores (the HTTP layer's own cost comes on top).
func benchmarkQuery(b *testing.B, q eventstore.AreaQuery, cached bool) {
	s := cityStore(b)
	if cached {
		warmCity(b, q.Radius)
	} else {
		s = bigCity.plain
	}
	var lookups, hits, items, found, seed atomic.Int64
	b.SetParallelism(32)
	cpu := startCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(uint64(seed.Add(1)), 1))
		q := q
		var body []byte
		for pb.Next() {
			q.Center = randomInCity(r, q.Radius)
			res, err := s.Area(context.Background(), liveCaller, q)
			if err != nil {
				b.Error(err)
				return
			}
			body = res.AppendJSON(body[:0]) // the answer's body, as GET /v1/events sends it
			lookups.Add(int64(res.Lookups))
			hits.Add(int64(res.Cached))
			items.Add(int64(res.ItemsRead))
			found.Add(int64(len(res.Events)))
			res.Release() // as the route does once the body is written
		}
	})
	cpu.report(b)
	b.ReportMetric(float64(lookups.Load())/float64(b.N), "lookups/op")
	b.ReportMetric(float64(hits.Load())/float64(b.N), "cached/op")
	b.ReportMetric(float64(items.Load())/float64(b.N), "items/op")
	b.ReportMetric(float64(found.Load())/float64(b.N), "events/op")
}

var warm sync.Map // radius -> *sync.Once

// warmCity reads every cell of the city once at the level a query of radius reads, so that
// the cached benchmarks measure the steady state of a server that has been up a while, not the
// first reads (which cost what the uncached benchmarks show).
func warmCity(b *testing.B, radius float64) {
	once, _ := warm.LoadOrStore(radius, &sync.Once{})
	once.(*sync.Once).Do(func() {
		step := min(radius, 2000)
		for dx := -citySide / 2; dx <= citySide/2; dx += step {
			for dy := -citySide / 2; dy <= citySide/2; dy += step {
				if _, err := bigCity.store.Area(context.Background(), liveCaller,
					eventstore.AreaQuery{Center: cityPoint(dx, dy), Radius: radius}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Logf("area cache after warming at %.0f m: %d MB", radius, bigCity.store.CacheBytes()>>20)
	})
}

// BenchmarkQuery1000m is GET /v1/events at the default radius (target through HTTP on 2
// cores: 2000 queries/s, p99 25 ms; docs/performance.md §1).
func BenchmarkQuery1000m(b *testing.B) { benchmarkQuery(b, eventstore.AreaQuery{Radius: 1000}, true) }

// BenchmarkQuery1000mUncached reads the table for every query, as processes sharing DynamoDB do
// (and as go run . would without its area cache).
func BenchmarkQuery1000mUncached(b *testing.B) {
	benchmarkQuery(b, eventstore.AreaQuery{Radius: 1000}, false)
}

// BenchmarkQuery9780m is the widest query of docs/api.md §8 (target: p99 100 ms, at most 20
// lookups; docs/performance.md §1).
func BenchmarkQuery9780m(b *testing.B) { benchmarkQuery(b, eventstore.AreaQuery{Radius: 9780}, true) }

// BenchmarkQuery9780mUncached is BenchmarkQuery9780m reading the table every time.
func BenchmarkQuery9780mUncached(b *testing.B) {
	benchmarkQuery(b, eventstore.AreaQuery{Radius: 9780}, false)
}

// BenchmarkQuery9780mFiltered asks for a confidence no event of the city has, so that nothing
// ends the query early: every cell of the cover is read, the worst case of the lookup budget.
func BenchmarkQuery9780mFiltered(b *testing.B) {
	benchmarkQuery(b, eventstore.AreaQuery{Radius: 9780, MinConfidence: 0.9}, true)
}

// BenchmarkQuery1000mTyped and BenchmarkQuery9780mTyped ask for accidents only, as a client
// showing some hazards does: a thirteenth of the city's events, so the answer comes from
// farther away than an unfiltered one.
func BenchmarkQuery1000mTyped(b *testing.B) {
	benchmarkQuery(b, eventstore.AreaQuery{Radius: 1000, Types: []string{"accident"}}, true)
}

func BenchmarkQuery9780mTyped(b *testing.B) {
	benchmarkQuery(b, eventstore.AreaQuery{Radius: 9780, Types: []string{"accident"}}, true)
}

// BenchmarkPublish publishes new events into the loaded city from 64 goroutines, as
// scripts/load.sh does with 64 clients (target through HTTP: 3000 publishes/s;
// docs/performance.md §1).
func BenchmarkPublish(b *testing.B) {
	s := cityStore(b)
	var n atomic.Int64
	base := bigCityEvents + rand.IntN(1<<30)
	b.SetParallelism(32)
	cpu := startCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := base + int(n.Add(1))
			in := cityEvent(i)
			cid := fmt.Sprintf("bench-%d", i)
			in.ClientEventID = &cid
			if _, _, err := s.Publish(context.Background(), liveCaller, in); err != nil {
				b.Error(err)
				return
			}
		}
	})
	cpu.report(b)
}

// cpuClock measures the CPU time (user and system) the process spends in a benchmark's loop:
// on a machine shared with other work, ns/op (wall time) moves with the neighbours' load,
// while the CPU time one operation takes moves much less, so before/after comparisons
// (benchstat) use cpu-ns/op.
type cpuClock struct{ start time.Duration }

func startCPU(b *testing.B) cpuClock {
	return cpuClock{start: processCPU(b)}
}

// report adds cpu-ns/op, the process's CPU time since startCPU over b.N.
func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU(b)-c.start)/float64(b.N), "cpu-ns/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
