package webhooks_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// receiver is an HTTPS endpoint that answers with its status, or drops the connection while
// down, and keeps what it was sent.
type receiver struct {
	srv    *httptest.Server
	status atomic.Int32
	down   atomic.Bool
	mu     sync.Mutex
	got    []received
}

type received struct {
	body      []byte
	signature string
	delivery  string
	at        time.Time
}

func newReceiver(t *testing.T, tab tables.Table) *receiver {
	r := &receiver{}
	r.status.Store(http.StatusOK)
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{body, req.Header.Get(webhooks.SignatureHeader), req.Header.Get("Roadevents-Delivery"), tab.Clock.Now()})
		r.mu.Unlock()
		w.WriteHeader(int(r.status.Load()))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// rig is an organisation's endpoints, a queue and a dispatcher on one table.
type rig struct {
	tab       tables.Table
	endpoints *webhooks.Endpoints
	queue     *webhooks.Queue
	recv      *receiver
	tls       *tls.Config
}

func newRig(t *testing.T, tab tables.Table) *rig {
	t.Helper()
	sealer, err := seal.NewAESGCM(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{tab: tab, queue: webhooks.NewQueue(tab, tab.Clock), recv: newReceiver(t, tab),
		endpoints: webhooks.NewEndpoints(tab, audit.New(tab, audit.Options{Clock: tab.Clock}), sealer, webhooks.EndpointsOptions{Clock: tab.Clock})}
	r.tls = r.recv.srv.Client().Transport.(*http.Transport).TLSClientConfig
	return r
}

func (r *rig) dispatcher(private bool) *webhooks.Dispatcher {
	return webhooks.NewDispatcher(r.queue, r.endpoints, webhooks.DispatcherOptions{AllowPrivate: private, Clock: r.tab.Clock,
		TLS: r.tls, Jitter: func() float64 { return 0 }})
}

func (r *rig) pass(t *testing.T) int {
	t.Helper()
	n, err := r.dispatcher(true).Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (r *rig) endpoint(t *testing.T, org string) (webhooks.Endpoint, string) {
	t.Helper()
	ep, secret, err := r.endpoints.Create(context.Background(), org, webhooks.Actor{UserID: "usr_o", Email: "o@example.com"},
		webhooks.EndpointDraft{URL: ptr(r.recv.srv.URL + "/hooks?token=abc"), Kinds: []string{webhooks.KindEnded}})
	if err != nil {
		t.Fatal(err)
	}
	return ep, secret
}

func (r *rig) enqueue(t *testing.T, ep webhooks.Endpoint, source string) webhooks.Delivery {
	t.Helper()
	d := webhooks.Delivery{ID: webhooks.DeliveryID(r.tab.Clock.Now(), source, ep.ID), Org: ep.Org, Endpoint: ep.ID,
		Kind: webhooks.KindEnded, Body: []byte(`{"id":"` + source + `","kind":"event.ended"}`)}
	if err := r.queue.Enqueue(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func (r *rig) get(t *testing.T, d webhooks.Delivery) webhooks.Delivery {
	t.Helper()
	got, err := r.queue.Get(context.Background(), d.Org, d.Endpoint, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func ptr[T any](v T) *T { return &v }

// docs/webhooks.md §2, §3: a delivery is sent signed, retried after each failed attempt on the
// schedule with the same bytes, and done at the first 2xx; every attempt is recorded.
func TestDeliveryRetriedUntilTaken(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newRig(t, tab)
		ep, secret := r.endpoint(t, "org_a")
		d := r.enqueue(t, ep, "change-1")
		// Enqueuing the same again (a producer repeating itself) stores nothing twice.
		r.enqueue(t, ep, "change-1")

		r.recv.status.Store(http.StatusInternalServerError)
		if n := r.pass(t); n != 1 {
			t.Fatalf("first pass sent %d; want 1", n)
		}
		if n := r.pass(t); n != 0 {
			t.Errorf("a pass before the retry's time sent %d; want none", n)
		}
		tab.Clock.Advance(30 * time.Second)
		r.recv.status.Store(http.StatusServiceUnavailable)
		r.pass(t)
		tab.Clock.Advance(time.Minute)
		r.recv.status.Store(http.StatusAccepted)
		r.pass(t)

		got := r.get(t, d)
		if got.State != webhooks.StateDelivered || len(got.Attempts) != 3 || got.Attempts[0].Status != 500 ||
			got.Attempts[1].Status != 503 || got.Attempts[2].Status != 202 {
			t.Fatalf("delivery %+v; want delivered at the third attempt, each recorded", got)
		}
		sent := r.recv.received()
		if len(sent) != 3 {
			t.Fatalf("the receiver got %d requests; want 3", len(sent))
		}
		for _, s := range sent {
			if !bytes.Equal(s.body, d.Body) || s.delivery != d.ID {
				t.Errorf("attempt sent %q as %s; want the delivery's body and id", s.body, s.delivery)
			}
			if err := webhooks.Verify(s.signature, s.body, secret, s.at, webhooks.DefaultTolerance); err != nil {
				t.Errorf("the receiver's check of %q: %v", s.signature, err)
			}
		}
		if n := r.pass(t); n != 0 {
			t.Errorf("a pass after the delivery was taken sent %d; want none", n)
		}
		list, err := r.queue.List(context.Background(), "org_a", ep.ID, 10)
		if err != nil || len(list) != 1 {
			t.Errorf("the organisation's deliveries: %d, %v; want the one", len(list), err)
		}
	})
}

// docs/webhooks.md §3: a receiver down for an hour gets every delivery made meanwhile once it
// is back; one down for more than a day loses them to failed, and an owner can redeliver.
func TestReceiverDownForAnHour(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newRig(t, tab)
		ep, _ := r.endpoint(t, "org_a")
		r.recv.down.Store(true)
		var made []webhooks.Delivery
		start := tab.Clock.Now()
		for i := 0; tab.Clock.Now().Sub(start) < time.Hour; i++ {
			if i%4 == 0 {
				made = append(made, r.enqueue(t, ep, "change-"+string(rune('a'+i/4))))
			}
			r.pass(t)
			tab.Clock.Advance(5 * time.Minute)
		}
		r.recv.down.Store(false)
		// The longest wait in the first hours is an hour: within it, every delivery is taken.
		for range 13 {
			tab.Clock.Advance(5 * time.Minute)
			r.pass(t)
		}
		for _, d := range made {
			if got := r.get(t, d); got.State != webhooks.StateDelivered || got.Attempts[len(got.Attempts)-1].Status != 200 ||
				got.Attempts[0].Error == "" {
				t.Errorf("delivery %s: %s after %d attempts; want delivered after failing while the receiver was down",
					d.ID, got.State, len(got.Attempts))
			}
		}
		if n := len(r.recv.received()); n != len(made) {
			t.Errorf("the receiver got %d deliveries; want each of the %d once", n, len(made))
		}

		r.recv.down.Store(true)
		late := r.enqueue(t, ep, "change-late")
		for range 30 {
			r.pass(t)
			tab.Clock.Advance(time.Hour)
		}
		got := r.get(t, late)
		if got.State != webhooks.StateFailed || len(got.Attempts) < 25 || got.Reason == "" {
			t.Fatalf("a delivery to a receiver down for 30 hours: %s after %d attempts (%q); want failed after about 31",
				got.State, len(got.Attempts), got.Reason)
		}
		r.recv.down.Store(false)
		if _, err := r.queue.Redeliver(context.Background(), "org_a", ep.ID, late.ID); err != nil {
			t.Fatal(err)
		}
		r.pass(t)
		if got := r.get(t, late); got.State != webhooks.StateDelivered {
			t.Errorf("after a redelivery: %s; want delivered", got.State)
		}
	})
}

// docs/webhooks.md §3: 410 Gone disables the endpoint, which then gets nothing; an owner who
// enables it again gets the next deliveries.
func TestGoneDisablesTheEndpoint(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newRig(t, tab)
		ep, _ := r.endpoint(t, "org_a")
		first := r.enqueue(t, ep, "change-1")
		r.recv.status.Store(http.StatusGone)
		r.pass(t)
		got, err := r.endpoints.Get(context.Background(), "org_a", ep.ID)
		if err != nil || got.Enabled || !strings.Contains(got.DisabledReason, "410") {
			t.Fatalf("endpoint after a 410: %+v, %v; want disabled, saying why", got, err)
		}
		if d := r.get(t, first); d.State != webhooks.StateDropped {
			t.Errorf("the delivery answered 410 is %s; want dropped", d.State)
		}
		second := r.enqueue(t, ep, "change-2")
		r.pass(t)
		if d := r.get(t, second); d.State != webhooks.StateDropped || len(d.Attempts) != 0 || len(r.recv.received()) != 1 {
			t.Errorf("a delivery to the disabled endpoint: %+v; want dropped without an attempt", d)
		}
		r.recv.status.Store(http.StatusOK)
		if _, err := r.endpoints.Update(context.Background(), "org_a", ep.ID, webhooks.Actor{}, webhooks.EndpointDraft{Enabled: ptr(true)}); err != nil {
			t.Fatal(err)
		}
		third := r.enqueue(t, ep, "change-3")
		r.pass(t)
		if d := r.get(t, third); d.State != webhooks.StateDelivered {
			t.Errorf("after enabling the endpoint again: %s; want delivered", d.State)
		}
	})
}

