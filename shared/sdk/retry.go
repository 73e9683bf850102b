package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// Retry is when and how a failed call is sent again (docs/api.md §7, retrying): never after
// 401, 403, 404, 409 or 422, nor any other 4xx but 429; after 429 once Retry-After has passed;
// after a 5xx, a timeout or a reset, with exponential backoff and full jitter.
type Retry struct {
	// Attempts bounds the tries of one call, the first included; 1 never retries.
	Attempts int
	// Base is the first backoff; each next one doubles, up to Max.
	Base, Max time.Duration
	// MaxRetryAfter bounds a wait a 429 or 503 asks for; a longer one is not waited, and the
	// call fails with the refusal.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends (tests replace it); time's when nil.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1) (tests replace it); math/rand's when nil.
	Jitter func() float64
}

// DefaultRetry tries a call five times over about 15 seconds, and waits up to a minute when the
// service asks for it.
var DefaultRetry = Retry{Attempts: 5, Base: 500 * time.Millisecond, Max: 8 * time.Second, MaxRetryAfter: time.Minute}

// NoRetry tries each call once.
var NoRetry = Retry{Attempts: 1}

// idempotentKey marks a context whose call may be sent again after a timeout or a reset: one
// the service may have taken already, so that only a call that is safe twice is retried then.
type idempotentKey struct{}

func withIdempotence(ctx context.Context, safe bool) context.Context {
	return context.WithValue(ctx, idempotentKey{}, safe)
}

// safeAfterTransportError tells whether a call the service may have taken may be sent again:
// reads always; a write when its caller said so (withIdempotence).
func safeAfterTransportError(ctx context.Context, method string) bool {
	if method == http.MethodGet {
		return true
	}
	safe, _ := ctx.Value(idempotentKey{}).(bool)
	return safe
}

// do runs send under the policy and returns the first 2xx answer, or the error that ended the
// tries: an *APIError for an answer that is not 2xx, else the transport's error.
func (r Retry) do(ctx context.Context, method string, send func(context.Context) (*http.Response, error)) (*http.Response, error) {
	attempts := max(r.Attempts, 1)
	for attempt := 1; ; attempt++ {
		res, err := send(ctx)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if attempt >= attempts || !retryableTransport(err) || !safeAfterTransportError(ctx, method) {
				return nil, err
			}
			wait = r.backoff(attempt)
		case res.StatusCode < 300:
			return res, nil
		default:
			apiErr := readAPIError(res)
			apiErr.Attempts = attempt
			retryable := res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500
			if attempt >= attempts || !retryable {
				return nil, apiErr
			}
			wait = r.backoff(attempt)
			if apiErr.RetryAfter > 0 {
				if r.MaxRetryAfter > 0 && apiErr.RetryAfter > r.MaxRetryAfter {
					return nil, apiErr
				}
				wait = max(wait, apiErr.RetryAfter)
			}
		}
		if err := r.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func (r Retry) backoff(attempt int) time.Duration {
	d := r.Base << (attempt - 1)
	if r.Max > 0 && (d > r.Max || d <= 0) {
		d = r.Max
	}
	jitter := r.Jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	return time.Duration(jitter() * float64(d))
}

func (r Retry) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryableTransport tells a timeout, a reset or a refused connection from an error that will
// come again (a bad URL, a TLS certificate refused).
func retryableTransport(err error) bool {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}

// APIError is an answer of the service that is not 2xx (docs/api.md §7).
type APIError struct {
	Status int
	// Detail is the service's sentence; empty for a validation error.
	Detail string
	// Validation lists what was wrong with the request, for a 422.
	Validation []ValidationItem
	// RetryAfter is how long the service asked to wait (429, 503).
	RetryAfter time.Duration
	// Attempts is how many times the call was sent.
	Attempts int
}

// ValidationItem is one problem of a 422 (docs/api.md §10.1).
type ValidationItem struct {
	Type string `json:"type"`
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
}

func (e *APIError) Error() string {
	if len(e.Validation) > 0 {
		v := e.Validation[0]
		return fmt.Sprintf("roadevents: %d: %v: %s (%d problems)", e.Status, v.Loc, v.Msg, len(e.Validation))
	}
	return fmt.Sprintf("roadevents: %d: %s", e.Status, e.Detail)
}

// StatusOf returns the HTTP status of err when it is an *APIError, else 0.
func StatusOf(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// readAPIError reads a refusal's body: {"detail": "..."} or {"detail": [items]}.
func readAPIError(res *http.Response) *APIError {
	defer res.Body.Close()
	e := &APIError{Status: res.StatusCode}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	var body struct {
		Detail json.RawMessage `json:"detail"`
	}
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if json.Unmarshal(raw, &body) != nil || len(body.Detail) == 0 {
		e.Detail = http.StatusText(res.StatusCode)
		return e
	}
	if json.Unmarshal(body.Detail, &e.Detail) != nil {
		json.Unmarshal(body.Detail, &e.Validation)
	}
	return e
}
