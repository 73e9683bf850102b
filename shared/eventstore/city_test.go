package eventstore_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/geo"
)

// The benchmark city of the load targets (docs/performance.md §1): active events over a
// 50 km square, about 40 per km², a tenth of them LineStrings of 300 m to 5 km (2 to 20
// points), the rest points.
const (
	cityLat, cityLon = 48.85, 2.35
	citySide         = 50_000.0
	cityLineShare    = 0.10
)

var cityTypes = []string{"stopped_vehicle", "object_on_road", "road_damage", "speed_camera", "accident",
	"police_check", "congestion", "weather_hazard", "roadworks", "people_on_road", "infrastructure_fault",
	"road_closure", "wrong_way_vehicle"}

// cityPoint returns the point dx metres east and dy metres north of the city centre.
func cityPoint(dx, dy float64) geo.Point {
	return geo.Point{
		Lat: cityLat + dy/geo.EarthRadius*180/math.Pi,
		Lon: cityLon + dx/(geo.EarthRadius*math.Cos(cityLat*math.Pi/180))*180/math.Pi,
	}
}

// randomInCity returns a point of the city, within margin metres of its edge at most.
func randomInCity(r *rand.Rand, margin float64) geo.Point {
	side := citySide - 2*margin
	return cityPoint((r.Float64()-0.5)*side, (r.Float64()-0.5)*side)
}

// destination is the point d metres from p on bearing deg (great circle).
func destination(p geo.Point, deg, d float64) geo.Point {
	lat1, lon1, b, a := p.Lat*math.Pi/180, p.Lon*math.Pi/180, deg*math.Pi/180, d/geo.EarthRadius
	lat2 := math.Asin(math.Sin(lat1)*math.Cos(a) + math.Cos(lat1)*math.Sin(a)*math.Cos(b))
	lon2 := lon1 + math.Atan2(math.Sin(b)*math.Sin(a)*math.Cos(lat1), math.Cos(a)-math.Sin(lat1)*math.Sin(lat2))
	lon := math.Mod(lon2*180/math.Pi+540, 360) - 180
	return geo.Point{Lat: lat2 * 180 / math.Pi, Lon: lon}
}

// cityEvent is event i of the city: a pure function of i.
func cityEvent(i int) event.EventIn {
	r := rand.New(rand.NewPCG(7, uint64(i)))
	p := randomInCity(r, 0)
	cid := fmt.Sprintf("city-%d", i)
	in := event.EventIn{Type: cityTypes[r.IntN(len(cityTypes))], Lat: geo.Round5(p.Lat), Lon: geo.Round5(p.Lon), ClientEventID: &cid}
	if r.Float64() < cityLineShare {
		in.Type = "congestion"
		n := 2 + r.IntN(19)
		length := 300 * math.Pow(5000.0/300, r.Float64())
		bearing := r.Float64() * 360
		pt := geo.Point{Lat: in.Lat, Lon: in.Lon}
		coords := [][2]float64{{pt.Lon, pt.Lat}}
		for len(coords) < n {
			bearing += r.Float64()*30 - 15
			pt = destination(pt, bearing, length/float64(n-1))
			coords = append(coords, [2]float64{geo.Round5(pt.Lon), geo.Round5(pt.Lat)})
		}
		in.Geometry = &event.LineString{Type: event.GeometryType, Coordinates: coords}
	}
	return in
}

// loadCity publishes events [from, to) of the city with many writers at once (the embedded
// store commits concurrent writes together).
func loadCity(tb testing.TB, s *eventstore.Store, c eventstore.Caller, from, to int) {
	tb.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		fail atomic.Value
	)
	next.Store(int64(from))
	for range 128 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if _, _, err := s.Publish(context.Background(), c, cityEvent(i)); err != nil {
					fail.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := fail.Load().(error); err != nil {
		tb.Fatalf("load city: %v", err)
	}
}
