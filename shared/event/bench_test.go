package event_test

import (
	"testing"

	"github.com/roadevents/roadevents/shared/event"
)

// BenchmarkValidateEventIn measures the full validation of a publish body (schema and
// cross-field rules), typical and at the 512-point limit.
func BenchmarkValidateEventIn(b *testing.B) {
	cases := []struct {
		name string
		body any
	}{
		{"typical", decode(b, fullEvent)},
		{"512 points", object(b, fullEvent, map[string]any{"geometry": map[string]any{"coordinates": positions(512, 11.57549, 48.13743)}})},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if errs := event.ValidateEventIn(tc.body, t0); len(errs) > 0 {
					b.Fatalf("errors: %q", brief(errs))
				}
			}
		})
	}
}
