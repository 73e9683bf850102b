package billing_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.4: GET /console/plans is open and lists the catalogue; docs/api.md §10.3: the
// Stripe price id never appears in a body.
func TestPlansRoute(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t), rigOptions{})
	status, body := r.do(t, http.MethodGet, "/console/plans", "", "")
	if status != http.StatusOK {
		t.Fatalf("GET /console/plans without a session = %d; want 200 (open)", status)
	}
	if strings.Contains(string(body), priceTeam) || strings.Contains(string(body), priceBusiness) {
		t.Errorf("plans body %s holds a Stripe price id", body)
	}
	var got []plans.Public
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.PlanID)
	}
	if strings.Join(ids, ",") != "free,team,business,enterprise" {
		t.Errorf("plan ids = %v; want free, team, business, enterprise", ids)
	}
	if !got[1].SelfServe || got[3].SelfServe || got[0].SelfServe {
		t.Errorf("self_serve = free %v, team %v, enterprise %v; want false, true, false", got[0].SelfServe, got[1].SelfServe, got[3].SelfServe)
	}
}

// docs/api.md §4.4: the billing summary covers the current calendar month (UTC), live traffic only,
// and is readable by any member; docs/api.md §10.4: billing_configured false while billing is off.
func TestSummaryMonthBoundary(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, rigOptions{})
		ctx := context.Background()
		count := func(env string, n int) {
			for range n {
				r.meter.Count(ctx, orgA, env, metering.Reads)
			}
			r.meter.Count(ctx, orgA, env, metering.Publishes)
			if err := r.meter.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		tab.Clock.Set(time.Date(2040, 1, 31, 23, 59, 30, 0, time.UTC))
		count("live", 5)
		count("sandbox", 7) // never billed

		var s billing.Summary
		r.getJSON(t, "/console/orgs/"+orgA+"/billing", tokenMember, &s)
		if s.OrgID != orgA || s.PeriodStart != "2040-01-01" || s.PeriodEnd != "2040-01-31" || s.Totals.Reads != 5 || s.Totals.Publishes != 1 {
			t.Errorf("January summary = %s %s..%s, %d reads, %d publishes; want %s 2040-01-01..2040-01-31, 5, 1",
				s.OrgID, s.PeriodStart, s.PeriodEnd, s.Totals.Reads, s.Totals.Publishes, orgA)
		}
		if s.Plan.PlanID != plans.Free || s.IncludedReads == nil || *s.IncludedReads != plans.FreeIncludedReads || s.BillingConfigured || s.SubscriptionActive {
			t.Errorf("January summary plan %s, included %v, configured %v, active %v; want free, 100000, false, false",
				s.Plan.PlanID, s.IncludedReads, s.BillingConfigured, s.SubscriptionActive)
		}

		tab.Clock.Advance(time.Minute) // 2040-02-01 00:00:30: a new period
		count("live", 2)
		s = billing.Summary{}
		r.getJSON(t, "/console/orgs/"+orgA+"/billing", tokenOwner, &s)
		if s.PeriodStart != "2040-02-01" || s.PeriodEnd != "2040-02-29" || s.Totals.Reads != 2 || s.Totals.Publishes != 1 {
			t.Errorf("February summary = %s..%s, %d reads, %d publishes; want 2040-02-01..2040-02-29 (leap year), 2, 1",
				s.PeriodStart, s.PeriodEnd, s.Totals.Reads, s.Totals.Publishes)
		}
	})
}

