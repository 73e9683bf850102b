package event_test

import (
	"slices"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
)

// TestFormatTime checks the one timestamp format of docs/api.md §10.1 and §9 rule 6: RFC 3339,
// UTC, Z suffix.
func TestFormatTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   time.Time
		want string
	}{
		{"utc", t0, "2024-05-01T10:00:00Z"},
		{"offset converted to utc", time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600)), "2024-05-01T10:00:00Z"},
		{"fraction kept", t0.Add(250 * time.Millisecond), "2024-05-01T10:00:00.25Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := event.FormatTime(tc.in); got != tc.want {
				t.Errorf("FormatTime(%v) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestNewNormalises checks the normalisation on write (docs/api.md §2.2): coordinates (point and
// every geometry position) rounded to 5 decimals, occurred_at in UTC; and that the stored event
// does not share memory with the payload.
func TestNewNormalises(t *testing.T) {
	t.Parallel()
	cest := time.FixedZone("CEST", 2*3600)
	in := event.EventIn{
		Type: "congestion", Subtype: ptr("queue"),
		Lat: 48.1374349, Lon: 11.575494,
		Geometry:   &event.LineString{Coordinates: [][2]float64{{11.575494, 48.1374349}, {11.5800051, 48.1400049}, {-0.000015, 0.000015}}},
		OccurredAt: ptr(time.Date(2024, 5, 1, 11, 58, 0, 0, cest)),
	}
	if err := in.Validate(t0); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	e := event.New(in, "org-a", event.EnvironmentSandbox, event.NewID(), t0.In(cest))

	if e.Lat != 48.13743 || e.Lon != 11.57549 {
		t.Errorf("lat, lon = %v, %v; want 48.13743, 11.57549", e.Lat, e.Lon)
	}
	wantCoords := [][2]float64{{11.57549, 48.13743}, {11.58001, 48.14}, {-0.00002, 0.00002}}
	if e.Geometry == nil || !slices.Equal(e.Geometry.Coordinates, wantCoords) {
		t.Errorf("geometry = %+v; want coordinates %v", e.Geometry, wantCoords)
	}
	if e.Geometry.Type != event.GeometryType {
		t.Errorf("geometry type = %q; want %q", e.Geometry.Type, event.GeometryType)
	}
	if e.OccurredAt.Location() != time.UTC || !e.OccurredAt.Equal(t0.Add(-2*time.Minute)) {
		t.Errorf("occurred_at = %v; want 09:58 UTC", e.OccurredAt)
	}
	if e.CreatedAt.Location() != time.UTC || !e.CreatedAt.Equal(t0) {
		t.Errorf("created_at = %v; want %v in UTC", e.CreatedAt, t0)
	}
	in.Geometry.Coordinates[1][0] = 0
	*in.Subtype = "stationary_traffic"
	if e.Geometry.Coordinates[1][0] != 11.58001 || *e.Subtype != "queue" {
		t.Errorf("event changed with the payload it was built from: %+v, subtype %q", e.Geometry, *e.Subtype)
	}

	pub := e.Public(t0)
	if pub.OccurredAt == nil || *pub.OccurredAt != "2024-05-01T09:58:00Z" {
		t.Errorf("public occurred_at = %v; want 2024-05-01T09:58:00Z", pub.OccurredAt)
	}
	if pub.Lat != 48.13743 {
		t.Errorf("public lat = %v; want 48.13743", pub.Lat)
	}
}

// TestPublic checks the network-owned and fixed fields of docs/api.md §2.3 and §10.2 on a fresh
// publication.
func TestPublic(t *testing.T) {
	t.Parallel()
	in := event.EventIn{Type: "speed_camera", Subtype: ptr("mobile"), Lat: 1, Lon: 2,
		ClientEventID: ptr("c-9"), ReporterToken: ptr("veh-1"), Severity: ptr("low")}
	e := event.New(in, "org-a", event.EnvironmentSandbox, "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", t0)
	got := e.Public(t0.Add(time.Minute))
	want := event.EventPublic{
		EventID: "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", SchemaVersion: 1, Type: "speed_camera", Lat: 1, Lon: 2,
		Severity: ptr("low"), CreatedAt: "2024-05-01T10:00:00Z", ExpiresAt: "2024-05-01T11:00:00Z",
		SourceKind: "publisher", Status: "active", Verification: "unverified", Confidence: 0.667,
		Environment: "sandbox", Subtype: ptr("mobile"),
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("Public() =\n%s\nwant\n%s", g, w)
	}
}

// TestNaturalExpiry checks docs/api.md §3: an active event is expired as soon as expires_at is
// reached, with no sweeper, and then refuses signals and revisions (409).
func TestNaturalExpiry(t *testing.T) {
	t.Parallel()
	e := publish(t, "accident", t0) // 2 h TTL
	cases := []struct {
		name       string
		at         time.Time
		wantStatus string
	}{
		{"just published", t0, event.StatusActive},
		{"a nanosecond before expiry", t0.Add(2*time.Hour - time.Nanosecond), event.StatusActive},
		{"at expires_at", t0.Add(2 * time.Hour), event.StatusExpired},
		{"long after", t0.Add(48 * time.Hour), event.StatusExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := e.Public(tc.at).Status; got != tc.wantStatus {
				t.Errorf("Public(%v).Status = %q; want %q", tc.at, got, tc.wantStatus)
			}
			if got := e.IsOver(tc.at); got != (tc.wantStatus != event.StatusActive) {
				t.Errorf("IsOver(%v) = %v; want %v", tc.at, got, !got)
			}
		})
	}
	if e.Status != event.StatusActive {
		t.Errorf("stored status = %q; Public must not change it", e.Status)
	}
}

// TestExtent checks the extent used for distances and the area index: the geometry, or the
// point alone.
func TestExtent(t *testing.T) {
	t.Parallel()
	point := publish(t, "accident", t0)
	if got, want := point.Extent(), []geo.Point{{Lat: 48.13743, Lon: 11.57549}}; !slices.Equal(got, want) {
		t.Errorf("point Extent() = %v; want %v", got, want)
	}
	line := event.New(event.EventIn{Type: "congestion", Lat: 1, Lon: 2,
		Geometry: &event.LineString{Coordinates: [][2]float64{{2, 1}, {2.5, 1.5}}}}, "o", "live", event.NewID(), t0)
	if got, want := line.Extent(), []geo.Point{{Lat: 1, Lon: 2}, {Lat: 1.5, Lon: 2.5}}; !slices.Equal(got, want) {
		t.Errorf("line Extent() = %v; want %v", got, want)
	}
}
