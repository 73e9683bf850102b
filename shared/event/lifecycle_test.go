package event_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/schema"
)

const (
	day = 24 * time.Hour
)

// voter keeps each reporter's standing vote, as the store's signal items would (one per
// reporter, latest wins).
type voter struct {
	votes map[string]event.Vote
}

func newVoter() *voter { return &voter{votes: map[string]event.Vote{}} }

// signal applies action by reporter at now and stores the returned vote.
func (v *voter) signal(t *testing.T, e *event.Event, reporter, action string, now time.Time) event.Outcome {
	t.Helper()
	var prev *event.Vote
	if p, ok := v.votes[reporter]; ok {
		prev = &p
	}
	vote, outcome, err := e.Signal(reporter, prev, action, now)
	if err != nil {
		t.Fatalf("Signal(%s, %s) at %v: %v", reporter, action, now, err)
	}
	v.votes[reporter] = vote
	return outcome
}

// TestDefaultTTL checks the default TTL of every type (docs/api.md §2.1): expires_at = created_at + TTL.
func TestDefaultTTL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ string
		ttl time.Duration
	}{
		{"accident", 2 * time.Hour},
		{"stopped_vehicle", time.Hour},
		{"object_on_road", 30 * time.Minute},
		{"weather_hazard", 3 * time.Hour},
		{"congestion", 30 * time.Minute},
		{"wrong_way_vehicle", 20 * time.Minute},
		{"road_damage", 12 * time.Hour},
		{"people_on_road", 30 * time.Minute},
		{"police_check", 30 * time.Minute},
		{"speed_camera", time.Hour},
		{"road_closure", 2 * time.Hour},
		{"infrastructure_fault", 6 * time.Hour},
		{"roadworks", 4 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			e := publish(t, tc.typ, t0)
			if want := t0.Add(tc.ttl); !e.ExpiresAt.Equal(want) {
				t.Errorf("expires_at = %v; want %v (created_at + %v)", e.ExpiresAt, want, tc.ttl)
			}
			if e.Status != event.StatusActive || e.ConfirmCount != 0 || e.DenyCount != 0 {
				t.Errorf("fresh event status %q, tallies %d/%d; want active, 0/0", e.Status, e.ConfirmCount, e.DenyCount)
			}
		})
	}
}

// TestExtension checks docs/api.md §2.1 and §10.2: a first confirmation from a new reporter
// sets expires_at = max(expires_at, now + extension), capped at created_at + ceiling.
func TestExtension(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		typ         string
		confirmAt   time.Duration // after publication
		wantExpires time.Duration // after publication
	}{
		{"road_damage pushed 12 h from the confirmation", "road_damage", time.Hour, 13 * time.Hour},
		{"speed_camera pushed 2 h from the confirmation", "speed_camera", 30 * time.Minute, 2*time.Hour + 30*time.Minute},
		{"infrastructure_fault pushed 6 h from the confirmation", "infrastructure_fault", time.Hour, 7 * time.Hour},
		{"accident: 15 min rule does not shorten", "accident", 10 * time.Minute, 2 * time.Hour},
		{"accident: 15 min from a late confirmation", "accident", 2*time.Hour - 5*time.Minute, 2*time.Hour + 10*time.Minute},
		{"stopped_vehicle 15 min", "stopped_vehicle", 59 * time.Minute, 74 * time.Minute},
		{"object_on_road 15 min", "object_on_road", 29 * time.Minute, 44 * time.Minute},
		{"weather_hazard 15 min", "weather_hazard", 179 * time.Minute, 194 * time.Minute},
		{"congestion 15 min", "congestion", 29 * time.Minute, 44 * time.Minute},
		{"wrong_way_vehicle 15 min", "wrong_way_vehicle", 19 * time.Minute, 34 * time.Minute},
		{"people_on_road 15 min", "people_on_road", 29 * time.Minute, 44 * time.Minute},
		{"police_check 15 min", "police_check", 29 * time.Minute, 44 * time.Minute},
		{"road_closure 15 min", "road_closure", 119 * time.Minute, 134 * time.Minute},
		{"roadworks 15 min", "roadworks", 239 * time.Minute, 254 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			e := publish(t, tc.typ, clk.Now())
			clk.Advance(tc.confirmAt)
			vote, outcome, err := e.Signal("org-b/veh-1", nil, event.ActionConfirm, clk.Now())
			if err != nil || outcome != event.Counted {
				t.Fatalf("Signal(confirm) = %v, %v; want counted", outcome, err)
			}
			if want := t0.Add(tc.wantExpires); !e.ExpiresAt.Equal(want) {
				t.Errorf("expires_at = %v; want %v", e.ExpiresAt, want)
			}
			if !vote.Confirmed {
				t.Errorf("vote.Confirmed = false; want the first confirmation recorded")
			}
		})
	}
}

