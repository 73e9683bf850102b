package consoleusage_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.4: a dense daily series, every UTC day of the window present, zeros included,
// oldest first, with totals; here across a month boundary on the injected clock, live traffic only
// by default.
func TestUsageAcrossMonthBoundary(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		tab.Clock.Set(time.Date(2040, 1, 30, 23, 59, 0, 0, time.UTC))
		r.count(t, "live", metering.Reads, 3)
		r.count(t, "live", metering.Signals, 1)
		r.count(t, "sandbox", metering.Reads, 50) // another environment: not in the live series
		tab.Clock.Advance(2 * time.Minute)        // 2040-01-31 00:01
		r.count(t, "live", metering.Publishes, 2)
		tab.Clock.Set(time.Date(2040, 2, 2, 8, 0, 0, 0, time.UTC))
		r.count(t, "live", metering.Reads, 4)
		r.count(t, "live", metering.StreamConnects, 1)
		r.count(t, "live", metering.Tickets, 1)

		var s consoleusage.Series
		if got := r.get(t, tokenMember, "/console/orgs/"+orgA+"/usage?window=7d", &s); got != http.StatusOK {
			t.Fatalf("GET usage as a member = %d; want 200 (any member reads usage)", got)
		}
		if s.OrgID != orgA || s.Environment != "live" || s.Window != "7d" || s.Start != "2040-01-27" || s.End != "2040-02-02" {
			t.Errorf("series header = %s %s %s %s..%s; want %s live 7d 2040-01-27..2040-02-02", s.OrgID, s.Environment, s.Window, s.Start, s.End, orgA)
		}
		want := map[string]consoleusage.Totals{
			"2040-01-30": {Reads: 3, Signals: 1},
			"2040-01-31": {Publishes: 2},
			"2040-02-02": {Reads: 4, StreamConnects: 1, Tickets: 1},
		}
		wantDates := []string{"2040-01-27", "2040-01-28", "2040-01-29", "2040-01-30", "2040-01-31", "2040-02-01", "2040-02-02"}
		if len(s.Days) != len(wantDates) {
			t.Fatalf("%d days; want %d: %+v", len(s.Days), len(wantDates), s.Days)
		}
		for i, d := range s.Days {
			if d.Date != wantDates[i] || d.Totals != want[d.Date] {
				t.Errorf("day %d = %s %+v; want %s %+v", i, d.Date, d.Totals, wantDates[i], want[wantDates[i]])
			}
		}
		if wantTotals := (consoleusage.Totals{Reads: 7, Publishes: 2, Signals: 1, StreamConnects: 1, Tickets: 1}); s.Totals != wantTotals {
			t.Errorf("totals = %+v; want %+v", s.Totals, wantTotals)
		}

		var sb consoleusage.Series
		r.get(t, tokenOwner, "/console/orgs/"+orgA+"/usage?window=7d&environment=sandbox", &sb)
		if sb.Environment != "sandbox" || sb.Totals.Reads != 50 {
			t.Errorf("sandbox series = %s with %d reads; want sandbox with 50", sb.Environment, sb.Totals.Reads)
		}
	})
}

// A new organisation gets the whole default window (30 days ending today) of zeros; 90d holds
// 90 days.
func TestUsageNewOrganisation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		tab.Clock.Set(time.Date(2040, 3, 1, 0, 0, 0, 0, time.UTC))
		for _, tc := range []struct {
			query, window, start string
			days                 int
		}{
			{"", "30d", "2040-02-01", 30}, // 2040 is a leap year
			{"?window=90d", "90d", "2039-12-03", 90},
		} {
			var s consoleusage.Series
			if got := r.get(t, tokenOwner, "/console/orgs/"+orgA+"/usage"+tc.query, &s); got != http.StatusOK {
				t.Fatalf("GET usage%s = %d; want 200", tc.query, got)
			}
			if s.Window != tc.window || s.Environment != "live" || len(s.Days) != tc.days || s.Start != tc.start || s.End != "2040-03-01" {
				t.Errorf("GET usage%s = %s %s, %d days %s..%s; want %s live, %d days %s..2040-03-01",
					tc.query, s.Window, s.Environment, len(s.Days), s.Start, s.End, tc.window, tc.days, tc.start)
			}
			if len(s.Days) > 0 && (s.Days[0].Date != tc.start || s.Days[len(s.Days)-1].Date != "2040-03-01") {
				t.Errorf("days run %s..%s; want %s..2040-03-01, oldest first", s.Days[0].Date, s.Days[len(s.Days)-1].Date, tc.start)
			}
			for _, d := range s.Days {
				if d.Totals != (consoleusage.Totals{}) {
					t.Errorf("day %s = %+v; want zeros", d.Date, d.Totals)
				}
			}
			if s.Totals != (consoleusage.Totals{}) {
				t.Errorf("totals = %+v; want zeros", s.Totals)
			}
		}
	})
}

