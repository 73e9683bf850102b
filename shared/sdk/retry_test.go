package sdk_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/sdk"
)

// script is a transport that answers each request with the next of its answers, and keeps the
// requests' bodies.
type script struct {
	mu      sync.Mutex
	answers []answer
	bodies  []string
	methods []string
}

type answer struct {
	status int
	body   string
	header map[string]string
	err    error
}

func (s *script) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := ""
	if req.Body != nil {
		raw, _ := io.ReadAll(req.Body)
		b = string(raw)
	}
	s.bodies = append(s.bodies, b)
	s.methods = append(s.methods, req.Method+" "+req.URL.Path)
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	if a.err != nil {
		return nil, a.err
	}
	res := &http.Response{StatusCode: a.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(a.body)), Request: req}
	for k, v := range a.header {
		res.Header.Set(k, v)
	}
	return res, nil
}

// timeout is the error of a request that took too long.
type timeout struct{}

func (timeout) Error() string   { return "i/o timeout" }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }

var _ net.Error = timeout{}

// client returns a client on s whose waits are recorded instead of slept.
func client(s *script) (*sdk.Client, *[]time.Duration) {
	var waits []time.Duration
	r := sdk.DefaultRetry
	r.Jitter = func() float64 { return 0.5 }
	r.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	return sdk.New("https://api.example", "svc_live_k", sdk.WithHTTPClient(&http.Client{Transport: s}), sdk.WithRetry(r)), &waits
}

const evJSON = `{"event_id":"ev_aaaaaaaaaaaaaaaaaaaaaaaaaa","type":"accident","status":"active","lat":48.1,"lon":11.5}`

// docs/api.md §7 (retrying): a 5xx is retried with exponential backoff and jitter, until a
// success or the last attempt, whose refusal is the error.
func TestRetryOn5xx(t *testing.T) {
	s := &script{answers: []answer{{status: 503, body: `{"detail":"busy"}`}, {status: 500, body: `{"detail":"boom"}`}, {status: 200, body: `[]`}}}
	c, waits := client(s)
	if _, err := c.Query(context.Background(), sdk.Area{Lat: 48.1, Lon: 11.5}); err != nil {
		t.Fatal(err)
	}
	// Half (the jitter) of 500 ms, then of 1 s.
	if !slices.Equal(*waits, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}) || len(s.bodies) != 3 {
		t.Errorf("waits %v over %d attempts; want 250ms, 500ms over 3", *waits, len(s.bodies))
	}
	s = &script{answers: []answer{{status: 502, body: `{"detail":"bad gateway"}`}}}
	c, _ = client(s)
	_, err := c.Query(context.Background(), sdk.Area{Lat: 48.1, Lon: 11.5})
	var apiErr *sdk.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Attempts != sdk.DefaultRetry.Attempts || apiErr.Detail != "bad gateway" {
		t.Errorf("after every attempt failed: %#v; want the last 502 after %d attempts", err, sdk.DefaultRetry.Attempts)
	}
}

// docs/api.md §7: 401, 403, 404, 409 and 422 are never retried; a 422 carries its items.
func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 413, 422} {
		body := `{"detail":"no"}`
		if status == 422 {
			body = `{"detail":[{"type":"missing","loc":["body","type"],"msg":"Field required","input":{}}]}`
		}
		s := &script{answers: []answer{{status: status, body: body}, {status: 200, body: evJSON}}}
		c, waits := client(s)
		_, _, err := c.Publish(context.Background(), sdk.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5})
		var apiErr *sdk.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != status || len(s.bodies) != 1 || len(*waits) != 0 {
			t.Errorf("%d: %v after %d attempts; want the refusal, sent once", status, err, len(s.bodies))
			continue
		}
		if status == 422 && (len(apiErr.Validation) != 1 || apiErr.Validation[0].Type != "missing" || sdk.StatusOf(err) != 422) {
			t.Errorf("422 items %+v; want the missing type", apiErr.Validation)
		}
	}
}