// TestCeiling keeps an event alive with a first confirmation from a new reporter shortly
// before every expiry, and checks it lives exactly until created_at + ceiling (docs/api.md §2.1
// table, docs/api.md §3: "capped at the ceiling"), then expires.
func TestCeiling(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ     string
		step    time.Duration // time between confirmations, shorter than the TTL and the extension
		ceiling time.Duration
	}{
		{"road_damage", 11 * time.Hour, 30 * day},
		{"speed_camera", 50 * time.Minute, 7 * day},
		{"infrastructure_fault", 5 * time.Hour, 7 * day},
		{"accident", 10 * time.Minute, 12 * time.Hour},
		{"wrong_way_vehicle", 10 * time.Minute, 12 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			e := publish(t, tc.typ, clk.Now())
			v := newVoter()
			ceiling := t0.Add(tc.ceiling)
			for i := 0; ; i++ {
				next := clk.Now().Add(tc.step)
				if !next.Before(e.ExpiresAt) {
					break
				}
				clk.Set(next)
				v.signal(t, &e, fmt.Sprintf("org-b/veh-%d", i), event.ActionConfirm, clk.Now())
				if e.ExpiresAt.After(ceiling) {
					t.Fatalf("after confirmation %d expires_at = %v; want at most %v", i, e.ExpiresAt, ceiling)
				}
			}
			if !e.ExpiresAt.Equal(ceiling) {
				t.Errorf("expires_at = %v; want the ceiling %v", e.ExpiresAt, ceiling)
			}
			if got := e.Public(ceiling.Add(-time.Second)).Status; got != event.StatusActive {
				t.Errorf("status a second before the ceiling = %q; want active", got)
			}
			if got := e.Public(ceiling).Status; got != event.StatusExpired {
				t.Errorf("status at the ceiling = %q; want expired", got)
			}
			if _, _, err := e.Signal("org-b/late", nil, event.ActionConfirm, ceiling); !errors.Is(err, event.ErrOver) {
				t.Errorf("confirmation at the ceiling: err = %v; want ErrOver", err)
			}
		})
	}
}

