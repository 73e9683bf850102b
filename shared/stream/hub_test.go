package stream_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/stream"
)

var (
	t0      = time.Date(2040, 1, 1, 12, 0, 0, 0, time.UTC)
	center  = geo.Point{Lat: 48.13743, Lon: 11.57549} // Munich, Marienplatz
	live    = stream.Viewer{Org: "org_a", Environment: event.EnvironmentLive}
	sandbox = stream.Viewer{Org: "org_a", Environment: event.EnvironmentSandbox}
)

// offset returns the point d metres north of p (a degree of latitude is 111.2 km).
func offset(p geo.Point, northM float64) geo.Point {
	return geo.Point{Lat: geo.Round5(p.Lat + northM/111195.0), Lon: p.Lon}
}

// newEvent builds an event as the events store would publish it.
func newEvent(t testing.TB, id, typ, env string, at geo.Point) event.Event {
	t.Helper()
	in := event.EventIn{Type: typ, Lat: at.Lat, Lon: at.Lon}
	if err := in.Validate(t0); err != nil {
		t.Fatalf("event %s: %v", id, err)
	}
	return event.New(in, "org_pub", env, id, t0)
}

func created(ev event.Event) stream.EventChange {
	return stream.EventChange{Kind: stream.KindCreated, After: ev}
}

// moved is the revision of ev to a new point.
func moved(t testing.TB, ev event.Event, to geo.Point) stream.EventChange {
	t.Helper()
	after := ev
	if _, err := after.Revise(event.RevisionIn{Lat: to.Lat, Lon: to.Lon}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return stream.EventChange{Kind: stream.KindUpdated, Before: &ev, After: after}
}

func taken(s *stream.Subscription) []stream.DeltaData {
	var out []stream.DeltaData
	for _, q := range s.Take(nil) {
		var d stream.DeltaData
		if err := json.Unmarshal(q.Data, &d); err != nil {
			panic(err)
		}
		out = append(out, d)
	}
	return out
}

func subscribe(t testing.TB, h *stream.Hub, v stream.Viewer, f stream.Filter) *stream.Subscription {
	t.Helper()
	s, err := h.Subscribe(v, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// The hub routes a change only to the subscriptions it concerns (docs/architecture.md §3;
// docs/api.md §6 rules 1 and 6, §10.2: old or new extent).
func TestDispatchReachesOnlyMatchingSubscriptions(t *testing.T) {
	t.Parallel()
	near := newEvent(t, "ev_near", "accident", event.EnvironmentLive, offset(center, 500))
	far := newEvent(t, "ev_far", "accident", event.EnvironmentLive, offset(center, 5000))
	sandboxEv := newEvent(t, "ev_sandbox", "accident", event.EnvironmentSandbox, offset(center, 500))
	congestion := newEvent(t, "ev_congestion", "congestion", event.EnvironmentLive, offset(center, 500))
	wide := stream.Filter{Center: center, Radius: 9780}

	cases := []struct {
		name   string
		viewer stream.Viewer
		filter stream.Filter
		change stream.EventChange
		want   bool
	}{
		{"inside the radius", live, stream.Filter{Center: center, Radius: 1000}, created(near), true},
		{"outside the radius", live, stream.Filter{Center: center, Radius: 1000}, created(far), false},
		{"at the edge of a wide circle", live, wide, created(far), true},
		{"live viewer, sandbox event", live, stream.Filter{Center: center, Radius: 1000}, created(sandboxEv), false},
		{"sandbox viewer, sandbox event", sandbox, stream.Filter{Center: center, Radius: 1000}, created(sandboxEv), true},
		{"sandbox viewer, live event", sandbox, stream.Filter{Center: center, Radius: 1000}, created(near), true},
		{"type filtered out", live, stream.Filter{Center: center, Radius: 1000, Types: []string{"accident"}}, created(congestion), false},
		{"type kept", live, stream.Filter{Center: center, Radius: 1000, Types: []string{"road_damage", "congestion"}}, created(congestion), true},
		{"below min_confidence", live, stream.Filter{Center: center, Radius: 1000, MinConfidence: 0.7}, created(near), false},
		{"at min_confidence", live, stream.Filter{Center: center, Radius: 1000, MinConfidence: 0.667}, created(near), true},
		{"moved into the circle", live, stream.Filter{Center: center, Radius: 1000}, moved(t, far, offset(center, 100)), true},
		{"moved out of the circle", live, stream.Filter{Center: center, Radius: 1000}, moved(t, near, offset(center, 5000)), true},
		{"moved elsewhere far away", live, stream.Filter{Center: center, Radius: 1000}, moved(t, far, offset(center, 6000)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0)})
			s := subscribe(t, h, tc.viewer, tc.filter)
			h.Dispatch(tc.change)
			got := taken(s)
			if (len(got) == 1) != tc.want || len(got) > 1 {
				t.Fatalf("deltas queued = %d; want %v", len(got), tc.want)
			}
			if tc.want && got[0].Kind != tc.change.Kind {
				t.Errorf("kind = %q; want %q", got[0].Kind, tc.change.Kind)
			}
		})
	}
}