// docs/webhooks.md §2: after a rotation both secrets sign for a day, then only the new one.
func TestRotationOverlap(t *testing.T) {
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	ep, old := r.endpoint(t, "org_a")
	_, next, err := r.endpoints.Rotate(context.Background(), "org_a", ep.ID, webhooks.Actor{})
	if err != nil {
		t.Fatal(err)
	}
	r.enqueue(t, ep, "change-1")
	r.pass(t)
	tab.Clock.Advance(webhooks.RotationOverlap)
	r.enqueue(t, ep, "change-2")
	r.pass(t)
	sent := r.recv.received()
	if len(sent) != 2 {
		t.Fatalf("the receiver got %d deliveries; want 2", len(sent))
	}
	for _, s := range []string{old, next} {
		if err := webhooks.Verify(sent[0].signature, sent[0].body, s, sent[0].at, webhooks.DefaultTolerance); err != nil {
			t.Errorf("during the overlap, a receiver holding one of the secrets: %v", err)
		}
	}
	if err := webhooks.Verify(sent[1].signature, sent[1].body, old, sent[1].at, webhooks.DefaultTolerance); !errors.Is(err, webhooks.ErrMismatch) {
		t.Errorf("after the overlap the old secret still verifies: %v", err)
	}
	if err := webhooks.Verify(sent[1].signature, sent[1].body, next, sent[1].at, webhooks.DefaultTolerance); err != nil {
		t.Errorf("after the overlap the new secret: %v", err)
	}
}

