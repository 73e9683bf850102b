package event_test

import (
	"errors"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
)

// published returns the EventIn of fullEvent as a Go value.
func publishedIn() event.EventIn {
	return event.EventIn{
		Type: "road_damage", Subtype: ptr("pothole"), Lat: 48.13743, Lon: 11.57549,
		Geometry: &event.LineString{Type: "LineString", Coordinates: [][2]float64{{11.57549, 48.13743}, {11.58, 48.14}}},
		Heading:  ptr(90), RoadRef: ptr("A9"), Severity: ptr("high"), Description: ptr("deep pothole"),
		OccurredAt: ptr(t0.Add(-5 * time.Minute)), ClientEventID: ptr("c-1"), ReporterToken: ptr("veh.7"),
	}
}

// TestFirstDifference checks docs/api.md §4.1 rule 1 and §10.2: a replay is identical when
// every EventIn field, reporter_token included, is equal after normalisation; otherwise the
// first differing field, in EventIn's order, is named.
func TestFirstDifference(t *testing.T) {
	t.Parallel()
	stored := event.New(publishedIn(), "org-a", event.EnvironmentLive, event.NewID(), t0)
	cases := []struct {
		name      string
		edit      func(*event.EventIn)
		wantField string // "" for a faithful replay
	}{
		{"identical", func(*event.EventIn) {}, ""},
		{"coordinates equal after rounding", func(in *event.EventIn) {
			in.Lat, in.Lon = 48.1374301, 11.5754949
			in.Geometry.Coordinates[0] = [2]float64{11.5754949, 48.1374301}
		}, ""},
		{"same instant in another zone", func(in *event.EventIn) {
			in.OccurredAt = ptr(in.OccurredAt.In(time.FixedZone("X", -7*3600)))
		}, ""},
		{"geometry type omitted", func(in *event.EventIn) { in.Geometry.Type = "" }, ""},
		{"type", func(in *event.EventIn) { in.Type = "accident" }, "type"},
		{"subtype", func(in *event.EventIn) { in.Subtype = ptr("sinkhole") }, "subtype"},
		{"subtype dropped", func(in *event.EventIn) { in.Subtype = nil }, "subtype"},
		{"lat", func(in *event.EventIn) { in.Lat = 48.13744 }, "lat"},
		{"lon", func(in *event.EventIn) { in.Lon = 11.5755 }, "lon"},
		{"geometry point", func(in *event.EventIn) { in.Geometry.Coordinates[1][0] = 11.59 }, "geometry"},
		{"geometry longer", func(in *event.EventIn) {
			in.Geometry.Coordinates = append(in.Geometry.Coordinates, [2]float64{11.6, 48.15})
		}, "geometry"},
		{"geometry dropped", func(in *event.EventIn) { in.Geometry = nil }, "geometry"},
		{"heading", func(in *event.EventIn) { in.Heading = ptr(91) }, "heading"},
		{"road_ref", func(in *event.EventIn) { in.RoadRef = ptr("A8") }, "road_ref"},
		{"severity", func(in *event.EventIn) { in.Severity = ptr("low") }, "severity"},
		{"description", func(in *event.EventIn) { in.Description = ptr("shallow pothole") }, "description"},
		{"occurred_at", func(in *event.EventIn) { in.OccurredAt = ptr(t0) }, "occurred_at"},
		{"occurred_at dropped", func(in *event.EventIn) { in.OccurredAt = nil }, "occurred_at"},
		{"client_event_id", func(in *event.EventIn) { in.ClientEventID = ptr("c-2") }, "client_event_id"},
		{"reporter_token", func(in *event.EventIn) { in.ReporterToken = ptr("veh.8") }, "reporter_token"},
		{"reporter_token dropped", func(in *event.EventIn) { in.ReporterToken = nil }, "reporter_token"},
		{"first difference wins", func(in *event.EventIn) {
			in.ReporterToken, in.Heading, in.Severity = nil, nil, nil
		}, "heading"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := publishedIn()
			tc.edit(&in)
			field, differs := event.FirstDifference(stored, in)
			if field != tc.wantField || differs != (tc.wantField != "") {
				t.Errorf("FirstDifference() = %q, %v; want %q, %v", field, differs, tc.wantField, tc.wantField != "")
			}
		})
	}
}

// TestReplayAfterRevision checks that resending the original publication stays the 200
// path (docs/api.md §7 retry rules) after the publisher revised the event.
func TestReplayAfterRevision(t *testing.T) {
	t.Parallel()
	e := event.New(publishedIn(), "org-a", event.EnvironmentLive, event.NewID(), t0)
	if _, err := e.Revise(event.RevisionIn{Lat: 48.2, Lon: 11.6, Severity: ptr("low")}, t0.Add(time.Minute)); err != nil {
		t.Fatalf("Revise() = %v", err)
	}
	if field, differs := event.FirstDifference(e, publishedIn()); differs {
		t.Errorf("FirstDifference(revised, original) = %q, true; want a faithful replay", field)
	}
	revised := publishedIn()
	revised.Lat, revised.Lon, revised.Geometry = 48.2, 11.6, nil
	if field, differs := event.FirstDifference(e, revised); !differs || field != "lat" {
		t.Errorf("FirstDifference(revised, revised content) = %q, %v; want lat, true", field, differs)
	}
}

// TestCheckReplay checks the publish 409s of docs/api.md §7: different content, or the id already
// used in the other environment; a faithful replay is nil (200).
func TestCheckReplay(t *testing.T) {
	t.Parallel()
	stored := event.New(publishedIn(), "org-a", event.EnvironmentLive, event.NewID(), t0)
	changed := publishedIn()
	changed.Description = ptr("other")
	cases := []struct {
		name    string
		in      event.EventIn
		org     string
		env     string
		wantErr error
	}{
		{"faithful replay", publishedIn(), "org-a", event.EnvironmentLive, nil},
		{"different content", changed, "org-a", event.EnvironmentLive, event.ErrReplayDiffers},
		{"other environment", publishedIn(), "org-a", event.EnvironmentSandbox, event.ErrOtherEnvironment},
		{"other organisation", publishedIn(), "org-b", event.EnvironmentLive, event.ErrReplayDiffers},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := event.CheckReplay(stored, tc.in, tc.org, tc.env)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("CheckReplay() = %v; want %v", err, tc.wantErr)
			}
		})
	}
}
