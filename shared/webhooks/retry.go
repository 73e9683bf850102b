package webhooks

import (
	"math/rand/v2"
	"time"
)

// Retry schedule of a delivery (docs/webhooks.md §3).
const (
	// FirstRetry is the wait after the first failed attempt; each next wait doubles, up to
	// MaxWait, each with up to a fifth of it added at random so that the retries of many
	// deliveries to one receiver that was down spread out.
	FirstRetry = 30 * time.Second
	MaxWait    = time.Hour
	// GiveUpAfter is how long a delivery is retried, from its first attempt.
	GiveUpAfter = 24 * time.Hour
)

// NextAttempt returns when to try a delivery again after its failed attempt number attempt
// (1 for the first), made at at and first tried at first; ok is false once GiveUpAfter has
// passed. jitter is a number in [0, 1): rand.Float64 in the dispatcher, fixed in tests.
func NextAttempt(first, at time.Time, attempt int, jitter float64) (next time.Time, ok bool) {
	wait := FirstRetry
	for i := 1; i < attempt && wait < MaxWait; i++ {
		wait *= 2
	}
	wait = min(wait, MaxWait)
	wait += time.Duration(float64(wait) / 5 * jitter)
	next = at.Add(wait)
	if next.Sub(first) > GiveUpAfter {
		return time.Time{}, false
	}
	return next, true
}

// Jitter is the dispatcher's source of jitter for NextAttempt.
func Jitter() float64 { return rand.Float64() }