// docs/api.md §4.3 and §7: a caller without membership gets 404 (never 403); no session is 401;
// docs/api.md §8: a window other than 7d, 30d, 90d and an unknown environment are 422.
func TestUsageAndVitalityStatuses(t *testing.T) {
	t.Parallel()
	newRig(t, tables.Embedded(t)).client(t).Run(t, []apitest.Scenario{
		{Name: "usage without a session", Method: "GET", Path: "/console/orgs/org_a/usage", WantStatus: http.StatusUnauthorized},
		{Name: "usage of a stranger's organisation", Token: tokenOutsider, Method: "GET", Path: "/console/orgs/org_a/usage", WantStatus: http.StatusNotFound},
		{Name: "usage of no such organisation", Token: tokenOwner, Method: "GET", Path: "/console/orgs/org_none/usage", WantStatus: http.StatusNotFound},
		{Name: "usage window 14d", Token: tokenOwner, Method: "GET", Path: "/console/orgs/org_a/usage?window=14d", WantStatus: http.StatusUnprocessableEntity},
		{Name: "usage environment prod", Token: tokenOwner, Method: "GET", Path: "/console/orgs/org_a/usage?environment=prod", WantStatus: http.StatusUnprocessableEntity},
		{Name: "usage 7d sandbox", Token: tokenMember, Method: "GET", Path: "/console/orgs/org_a/usage?window=7d&environment=sandbox", WantStatus: http.StatusOK},
		{Name: "vitality without a session", Method: "GET", Path: "/console/orgs/org_a/vitality", WantStatus: http.StatusUnauthorized},
		{Name: "vitality of a stranger's organisation", Token: tokenOutsider, Method: "GET", Path: "/console/orgs/org_a/vitality", WantStatus: http.StatusNotFound},
		{Name: "vitality environment prod", Token: tokenMember, Method: "GET", Path: "/console/orgs/org_a/vitality?environment=prod", WantStatus: http.StatusUnprocessableEntity},
		{Name: "vitality as a member", Token: tokenMember, Method: "GET", Path: "/console/orgs/org_a/vitality", WantStatus: http.StatusOK},
	})
}

// docs/api.md §4.4: vitality derives from last_used_at per key and today's counters; an
// organisation that never called the service holds nulls and has_traffic false.
func TestVitality(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		ctx := context.Background()
		issue := func(env, label string) (string, apikey.Key) {
			raw, k, err := r.keys.Issue(ctx, apikey.IssueRequest{OrgID: orgA, Environment: env, Label: label})
			if err != nil {
				t.Fatal(err)
			}
			return raw, k
		}
		rawA, keyA := issue("live", "fleet A")
		rawB, keyB := issue("live", "fleet B")
		issue("sandbox", "tests")

		var v consoleusage.Vitality
		r.get(t, tokenMember, "/console/orgs/"+orgA+"/vitality", &v)
		if v.HasTraffic || v.LastUsedAt != nil || v.LastUsedKeyID != nil || v.Today != (consoleusage.Totals{}) || v.Environment != "live" {
			t.Errorf("vitality before any call = %+v; want has_traffic false, nulls, zeros, live", v)
		}
		if len(v.Keys) != 2 || v.Keys[0].LastUsedAt != nil || v.Keys[1].LastUsedAt != nil {
			t.Errorf("keys before any call = %+v; want the 2 live keys, never used", v.Keys)
		}

		use := func(raw string) time.Time {
			if _, err := r.keys.Authenticate(ctx, raw); err != nil {
				t.Fatal(err)
			}
			if err := r.keys.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			return tab.Clock.Now()
		}
		usedA := use(rawA)
		tab.Clock.Advance(time.Hour)
		usedB := use(rawB)
		r.count(t, "live", metering.Reads, 2)
		if _, err := r.keys.Revoke(ctx, orgA, keyB.KeyID, nil); err != nil {
			t.Fatal(err)
		}

		v = consoleusage.Vitality{}
		r.get(t, tokenMember, "/console/orgs/"+orgA+"/vitality", &v)
		if !v.HasTraffic || v.LastUsedAt == nil || !v.LastUsedAt.Equal(usedB) || v.LastUsedKeyID == nil || *v.LastUsedKeyID != keyB.KeyID {
			t.Errorf("vitality after calls = has_traffic %v, last_used_at %v by %v; want true, %v by %s (a revoked key's use still counts)",
				v.HasTraffic, v.LastUsedAt, v.LastUsedKeyID, usedB, keyB.KeyID)
		}
		if v.Today != (consoleusage.Totals{Reads: 2}) {
			t.Errorf("today = %+v; want 2 reads", v.Today)
		}
		if len(v.Keys) != 1 || v.Keys[0].KeyID != keyA.KeyID || v.Keys[0].Label != "fleet A" || v.Keys[0].LastUsedAt == nil || !v.Keys[0].LastUsedAt.Equal(usedA) {
			t.Errorf("keys = %+v; want only fleet A (unrevoked), used at %v", v.Keys, usedA)
		}

		var sb consoleusage.Vitality
		r.get(t, tokenMember, "/console/orgs/"+orgA+"/vitality?environment=sandbox", &sb)
		if sb.Environment != "sandbox" || sb.HasTraffic || len(sb.Keys) != 1 {
			t.Errorf("sandbox vitality = %+v; want sandbox, no traffic, 1 key", sb)
		}

		// The next day, today's counters start again from zero; the last use stays.
		tab.Clock.Advance(24 * time.Hour)
		v = consoleusage.Vitality{}
		r.get(t, tokenMember, "/console/orgs/"+orgA+"/vitality", &v)
		if v.Today != (consoleusage.Totals{}) || !v.HasTraffic {
			t.Errorf("vitality a day later = today %+v, has_traffic %v; want zeros, true", v.Today, v.HasTraffic)
		}
	})
}
