package webhooks_test

import (
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/webhooks"
)

// docs/webhooks.md §3: retries wait 30 s, then twice as long each time up to an hour, with up
// to a fifth more at random, and stop 24 hours after the first attempt.
func TestRetrySchedule(t *testing.T) {
	t.Parallel()
	first := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	at, waits := first, []time.Duration{}
	for attempt := 1; ; attempt++ {
		next, ok := webhooks.NextAttempt(first, at, attempt, 0)
		if !ok {
			break
		}
		waits = append(waits, next.Sub(at))
		at = next
	}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour}
	for i, w := range want {
		if waits[i] != w {
			t.Fatalf("waits %v; want them to begin %v", waits, want)
		}
	}
	if last := at.Sub(first); last > webhooks.GiveUpAfter || last < webhooks.GiveUpAfter-time.Hour {
		t.Errorf("the last retry is %s after the first attempt; want within the last hour of %s", last, webhooks.GiveUpAfter)
	}
	if n := len(waits) + 1; n < 25 || n > 35 {
		t.Errorf("%d attempts in all; want about 31 (8 backing off, then hourly)", n)
	}
	if next, _ := webhooks.NextAttempt(first, first, 1, 0.999); next.Sub(first) <= 30*time.Second || next.Sub(first) > 36*time.Second {
		t.Errorf("a wait with the most jitter is %s; want between 30 s and 36 s", next.Sub(first))
	}
}
