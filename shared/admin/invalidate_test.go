package admin_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/admin"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/verdict"
)

var idKey = bytes.Repeat([]byte{7}, eventstore.MinIDKeyBytes)

// openEvents opens the embedded store of dir as the server would, with the events store on
// it at clk; the store is closed by the returned function.
func openEvents(t *testing.T, dir string, clk clock.Clock) (*eventstore.Store, *audit.Log, func()) {
	t.Helper()
	st, err := embedded.Open(filepath.Join(dir, config.EmbeddedStoreFile), embedded.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	evs, err := eventstore.New(st, eventstore.Options{IDKey: idKey, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return evs, audit.New(st, audit.Options{}), func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	}
}

// invalidate runs `roadevents invalidate args` and returns its exit code, stdout and stderr.
func invalidate(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cfg := embeddedConfig(t)
	cfg.DataDir = dir
	var stdout, stderr bytes.Buffer
	code := admin.Invalidate(t.Context(), cfg, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// docs/network.md §2, operator verdict: `roadevents invalidate` invalidates the active events
// of one organisation in one environment, those created at or after -since when given; other
// organisations' and the other environment's stay active. It prints the count, and the
// organisation's audit log records it with actor "operator".
func TestInvalidateEndsOneOrganisationsEvents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Published two hours and one hour ago (the command runs on the wall clock); roadworks
	// last four hours.
	start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	clk := clock.NewFake(start)
	evs, _, closeStore := openEvents(t, dir, clk)
	ctx := context.Background()
	publish := func(org, env string, lat float64) string {
		t.Helper()
		ev, _, err := evs.Publish(ctx, eventstore.Caller{Org: org, Environment: env}, event.EventIn{Type: "roadworks", Lat: lat, Lon: 2.35})
		if err != nil {
			t.Fatalf("Publish = %v", err)
		}
		return ev.ID
	}
	older := publish("org_a", event.EnvironmentLive, 48.80)
	clk.Advance(time.Hour)
	newer := publish("org_a", event.EnvironmentLive, 48.90)
	sandbox := publish("org_a", event.EnvironmentSandbox, 48.80)
	other := publish("org_b", event.EnvironmentLive, 48.70) // far enough not to merge
	closeStore()

	since := start.Add(30 * time.Minute).Format(time.RFC3339)
	code, stdout, stderr := invalidate(t, dir, "-org", "org_a", "-env", "live", "-since", since, "-reason", "key leaked, spam")
	if code != admin.ExitOK || stdout != "1\n" {
		t.Fatalf("invalidate -since = %d, stdout %q (stderr %q); want 0, \"1\\n\"", code, stdout, stderr)
	}
	code, stdout, _ = invalidate(t, dir, "-org", "org_a", "-env", "live", "-reason", "key leaked, spam")
	if code != admin.ExitOK || stdout != "1\n" {
		t.Errorf("invalidate without -since = %d, stdout %q; want 0, \"1\\n\" (the older event)", code, stdout)
	}

	evs, log, closeStore := openEvents(t, dir, clock.System)
	defer closeStore()
	for id, want := range map[string]string{older: event.StatusInvalidated, newer: event.StatusInvalidated, sandbox: event.StatusActive, other: event.StatusActive} {
		ev, err := evs.Get(ctx, eventstore.Caller{Org: "org_x", Environment: event.EnvironmentSandbox}, id)
		if err != nil || ev.Status != want {
			t.Errorf("event %s (%s %s) = %s, %v; want %s", id, ev.Org, ev.Environment, ev.Status, err, want)
		}
	}
	entries, err := log.List(ctx, "org_a", 10)
	if err != nil || len(entries) != 2 {
		t.Fatalf("audit of org_a = %+v, %v; want 2 entries", entries, err)
	}
	e := entries[1]
	if e.Action != verdict.ActionEventsInvalidated || e.ActorUserID == nil || *e.ActorUserID != verdict.ActorOperator ||
		e.Detail["since"] != since || e.Detail["count"] != 1.0 || e.Detail["reason"] != "key leaked, spam" || e.Detail["environment"] != "live" {
		t.Errorf("first audit entry = %+v; want events.invalidated by operator, since %s, count 1", e, since)
	}
}

// docs/network.md §2, operator verdict: -org, -env (live or sandbox, no default) and -reason
// are required, -since is an RFC 3339 time not in the future; a bad command line exits 2 with a
// message naming the flag and prints nothing on stdout.
func TestInvalidateRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"nothing", nil, "-org is required"},
		{"no environment", []string{"-org", "org_1", "-reason", "x"}, "-env is required"},
		{"bad environment", []string{"-org", "org_1", "-env", "prod", "-reason", "x"}, `environment "prod"`},
		{"no reason", []string{"-org", "org_1", "-env", "live"}, "-reason is required"},
		{"reason too long", []string{"-org", "org_1", "-env", "live", "-reason", strings.Repeat("x", verdict.MaxReasonLen+1)}, "at most 300"},
		{"since not a time", []string{"-org", "org_1", "-env", "live", "-reason", "x", "-since", "yesterday"}, `-since "yesterday"`},
		{"since without zone", []string{"-org", "org_1", "-env", "live", "-reason", "x", "-since", "2026-11-24T08:00:00"}, "RFC 3339"},
		{"since in the future", []string{"-org", "org_1", "-env", "live", "-reason", "x", "-since", future}, "in the future"},
		{"stray argument", []string{"-org", "org_1", "-env", "live", "-reason", "x", "extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"-org", "org_1", "-env", "live", "-reason", "x", "-until", "now"}, "-until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invalidate(t, t.TempDir(), tt.args...)
			if code != admin.ExitUsage {
				t.Errorf("invalidate %q = %d; want %d", tt.args, code, admin.ExitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout = %q; want nothing", stdout)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr = %q; want it to contain %q", stderr, tt.want)
			}
		})
	}
}

// Like apikey issue, the command refuses a data folder the running server holds.
func TestInvalidateRefusesStoreHeldByServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, closeStore := openEvents(t, dir, clock.System)
	defer closeStore()
	code, stdout, stderr := invalidate(t, dir, "-org", "org_1", "-env", "live", "-reason", "x")
	if code != admin.ExitError || stdout != "" || !strings.Contains(stderr, "server running") {
		t.Errorf("invalidate with the store held = %d, stdout %q, stderr %q; want %d and a message naming the running server", code, stdout, stderr, admin.ExitError)
	}
}
