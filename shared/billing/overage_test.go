package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// The overage tests' deployment: team includes 2 500 reads and has a metered price; business
// has none (no overage on it).
const (
	priceTeamReads = "price_team_reads_test"
	includedTeam   = 2500
	meteredItem    = "si_reads"
)

func overagePlans() *plans.Catalogue {
	b := config.DefaultBilling
	b.Team.PriceID, b.Team.MeteredPriceID, b.Team.IncludedReads = priceTeam, priceTeamReads, includedTeam
	b.Business.PriceID = priceBusiness
	return plans.New(b)
}

// usageRecorder is a Provider that keeps the usage records it is sent; failNext makes the
// next calls fail as Stripe being unreachable would.
type usageRecorder struct {
	refusingProvider
	mu       sync.Mutex
	records  []billing.UsageRecord
	attempts []billing.UsageRecord
	failNext int
}

func (p *usageRecorder) ReportUsage(_ context.Context, rec billing.UsageRecord) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts = append(p.attempts, rec)
	if p.failNext > 0 {
		p.failNext--
		return errors.New("usageRecorder: connection reset")
	}
	p.records = append(p.records, rec)
	return nil
}

func (p *usageRecorder) sent() []billing.UsageRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]billing.UsageRecord(nil), p.records...)
}

// overageRig is a rig with the overage catalogue and a usageRecorder, its clock set to now.
type overageRig struct {
	*rig
	tab tables.Table
	p   *usageRecorder
}

func newOverageRig(t *testing.T, tab tables.Table, now time.Time) *overageRig {
	t.Helper()
	tab.Clock.Set(now)
	p := &usageRecorder{}
	r := newRig(t, tab, rigOptions{provider: p, plans: overagePlans()})
	r.fake.plan["org_b"], r.fake.plan["org_c"] = plans.Free, plans.Free
	return &overageRig{rig: r, tab: tab, p: p}
}

// subscribe applies a customer.subscription event of org with the given status and items
// (price id -> item id), as the webhook would.
func (o *overageRig) subscribe(t *testing.T, org, eventID, status string, items map[string]string) {
	t.Helper()
	var data []any
	for price, id := range items {
		data = append(data, map[string]any{"id": id, "price": map[string]any{"id": price}})
	}
	obj, err := json.Marshal(map[string]any{
		"id": "sub_" + org, "customer": "cus_" + org, "status": status,
		"metadata": map[string]string{"org_id": org, "plan_id": plans.Team},
		"items":    map[string]any{"data": data},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = o.svc.HandleEvent(context.Background(), billing.Event{
		ID: eventID, Type: billing.EventSubscriptionUpdated, Created: o.tab.Clock.Now().Unix(), Object: obj,
	})
	if err != nil {
		t.Fatalf("HandleEvent(%s) = %v", eventID, err)
	}
}

// read counts n live reads of org today and flushes them.
func (o *overageRig) read(t *testing.T, org string, n int) {
	t.Helper()
	for range n {
		o.meter.Count(context.Background(), org, "live", metering.Reads)
	}
	if err := o.meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// run is one pass of the job at the clock's time.
func (o *overageRig) run(t *testing.T) error {
	t.Helper()
	return o.svc.ReportOverage(context.Background())
}

// mustRun runs the job once and fails the test if it fails.
func (o *overageRig) mustRun(t *testing.T) {
	t.Helper()
	if err := o.run(t); err != nil {
		t.Fatal(err)
	}
}

// wantRecords compares the records sent with want.
func wantRecords(t *testing.T, step string, got []billing.UsageRecord, want ...billing.UsageRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d usage records sent %+v; want %d %+v", step, len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.SubscriptionItemID != w.SubscriptionItemID || g.Quantity != w.Quantity ||
			!g.Timestamp.Equal(w.Timestamp) || g.IdempotencyKey != w.IdempotencyKey {
			t.Errorf("%s: record %d = %+v; want %+v", step, i, g, w)
		}
	}
}

func record(qty int64, at time.Time, period string) billing.UsageRecord {
	return billing.UsageRecord{
		SubscriptionItemID: meteredItem, Quantity: qty, Timestamp: at,
		IdempotencyKey: meteredItem + "-" + period + "-" + strconv.FormatInt(qty, 10),
	}
}

// docs/console.md §3: under the included reads nothing is sent; beyond
// them the units of 1 000 (rounded up) are set; an unchanged total is not sent again.
func TestOverageReportsUnitsBeyondIncluded(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		day := time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC)
		o := newOverageRig(t, tab, day)
		o.subscribe(t, orgA, "evt_1", "active", map[string]string{priceTeam: "si_flat", priceTeamReads: meteredItem})
		if st := o.state(t, orgA); st.MeteredItemID != meteredItem {
			t.Fatalf("stored metered item = %q; want %q (the item at the metered price)", st.MeteredItemID, meteredItem)
		}
		var want []billing.UsageRecord
		for _, step := range []struct {
			name  string
			reads int // more live reads before the run
			sent  int64
		}{
			{"under included", includedTeam, -1},
			{"just over: one unit", 1, 1},
			{"unchanged total", 0, -1},
			{"more reads within the same unit", 999, -1},
			{"next unit", 1, 2},
			{"far over", 10_000, 12},
		} {
			o.read(t, orgA, step.reads)
			if err := o.run(t); err != nil {
				t.Fatalf("%s: ReportOverage = %v", step.name, err)
			}
			if step.sent >= 0 {
				want = append(want, record(step.sent, tab.Clock.Now(), "2040-03"))
			}
			wantRecords(t, step.name, o.p.sent(), want...)
			tab.Clock.Advance(billing.ReportInterval)
		}
		// Reads of the sandbox do not count (the billing summary's live traffic only).
		for range 5000 {
			o.meter.Count(context.Background(), orgA, "sandbox", metering.Reads)
		}
		if err := o.meter.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		o.mustRun(t)
		wantRecords(t, "after sandbox reads", o.p.sent(), want...)
	})
}

