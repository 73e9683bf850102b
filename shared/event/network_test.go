package event

import (
	"errors"
	"testing"
	"time"
)

// docs/network.md §1: two reports may be one hazard when they share environment and type, come
// from two sources, and their subtypes and headings are compatible (either absent, or equal
// subtypes and headings at most 45° apart, across north too).
func TestSameHazard(t *testing.T) {
	str := func(s string) *string { return &s }
	deg := func(d int) *int { return &d }
	report := func(org string, edit func(*Event)) Event {
		e := Event{Org: org, Environment: EnvironmentLive, SourceKind: SourcePublisher, Type: "accident"}
		if edit != nil {
			edit(&e)
		}
		return e
	}
	cases := []struct {
		name string
		a, b Event
		want bool
	}{
		{"another organisation", report("org_a", nil), report("org_b", nil), true},
		{"same organisation", report("org_a", nil), report("org_a", nil), false},
		{"a feed beside the organisation of its name", report("org_a", nil),
			report("org_a", func(e *Event) { e.SourceKind, e.FeedID = SourceFeed, str("org_a") }), true},
		{"other environment", report("org_a", nil), report("org_b", func(e *Event) { e.Environment = EnvironmentSandbox }), false},
		{"other type", report("org_a", nil), report("org_b", func(e *Event) { e.Type = "stopped_vehicle" }), false},
		{"a subtype beside none", report("org_a", nil), report("org_b", func(e *Event) { e.Subtype = str("collision") }), true},
		{"two subtypes", report("org_a", func(e *Event) { e.Subtype = str("collision") }),
			report("org_b", func(e *Event) { e.Subtype = str("vehicle_fire") }), false},
		{"a heading beside none", report("org_a", nil), report("org_b", func(e *Event) { e.Heading = deg(90) }), true},
		{"headings 45° apart", report("org_a", func(e *Event) { e.Heading = deg(90) }),
			report("org_b", func(e *Event) { e.Heading = deg(135) }), true},
		{"headings 46° apart", report("org_a", func(e *Event) { e.Heading = deg(90) }),
			report("org_b", func(e *Event) { e.Heading = deg(136) }), false},
		{"headings 35° apart across north", report("org_a", func(e *Event) { e.Heading = deg(10) }),
			report("org_b", func(e *Event) { e.Heading = deg(335) }), true},
		{"opposite headings", report("org_a", func(e *Event) { e.Heading = deg(0) }),
			report("org_b", func(e *Event) { e.Heading = deg(180) }), false},
	}
	for _, c := range cases {
		if got := c.a.SameHazard(c.b); got != c.want {
			t.Errorf("%s: SameHazard = %v; want %v", c.name, got, c.want)
		}
		if got := c.b.SameHazard(c.a); got != c.want {
			t.Errorf("%s, the other way: SameHazard = %v; want %v", c.name, got, c.want)
		}
	}
}

// docs/network.md §1 and §3, docs/api.md §3: merging, closing and invalidating end an active event
// at that moment, each with its status; an event over already refuses with ErrOver. A report merged
// as it is published keeps version 1 (the stream sees it born over).
func TestEndings(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	fresh := func() Event {
		return New(EventIn{Type: "accident", Lat: 48, Lon: 11}, "org_a", EnvironmentLive, "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", now)
	}
	e := fresh()
	if err := e.MergeInto("ev_bbbbbbbbbbbbbbbbbbbbbbbbbb", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if e.Status != StatusMerged || *e.MergedInto != "ev_bbbbbbbbbbbbbbbbbbbbbbbbbb" || !e.ExpiresAt.Equal(now.Add(time.Second)) || e.Version != 1 {
		t.Errorf("merged = %s into %v, expires %v, version %d; want merged, expiring then, version 1", e.Status, e.MergedInto, e.ExpiresAt, e.Version)
	}
	for name, end := range map[string]func(*Event, time.Time) error{
		StatusExpired: (*Event).Close, StatusInvalidated: (*Event).Invalidate,
	} {
		e := fresh()
		if err := end(&e, now.Add(time.Minute)); err != nil || e.Status != name || !e.ExpiresAt.Equal(now.Add(time.Minute)) || e.Version != 2 {
			t.Errorf("%s: err %v, status %s, expires %v, version %d", name, err, e.Status, e.ExpiresAt, e.Version)
		}
		if err := end(&e, now.Add(2*time.Minute)); !errors.Is(err, ErrOver) {
			t.Errorf("%s twice: err = %v; want ErrOver", name, err)
		}
		late := fresh()
		if err := end(&late, now.Add(3*time.Hour)); !errors.Is(err, ErrOver) {
			t.Errorf("%s after natural expiry: err = %v; want ErrOver", name, err)
		}
	}
}
