package webhooks_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// sentTurns is a Sender that keeps the turns it is given, as a queue would.
type sentTurns struct {
	mu    sync.Mutex
	turns []webhooks.Turn
}

func (s *sentTurns) Send(_ context.Context, t webhooks.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, t)
	return nil
}

func (s *sentTurns) take() []webhooks.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.turns
	s.turns = nil
	return out
}

// docs/webhooks.md §3, on AWS: each pending delivery's turn is a message of a queue, not an
// item of the table. A turn taken when due makes one attempt and sends the next turn; a turn
// that came early is sent on without an attempt; one the delivery has moved on from is dropped,
// unless it came back after a failure, when the delivery's current turn is sent again; a
// producer that enqueues a pending delivery again sends its turn again.
func TestTurnsOnAQueue(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newRig(t, tab)
		sender := &sentTurns{}
		r.queue = webhooks.NewQueueSending(tab, tab.Clock, sender)
		d := r.dispatcher(true)
		ctx := context.Background()
		ep, _ := r.endpoint(t, "org_a")
		dl := r.enqueue(t, ep, "first")
		first := sender.take()
		if len(first) != 1 || first[0].Delivery != dl.ID || !first[0].At.Equal(tab.Clock.Now()) {
			t.Fatalf("turns after enqueue %+v; want one, due now", first)
		}
		if due, err := tab.Query(ctx, store.Query{PK: "webhookdue#0"}); err != nil || len(due) != 0 {
			t.Fatalf("the table holds turns %v, %v; want none", due, err)
		}
		r.enqueue(t, ep, "first") // the producer repeats itself
		if again := sender.take(); len(again) != 1 || again[0] != first[0] {
			t.Fatalf("turns after enqueuing it again %+v; want its turn again", again)
		}

		r.recv.status.Store(http.StatusInternalServerError)
		if err := d.Turn(ctx, first[0], false); err != nil {
			t.Fatal(err)
		}
		next := sender.take()
		if len(r.recv.received()) != 1 || len(next) != 1 || !next[0].At.Equal(first[0].At.Add(webhooks.FirstRetry)) {
			t.Fatalf("after a failed attempt: %d attempts, turns %+v; want 1 and the next turn %s later", len(r.recv.received()), next, webhooks.FirstRetry)
		}
		if err := d.Turn(ctx, first[0], false); err != nil || len(sender.take()) != 0 || len(r.recv.received()) != 1 {
			t.Fatalf("the old turn again: %v; want it dropped, no attempt, no turn", err)
		}
		if err := d.Turn(ctx, first[0], true); err != nil {
			t.Fatal(err)
		}
		if resent := sender.take(); len(resent) != 1 || resent[0] != next[0] || len(r.recv.received()) != 1 {
			t.Fatalf("the old turn back after a failure: turns %+v; want the current turn sent again, no attempt", resent)
		}
		if err := d.Turn(ctx, next[0], false); err != nil {
			t.Fatal(err)
		}
		if early := sender.take(); len(early) != 1 || early[0] != next[0] || len(r.recv.received()) != 1 {
			t.Fatalf("the next turn, come early: turns %+v; want it sent on, no attempt", early)
		}

		tab.Clock.Advance(time.Minute)
		r.recv.status.Store(http.StatusOK)
		if err := d.Turn(ctx, next[0], false); err != nil {
			t.Fatal(err)
		}
		if got := r.get(t, dl); got.State != webhooks.StateDelivered || len(r.recv.received()) != 2 || len(sender.take()) != 0 {
			t.Fatalf("after the due turn: %s, %d attempts; want delivered at the second, no more turns", got.State, len(r.recv.received()))
		}
		if err := d.Turn(ctx, next[0], true); err != nil || len(sender.take()) != 0 || len(r.recv.received()) != 2 {
			t.Fatalf("a turn of a delivered delivery: %v; want nothing", err)
		}
	})
}

// countingSealer counts the secrets it opens, as KMS would bill them.
type countingSealer struct {
	seal.Sealer
	opens atomic.Int32
}

func (c *countingSealer) Open(ctx context.Context, sealed []byte, context string) ([]byte, error) {
	c.opens.Add(1)
	return c.Sealer.Open(ctx, sealed, context)
}

// docs/security.md §6: a dispatcher opens an endpoint's sealed secret once, not at each
// attempt (on AWS each opening is a KMS call); a rotation's new secret is opened and signs at
// once, beside the previous one.
func TestSecretsOpenedOnce(t *testing.T) {
	tab := tables.Embedded(t)
	aes, err := seal.NewAESGCM(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealer := &countingSealer{Sealer: aes}
	endpoints := webhooks.NewEndpoints(tab, audit.New(tab, audit.Options{Clock: tab.Clock}), sealer, webhooks.EndpointsOptions{Clock: tab.Clock})
	ctx := context.Background()
	ep, secret, err := endpoints.Create(ctx, "org_a", webhooks.Actor{}, webhooks.EndpointDraft{URL: ptr("https://hooks.example/in"), Kinds: []string{webhooks.KindEnded}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, got, err := endpoints.Secrets(ctx, "org_a", ep.ID); err != nil || len(got) != 1 || got[0] != secret {
			t.Fatalf("secrets %v, %v; want the one made", got, err)
		}
	}
	if n := sealer.opens.Load(); n != 1 {
		t.Errorf("three reads opened the secret %d times; want once", n)
	}
	_, rotated, err := endpoints.Rotate(ctx, "org_a", ep.ID, webhooks.Actor{})
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := endpoints.Secrets(ctx, "org_a", ep.ID); err != nil || len(got) != 2 || got[0] != rotated || got[1] != secret {
		t.Fatalf("after rotation: secrets %v, %v; want the new one, then the previous", got, err)
	}
	if n := sealer.opens.Load(); n != 2 {
		t.Errorf("after rotation the secrets were opened %d times in all; want 2 (the new one once)", n)
	}
}
