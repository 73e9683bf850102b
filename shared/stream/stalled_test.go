package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/stream/streamtest"
)

// holdingListener lets a test hold the server's writes on one client's connection, named by
// the client's address: to the server, that client reads nothing, as though its socket were
// full. Held in the server rather than by a client that stops reading, the stall does not
// depend on the kernel's buffers and TCP's timers: with its receive window shut for minutes,
// a client's kernel dropped the connection (its keepalive probes went unanswered), and TCP
// took minutes to resume sending once it read again.
type holdingListener struct {
	net.Listener
	mu      sync.Mutex
	held    string        // the client address whose connection's writes wait
	release chan struct{} // closed to let them go
}

// wrap makes l hold the writes of inner's connections (rigOptions.listener).
func (l *holdingListener) wrap(inner net.Listener) net.Listener {
	l.Listener = inner
	return l
}

func (l *holdingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &holdingConn{Conn: c, l: l}, nil
}

// hold makes every write to the connection from the client address addr wait until letGo.
func (l *holdingListener) hold(addr string) (letGo func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.release = addr, make(chan struct{})
	return sync.OnceFunc(func() { close(l.release) })
}

type holdingConn struct {
	net.Conn
	l *holdingListener
}

func (c *holdingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	held, release := c.l.held == c.RemoteAddr().String(), c.l.release
	c.l.mu.Unlock()
	if held {
		<-release
	}
	return c.Conn.Write(p)
}

// SyscallConn keeps the stream's check for a closed connection working as on a plain socket.
func (c *holdingConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// openHeld opens a stream on its own connection, reads its snapshot, and holds the server's
// writes on that connection until letGo.
func openHeld(tb testing.TB, r *rig, l *holdingListener, q string) (s *streamtest.Stream, letGo func()) {
	tb.Helper()
	var local string
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			local = c.LocalAddr().String()
		}
		return c, err
	}}}
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/v1/stream?"+q, nil)
	req.Header.Set("Authorization", "Bearer "+r.liveKey)
	s, resp, body := streamtest.Open(tb, client, req)
	if s == nil {
		tb.Fatalf("stalled subscriber: %d %s", resp.StatusCode, body)
	}
	s.Snapshot(tb)
	return s, l.hold(local)
}

// docs/architecture.md §3 and docs/api.md §6 rule 3: one subscriber that reads nothing does not
// delay 100 healthy ones, which receive every delta in order; the stalled one's queue keeps the
// newest 256 and drops the oldest, and its keepalive reports exactly how many: every delta is
// either received or counted as dropped. Counts, not timings, are asserted.
func TestStalledSubscriberDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		// The write timeout only guards against a hang here: the stalled client must stay
		// connected while the deltas are published.
		held := &holdingListener{}
		r := newRig(t, tab, rigOptions{
			listener:     held.wrap,
			writeTimeout: 10 * time.Minute,
		})
		const healthyN, deltas = 100, 450

		// The stalled subscriber watches accidents only, so that a congestion published last
		// reaches the healthy ones alone: once they have it, every accident has been queued
		// for the stalled one too (the hub dispatches changes one after the other).
		stalled, letGo := openHeld(t, r, held, query(center, 1000, "type", "accident"))
		defer letGo()

		healthy := make([]*streamtest.Stream, healthyN)
		for i := range healthy {
			healthy[i], _ = r.mustOpen(t, query(center, 1000), r.liveKey)
		}
		got := make([][]string, healthyN)
		var readers sync.WaitGroup
		for i, s := range healthy {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for range deltas + 1 {
					f, err := s.NextErr()
					if err != nil {
						t.Errorf("healthy subscriber %d: %v after %d deltas", i, err, len(got[i]))
						return
					}
					var ev event.EventPublic
					d := stream.DeltaData{}
					if f.Event != stream.FrameEvent || decode(f.Data, &d) != nil || decode(d.Event, &ev) != nil {
						t.Errorf("healthy subscriber %d: frame %s", i, streamtest.Describe(f))
						return
					}
					got[i] = append(got[i], ev.EventID)
				}
			}()
		}

		// Publish from several clients at once; the order of reference is the order the
		// healthy subscribers receive, which is the feed's.
		var publishers sync.WaitGroup
		work := make(chan int)
		for range 8 {
			publishers.Add(1)
			go func() {
				defer publishers.Done()
				for i := range work {
					r.publish(t, r.otherKey, "accident", spread(i))
				}
			}()
		}
		start := time.Now()
		for i := range deltas {
			work <- i
		}
		close(work)
		publishers.Wait()
		t.Logf("%s: published %d in %v", tab.Adapter, deltas, time.Since(start))
		sentinel := r.publish(t, r.otherKey, "congestion", center)
		readers.Wait()
		t.Logf("%s: all delivered %v after the first publish", tab.Adapter, time.Since(start))
		if t.Failed() {
			t.FailNow()
		}
		ref := got[0]
		if len(ref) != deltas+1 || ref[deltas] != sentinel.EventID {
			t.Fatalf("healthy subscriber 0 got %d deltas ending with %s; want %d and the sentinel", len(ref), ref[len(ref)-1], deltas+1)
		}
		for i := range got {
			if !slices.Equal(got[i], ref) {
				t.Fatalf("healthy subscriber %d got another sequence than subscriber 0", i)
			}
		}
		ref = ref[:deltas]

		// Now the stalled one reads again, and reports its drops and reads what it was kept.
		letGo()
		r.timers.Fire(stream.KeepaliveInterval)
		var received []string
		dropped := int64(-1)
		for dropped < 0 || int64(len(received))+dropped < deltas {
			f := stalled.Next(t)
			switch f.Event {
			case stream.FrameKeepalive:
				var ka stream.KeepaliveData
				if err := decode(f.Data, &ka); err != nil {
					t.Fatal(err)
				}
				dropped = ka.Dropped
			case stream.FrameEvent:
				var d stream.DeltaData
				var ev event.EventPublic
				if decode(f.Data, &d) != nil || decode(d.Event, &ev) != nil {
					t.Fatalf("stalled subscriber: frame %s", streamtest.Describe(f))
				}
				received = append(received, ev.EventID)
			default:
				t.Fatalf("stalled subscriber: frame %s", streamtest.Describe(f))
			}
		}
		if dropped <= 0 || int64(len(received))+dropped != deltas {
			t.Fatalf("stalled subscriber received %d, dropped %d; want every one of %d deltas received or counted, some dropped",
				len(received), dropped, deltas)
		}
		// What it received is what the server was writing when it stalled, then the newest
		// 256, oldest first: the oldest were the ones dropped.
		k := deltas - stream.QueueSize - int(dropped)
		want := append(slices.Clone(ref[:k]), ref[deltas-stream.QueueSize:]...)
		if !slices.Equal(received, want) {
			t.Errorf("stalled subscriber received %d deltas not in the expected order: the first %d, then the newest %d", len(received), k, stream.QueueSize)
		}
		t.Logf("%s: stalled subscriber was being written %d when it stalled, dropped %d, then the newest %d", tab.Adapter, k, dropped, stream.QueueSize)
	})
}

