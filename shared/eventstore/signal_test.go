package eventstore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// A reporter counts once, with its latest signal (docs/api.md §4.1 rule 6), also when that
// signal was stored by a version that kept a reporter's standing vote in an item of its own
// ("vote#<reporter>", its history entry apart): the vote still stands, so repeating it changes
// nothing, and the evidence counts the reporter (docs/network.md §4).
func TestVoteItemOfEarlierVersionsStands(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	s, err := New(tab, Options{IDKey: []byte("0123456789abcdef0123456789abcdef"), Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	org := Caller{Org: "org_a", Environment: event.EnvironmentLive}
	ev, _, err := s.Publish(ctx, org, event.EventIn{Type: "accident", Lat: 52.1, Lon: 5.1})
	if err != nil {
		t.Fatal(err)
	}
	// The event as versions before stored it: their votes were keyed by the token as sent.
	it, err := tab.Get(ctx, EventKey(ev.ID))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(it.String(attrData)), &fields); err != nil || fields["sealed_reporters"] != true {
		t.Fatalf("the event item %s: %v; want sealed_reporters", it.String(attrData), err)
	}
	delete(fields, "sealed_reporters")
	data, _ := json.Marshal(fields)
	it[attrData] = string(data)
	if err := tab.Put(ctx, it, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	tok := "truck-7"
	reporter := event.Reporter("org_b", &tok)
	data, err = json.Marshal(event.Vote{Reporter: reporter, Action: event.ActionConfirm, Confirmed: true, At: tab.Clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Put(ctx, store.Item{store.AttrPK: eventPrefix + ev.ID, store.AttrSK: votePrefix + reporter,
		store.AttrTTL: s.keepUntil(ev), attrData: string(data)}, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	fleet := Caller{Org: "org_b", Environment: event.EnvironmentLive}
	if _, outcome, err := s.Signal(ctx, fleet, ev.ID, event.SignalIn{Action: event.ActionConfirm, ReporterToken: &tok}); err != nil || outcome != event.Unchanged {
		t.Fatalf("confirming again = %v, %v; want nothing changed", outcome, err)
	}
	e, err := s.Evidence(ctx, org, ev.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Reporters.Confirming != 1 || e.Reporters.Denying != 0 {
		t.Errorf("evidence reporters %+v; want the one reporter, confirming", e.Reporters)
	}
}