// TestSignals checks the signal rows of docs/api.md §3 with the quorum of §10.2: one reporter one
// vote (latest wins), repeats change nothing, only a reporter's first confirmation extends,
// and the deny quorum expires the event.
func TestSignals(t *testing.T) {
	t.Parallel()
	type step struct {
		reporter, action string
		wantOutcome      event.Outcome
	}
	cases := []struct {
		name          string
		steps         []step
		wantConfirm   int
		wantDeny      int
		wantStatus    string
		wantExtended  int // how many steps moved expires_at later
		wantVerif     string
		wantConfident float64
	}{
		{name: "one confirmation",
			steps:       []step{{"o/a", "confirm", event.Counted}},
			wantConfirm: 1, wantStatus: "active", wantExtended: 1, wantVerif: "confirmed", wantConfident: 0.75},
		{name: "same reporter repeats confirm",
			steps:       []step{{"o/a", "confirm", event.Counted}, {"o/a", "confirm", event.Unchanged}},
			wantConfirm: 1, wantStatus: "active", wantExtended: 1, wantVerif: "confirmed", wantConfident: 0.75},
		{name: "same reporter repeats deny",
			steps:    []step{{"o/a", "deny", event.Counted}, {"o/a", "deny", event.Unchanged}},
			wantDeny: 1, wantStatus: "active", wantVerif: "disputed", wantConfident: 0.5},
		{name: "reporter changes its mind: latest wins",
			steps:    []step{{"o/a", "confirm", event.Counted}, {"o/a", "deny", event.Counted}},
			wantDeny: 1, wantStatus: "active", wantExtended: 1, wantVerif: "disputed", wantConfident: 0.5},
		{name: "second confirmation of a reporter does not extend",
			steps:       []step{{"o/a", "confirm", event.Counted}, {"o/a", "deny", event.Counted}, {"o/a", "confirm", event.Counted}},
			wantConfirm: 1, wantStatus: "active", wantExtended: 1, wantVerif: "confirmed", wantConfident: 0.75},
		{name: "a denier's first confirmation extends",
			steps:       []step{{"o/a", "deny", event.Counted}, {"o/a", "confirm", event.Counted}},
			wantConfirm: 1, wantStatus: "active", wantExtended: 1, wantVerif: "confirmed", wantConfident: 0.75},
		{name: "two denials are no quorum",
			steps:    []step{{"o/a", "deny", event.Counted}, {"o/b", "deny", event.Counted}},
			wantDeny: 2, wantStatus: "active", wantVerif: "disputed", wantConfident: 0.4},
		{name: "three denials end it",
			steps:    []step{{"o/a", "deny", event.Counted}, {"o/b", "deny", event.Counted}, {"o/c", "deny", event.Ended}},
			wantDeny: 3, wantStatus: "expired", wantVerif: "disputed", wantConfident: 0.333},
		{name: "three denials against two confirmations end it",
			steps: []step{{"o/a", "confirm", event.Counted}, {"o/b", "confirm", event.Counted},
				{"o/c", "deny", event.Counted}, {"o/d", "deny", event.Counted}, {"o/e", "deny", event.Ended}},
			wantConfirm: 2, wantDeny: 3, wantStatus: "expired", wantExtended: 2, wantVerif: "disputed", wantConfident: 0.5},
		{name: "three denials against three confirmations do not",
			steps: []step{{"o/a", "confirm", event.Counted}, {"o/b", "confirm", event.Counted}, {"o/c", "confirm", event.Counted},
				{"o/d", "deny", event.Counted}, {"o/e", "deny", event.Counted}, {"o/f", "deny", event.Counted}},
			wantConfirm: 3, wantDeny: 3, wantStatus: "active", wantExtended: 3, wantVerif: "disputed", wantConfident: 0.556},
		{name: "a fourth denial then does",
			steps: []step{{"o/a", "confirm", event.Counted}, {"o/b", "confirm", event.Counted}, {"o/c", "confirm", event.Counted},
				{"o/d", "deny", event.Counted}, {"o/e", "deny", event.Counted}, {"o/f", "deny", event.Counted}, {"o/g", "deny", event.Ended}},
			wantConfirm: 3, wantDeny: 4, wantStatus: "expired", wantExtended: 3, wantVerif: "disputed", wantConfident: 0.5},
		{name: "a confirmer switching to deny reaches the quorum",
			steps: []step{{"o/a", "confirm", event.Counted}, {"o/b", "deny", event.Counted}, {"o/c", "deny", event.Counted},
				{"o/a", "deny", event.Ended}},
			wantDeny: 3, wantStatus: "expired", wantExtended: 1, wantVerif: "disputed", wantConfident: 0.333},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			// accident: 2 h TTL; confirmations late in life move expiry by the 15 min rule.
			e := publish(t, "accident", clk.Now())
			clk.Advance(110 * time.Minute)
			v := newVoter()
			extended := 0
			for i, s := range tc.steps {
				clk.Advance(time.Minute)
				before := e
				got := v.signal(t, &e, s.reporter, s.action, clk.Now())
				if got != s.wantOutcome {
					t.Errorf("step %d (%s %s): outcome = %v; want %v", i, s.reporter, s.action, got, s.wantOutcome)
				}
				if got == event.Unchanged && !reflect.DeepEqual(before, e) {
					t.Errorf("step %d: unchanged outcome but the event changed:\n%+v\nto\n%+v", i, before, e)
				}
				if got != event.Unchanged && e.Version != before.Version+1 {
					t.Errorf("step %d: version = %d; want %d", i, e.Version, before.Version+1)
				}
				if e.ExpiresAt.After(before.ExpiresAt) {
					extended++
				}
			}
			pub := e.Public(clk.Now())
			if pub.ConfirmCount != tc.wantConfirm || pub.DenyCount != tc.wantDeny {
				t.Errorf("tallies = %d/%d; want %d/%d", pub.ConfirmCount, pub.DenyCount, tc.wantConfirm, tc.wantDeny)
			}
			if pub.Status != tc.wantStatus {
				t.Errorf("status = %q; want %q", pub.Status, tc.wantStatus)
			}
			if extended != tc.wantExtended {
				t.Errorf("expiry extended %d times; want %d", extended, tc.wantExtended)
			}
			if pub.Verification != tc.wantVerif {
				t.Errorf("verification = %q; want %q", pub.Verification, tc.wantVerif)
			}
			if pub.Confidence != tc.wantConfident {
				t.Errorf("confidence = %v; want %v", pub.Confidence, tc.wantConfident)
			}
			if tc.wantStatus == event.StatusExpired {
				if !e.ExpiresAt.Equal(clk.Now()) {
					t.Errorf("expires_at after quorum = %v; want the moment of the quorum %v", e.ExpiresAt, clk.Now())
				}
				if pub.ExpiresAt != event.FormatTime(clk.Now()) {
					t.Errorf("public expires_at = %q; want %q", pub.ExpiresAt, event.FormatTime(clk.Now()))
				}
			}
		})
	}
}