// docs/api.md §7: a 429 is retried once its Retry-After has passed; a wait longer than the
// policy allows is not waited.
func TestRetryAfter429(t *testing.T) {
	s := &script{answers: []answer{{status: 429, body: `{"detail":"slow down"}`, header: map[string]string{"Retry-After": "3"}}, {status: 200, body: evJSON}}}
	c, waits := client(s)
	if _, err := c.Get(context.Background(), "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*waits, []time.Duration{3 * time.Second}) {
		t.Errorf("waits %v; want Retry-After's 3s", *waits)
	}
	s = &script{answers: []answer{{status: 429, body: `{"detail":"hour"}`, header: map[string]string{"Retry-After": "3600"}}}}
	c, waits = client(s)
	_, err := c.Get(context.Background(), "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	if sdk.StatusOf(err) != 429 || len(*waits) != 0 || len(s.bodies) != 1 {
		t.Errorf("an hour's Retry-After: %v, waits %v; want the 429 at once", err, *waits)
	}
}

// docs/api.md §7: a timeout or a reset is retried when sending again is safe: a read, a publish
// with a client_event_id (the same content is sent again, so the retry lands on the 200 path),
// a signal; a publish without one is not, as it could publish twice.
func TestRetryAfterTransportErrors(t *testing.T) {
	id := "trip-42"
	s := &script{answers: []answer{{err: timeout{}}, {status: 200, body: evJSON}}}
	c, _ := client(s)
	ev, created, err := c.Publish(context.Background(), sdk.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5, ClientEventID: &id})
	if err != nil || created || ev.EventID == "" || len(s.bodies) != 2 || s.bodies[0] != s.bodies[1] || !strings.Contains(s.bodies[1], `"client_event_id":"trip-42"`) {
		t.Errorf("publish with a client_event_id after a timeout: %v, created %v, bodies %q; want the same body again, answered 200", err, created, s.bodies)
	}
	s = &script{answers: []answer{{err: timeout{}}, {status: 201, body: evJSON}}}
	c, _ = client(s)
	if _, _, err := c.Publish(context.Background(), sdk.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5}); err == nil || len(s.bodies) != 1 {
		t.Errorf("publish without a client_event_id after a timeout: %v after %d attempts; want the timeout, sent once", err, len(s.bodies))
	}
	s = &script{answers: []answer{{err: &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}}, {status: 200, body: evJSON}}}
	c, _ = client(s)
	reporter := "car-1"
	if _, err := c.Signal(context.Background(), "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", sdk.SignalIn{Action: "confirm", ReporterToken: &reporter}); err != nil || len(s.bodies) != 2 {
		t.Errorf("signal after a reset: %v after %d attempts; want it sent again", err, len(s.bodies))
	}
}

// A close sent again after a timeout, whose first send had closed the event, is answered 409;
// Close then returns the event as it is.
func TestCloseRetriedAfterItClosed(t *testing.T) {
	closed := strings.Replace(evJSON, `"active"`, `"expired"`, 1)
	s := &script{answers: []answer{{err: timeout{}}, {status: 409, body: `{"detail":"Event is over"}`}, {status: 200, body: closed}}}
	c, _ := client(s)
	ev, err := c.Close(context.Background(), "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	if err != nil || ev.Status != "expired" || !slices.Equal(s.methods, []string{
		"POST /v1/events/ev_aaaaaaaaaaaaaaaaaaaaaaaaaa/close", "POST /v1/events/ev_aaaaaaaaaaaaaaaaaaaaaaaaaa/close", "GET /v1/events/ev_aaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
		t.Errorf("close retried: %v, %+v, calls %v; want the closed event", err, ev, s.methods)
	}
	s = &script{answers: []answer{{status: 409, body: `{"detail":"Event is over"}`}}}
	c, _ = client(s)
	if _, err := c.Close(context.Background(), "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa"); sdk.StatusOf(err) != 409 {
		t.Errorf("a first close answered 409: %v; want the 409", err)
	}
}

// A call whose context ends while it waits to retry ends with the context's error.
func TestRetryStopsWithTheContext(t *testing.T) {
	s := &script{answers: []answer{{status: 503, body: `{"detail":"busy"}`}}}
	r := sdk.DefaultRetry
	ctx, cancel := context.WithCancel(context.Background())
	r.Sleep = func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }
	c := sdk.New("https://api.example", "k", sdk.WithHTTPClient(&http.Client{Transport: s}), sdk.WithRetry(r))
	if _, err := c.Query(ctx, sdk.Area{Lat: 1, Lon: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v; want context.Canceled", err)
	}
}
