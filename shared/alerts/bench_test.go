package alerts

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
)

// BenchmarkIndexMatching measures finding the rules an event change matches among n rules
// spread over Europe (half circles of up to 20 km, half polygons of 64 points), the work the
// producer does for each change of an event (twice: before and after).
func BenchmarkIndexMatching(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprint(n, "rules"), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var rules []Rule
			for i := range n {
				lat, lon := 36+24*rng.Float64(), -9+33*rng.Float64()
				r := Rule{ID: fmt.Sprint(i), Environment: "live", Enabled: true}
				if i%2 == 0 {
					r.Area = circle(lat, lon, 1000+19_000*rng.Float64())
				} else {
					var coords []float64
					for k := range 64 {
						a := float64(k) / 64 * 6.283
						coords = append(coords, lon+0.2*math.Cos(a), lat+0.1*math.Sin(a))
					}
					r.Area = Area{Polygon: ring(coords...)}
				}
				rules = append(rules, r)
			}
			x := NewIndex(rules)
			evs := make([]event.Event, 1024)
			for i := range evs {
				evs[i] = event.Event{Status: event.StatusActive, Environment: "live", Type: "accident", Lat: 36 + 24*rng.Float64(), Lon: -9 + 33*rng.Float64()}
			}
			b.ResetTimer()
			matched := 0
			for i := range b.N {
				matched += len(x.Matching(evs[i%len(evs)]))
			}
			b.ReportMetric(float64(matched)/float64(b.N), "matches/op")
		})
	}
}