// spread returns the i-th point of a grid of 90 m steps within 900 m of the centre, so that
// concurrent publishes write to different area index partitions.
func spread(i int) geo.Point {
	p := offset(center, float64(i%15-7)*90)
	p.Lon = geo.Round5(p.Lon + float64(i/15%15-7)*90/(111195*math.Cos(p.Lat*math.Pi/180)))
	return p
}

func decode(b []byte, v any) error { return json.Unmarshal(b, v) }

// BenchmarkStalledSubscriber measures what TestStalledSubscriberDoesNotDelayOthers asserts
// without timing: the latency of 100 healthy subscribers, from just before a publish is sent
// to each one's reception of its delta, with no stalled subscriber and with one that reads
// nothing, on the embedded store over loopback HTTP. Publishes go one at a time, each once the
// previous one reached every healthy subscriber, so the figures are delivery latency, not
// queueing. Run it with at least 300 publishes so that the stalled one's queue overflows:
//
//	go test -run '^$' -bench StalledSubscriber -benchtime 600x ./shared/stream
//
// It reports p50-ms and p95-ms over every healthy reception, and the stalled subscriber's
// dropped count as its keepalive reports it.
func BenchmarkStalledSubscriber(b *testing.B) {
	for _, stalledN := range []int{0, 1} {
		b.Run(fmt.Sprintf("stalled=%d", stalledN), func(b *testing.B) {
			held := &holdingListener{}
			r := newRig(b, tables.Embedded(b), rigOptions{
				listener:     held.wrap,
				writeTimeout: 10 * time.Minute,
			})
			var stalled *streamtest.Stream
			letGo := func() {}
			if stalledN > 0 {
				stalled, letGo = openHeld(b, r, held, query(center, 1000))
			}
			defer letGo()
			const healthyN = 100
			received := make(chan time.Time, healthyN)
			for range healthyN {
				s, _ := r.mustOpen(b, query(center, 1000), r.liveKey)
				go func() {
					for {
						f, err := s.NextErr()
						if err != nil {
							return
						}
						if f.Event == stream.FrameEvent {
							received <- time.Now()
						}
					}
				}()
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				r.publish(b, r.otherKey, "accident", spread(i))
				i++
				for range healthyN {
					lat = append(lat, (<-received).Sub(start))
				}
			}
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			if stalled != nil {
				letGo()
				r.timers.Fire(stream.KeepaliveInterval)
				for {
					f := stalled.Next(b)
					if f.Event == stream.FrameKeepalive {
						var ka stream.KeepaliveData
						if err := decode(f.Data, &ka); err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(float64(ka.Dropped), "stalled-dropped")
						if want := max(0, i-stream.QueueSize); ka.Dropped > int64(want) || (i > 2*stream.QueueSize && ka.Dropped == 0) {
							b.Errorf("stalled subscriber dropped %d of %d; want at most %d, and some past %d", ka.Dropped, i, want, 2*stream.QueueSize)
						}
						break
					}
				}
			}
		})
	}
}