// Right after a month ends, the first run reports the closed month's final total (the
// counts flushed since its last hourly run) once, timestamped in that month; later runs do
// not report it again, and the new month starts from nothing.
func TestOverageReportsTheClosedMonthOnce(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		o := newOverageRig(t, tab, time.Date(2040, 3, 31, 23, 10, 0, 0, time.UTC))
		o.subscribe(t, orgA, "evt_1", "active", map[string]string{priceTeam: "si_flat", priceTeamReads: meteredItem})
		o.read(t, orgA, includedTeam+1500)
		o.mustRun(t)
		lastHourly := record(2, tab.Clock.Now(), "2040-03")
		// Reads in March's last minutes, flushed after its last hourly run.
		tab.Clock.Set(time.Date(2040, 3, 31, 23, 59, 0, 0, time.UTC))
		o.read(t, orgA, 1000)

		tab.Clock.Set(time.Date(2040, 4, 1, 0, 10, 0, 0, time.UTC))
		o.mustRun(t)
		final := record(3, time.Date(2040, 3, 31, 23, 59, 59, 0, time.UTC), "2040-03")
		wantRecords(t, "first run of April", o.p.sent(), lastHourly, final)

		for i := range 3 {
			tab.Clock.Advance(billing.ReportInterval)
			o.mustRun(t)
			wantRecords(t, fmt.Sprintf("April run %d", i+2), o.p.sent(), lastHourly, final)
		}
		// April's own overage starts from its own reads.
		o.read(t, orgA, includedTeam+1)
		o.mustRun(t)
		wantRecords(t, "April over", o.p.sent(), lastHourly, final, record(1, tab.Clock.Now(), "2040-04"))
	})
}

// A closed month whose total did not move after its last hourly run is not sent again.
func TestOverageClosedMonthUnchangedNotResent(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		o := newOverageRig(t, tab, time.Date(2040, 3, 31, 23, 10, 0, 0, time.UTC))
		o.subscribe(t, orgA, "evt_1", "active", map[string]string{priceTeam: "si_flat", priceTeamReads: meteredItem})
		o.read(t, orgA, includedTeam+1500)
		o.mustRun(t)
		lastHourly := record(2, tab.Clock.Now(), "2040-03")
		for _, at := range []time.Time{time.Date(2040, 4, 1, 0, 10, 0, 0, time.UTC), time.Date(2040, 4, 1, 1, 10, 0, 0, time.UTC)} {
			tab.Clock.Set(at)
			o.mustRun(t)
			wantRecords(t, "run at "+at.Format(time.RFC3339), o.p.sent(), lastHourly)
		}
	})
}

// A failed send is retried by the next run with the same value, the same Idempotency-Key
// and the same timestamp (Stripe refuses a reused key with other parameters), and once it
// went through it is not sent again.
func TestOverageRetryResendsTheSameRecord(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		o := newOverageRig(t, tab, time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC))
		o.subscribe(t, orgA, "evt_1", "active", map[string]string{priceTeam: "si_flat", priceTeamReads: meteredItem})
		o.read(t, orgA, includedTeam+2000)
		first := tab.Clock.Now()
		o.p.failNext = 1
		if err := o.run(t); err == nil {
			t.Fatal("ReportOverage with Stripe failing = nil; want the error")
		}
		tab.Clock.Advance(billing.ReportInterval)
		o.mustRun(t)
		want := record(2, first, "2040-03")
		wantRecords(t, "attempts", o.p.attempts, want, want)
		wantRecords(t, "sent", o.p.sent(), want)
		tab.Clock.Advance(billing.ReportInterval)
		o.mustRun(t)
		wantRecords(t, "after the retry", o.p.sent(), want)
	})
}

