package eventstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/privacy.md §2, docs/api.md §4.1 rule 6: reporter tokens are never at rest as sent (votes,
// history entries and the published event keep a keyed hash), and a reporter's position is not
// kept (its distance from the event is); a reporter is still one reporter whose latest signal
// wins, organisation-qualified; a publication replayed with its token is the 200 path, with
// another token a 409.
func TestReporterTokensSealed(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		s, err := eventstore.New(tab, eventstore.Options{IDKey: testIDKey, Clock: tab.Clock})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		pub := eventstore.Caller{Org: "org_pub", Environment: event.EnvironmentLive}
		trip, driver := "trip-7", "truck-PUBLISHER-77"
		in := event.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5, ClientEventID: &trip, ReporterToken: &driver}
		ev, _, err := s.Publish(ctx, pub, in)
		if err != nil {
			t.Fatal(err)
		}
		if _, created, err := s.Publish(ctx, pub, in); err != nil || created {
			t.Fatalf("replay with the same token: created %v, %v; want the 200 path", created, err)
		}
		other := "truck-OTHER"
		if _, _, err := s.Publish(ctx, pub, event.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5, ClientEventID: &trip, ReporterToken: &other}); !errors.Is(err, event.ErrReplayDiffers) {
			t.Fatalf("replay with another token: %v; want ErrReplayDiffers", err)
		}

		car, lat, lon := "car-VIN-WDB1234567", 48.123456, 11.554321
		signal := func(org, action string) (event.Event, event.Outcome) {
			t.Helper()
			got, outcome, err := s.Signal(ctx, eventstore.Caller{Org: org, Environment: event.EnvironmentLive}, ev.ID,
				event.SignalIn{Action: action, ReporterToken: &car, Lat: &lat, Lon: &lon})
			if err != nil {
				t.Fatal(err)
			}
			return got, outcome
		}
		signal("org_x", event.ActionConfirm)
		if _, outcome := signal("org_x", event.ActionConfirm); outcome != event.Unchanged {
			t.Errorf("the same reporter confirming again: %v; want unchanged", outcome)
		}
		signal("org_y", event.ActionConfirm) // the same token in another organisation: another reporter
		got, _ := signal("org_x", event.ActionDeny)
		if got.ConfirmCount != 1 || got.DenyCount != 1 {
			t.Errorf("tallies %d/%d; want org_y's confirmation and org_x's latest, a denial", got.ConfirmCount, got.DenyCount)
		}
		evidence, err := s.Evidence(ctx, pub, ev.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if evidence.Reporters.Organisations != 2 || evidence.Timeline[len(evidence.Timeline)-1].DistanceM == nil {
			t.Errorf("evidence %+v; want two organisations and the reporter's distance", evidence.Reporters)
		}

		dump := tab.Everything(t)
		for _, v := range []string{driver, car, "48.123456", "11.554321", "48.12346", "11.55432"} {
			if strings.Contains(dump, v) {
				t.Errorf("the table holds %q", v)
			}
		}
	})
}
