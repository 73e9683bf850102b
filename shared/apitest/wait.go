package apitest

import (
	"testing"
	"time"
)

// Within bounds a wait for what must happen within moments (a stream noticed closed, a
// connection freed), so that a regression fails the test instead of hanging it.
const Within = 10 * time.Second

// Eventually polls cond until it holds, and fails the test when it does not within Within.
// It asserts that something happens, not how fast.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, Within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