// docs/webhooks.md §4: deliveries never reach the deployment's own network unless it allows
// that; two dispatchers at once send each delivery once.
func TestDispatchGuards(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newRig(t, tab)
		ep, _ := r.endpoint(t, "org_a")
		d := r.enqueue(t, ep, "change-1")
		if _, err := r.dispatcher(false).Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := r.get(t, d)
		if len(got.Attempts) != 1 || !strings.Contains(got.Attempts[0].Error, "not a public one") || len(r.recv.received()) != 0 {
			t.Fatalf("a delivery to loopback without the flag: %+v; want refused before any connection", got.Attempts)
		}
		tab.Clock.Advance(time.Minute)
		for i := range 5 {
			r.enqueue(t, ep, "more-"+string(rune('a'+i)))
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.dispatcher(true).Pass(context.Background()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := len(r.recv.received()); n != 6 {
			t.Errorf("two dispatchers at once sent %d deliveries; want the 6 once each", n)
		}
	})
}

// docs/webhooks.md §3: a receiver that does not answer within 10 s is a failed attempt,
// retried.
func TestDispatchTimeout(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	silent := make(chan struct{})
	defer close(silent)
	r.recv.srv.Config.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-silent })
	ep, _ := r.endpoint(t, "org_a")
	d := r.enqueue(t, ep, "change-1")
	r.pass(t)
	got := r.get(t, d)
	if got.State != webhooks.StatePending || len(got.Attempts) != 1 || got.Attempts[0].Status != 0 || got.Attempts[0].Error == "" ||
		got.Attempts[0].LatencyMS < webhooks.SendTimeout.Milliseconds() {
		t.Errorf("a receiver that does not answer: %s %+v; want a failed attempt after %s, retried", got.State, got.Attempts, webhooks.SendTimeout)
	}
}