// Organisations without an active subscription, or whose subscription has no metered item,
// are skipped; one organisation's failure does not stop the others.
func TestOverageSkipsOrganisationsWithoutAMeteredSubscription(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		o := newOverageRig(t, tab, time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC))
		// orgA: subscribed without the metered price (checkout before it was configured).
		o.subscribe(t, orgA, "evt_a", "active", map[string]string{priceTeam: "si_flat_a"})
		// org_b: subscribed with it, then cancelled.
		o.subscribe(t, "org_b", "evt_b1", "active", map[string]string{priceTeam: "si_flat_b", priceTeamReads: "si_reads_b"})
		tab.Clock.Advance(time.Minute)
		o.subscribe(t, "org_b", "evt_b2", "canceled", map[string]string{priceTeam: "si_flat_b", priceTeamReads: "si_reads_b"})
		// org_c: no subscription at all. All three far over the included reads.
		for _, org := range []string{orgA, "org_b", "org_c"} {
			o.read(t, org, includedTeam+5000)
		}
		o.mustRun(t)
		wantRecords(t, "no metered subscription", o.p.sent())
		if n := len(o.p.attempts); n != 0 {
			t.Errorf("%d sends attempted; want 0", n)
		}
	})
}

// Against stripe-mock: checkout sells the metered price as a second line item without a
// quantity, and anchors the subscription's periods on the first of next month (UTC).
func TestCheckoutAddsTheMeteredPriceOnStripeMock(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		rec := &recorder{}
		tab.Clock.Set(time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC))
		r := newRig(t, tab, rigOptions{provider: stripeMock(t, rec), plans: overagePlans()})
		for _, plan := range []string{plans.Team, plans.Business} {
			if status, body := r.do(t, http.MethodPost, "/console/orgs/"+orgA+"/billing/checkout", tokenOwner, `{"plan":"`+plan+`"}`); status != http.StatusOK {
				t.Fatalf("checkout %s = %d %s; want 200", plan, status, body)
			}
		}
		sessions := rec.to("/v1/checkout/sessions")
		if len(sessions) != 2 {
			t.Fatalf("%d checkout sessions; want 2", len(sessions))
		}
		team, business := sessions[0].Form, sessions[1].Form
		anchor := strconv.FormatInt(time.Date(2040, 4, 1, 0, 0, 0, 0, time.UTC).Unix(), 10)
		for k, want := range map[string]string{
			"line_items[0][price]":                    priceTeam,
			"line_items[0][quantity]":                 "1",
			"line_items[1][price]":                    priceTeamReads,
			"subscription_data[billing_cycle_anchor]": anchor,
		} {
			if got := team.Get(k); got != want {
				t.Errorf("team checkout sent %s=%q; want %q", k, got, want)
			}
		}
		if team.Has("line_items[1][quantity]") {
			t.Errorf("team checkout sent a quantity for the metered price (%q); want none", team.Get("line_items[1][quantity]"))
		}
		// Business has no metered price here: one line item, no anchor.
		if business.Has("line_items[1][price]") || business.Has("subscription_data[billing_cycle_anchor]") {
			t.Errorf("business checkout sent %v; want one line item and no billing cycle anchor", business)
		}
	})
}

// One call through stripe-go to stripe-mock: the usage record is posted to the subscription
// item with action=set, the quantity, the timestamp and the Idempotency-Key. stripe-mock
// v0.203.0 no longer knows the legacy usage-record endpoint (Stripe removed it from its
// OpenAPI description) and answers 404; the request is what is asserted, and the error must
// reach the caller.
func TestReportUsageRequestOnStripeMock(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	p := stripeMock(t, rec)
	at := time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC)
	err := p.ReportUsage(context.Background(), billing.UsageRecord{
		SubscriptionItemID: meteredItem, Quantity: 7, Timestamp: at, IdempotencyKey: meteredItem + "-2040-03-7",
	})
	calls := rec.to("/v1/subscription_items/" + meteredItem + "/usage_records")
	if len(calls) != 1 {
		t.Fatalf("%d calls to the usage records of %s (all calls: %+v); want 1", len(calls), meteredItem, rec.calls)
	}
	c := calls[0]
	for k, want := range map[string]string{"action": "set", "quantity": "7", "timestamp": strconv.FormatInt(at.Unix(), 10)} {
		if got := c.Form.Get(k); got != want {
			t.Errorf("usage record sent %s=%q; want %q", k, got, want)
		}
	}
	if got := c.Header.Get("Idempotency-Key"); got != meteredItem+"-2040-03-7" {
		t.Errorf("Idempotency-Key = %q; want %q", got, meteredItem+"-2040-03-7")
	}
	if c.Method != http.MethodPost {
		t.Errorf("method = %s; want POST", c.Method)
	}
	if c.Response["error"] != nil && err == nil {
		t.Errorf("stripe-mock answered %v and ReportUsage = nil; want the error", c.Response)
	}
}

func TestOverageUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		reads, included int64
		want            int64
	}{
		{"none", 0, 2500, 0},
		{"under", 2499, 2500, 0},
		{"exactly included", 2500, 2500, 0},
		{"one read over", 2501, 2500, 1},
		{"a full unit over", 3500, 2500, 1},
		{"one read into the second unit", 3501, 2500, 2},
		{"nothing included", 1, 0, 1},
	} {
		if got := billing.OverageUnits(tc.reads, tc.included); got != tc.want {
			t.Errorf("%s: OverageUnits(%d, %d) = %d; want %d", tc.name, tc.reads, tc.included, got, tc.want)
		}
	}
}

// Reads that cross the included ones only after the month's last hourly run are still
// charged: the final report of the closed month sends them.
func TestOverageClosedMonthCrossedAfterTheLastRun(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		o := newOverageRig(t, tab, time.Date(2040, 3, 31, 23, 10, 0, 0, time.UTC))
		o.subscribe(t, orgA, "evt_1", "active", map[string]string{priceTeam: "si_flat", priceTeamReads: meteredItem})
		o.read(t, orgA, includedTeam-10)
		o.mustRun(t)
		wantRecords(t, "under at the last hourly run", o.p.sent())
		o.read(t, orgA, 20)
		tab.Clock.Set(time.Date(2040, 4, 1, 0, 10, 0, 0, time.UTC))
		o.mustRun(t)
		wantRecords(t, "first run of April", o.p.sent(), record(1, time.Date(2040, 3, 31, 23, 59, 59, 0, time.UTC), "2040-03"))
	})
}

// A new subscription item within a month (a new subscription) holds nothing yet: the month's
// total is sent on it, under its own key.
func TestOverageNewItemWithinTheMonth(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		o := newOverageRig(t, tab, time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC))
		o.subscribe(t, orgA, "evt_1", "active", map[string]string{priceTeam: "si_flat", priceTeamReads: meteredItem})
		o.read(t, orgA, includedTeam+1500)
		o.mustRun(t)
		first := record(2, tab.Clock.Now(), "2040-03")
		tab.Clock.Advance(billing.ReportInterval)
		o.subscribe(t, orgA, "evt_2", "active", map[string]string{priceTeam: "si_flat_2", priceTeamReads: "si_reads_2"})
		o.mustRun(t)
		second := billing.UsageRecord{SubscriptionItemID: "si_reads_2", Quantity: 2, Timestamp: tab.Clock.Now(), IdempotencyKey: "si_reads_2-2040-03-2"}
		wantRecords(t, "after the new item", o.p.sent(), first, second)
	})
}

// The billing state keeps the reports of the current and the previous month only.
func TestOverageKeepsTwoMonthsOfReports(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		o := newOverageRig(t, tab, time.Date(2040, 1, 15, 9, 0, 0, 0, time.UTC))
		o.subscribe(t, orgA, "evt_1", "active", map[string]string{priceTeam: "si_flat", priceTeamReads: meteredItem})
		for _, at := range []time.Time{
			time.Date(2040, 1, 15, 9, 0, 0, 0, time.UTC),
			time.Date(2040, 2, 15, 9, 0, 0, 0, time.UTC),
			time.Date(2040, 3, 1, 0, 10, 0, 0, time.UTC),
			time.Date(2040, 3, 15, 9, 0, 0, 0, time.UTC),
		} {
			tab.Clock.Set(at)
			o.read(t, orgA, includedTeam+1)
			o.mustRun(t)
		}
		got := o.state(t, orgA).Reported
		if len(got) != 2 || got["2040-02"].Quantity != 1 || !got["2040-02"].Final || got["2040-03"].Quantity != 3 {
			// March: 2 × 2 501 reads, 2 502 beyond the included ones.
			t.Errorf("reports kept = %+v; want February's (final, 1) and March's (3) only", got)
		}
	})
}
