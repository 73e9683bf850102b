package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/roadevents/roadevents/shared/store"
)

// Every call to DynamoDB goes through call, which gives it the adapter's retry policy and a
// deadline per attempt, whatever the client was configured with, so that a throttled, failing
// or hung DynamoDB is given up on in a bounded time and reported as store.ErrUnavailable
// (docs/operations.md §1).
//
// The SDK has no deadline per attempt: a deadline on the call's context would end the first
// attempt and every retry with it. So each attempt gets its own, and an attempt that runs out
// of it is retried like a reset connection.

// Defaults of Options.
const (
	// DefaultMaxAttempts is how often one call is tried: the SDK's standard retries.
	DefaultMaxAttempts = 3
	// DefaultAttemptTimeout bounds one attempt, from sending the request to reading the whole
	// answer. DynamoDB answers in milliseconds; a second and a half leaves room for a large
	// transaction or a 1 MB page while three hung attempts still give up in under 5 s, well
	// within the 10 s of the HTTP functions (docs/operations.md §1).
	DefaultAttemptTimeout = 1500 * time.Millisecond
)

// DefaultBaseDelay scales the backoff between attempts (Options.BaseDelay), with full jitter:
// the n-th retry waits a random time up to BaseDelay·2^n, ten times that after a throttle, as
// the table's capacity needs time to come back, and at most retryMaxDelay.
const DefaultBaseDelay = 25 * time.Millisecond

const (
	throttleFactor      = 10
	retryMaxDelay       = time.Second
	attemptMiddlewareID = "RoadEventsAttempt"
)

// newRetryer is the SDK's standard retryer (its retryable errors and its retry quota, which
// stops retrying when most calls fail) with maxAttempts and the backoff above.
func newRetryer(maxAttempts int, baseDelay time.Duration) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		throttles := retry.IsErrorThrottles(o.Throttles)
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, err error) (time.Duration, error) {
			base := baseDelay
			if throttles.IsErrorThrottle(err).Bool() {
				base *= throttleFactor
			}
			limit := min(base<<min(attempt, 10), retryMaxDelay)
			return rand.N(limit) + 1, nil
		})
	})
}

// attemptMiddleware runs each attempt under its own deadline. It is the last step before the
// request is sent, so the deadline covers sending and reading the answer, not signing. It sets
// unsure when an attempt failed after its request may have reached DynamoDB and been carried
// out (mayHaveApplied).
type attemptMiddleware struct {
	timeout time.Duration
	unsure  *bool
}

func (attemptMiddleware) ID() string { return attemptMiddlewareID }

func (m attemptMiddleware) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	actx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	out, md, err := next.HandleFinalize(actx, in)
	if err == nil {
		return out, md, nil
	}
	if ctx.Err() == nil && actx.Err() != nil {
		// The SDK would take the attempt's deadline for the caller's and stop.
		err = &attemptTimeoutError{timeout: m.timeout, err: err}
	}
	if mayHaveApplied(err) {
		*m.unsure = true
	}
	return out, md, err
}

// attemptTimeoutError is an attempt that ran out of its own deadline. It does not unwrap: the
// SDK must not see the cancellation inside, which it never retries.
type attemptTimeoutError struct {
	timeout time.Duration
	err     error
}

func (e *attemptTimeoutError) Error() string {
	return fmt.Sprintf("attempt timed out after %s: %v", e.timeout, e.err)
}

// RetryableError tells the SDK's retryer to try again.
func (e *attemptTimeoutError) RetryableError() bool { return true }

// Timeout tells the SDK's retryer that this was a timeout (it costs more of its retry quota).
func (e *attemptTimeoutError) Timeout() bool { return true }

// mayHaveApplied tells whether a failed attempt may have been carried out by DynamoDB: only an
// answer under 500 (a refusal, a throttle) or a connection that was never made says it was not.
func mayHaveApplied(err error) bool {
	var answered interface{ HTTPStatusCode() int }
	if errors.As(err, &answered) && answered.HTTPStatusCode() != 0 { // 0: no answer came
		return answered.HTTPStatusCode() >= 500
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// callKind says how far a failed call's outcome is known.
type callKind int

const (
	// readCall changes nothing.
	readCall callKind = iota
	// writeCall is a single-item write: a retry after an attempt that was applied can fail
	// the write's condition on the write's own result.
	writeCall
	// transactCall is TransactWriteItems, which the SDK sends with one idempotency token for
	// all its attempts: a retry after an applied attempt returns that attempt's success.
	transactCall
)

// call runs one DynamoDB operation with the adapter's policy and maps its failure (mapError).
func call[In, Out any](ctx context.Context, t *Table, kind callKind,
	op func(context.Context, *In, ...func(*ddb.Options)) (*Out, error), in *In,
) (*Out, error) {
	unsure := false
	out, err := op(ctx, in, func(o *ddb.Options) {
		o.Retryer = t.retryer
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(attemptMiddleware{timeout: t.attemptTimeout, unsure: &unsure}, middleware.After)
		})
	})
	if err != nil {
		if kind == writeCall && unsure {
			// A refusal may be the write's own earlier attempt, carried out: the outcome is
			// unknown, and a refusal would tell the caller it did not happen.
			return nil, fmt.Errorf("%w: outcome unknown after an attempt failed in flight: %w", store.ErrUnavailable, err)
		}
		return nil, t.mapError(err)
	}
	return out, nil
}

// mapError turns the DynamoDB errors the contract names into its sentinels, keeping the
// original in the chain for logs: a condition failure, a conflict, an invalid request, and
// what the retryer would have retried had it attempts left, or the caller's deadline, as
// store.ErrUnavailable.
func (t *Table) mapError(err error) error {
	if mapped, ok := refusal(err); ok {
		return mapped
	}
	if t.retryer.IsErrorRetryable(err) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}