// TestSignalOverStates checks docs/api.md §3 and §7: signals on an expired, invalidated or
// merged event are refused with 409 (ErrOver), a late denial of a cleared event included,
// and the event is left as it was.
func TestSignalOverStates(t *testing.T) {
	t.Parallel()
	cleared := publish(t, "accident", t0)
	v := newVoter()
	for _, r := range []string{"o/a", "o/b", "o/c"} {
		v.signal(t, &cleared, r, event.ActionDeny, t0.Add(time.Minute))
	}
	invalidated := publish(t, "accident", t0)
	invalidated.Status = event.StatusInvalidated
	merged := publish(t, "accident", t0)
	merged.Status, merged.MergedInto = event.StatusMerged, ptr(event.NewID())
	cases := []struct {
		name   string
		e      event.Event
		action string
		at     time.Time
	}{
		{"expired by time", publish(t, "accident", t0), event.ActionConfirm, t0.Add(2 * time.Hour)},
		{"late denial of a cleared event", cleared, event.ActionDeny, t0.Add(2 * time.Minute)},
		{"confirmation of a cleared event", cleared, event.ActionConfirm, t0.Add(2 * time.Minute)},
		{"invalidated", invalidated, event.ActionConfirm, t0.Add(time.Minute)},
		{"merged", merged, event.ActionDeny, t0.Add(time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := tc.e
			_, _, err := e.Signal("o/late", nil, tc.action, tc.at)
			if !errors.Is(err, event.ErrOver) {
				t.Errorf("Signal() err = %v; want ErrOver", err)
			}
			if !reflect.DeepEqual(e, tc.e) {
				t.Errorf("refused signal changed the event")
			}
		})
	}
}

// TestReporterIdentity checks docs/api.md §4.1 rule 6: the reporter is the reporter_token when
// given, else the organisation as one reporter; tokens of two organisations do not collide.
func TestReporterIdentity(t *testing.T) {
	t.Parallel()
	same := []struct {
		name string
		a, b string
	}{
		{"organisation without token", event.Reporter("org-a", nil), event.Reporter("org-a", nil)},
		{"same token", event.Reporter("org-a", ptr("veh-1")), event.Reporter("org-a", ptr("veh-1"))},
	}
	for _, tc := range same {
		if tc.a != tc.b {
			t.Errorf("%s: %q != %q; want one reporter", tc.name, tc.a, tc.b)
		}
	}
	distinct := []struct {
		name string
		a, b string
	}{
		{"token versus organisation", event.Reporter("org-a", ptr("veh-1")), event.Reporter("org-a", nil)},
		{"same token, other organisation", event.Reporter("org-a", ptr("veh-1")), event.Reporter("org-b", ptr("veh-1"))},
		{"two organisations without token", event.Reporter("org-a", nil), event.Reporter("org-b", nil)},
		{"separator inside an organisation id", event.Reporter("a/b", nil), event.Reporter("a", ptr("b"))},
		{"token spelling the organisation", event.Reporter("org-a", ptr("org-a")), event.Reporter("org-a", nil)},
	}
	for _, tc := range distinct {
		if tc.a == tc.b {
			t.Errorf("%s: both %q; want two reporters", tc.name, tc.a)
		}
	}

	// The whole organisation counts as one reporter: its second tokenless confirmation is a
	// repeat, and it cannot reach the deny quorum alone.
	e := publish(t, "accident", t0)
	v := newVoter()
	org := event.Reporter("org-b", nil)
	if got := v.signal(t, &e, org, event.ActionConfirm, t0.Add(time.Minute)); got != event.Counted {
		t.Errorf("first tokenless confirmation: outcome %v; want counted", got)
	}
	if got := v.signal(t, &e, org, event.ActionConfirm, t0.Add(2*time.Minute)); got != event.Unchanged {
		t.Errorf("second tokenless confirmation: outcome %v; want unchanged", got)
	}
	for i := range 3 {
		v.signal(t, &e, org, event.ActionDeny, t0.Add(time.Duration(3+i)*time.Minute))
	}
	if e.ConfirmCount != 0 || e.DenyCount != 1 || e.Status != event.StatusActive {
		t.Errorf("after one organisation denied three times: tallies %d/%d, status %q; want 0/1, active",
			e.ConfirmCount, e.DenyCount, e.Status)
	}
}

