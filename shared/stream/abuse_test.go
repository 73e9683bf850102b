package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/stream/streamtest"
)

// nextFrame reads the stream's next frame, failing the test when none comes within apitest.Within.
func nextFrame(t testing.TB, s *streamtest.Stream) (stream.Frame, error) {
	t.Helper()
	f, err := nextWithin(s, apitest.Within)
	if errors.Is(err, errNoFrame) {
		t.Fatal(err)
	}
	return f, err
}

// docs/api.md §11.4: revoking an API key ends, within moments, the streams it opened and those
// opened with tickets it minted, with bye credential_revoked and reconnect false; its tickets
// open nothing more (401), on both stores. The other keys' streams go on.
func TestRevocationEndsTheKeysStreams(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		ticket := r.mint(t, r.liveKey).Ticket
		q := query(center, 1000)
		byKey, _ := r.mustOpen(t, q, r.liveKey)
		byTicket, _ := r.mustOpen(t, q+"&ticket="+ticket, "")
		other, _ := r.mustOpen(t, q, r.otherKey)

		if _, err := r.keys.Revoke(context.Background(), "org_a", mustKeyID(t, r, r.liveKey), nil); err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*streamtest.Stream{"key": byKey, "ticket": byTicket} {
			f, err := nextFrame(t, s)
			if err != nil {
				t.Fatalf("stream opened by %s: %v; want bye", name, err)
			}
			var bye stream.ByeData
			if f.Event != stream.FrameBye || json.Unmarshal(f.Data, &bye) != nil ||
				bye.Reason != stream.ReasonCredentialRevoked || bye.Reconnect {
				t.Fatalf("stream opened by %s: %s %s; want bye credential_revoked, reconnect false", name, f.Event, f.Data)
			}
			if f, err := nextFrame(t, s); err == nil {
				t.Fatalf("stream opened by %s goes on after bye: %s", name, f.Event)
			}
		}
		if _, status, body := r.open(t, q+"&ticket="+ticket, ""); status != http.StatusUnauthorized {
			t.Errorf("new stream with the revoked key's ticket: %d %s; want 401", status, body)
		}
		if status, body, _ := r.do(t, http.MethodPost, "/v1/stream/tickets", r.liveKey, nil); status != http.StatusUnauthorized {
			t.Errorf("mint with the revoked key: %d %s; want 401", status, body)
		}
		ev := r.publish(t, r.otherKey, "accident", center)
		expectDelta(t, other, stream.KindCreated, ev.EventID)
	})
}

// docs/api.md §11.4: a stream whose credential was checked just before its key was revoked, and
// that subscribes just after the hub saw the revocation, is refused all the same.
func TestHubRefusesARecentlyRevokedKey(t *testing.T) {
	t.Parallel()
	h := stream.NewHub(stream.HubOptions{})
	v := stream.Viewer{Org: "org_a", Environment: apikey.Live, Key: "key_1"}
	f := stream.Filter{Center: center, Radius: 1000}
	h.Revoke("key_1")
	if _, err := h.Subscribe(v, f); err != stream.ErrRevoked {
		t.Fatalf("Subscribe with a revoked key: %v; want ErrRevoked", err)
	}
	v.Key = "key_2"
	sub, err := h.Subscribe(v, f)
	if err != nil {
		t.Fatalf("Subscribe with another key: %v", err)
	}
	sub.Close()
}

// docs/operations.md §3: a client that closes its stream's connection is noticed by the read
// side within moments, not at the next keepalive (the timers here never fire by themselves).
func TestClosedStreamIsNoticedWithoutAWrite(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		s, _ := r.mustOpen(t, query(center, 1000), r.liveKey)
		if n := r.hub.Stats().Subscribers; n != 1 {
			t.Fatalf("%d subscribers; want 1", n)
		}
		s.Close()
		apitest.Eventually(t, "the closed stream leaves the hub", func() bool { return r.hub.Stats().Subscribers == 0 })
	})
}

// capacity is a connection budget whose use the test sets.
type capacity struct {
	limit int
	inUse atomic.Int64
}

func (c *capacity) Limit() int { return c.limit }
func (c *capacity) InUse() int { return int(c.inUse.Load()) }

// docs/operations.md §3: when the connection budget is nearly spent, a new stream of an
// organisation holding its share is refused with 503 and Retry-After, the usual error body,
// at once; another organisation's stream still opens, and the first opens again once the
// budget has room. docs/api.md §8 rule 1: no 429, no per-key ceiling.
func TestNearlySpentBudgetRefusesTheGreedyOrganisation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		budget := &capacity{limit: 10}
		r := newRig(t, tab, rigOptions{capacity: budget})
		q := query(center, 1000)
		for range 5 {
			r.mustOpen(t, q, r.liveKey)
		}
		budget.inUse.Store(8) // 80 %: nearly spent; org_a holds 5 of 10, its share of two
		_, status, body := r.open(t, q, r.sandboxKey)
		if status != http.StatusServiceUnavailable {
			t.Fatalf("org_a's sixth stream on a nearly spent budget: %d %s; want 503", status, body)
		}
		expectDetail(t, body)
		req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/v1/stream?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+r.liveKey)
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
			t.Errorf("refusal: %d Retry-After %q; want 503 with Retry-After 5", resp.StatusCode, resp.Header.Get("Retry-After"))
		}

		r.mustOpen(t, q, r.otherKey) // org_b holds nothing: it gets its stream
		budget.inUse.Store(7)
		r.mustOpen(t, q, r.liveKey) // room again below 80 %
	})
}

// expectDetail checks an error body is {"detail": "<sentence>"}.
func expectDetail(t testing.TB, body []byte) {
	t.Helper()
	var b struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Detail == "" {
		t.Errorf("body %s; want {\"detail\": ...}", body)
	}
}
