package event_test

import (
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/event"
)

// The life of an event as the handlers drive it: validate and publish, collect signals
// (each reporter's previous vote read from the store), and serve it.
func Example() {
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	in := event.EventIn{Type: "object_on_road", Subtype: ptr("debris"), Lat: 48.137431, Lon: 11.575492,
		ClientEventID: ptr("truck-17:0042")}
	if err := in.Validate(now); err != nil {
		fmt.Println("422:", err)
		return
	}
	id := event.DerivedID([]byte("deployment secret"), "org-a", *in.ClientEventID)
	e := event.New(in, "org-a", event.EnvironmentLive, id, now)

	sig := event.SignalIn{Action: event.ActionConfirm, ReporterToken: ptr("car-9")}
	vote, outcome, err := e.Signal(event.Reporter("org-b", sig.ReporterToken), nil, sig.Action, now.Add(25*time.Minute))
	if err != nil {
		fmt.Println("409:", err)
		return
	}
	pub := e.Public(now.Add(25 * time.Minute))
	fmt.Println(outcome, vote.Reporter, pub.Lat, pub.Lon)
	fmt.Println(pub.Status, pub.Verification, pub.Confidence, pub.ExpiresAt)
	// Output:
	// counted org-b/car-9 48.13743 11.57549
	// active confirmed 0.75 2024-05-01T10:40:00Z
}
