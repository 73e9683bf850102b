package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/webhooks"
)

// docs/webhooks.md §3: a server killed with SIGKILL while the deliveries of the signals it
// answered wait for their receiver (which answers 503 until then) loses none of them: after a
// restart on the same data folder the receiver, back, gets a delivery for every confirmation,
// each once and signed with the endpoint's secret. (A producer stopped before it made the
// deliveries of committed changes is webhookfeed's TestProducerRestartLosesNothing.)
func TestWebhooksSurviveSIGKILL(t *testing.T) {
	var (
		mu    sync.Mutex
		got   = map[string]string{} // delivery id → the event it is about
		bad   []string
		taken int // attempts taken after the restart
	)
	var secret string
	var back atomic.Bool
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if !back.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err := webhooks.Verify(r.Header.Get(webhooks.SignatureHeader), body, secret, time.Now(), webhooks.DefaultTolerance); err != nil {
			bad = append(bad, err.Error())
		}
		var d struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		}
		json.Unmarshal(body, &d)
		got[d.ID] = d.Kind
		taken++
	}))
	defer recv.Close()

	env := []string{"ROADEVENTS_STORE=embedded", "ROADEVENTS_WEBHOOKS_ALLOW_PRIVATE=true"}
	s := start(t, filepath.Join(t.TempDir(), "data"), env...)
	c := client{t: t, base: s.URL}
	org := func(addr, name string) (string, string) {
		token := signUp(c, s.DataDir, addr)
		var o struct {
			OrgID string `json:"org_id"`
		}
		c.must(201, "POST", "/console/orgs", token, map[string]string{"name": name}, &o)
		var k struct {
			Key string `json:"key"`
		}
		c.must(201, "POST", "/console/orgs/"+o.OrgID+"/keys", token, map[string]string{"label": "app", "environment": "live"}, &k)
		return token, k.Key
	}
	ada, alphaKey := org("ada@example.com", "Alpha")
	var orgs []struct {
		OrgID string `json:"org_id"`
	}
	c.must(200, "GET", "/console/orgs", ada, nil, &orgs)
	var issued struct {
		Secret   string `json:"secret"`
		Endpoint struct {
			EndpointID string `json:"endpoint_id"`
		} `json:"endpoint"`
	}
	c.must(201, "POST", "/console/orgs/"+orgs[0].OrgID+"/webhooks", ada,
		map[string]any{"url": recv.URL + "/in", "kinds": []string{"event.confirmed"}}, &issued)
	mu.Lock()
	secret = issued.Secret
	mu.Unlock()
	_, betaKey := org("cat@example.com", "Beta")

	var ev struct {
		EventID string `json:"event_id"`
	}
	c.must(201, "POST", "/v1/events", alphaKey, map[string]any{"type": "accident", "lat": 48.1, "lon": 11.5}, &ev)
	const confirmations = 12
	for i := range confirmations {
		c.must(200, "POST", "/v1/events/"+ev.EventID+"/signals", betaKey,
			map[string]string{"action": "confirm", "reporter_token": fmt.Sprint("car-", i)}, nil)
	}
	// The first attempts fail: the deliveries are waiting in the queue when the server dies.
	// The kill comes once the server has recorded every refused attempt, not only once the
	// receiver refused them: a delivery killed between its attempt and that record is sent
	// again only when its claim runs out, two minutes on, which is no loss but past this
	// test's wait.
	deliveries := "/console/orgs/" + orgs[0].OrgID + "/webhooks/" + issued.Endpoint.EndpointID + "/deliveries"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var listed []struct {
			Attempts []json.RawMessage `json:"attempts"`
		}
		c.must(200, "GET", deliveries, ada, nil, &listed)
		recorded := 0
		for _, d := range listed {
			if len(d.Attempts) > 0 {
				recorded++
			}
		}
		if recorded >= confirmations {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries have their refused attempt recorded before the kill; want one per confirmation", recorded, len(listed))
		}
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	back.Store(true)

	s2 := start(t, s.DataDir, env...)
	defer s2.stop(t)
	// The retries come 30 s after the first attempts.
	deadline := time.Now().Add(90 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= confirmations {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the receiver has %d deliveries; want one per confirmation, %d\n%s", n, confirmations, s2.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != confirmations || taken != confirmations || len(bad) > 0 {
		t.Errorf("the receiver took %d attempts of %d deliveries, %d failing the check (%v); want %d, each once and verifying",
			taken, len(got), len(bad), bad, confirmations)
	}
	for id, kind := range got {
		if kind != webhooks.KindConfirmed {
			t.Errorf("delivery %s is %s; want event.confirmed", id, kind)
		}
	}
}
