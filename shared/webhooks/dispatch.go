package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/netguard"
)

// Dispatcher limits (docs/webhooks.md §3).
const (
	// SendTimeout bounds one attempt, connection to the end of the answer's headers.
	SendTimeout = 10 * time.Second
	// MaxAnswer is how much of a receiver's answer is read; the rest is not waited for.
	MaxAnswer = 64 << 10
	// DispatchTick is how often the in-process dispatcher looks for due deliveries.
	DispatchTick = 2 * time.Second
	// DispatchParallel is how many deliveries one pass sends at once.
	DispatchParallel = 8
	// passLimit is how many due deliveries one pass takes.
	passLimit = 200
)

// Dispatcher sends the deliveries that are due, signed with their endpoint's secrets.
type Dispatcher struct {
	queue     *Queue
	endpoints *Endpoints
	client    *http.Client
	clock     clock.Clock
	logger    *slog.Logger
	jitter    func() float64
}

// DispatcherOptions configure a Dispatcher.
type DispatcherOptions struct {
	// AllowPrivate lets endpoints live on private and loopback addresses: for tests, and for a
	// deployment whose receivers are inside its own network.
	AllowPrivate bool
	Clock        clock.Clock
	Logger       *slog.Logger
	// Jitter replaces the retry schedule's random part (tests); Jitter when nil.
	Jitter func() float64
	// TLS replaces the default TLS configuration (tests: a test server's certificate).
	TLS *tls.Config
}

// NewDispatcher returns a dispatcher of q's deliveries to endpoints.
func NewDispatcher(q *Queue, endpoints *Endpoints, o DispatcherOptions) *Dispatcher {
	if o.Clock == nil {
		o.Clock = clock.System
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Jitter == nil {
		o.Jitter = Jitter
	}
	transport := &http.Transport{
		DialContext:           netguard.Dialer(o.AllowPrivate).DialContext,
		TLSClientConfig:       o.TLS,
		TLSHandshakeTimeout:   SendTimeout,
		ResponseHeaderTimeout: SendTimeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	return &Dispatcher{queue: q, endpoints: endpoints, clock: o.Clock, logger: o.Logger, jitter: o.Jitter,
		client: &http.Client{
			Transport: transport,
			Timeout:   SendTimeout,
			// A redirect is an answer like any other that is not 2xx: the delivery is not taken.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Pass sends every delivery due now, DispatchParallel at a time, and returns how many it
// attempted. A delivery another dispatcher holds is left to it.
func (d *Dispatcher) Pass(ctx context.Context) (int, error) {
	due, err := d.queue.due(ctx, d.clock.Now(), passLimit)
	if err != nil {
		return 0, err
	}
	var g errgroup.Group
	g.SetLimit(DispatchParallel)
	var sent atomic.Int64
	for _, dl := range due {
		g.Go(func() error {
			ok, err := d.attempt(ctx, dl)
			if ok {
				sent.Add(1)
			}
			return err
		})
	}
	err = g.Wait()
	return int(sent.Load()), err
}

// Logger is where the dispatcher logs.
func (d *Dispatcher) Logger() *slog.Logger { return d.logger }

// Run makes a pass at every tick until ctx ends: the in-process dispatcher of go run ..
func (d *Dispatcher) Run(ctx context.Context, tick <-chan time.Time) {
	for {
		if _, err := d.Pass(ctx); err != nil && ctx.Err() == nil {
			d.logger.Warn("webhooks: a dispatch pass failed; its deliveries are due at the next", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// Turn takes a turn a Sender carried back (docs/webhooks.md §3, on AWS): the delivery is
// attempted when the turn is its current one and due; a turn that came back before it is due
// (a Sender holds a message so long at most) is sent on. A turn the delivery has moved on from
// is dropped, unless retried is true: the message came back because its handling failed, maybe
// between the delivery's write and the send of its next turn, so the delivery's current turn
// is sent again (twice is harmless; lost is not). A delivery another dispatcher holds is left
// to it: should that one stop before it records the attempt, its own message comes back.
func (d *Dispatcher) Turn(ctx context.Context, t Turn, retried bool) error {
	dl, err := d.queue.Get(ctx, t.Org, t.Endpoint, t.Delivery)
	if errors.Is(err, ErrDeliveryNotFound) {
		return nil // no longer kept
	}
	if err != nil || dl.State != StatePending {
		return err
	}
	switch {
	case !dl.NextAttemptAt.Equal(t.At):
		if retried {
			return d.queue.sendTurn(ctx, dl)
		}
		return nil
	case dl.NextAttemptAt.After(d.clock.Now()):
		return d.queue.sendTurn(ctx, dl)
	}
	_, err = d.attempt(ctx, dl)
	return err
}

// attempt sends dl once, if it can claim it, and records what came of it.
func (d *Dispatcher) attempt(ctx context.Context, dl Delivery) (bool, error) {
	now := d.clock.Now()
	ok, err := d.queue.claim(ctx, dl, now)
	if !ok || err != nil {
		return false, err
	}
	next := dl
	ep, secrets, err := d.endpoints.Secrets(ctx, dl.Org, dl.Endpoint)
	switch {
	case errors.Is(err, ErrNotFound):
		next.State, next.Reason = StateDropped, "the endpoint was deleted"
		return true, d.queue.settle(ctx, dl, next)
	case err != nil:
		return false, err
	case !ep.Enabled:
		next.State, next.Reason = StateDropped, "the endpoint is disabled"
		return true, d.queue.settle(ctx, dl, next)
	}
	a := d.send(ctx, ep, secrets, dl)
	next.Attempts = append(append([]Attempt(nil), dl.Attempts...), a)
	switch {
	case a.Status >= 200 && a.Status < 300:
		next.State = StateDelivered
	case a.Status == http.StatusGone:
		next.State, next.Reason = StateDropped, "the receiver answered 410 Gone: the endpoint is disabled"
		if err := d.endpoints.Disable(ctx, ep.Org, ep.ID, fmt.Sprintf("the receiver answered 410 Gone at %s", a.At.Format(time.RFC3339))); err != nil {
			return true, err
		}
	default:
		at, retry := NextAttempt(dl.FirstAttemptAt, a.At, len(next.Attempts), d.jitter())
		if retry {
			next.NextAttemptAt = at
		} else {
			next.State, next.Reason = StateFailed, fmt.Sprintf("no attempt succeeded within %s", GiveUpAfter)
		}
	}
	return true, d.queue.settle(ctx, dl, next)
}

// send makes one attempt of dl to ep: a signed POST whose answer is read up to MaxAnswer.
func (d *Dispatcher) send(ctx context.Context, ep Endpoint, secrets []string, dl Delivery) Attempt {
	at := d.clock.Now().UTC()
	a := Attempt{At: at}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(dl.Body))
	if err != nil {
		a.Error = "the endpoint's URL cannot be requested"
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "roadevents-webhooks/1")
	req.Header.Set("Roadevents-Delivery", dl.ID)
	req.Header.Set(SignatureHeader, Sign(at, dl.Body, secrets...))
	start := time.Now()
	resp, err := d.client.Do(req)
	a.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		// The error names the URL, which members may read anyway; never a secret.
		a.Error = err.Error()
		return a
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, MaxAnswer))
	resp.Body.Close()
	a.Status = resp.StatusCode
	return a
}