// A LineString is matched on its full extent, not its first point (docs/api.md §4.1 rule 3 holds
// for streams as for queries).
func TestDispatchMatchesALineStringPassingBy(t *testing.T) {
	t.Parallel()
	start, end := geo.Point{Lat: 48.1, Lon: 11.5}, geo.Point{Lat: 48.2, Lon: 11.66} // ~15 km, passes the centre
	in := event.EventIn{Type: "congestion", Lat: start.Lat, Lon: start.Lon, Geometry: &event.LineString{
		Type: event.GeometryType, Coordinates: [][2]float64{{start.Lon, start.Lat}, {end.Lon, end.Lat}}}}
	if err := in.Validate(t0); err != nil {
		t.Fatal(err)
	}
	ev := event.New(in, "org_pub", event.EnvironmentLive, "ev_line", t0)
	onLine := geo.Point{Lat: 48.15, Lon: 11.58}
	if d := geo.DistanceToExtent(onLine, ev.Extent()); d > 300 {
		t.Fatalf("test point %v m from the line; want it close", d)
	}
	h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0)})
	s := subscribe(t, h, live, stream.Filter{Center: onLine, Radius: 300})
	h.Dispatch(created(ev))
	if n := len(taken(s)); n != 1 {
		t.Errorf("deltas = %d; want 1: the line passes within the radius", n)
	}
}

// docs/api.md §6 rule 3: a queue of 256; when full the oldest is dropped and counted.
func TestQueueDropsTheOldest(t *testing.T) {
	t.Parallel()
	h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0)})
	s := subscribe(t, h, live, stream.Filter{Center: center, Radius: 1000})
	const n = stream.QueueSize + 44
	for i := range n {
		h.Dispatch(created(newEvent(t, fmt.Sprintf("ev_%04d", i), "accident", event.EnvironmentLive, center)))
	}
	if got := s.Dropped(); got != n-stream.QueueSize {
		t.Errorf("Dropped() = %d; want %d", got, n-stream.QueueSize)
	}
	q := s.Take(nil)
	if len(q) != stream.QueueSize {
		t.Fatalf("queued %d; want %d", len(q), stream.QueueSize)
	}
	if first, last := q[0].EventID, q[len(q)-1].EventID; first != fmt.Sprintf("ev_%04d", n-stream.QueueSize) || last != fmt.Sprintf("ev_%04d", n-1) {
		t.Errorf("queue holds %s..%s; want the newest %d", first, last, stream.QueueSize)
	}
	if st := h.Stats(); st.Dropped != n-stream.QueueSize || st.Dispatched != n {
		t.Errorf("Stats() = %+v; want %d dispatched, %d dropped", st, n, n-stream.QueueSize)
	}
}

// A closed subscription gets nothing more, and leaves the index.
func TestCloseUnsubscribes(t *testing.T) {
	t.Parallel()
	h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0)})
	s := subscribe(t, h, live, stream.Filter{Center: center, Radius: 1000})
	wide := subscribe(t, h, live, stream.Filter{Center: center, Radius: 9000})
	if got := h.Stats().Subscribers; got != 2 {
		t.Fatalf("Subscribers = %d; want 2", got)
	}
	s.Close()
	s.Close()
	h.Dispatch(created(newEvent(t, "ev_1", "accident", event.EnvironmentLive, center)))
	if n := len(s.Take(nil)); n != 0 {
		t.Errorf("closed subscription got %d deltas; want 0", n)
	}
	if n := len(wide.Take(nil)); n != 1 {
		t.Errorf("open subscription got %d deltas; want 1", n)
	}
	if got := h.Stats().Subscribers; got != 1 {
		t.Errorf("Subscribers = %d after Close twice; want 1", got)
	}
}

// The delta carries the event as it stands after the change, in the frame layout of
// docs/api.md §10.2.
func TestDeltaData(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0.Add(5 * time.Second))
	h := stream.NewHub(stream.HubOptions{Clock: clk})
	s := subscribe(t, h, live, stream.Filter{Center: center, Radius: 1000})
	ev := newEvent(t, "ev_one", "accident", event.EnvironmentLive, center)
	h.Dispatch(created(ev))
	q := s.Take(nil)
	if len(q) != 1 {
		t.Fatalf("deltas = %d; want 1", len(q))
	}
	var got struct {
		Kind  string            `json:"kind"`
		Event event.EventPublic `json:"event"`
		At    string            `json:"at"`
	}
	if err := json.Unmarshal(q[0].Data, &got); err != nil {
		t.Fatalf("data %s: %v", q[0].Data, err)
	}
	want := ev.Public(clk.Now())
	if got.Kind != "created" || got.At != event.FormatTime(clk.Now()) || got.Event.EventID != want.EventID ||
		got.Event.Status != event.StatusActive || got.Event.Confidence != want.Confidence {
		t.Errorf("delta = %+v; want kind created, at %s, the event's public view", got, event.FormatTime(clk.Now()))
	}
	if q[0].EventID != ev.ID || q[0].Version != ev.Version {
		t.Errorf("queued id %s version %d; want %s %d", q[0].EventID, q[0].Version, ev.ID, ev.Version)
	}
}

func BenchmarkDispatch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := stream.NewHub(stream.HubOptions{Clock: clock.NewFake(t0)})
			// Subscribers spread over a 20 km square, 1000 m circles.
			for i := range n {
				p := geo.Point{Lat: center.Lat - 0.09 + 0.18*float64(i%100)/100, Lon: center.Lon - 0.135 + 0.27*float64(i/100%100)/100}
				s, err := h.Subscribe(live, stream.Filter{Center: p, Radius: 1000})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
			}
			evs := make([]stream.EventChange, 256)
			for i := range evs {
				p := geo.Point{Lat: geo.Round5(center.Lat - 0.09 + 0.18*float64(i%16)/16), Lon: geo.Round5(center.Lon - 0.135 + 0.27*float64(i/16)/16)}
				evs[i] = created(newEvent(b, fmt.Sprintf("ev_%d", i), "accident", event.EnvironmentLive, p))
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				h.Dispatch(evs[i%len(evs)])
			}
			b.ReportMetric(float64(h.Stats().Enqueued)/float64(h.Stats().Dispatched), "deltas/change")
		})
	}
}