// TestSignalVote checks what is stored for a reporter: its action and time, and not where it
// was (docs/privacy.md §2); and that a vote of another reporter is refused.
func TestSignalVote(t *testing.T) {
	t.Parallel()
	e := publish(t, "accident", t0)
	at := t0.Add(time.Minute)
	in := event.SignalIn{Action: event.ActionConfirm, ReporterToken: ptr("veh-1"), Lat: ptr(48.1374349), Lon: ptr(11.575495)}
	vote, _, err := e.Signal(event.Reporter("org-b", in.ReporterToken), nil, in.Action, at)
	if err != nil {
		t.Fatalf("Signal() = %v", err)
	}
	want := event.Vote{Reporter: "org-b/veh-1", Action: "confirm", Confirmed: true, At: at}
	if !reflect.DeepEqual(vote, want) {
		t.Errorf("vote = %+v; want %+v", vote, want)
	}
	if _, _, err := e.Signal("org-c/", &vote, event.ActionDeny, at); !errors.Is(err, event.ErrVoteMismatch) {
		t.Errorf("Signal with another reporter's vote: err = %v; want ErrVoteMismatch", err)
	}
	if _, _, err := e.Signal("org-b/veh-1", &vote, "upvote", at); !errors.Is(err, event.ErrUnknownAction) {
		t.Errorf("Signal(upvote): err = %v; want ErrUnknownAction", err)
	}
	if (event.SignalIn{Action: "deny", Lat: ptr(1.0)}).Position() != nil {
		t.Errorf("Position() with lat alone = non-nil; want nil")
	}
}

// TestConfidence checks the formula of docs/api.md §10.2, (confirm + 2) / (confirm + deny + 3)
// rounded to 3 decimals, and the verification names.
func TestConfidence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		confirm, deny int
		want          float64
		wantVerif     string
	}{
		{0, 0, 0.667, "unverified"},
		{1, 0, 0.75, "confirmed"},
		{2, 0, 0.8, "confirmed"},
		{10, 0, 0.923, "confirmed"},
		{0, 1, 0.5, "disputed"},
		{0, 2, 0.4, "disputed"},
		{0, 3, 0.333, "disputed"},
		{1, 1, 0.6, "disputed"},
		{2, 1, 0.667, "confirmed"},
		{1, 2, 0.5, "disputed"},
		{3, 3, 0.556, "disputed"},
	}
	for _, tc := range cases {
		if got := event.Confidence(tc.confirm, tc.deny); got != tc.want {
			t.Errorf("Confidence(%d, %d) = %v; want %v", tc.confirm, tc.deny, got, tc.want)
		}
		if got := event.Verification(tc.confirm, tc.deny); got != tc.wantVerif {
			t.Errorf("Verification(%d, %d) = %q; want %q", tc.confirm, tc.deny, got, tc.wantVerif)
		}
	}
}

