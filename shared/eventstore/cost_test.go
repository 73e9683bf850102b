package eventstore_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"

	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb/costtest"
)

// costSide is the side of the square of the benchmark city (city_test.go) loaded for the cost
// test: its events only, at the city's density.
const costSide = 13_500.0

// inCostSquare tells whether p lies in the square of side costSide at the city's centre.
func inCostSquare(p geo.Point) bool {
	dy := (p.Lat - cityLat) * math.Pi / 180 * geo.EarthRadius
	dx := (p.Lon - cityLon) * math.Pi / 180 * geo.EarthRadius * math.Cos(cityLat*math.Pi/180)
	return math.Abs(dx) <= costSide/2 && math.Abs(dy) <= costSide/2
}

// loadCostCity stores, through s on table, the events of the city whose point lies in the
// cost test's square, as publishing them would, and returns how many. The items are written
// one by one, many at once: DynamoDB Local takes seconds over a transaction of many items.
func loadCostCity(t *testing.T, s *eventstore.Store, table store.Table) int {
	t.Helper()
	var items []store.Item
	n := 0
	for i := range bigCityEvents {
		in := cityEvent(i)
		if !inCostSquare(geo.Point{Lat: in.Lat, Lon: in.Lon}) {
			continue
		}
		ops, err := s.SeedOps(liveCaller, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			items = append(items, op.Item)
		}
		n++
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(items) || t.Failed() {
					return
				}
				if err := table.Put(context.Background(), items[i], store.Condition{}); err != nil {
					t.Errorf("load the city: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return n
}

// opCost is the measured cost of one operation, averaged over its runs, and the most it may
// cost.
type opCost struct {
	name   string
	bill   costtest.Bill
	budget costtest.Bill
}

// costBudgets are the most each operation may cost on DynamoDB, in read and write units
// (docs/operations.md §5). The area queries and the signal have the goals the layout was cut
// to; the others the figures the layout reaches, so that a change that makes one dearer shows.
// A publish cannot come down to 4 write units and keep its guarantees: its transaction must hold
// the event item (an acknowledged publish survives a crash), its index item (no index item
// without its event, no event missing from the index) and its merge guard (of concurrent reports
// of one hazard exactly one stays active, docs/network.md §1), each billed 2 units, and its entry
// in the publisher's list (which a verdict reads) costs 1 more, outside the transaction
// (Options.ListApart, as on DynamoDB).
var costBudgets = map[string]costtest.Bill{
	"publish, point":                {ReadUnits: 6, WriteUnits: 8},
	"publish, LineString of 1.6 km": {ReadUnits: 12, WriteUnits: 15},
	"query 1000 m":                  {ReadUnits: 20},
	"query 1000 m, sandbox key":     {ReadUnits: 20},
	"query 9780 m":                  {ReadUnits: 200},
	"signal (first corroboration)":  {ReadUnits: 2, WriteUnits: 8},
	"signal (confirm)":              {ReadUnits: 2, WriteUnits: 6},
	"revise (severity)":             {ReadUnits: 8, WriteUnits: 9},
	"GET one event":                 {ReadUnits: 1},
	"close":                         {ReadUnits: 1, WriteUnits: 6},
	"key verification and usage of one /v1 request": {ReadUnits: 1, WriteUnits: 2},
}

// TestCostPerOperation measures on DynamoDB Local what each operation of the events routes
// costs a process that shares the table (a Lambda: no area cache), in calls and request units
// (package costtest), prints it, and fails when an operation exceeds its budget
// (docs/operations.md §5). Queries read as GET /v1/events does (eventually consistent).
//
// The table holds a 13.5 km square of the benchmark city (docs/performance.md §1), 7 400 events,
// so that a query reads as many index items as in the whole city: a 1000 m query at any centre
// 1.5 km inside the square (on the code before this layout: 12 calls, 396 items, 143 events, as
// the whole city gives), and a 9780 m query, which reads the partitions nearest its centre until
// 500 events are found, at centres whose partitions lie in the square.
func TestCostPerOperation(t *testing.T) {
	tab := costtest.NewTable(t)
	ctx := context.Background()
	loader, err := eventstore.New(tab.Direct, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock, SoleWriter: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n := loadCostCity(t, loader, tab.Direct)
	t.Logf("loaded %d events of the city in %v", n, time.Since(start).Round(time.Second))
	s, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock, ListApart: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	inner := func(margin float64) geo.Point {
		side := costSide - 2*margin
		p := cityPoint((r.Float64()-0.5)*side, (r.Float64()-0.5)*side)
		return geo.Point{Lat: geo.Round5(p.Lat), Lon: geo.Round5(p.Lon)}
	}
	var costs []opCost
	measure := func(name string, runs int, op func(i int) error) {
		t.Helper()
		tab.Meter.Take()
		for i := range runs {
			if err := op(i); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		budget, ok := costBudgets[name]
		if !ok {
			t.Fatalf("%s has no budget", name)
		}
		costs = append(costs, opCost{name: name, bill: tab.Meter.Take().Scale(runs), budget: budget})
	}
	const runs = 6

	var points, lines []string
	measure("publish, point", runs, func(i int) error {
		p := inner(1000)
		cid := fmt.Sprintf("cost-point-%d", i)
		ev, _, err := s.Publish(ctx, liveCaller, event.EventIn{Type: "accident", Lat: p.Lat, Lon: p.Lon, ClientEventID: &cid})
		points = append(points, ev.ID)
		return err
	})
	measure("publish, LineString of 1.6 km", runs, func(i int) error {
		in := costLine(inner(3000), r.Float64()*360, 1600, 8)
		cid := fmt.Sprintf("cost-line-%d", i)
		in.ClientEventID = &cid
		ev, _, err := s.Publish(ctx, liveCaller, in)
		lines = append(lines, ev.ID)
		return err
	})
	queries := make([]geo.Point, 20)
	for i := range queries {
		queries[i] = inner(1500)
	}
	var found costtest.Bill
	measure("query 1000 m", len(queries), func(i int) error {
		res, err := s.Area(ctx, liveCaller, eventstore.AreaQuery{Center: queries[i], Radius: 1000, Eventual: true})
		found.ItemsRead += len(res.Events)
		return err
	})
	t.Logf("query 1000 m: %d events answered on average", found.Scale(len(queries)).ItemsRead)
	sandboxCaller := eventstore.Caller{Org: "org_sandbox", Environment: event.EnvironmentSandbox}
	measure("query 1000 m, sandbox key", len(queries), func(i int) error {
		_, err := s.Area(ctx, sandboxCaller, eventstore.AreaQuery{Center: queries[i], Radius: 1000, Eventual: true})
		return err
	})
	wide := wideCentres(t)
	var lookups int
	measure("query 9780 m", len(wide), func(i int) error {
		res, err := s.Area(ctx, liveCaller, eventstore.AreaQuery{Center: wide[i], Radius: 9780, Eventual: true})
		lookups += res.Lookups
		return err
	})
	t.Logf("query 9780 m: %.1f partitions read on average", float64(lookups)/float64(len(wide)))

	fleet := eventstore.Caller{Org: "org_fleet", Environment: event.EnvironmentLive}
	vehicle := func(name string) event.SignalIn {
		return event.SignalIn{Action: event.ActionConfirm, ReporterToken: &name}
	}
	measure("signal (first corroboration)", runs, func(i int) error {
		_, _, err := s.Signal(ctx, fleet, points[i], vehicle("first"))
		return err
	})
	measure("signal (confirm)", runs, func(i int) error {
		_, _, err := s.Signal(ctx, fleet, points[i], vehicle("second"))
		return err
	})
	measure("revise (severity)", runs, func(i int) error {
		ev, err := s.Get(ctx, liveCaller, points[i])
		if err != nil {
			return err
		}
		high := event.SeverityHigh
		_, err = s.Revise(ctx, liveCaller, points[i], event.RevisionIn{Lat: ev.Lat, Lon: ev.Lon, Severity: &high})
		return err
	})
	tab.Meter.Take() // the Get above
	measure("GET one event", runs, func(i int) error {
		_, err := s.Get(ctx, liveCaller, points[i])
		return err
	})
	measure("close", runs, func(i int) error {
		_, err := s.Close(ctx, liveCaller, points[i])
		return err
	})

	issuer := apikey.New(tab.Direct, apikey.Options{Clock: tab.Clock})
	raw, _, err := issuer.Issue(ctx, apikey.IssueRequest{OrgID: liveCaller.Org, Environment: apikey.Live, Label: "cost"})
	if err != nil {
		t.Fatal(err)
	}
	keys := apikey.New(tab, apikey.Options{Clock: tab.Clock})
	usage := metering.New(tab, metering.Options{Clock: tab.Clock, FlushInterval: -1})
	measure("key verification and usage of one /v1 request", 1, func(int) error {
		if _, err := keys.Authenticate(ctx, raw); err != nil {
			return err
		}
		if err := keys.Wait(ctx); err != nil {
			return err
		}
		usage.Count(ctx, liveCaller.Org, liveCaller.Environment, metering.Reads)
		return usage.Flush(ctx)
	})

	t.Logf("%-48s %6s %8s %8s %7s %12s", "operation", "calls", "read RU", "write RU", "items", "USD per 1M")
	for _, c := range costs {
		usd := c.bill.ReadUnits*0.25 + c.bill.WriteUnits*1.25
		t.Logf("%-48s %6d %8.1f %8.1f %7d %12.2f", c.name, c.bill.Calls, c.bill.ReadUnits, c.bill.WriteUnits, c.bill.ItemsRead, usd)
	}
	for _, c := range costs {
		if b := c.budget; c.bill.ReadUnits > b.ReadUnits || c.bill.WriteUnits > b.WriteUnits {
			t.Errorf("%s costs %.1f read and %.1f write units; budget %.0f read, %.0f write", c.name,
				c.bill.ReadUnits, c.bill.WriteUnits, b.ReadUnits, b.WriteUnits)
		}
	}
	if m := tab.Meter.Mismatches(); len(m) > 0 {
		t.Errorf("the meter disagrees with DynamoDB Local on %d calls, e.g. %s", len(m), m[0])
	}
}

// costLine is a congestion LineString of n positions and about length metres from p, bending
// a little at each vertex, as the city's are.
func costLine(p geo.Point, bearing, length float64, n int) event.EventIn {
	in := event.EventIn{Type: "congestion", Lat: p.Lat, Lon: p.Lon}
	coords := [][2]float64{{p.Lon, p.Lat}}
	for len(coords) < n {
		bearing += 10
		p = destination(p, bearing, length/float64(n-1))
		coords = append(coords, [2]float64{geo.Round5(p.Lon), geo.Round5(p.Lat)})
	}
	in.Geometry = &event.LineString{Type: event.GeometryType, Coordinates: coords}
	return in
}

// wideCentres are the centres of the cost test's 9780 m queries: the middle of the level-6
// cell of the city's centre, which a query there reads alone, and the corner of that cell
// nearest the city's centre, where a query reads the three cells that meet there and a fourth.
func wideCentres(t *testing.T) []geo.Point {
	t.Helper()
	c, err := h3.LatLngToCell(h3.NewLatLng(cityLat, cityLon), eventstore.CoarseLevel)
	if err != nil {
		t.Fatal(err)
	}
	mid, err := c.LatLng()
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Boundary()
	if err != nil {
		t.Fatal(err)
	}
	city := geo.Point{Lat: cityLat, Lon: cityLon}
	corner := geo.Point{Lat: b[0].Lat, Lon: b[0].Lng}
	for _, v := range b {
		if p := (geo.Point{Lat: v.Lat, Lon: v.Lng}); geo.Distance(city, p) < geo.Distance(city, corner) {
			corner = p
		}
	}
	return []geo.Point{{Lat: mid.Lat, Lon: mid.Lng}, corner}
}