// docs/api.md §4.4, §7, §10.3 and §10.4: every status of checkout and portal that is decided
// before Stripe is called; none of these requests reaches the provider.
func TestCheckoutAndPortalStatuses(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		off := newRig(t, tab, rigOptions{})
		refuse := &refusingProvider{}
		on := newRig(t, tab, rigOptions{provider: refuse})
		// orgB is subscribed (its owner is the same user), by a completed checkout.
		on.fake.plan["org_b"] = plans.Free
		on.fake.roles["org_b"] = map[string]string{"usr_owner": "owner"}
		on.deliver(t, event("evt_b", billing.EventCheckoutCompleted, time.Now(), map[string]any{
			"id": "cs_b", "object": "checkout.session", "mode": "subscription", "customer": "cus_b",
			"subscription": "sub_b", "client_reference_id": "org_b", "payment_status": "paid",
			"metadata": map[string]string{"org_id": "org_b", "plan_id": plans.Team},
		}))
		checkout := func(org string) string { return "/console/orgs/" + org + "/billing/checkout" }
		portal := func(org string) string { return "/console/orgs/" + org + "/billing/portal" }
		const team = `{"plan":"team"}`
		on.client(t).Run(t, []apitest.Scenario{
			{Name: "checkout without a session", Method: "POST", Path: checkout(orgA), Body: team, WantStatus: http.StatusUnauthorized},
			{Name: "checkout by an outsider", Token: tokenOutsider, Method: "POST", Path: checkout(orgA), Body: team, WantStatus: http.StatusNotFound},
			{Name: "checkout of no such organisation", Token: tokenOwner, Method: "POST", Path: checkout("org_none"), Body: team, WantStatus: http.StatusNotFound},
			{Name: "checkout by a member", Token: tokenMember, Method: "POST", Path: checkout(orgA), Body: team, WantStatus: http.StatusForbidden},
			{Name: "checkout of free", Token: tokenOwner, Method: "POST", Path: checkout(orgA), Body: `{"plan":"free"}`, WantStatus: http.StatusBadRequest},
			{Name: "checkout of enterprise", Token: tokenOwner, Method: "POST", Path: checkout(orgA), Body: `{"plan":"enterprise"}`, WantStatus: http.StatusBadRequest},
			{Name: "checkout of an unknown plan", Token: tokenOwner, Method: "POST", Path: checkout(orgA), Body: `{"plan":"platinum"}`, WantStatus: http.StatusBadRequest},
			{Name: "checkout of a price id", Token: tokenOwner, Method: "POST", Path: checkout(orgA), Body: `{"plan":"` + priceTeam + `"}`, WantStatus: http.StatusBadRequest},
			{Name: "checkout of an empty plan", Token: tokenOwner, Method: "POST", Path: checkout(orgA), Body: `{"plan":""}`, WantStatus: http.StatusUnprocessableEntity},
			{Name: "checkout of a 41-character plan", Token: tokenOwner, Method: "POST", Path: checkout(orgA), Body: `{"plan":"` + strings.Repeat("t", 41) + `"}`, WantStatus: http.StatusUnprocessableEntity},
			{Name: "checkout when already subscribed", Token: tokenOwner, Method: "POST", Path: checkout("org_b"), Body: `{"plan":"business"}`, WantStatus: http.StatusConflict},
			{Name: "portal without a session", Method: "POST", Path: portal(orgA), WantStatus: http.StatusUnauthorized},
			{Name: "portal by an outsider", Token: tokenOutsider, Method: "POST", Path: portal(orgA), WantStatus: http.StatusNotFound},
			{Name: "portal by a member", Token: tokenMember, Method: "POST", Path: portal(orgA), WantStatus: http.StatusForbidden},
			{Name: "portal without a billing account", Token: tokenOwner, Method: "POST", Path: portal(orgA), WantStatus: http.StatusConflict},
			{Name: "summary by an outsider", Token: tokenOutsider, Method: "GET", Path: "/console/orgs/" + orgA + "/billing", WantStatus: http.StatusNotFound},
		})
		off.client(t).Run(t, []apitest.Scenario{
			{Name: "checkout while billing is off", Token: tokenOwner, Method: "POST", Path: checkout(orgA), Body: team, WantStatus: http.StatusServiceUnavailable},
			{Name: "portal while billing is off", Token: tokenOwner, Method: "POST", Path: portal(orgA), WantStatus: http.StatusServiceUnavailable},
		})
		if refuse.calls != 0 {
			t.Errorf("the provider was called %d times; want none", refuse.calls)
		}
		if n := len(on.audit.actions(billing.ActionCheckoutStarted)); n != 0 {
			t.Errorf("%d billing.checkout_started entries after refused checkouts; want 0", n)
		}
		var s billing.Summary
		on.getJSON(t, "/console/orgs/org_b/billing", tokenOwner, &s)
		if !s.BillingConfigured || !s.SubscriptionActive || s.Plan.PlanID != plans.Team {
			t.Errorf("subscribed summary = configured %v, active %v, plan %s; want true, true, team", s.BillingConfigured, s.SubscriptionActive, s.Plan.PlanID)
		}
	})
}

// docs/api.md §10.3 records: GET /console/plans answers PlanPublic[] and the billing summary a
// BillingSummary with exactly their fields (the schemas refuse extra members), with the
// nulls docs/api.md §10.3 gives (enterprise: no price, no included reads, no caps), both while
// billing is off and on.
func TestRecordsMatchContract(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	for _, rc := range []struct {
		name string
		r    *rig
	}{
		{"billing off", newRig(t, tab, rigOptions{})},
		{"billing on", newRig(t, tab, rigOptions{provider: &refusingProvider{}})},
	} {
		for _, c := range []struct {
			path, token string
			schema      *schema.Schema
		}{
			{"/console/plans", "", schema.Array(plans.PublicSchema)},
			{"/console/orgs/" + orgA + "/billing", tokenMember, billing.BillingSummarySchema},
		} {
			client := rc.r.client(t)
			client.Expect(client.Call(http.MethodGet, c.path, c.token, ""), http.StatusOK, c.schema, rc.name+": GET "+c.path)
		}
		var ps []map[string]any
		rc.r.getJSON(t, "/console/plans", "", &ps)
		for _, p := range ps {
			if p["plan_id"] != plans.Enterprise {
				continue
			}
			for _, f := range []string{"monthly_price_cents", "included_reads", "live_key_cap", "seat_cap"} {
				if v, ok := p[f]; !ok || v != nil {
					t.Errorf("%s: enterprise %s = %v (present %v); want null", rc.name, f, v, ok)
				}
			}
		}
	}
}

// docs/operations.md §1: when Stripe fails, checkout answers 503 with Retry-After, a passing
// condition the client retries.
func TestCheckoutWhenStripeFails(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, rigOptions{provider: &refusingProvider{}})
		r.client(t).Run(t, []apitest.Scenario{{
			Name: "checkout while Stripe fails", Token: tokenOwner, Method: "POST",
			Path: "/console/orgs/" + orgA + "/billing/checkout", Body: `{"plan":"team"}`,
			WantStatus: http.StatusServiceUnavailable, WantHeader: map[string]string{"Retry-After": "2"},
		}})
	})
}