// TestRevise checks the revision rows of docs/api.md §3 and §10.2: applied not merged,
// expires_at = min(now + TTL, created_at + ceiling) except for wrong_way_vehicle, immutable
// and network-owned fields untouched.
func TestRevise(t *testing.T) {
	t.Parallel()
	line := &event.LineString{Coordinates: [][2]float64{{11.6000001, 48.2000001}, {11.61, 48.21}}}
	cases := []struct {
		name        string
		typ         string
		subtype     string
		reviseAt    time.Duration
		in          event.RevisionIn
		wantExpires time.Duration // after publication
		wantExtent  []geo.Point
	}{
		{name: "accident pushed to a full TTL", typ: "accident", reviseAt: time.Hour,
			in: event.RevisionIn{Lat: 48.2, Lon: 11.6, Severity: ptr("high")}, wantExpires: 3 * time.Hour,
			wantExtent: []geo.Point{{Lat: 48.2, Lon: 11.6}}},
		{name: "accident revised late gets a full TTL", typ: "accident", reviseAt: 110 * time.Minute,
			in: event.RevisionIn{Lat: 48.2, Lon: 11.6}, wantExpires: 110*time.Minute + 2*time.Hour,
			wantExtent: []geo.Point{{Lat: 48.2, Lon: 11.6}}},
		{name: "geometry applied and rounded", typ: "congestion", subtype: "queue", reviseAt: 20 * time.Minute,
			in:          event.RevisionIn{Lat: 48.2, Lon: 11.6, Geometry: line, Subtype: ptr("stationary_traffic")},
			wantExpires: 50 * time.Minute, wantExtent: []geo.Point{{Lat: 48.2, Lon: 11.6}, {Lat: 48.21, Lon: 11.61}}},
		{name: "wrong_way_vehicle not extended", typ: "wrong_way_vehicle", reviseAt: 15 * time.Minute,
			in: event.RevisionIn{Lat: 48.2, Lon: 11.6, Severity: ptr("high")}, wantExpires: 20 * time.Minute,
			wantExtent: []geo.Point{{Lat: 48.2, Lon: 11.6}}},
		{name: "omitted fields cleared", typ: "road_damage", subtype: "pothole", reviseAt: time.Hour,
			in: event.RevisionIn{Lat: 48.13743, Lon: 11.57549}, wantExpires: 13 * time.Hour,
			wantExtent: []geo.Point{{Lat: 48.13743, Lon: 11.57549}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			pub := event.EventIn{Type: tc.typ, Lat: 48.13743, Lon: 11.57549, Severity: ptr("low"),
				Heading: ptr(180), Description: ptr("d"), ClientEventID: ptr("c-1"),
				Geometry: &event.LineString{Coordinates: [][2]float64{{11.57549, 48.13743}, {11.58, 48.14}}}}
			if tc.subtype != "" {
				pub.Subtype = ptr(tc.subtype)
			}
			e := event.New(pub, "org-a", event.EnvironmentLive, event.NewID(), clk.Now())
			v := newVoter()
			v.signal(t, &e, "org-b/", event.ActionConfirm, clk.Now().Add(time.Minute))
			before := e
			clk.Advance(tc.reviseAt)

			previous, err := e.Revise(tc.in, clk.Now())
			if err != nil {
				t.Fatalf("Revise() = %v", err)
			}
			if !slices.Equal(previous, before.Extent()) {
				t.Errorf("previous extent = %v; want %v", previous, before.Extent())
			}
			if got := e.Extent(); !slices.Equal(got, tc.wantExtent) {
				t.Errorf("extent = %v; want %v", got, tc.wantExtent)
			}
			if want := t0.Add(tc.wantExpires); !e.ExpiresAt.Equal(want) {
				t.Errorf("expires_at = %v; want %v", e.ExpiresAt, want)
			}
			if !reflect.DeepEqual(e.Severity, tc.in.Severity) || !reflect.DeepEqual(e.Subtype, tc.in.Subtype) {
				t.Errorf("severity, subtype = %v, %v; want the revision's %v, %v", e.Severity, e.Subtype, tc.in.Severity, tc.in.Subtype)
			}
			if tc.in.Geometry == nil && e.Geometry != nil {
				t.Errorf("geometry = %+v; want nil: an omitted geometry collapses to the point", e.Geometry)
			}
			if e.UpdatedAt == nil || !e.UpdatedAt.Equal(clk.Now()) {
				t.Errorf("updated_at = %v; want %v", e.UpdatedAt, clk.Now())
			}
			if e.Version != before.Version+1 {
				t.Errorf("version = %d; want %d", e.Version, before.Version+1)
			}
			// Not restatable: type, created_at, client_event_id, heading, description; and
			// the network's fields.
			if e.Type != before.Type || !e.CreatedAt.Equal(before.CreatedAt) || *e.ClientEventID != "c-1" ||
				*e.Heading != 180 || *e.Description != "d" || e.ID != before.ID {
				t.Errorf("immutable fields changed: %+v", e)
			}
			if e.ConfirmCount != 1 || e.DenyCount != 0 || e.Status != event.StatusActive {
				t.Errorf("tallies %d/%d, status %q; want 1/0, active", e.ConfirmCount, e.DenyCount, e.Status)
			}
		})
	}
}

// TestReviseRefused checks the revision refusals: 409 for over states (docs/api.md §3) and 422
// value_error for a subtype under the stored type or a geometry not starting at lat/lon
// (docs/api.md §7); a refused revision leaves the event as it was.
func TestReviseRefused(t *testing.T) {
	t.Parallel()
	merged := publish(t, "road_damage", t0)
	merged.Status = event.StatusMerged
	invalidated := publish(t, "road_damage", t0)
	invalidated.Status = event.StatusInvalidated
	cleared := publish(t, "road_damage", t0)
	v := newVoter()
	for _, r := range []string{"o/a", "o/b", "o/c"} {
		v.signal(t, &cleared, r, event.ActionDeny, t0.Add(time.Minute))
	}
	valid := event.RevisionIn{Lat: 1, Lon: 2, Subtype: ptr("sinkhole")}
	cases := []struct {
		name      string
		e         event.Event
		in        event.RevisionIn
		at        time.Time
		wantErr   error
		wantItems []string
	}{
		{name: "expired by time", e: publish(t, "road_damage", t0), in: valid, at: t0.Add(12 * time.Hour), wantErr: event.ErrOver},
		{name: "expired by deny quorum", e: cleared, in: valid, at: t0.Add(2 * time.Minute), wantErr: event.ErrOver},
		{name: "merged", e: merged, in: valid, at: t0.Add(time.Minute), wantErr: event.ErrOver},
		{name: "invalidated", e: invalidated, in: valid, at: t0.Add(time.Minute), wantErr: event.ErrOver},
		{name: "subtype under the stored type", e: publish(t, "road_damage", t0),
			in: event.RevisionIn{Lat: 1, Lon: 2, Subtype: ptr("landslide")}, at: t0.Add(time.Minute),
			wantItems: []string{`value_error@["body","subtype"]`}},
		{name: "geometry not starting at lat/lon", e: publish(t, "road_damage", t0),
			in: event.RevisionIn{Lat: 1, Lon: 2, Geometry: &event.LineString{Coordinates: [][2]float64{{1, 2}, {1.1, 2.1}}}},
			at: t0.Add(time.Minute), wantItems: []string{`value_error@["body","geometry"]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := tc.e
			_, err := e.Revise(tc.in, tc.at)
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Revise() err = %v; want %v", err, tc.wantErr)
			}
			if tc.wantItems != nil {
				var errs schema.Errors
				if !errors.As(err, &errs) {
					t.Fatalf("Revise() err = %v; want schema.Errors", err)
				}
				if got := brief(errs); !slices.Equal(got, tc.wantItems) {
					t.Errorf("Revise() errors = %q; want %q", got, tc.wantItems)
				}
			}
			if !reflect.DeepEqual(e, tc.e) {
				t.Errorf("refused revision changed the event")
			}
		})
	}
}

// TestReviseCappedAtCeiling checks the cap on a revision (docs/api.md §10.2): an accident kept
// alive by confirmations and revised 11 h 30 min after publication expires at created_at + 12 h,
// not a full 2 h TTL later.
func TestReviseCappedAtCeiling(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	e := publish(t, "accident", clk.Now())
	v := newVoter()
	for i := 0; clk.Now().Before(t0.Add(11*time.Hour + 30*time.Minute)); i++ {
		clk.Advance(10 * time.Minute)
		v.signal(t, &e, fmt.Sprintf("org-b/veh-%d", i), event.ActionConfirm, clk.Now())
	}
	if _, err := e.Revise(event.RevisionIn{Lat: 1, Lon: 2}, clk.Now()); err != nil {
		t.Fatalf("Revise() at %v = %v", clk.Now(), err)
	}
	if want := t0.Add(12 * time.Hour); !e.ExpiresAt.Equal(want) {
		t.Errorf("expires_at = %v; want the ceiling %v", e.ExpiresAt, want)
	}
}
