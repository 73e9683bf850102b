package billing_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// base is when the tests' Stripe events happen; their created times are base + seconds.
var base = time.Date(2040, 1, 10, 12, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return base.Add(time.Duration(seconds) * time.Second) }

// completed is the checkout.session.completed event of orgA buying plan.
func completed(id string, created time.Time, plan string) []byte {
	return event(id, billing.EventCheckoutCompleted, created, map[string]any{
		"id": "cs_1", "object": "checkout.session", "mode": "subscription",
		"customer": "cus_a", "subscription": "sub_a", "client_reference_id": orgA,
		"payment_status": "paid", "metadata": map[string]string{"org_id": orgA, "plan_id": plan},
	})
}

// docs/api.md §10.3: an unsigned or badly signed call is 400 and changes nothing.
func TestWebhookRefusesBadSignatures(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, rigOptions{provider: &refusingProvider{}})
		payload := completed("evt_1", at(0), plans.Team)
		signed := func(secret string, ts time.Time) int { return r.post(t, payload, secret, ts) }
		for _, tc := range []struct {
			name string
			send func() int
		}{
			{"no Stripe-Signature", func() int { return r.postRaw(t, payload, "") }},
			{"garbage Stripe-Signature", func() int { return r.postRaw(t, payload, "t=1,v1=zz") }},
			{"signed with another secret", func() int { return signed("whsec_other", time.Now()) }},
			{"signed too long ago (replay)", func() int { return signed(webhookSecret, time.Now().Add(-time.Hour)) }},
			{"payload changed after signing", func() int {
				// The signature of the original, on another payload.
				other := completed("evt_1", at(0), plans.Business)
				return r.postRaw(t, other, signatureOf(payload, time.Now()))
			}},
			{"signed but not JSON", func() int { return r.postRaw(t, []byte("not json"), signatureOf([]byte("not json"), time.Now())) }},
		} {
			if got := tc.send(); got != http.StatusBadRequest {
				t.Errorf("%s: webhook = %d; want 400", tc.name, got)
			}
		}
		if st := r.state(t, orgA); st.Status != "" || st.CustomerID != "" {
			t.Errorf("state after refused webhooks = %+v; want none", st)
		}
		if p := r.fake.planOf(orgA); p != plans.Free || len(r.fake.sets) != 0 {
			t.Errorf("plan after refused webhooks = %s (SetPlan calls %v); want free, none", p, r.fake.sets)
		}

		// Without a webhook secret nothing can be verified: 503, not a silent 200.
		none := newRig(t, tab, rigOptions{secret: "-"})
		if got := none.post(t, payload, webhookSecret, time.Now()); got != http.StatusServiceUnavailable {
			t.Errorf("webhook without a configured secret = %d; want 503", got)
		}
	})
}

// docs/api.md §10.3 (billing webhooks): one rule in every billing state. A call with no signature
// (no Stripe-Signature, or one without a timestamp and a v1 signature) is 400 whether billing is
// on, off, or on without a webhook secret; a signed call that the deployment cannot check (no
// webhook secret) is 503; with the secret, a signature that does not verify is 400 and a good
// one is applied. Nothing refused changes anything.
func TestWebhookSameRuleInEveryBillingState(t *testing.T) {
	t.Parallel()
	states := []struct {
		name string
		opts rigOptions
		// good and forged are the answers to a call signed with the right secret, and with
		// another one.
		good, forged int
	}{
		{"on", rigOptions{provider: &refusingProvider{}}, http.StatusOK, http.StatusBadRequest},
		{"off", rigOptions{secret: "-"}, http.StatusServiceUnavailable, http.StatusServiceUnavailable},
		{"on without a webhook secret", rigOptions{provider: &refusingProvider{}, secret: "-"}, http.StatusServiceUnavailable, http.StatusServiceUnavailable},
	}
	for _, st := range states {
		r := newRig(t, tables.Embedded(t), st.opts)
		payload := completed("evt_1", at(0), plans.Team)
		for _, tc := range []struct {
			name string
			send func() int
			want int
		}{
			{"no Stripe-Signature", func() int { return r.postRaw(t, payload, "") }, http.StatusBadRequest},
			{"a Stripe-Signature that is no signature", func() int { return r.postRaw(t, payload, "t=1,v1=zz") }, http.StatusBadRequest},
			{"signed with another secret", func() int { return r.post(t, payload, "whsec_other", time.Now()) }, st.forged},
			{"signed with the secret", func() int { return r.post(t, payload, webhookSecret, time.Now()) }, st.good},
		} {
			if got := tc.send(); got != tc.want {
				t.Errorf("billing %s, %s: webhook = %d; want %d", st.name, tc.name, got, tc.want)
			}
		}
		if st.good != http.StatusOK {
			if p := r.fake.planOf(orgA); p != plans.Free || len(r.fake.sets) != 0 {
				t.Errorf("billing %s: plan after refused webhooks = %s (SetPlan calls %v); want free, none", st.name, p, r.fake.sets)
			}
		}
	}
}

// signatureOf signs payload with the tests' secret, by stripe-go's own test helper.
func signatureOf(payload []byte, ts time.Time) string {
	return signedHeader(payload, webhookSecret, ts)
}

// docs/api.md §6 and §10.3 (billing webhooks): a completed checkout moves the organisation to
// its plan (and the caps with it), the same event delivered twice changes state once, and the
// change is audited once.
func TestWebhookCheckoutCompletedIdempotent(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, rigOptions{provider: &refusingProvider{}})
		payload := completed("evt_1", at(0), plans.Team)
		r.deliver(t, payload)
		first := r.state(t, orgA)
		if first.Status != "active" || first.PlanID != plans.Team || first.CustomerID != "cus_a" || first.SubscriptionID != "sub_a" {
			t.Errorf("state after checkout completed = %+v; want active team, cus_a, sub_a", first)
		}
		if p := r.fake.planOf(orgA); p != plans.Team {
			t.Errorf("plan = %s; want team", p)
		}
		r.deliver(t, payload) // Stripe delivers at least once
		if again := r.state(t, orgA); again.Version != first.Version {
			t.Errorf("state version after the same event again = %d; want %d (unchanged)", again.Version, first.Version)
		}
		changes := r.audit.actions(billing.ActionSubscriptionChanged)
		if len(changes) != 1 {
			t.Fatalf("%d billing.subscription_changed entries; want 1", len(changes))
		}
		if d := changes[0].detail; d["plan_id"] != plans.Team || d["previous_plan_id"] != plans.Free || changes[0].target != "sub_a" {
			t.Errorf("audit entry = %+v; want target sub_a, plan team from free", changes[0])
		}
		var s billing.Summary
		r.getJSON(t, "/console/orgs/"+orgA+"/billing", tokenMember, &s)
		if !s.SubscriptionActive || s.Plan.PlanID != plans.Team || s.IncludedReads == nil || *s.IncludedReads != 1_000_000 {
			t.Errorf("summary = active %v, plan %s, included %v; want true, team, 1000000", s.SubscriptionActive, s.Plan.PlanID, s.IncludedReads)
		}
	})
}

// The provider may deliver webhooks out of order: an older event does not overwrite a newer
// state; the subscription's events find the organisation by metadata or by its stored customer;
// deletion ends the plan.
func TestWebhookOrdering(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, rigOptions{provider: &refusingProvider{}})
		meta := map[string]string{"org_id": orgA, "plan_id": plans.Team}
		sub := func(id string, s int, typ, status, price string, md map[string]string) []byte {
			return event(id, typ, at(s), subscription("sub_a", "cus_a", status, price, md))
		}
		steps := []struct {
			name       string
			payload    []byte
			wantStatus string
			wantPlan   string // the organisation's plan afterwards
		}{
			{"created, incomplete", sub("evt_1", 0, billing.EventSubscriptionCreated, "incomplete", priceTeam, meta), "incomplete", plans.Free},
			{"checkout completed, same second", completed("evt_2", at(0), plans.Team), "active", plans.Team},
			{"updated to active, same second", sub("evt_3", 0, billing.EventSubscriptionUpdated, "active", priceTeam, meta), "active", plans.Team},
			{"the incomplete created again, same second: older in the life of a subscription", sub("evt_1b", 0, billing.EventSubscriptionCreated, "incomplete", priceTeam, meta), "active", plans.Team},
			{"upgraded to business in the portal", sub("evt_5", 50, billing.EventSubscriptionUpdated, "active", priceBusiness, meta), "active", plans.Business},
			{"an older team update arrives late", sub("evt_4", 40, billing.EventSubscriptionUpdated, "active", priceTeam, meta), "active", plans.Business},
			{"past due keeps the plan while Stripe retries, found by customer", sub("evt_6", 60, billing.EventSubscriptionUpdated, "past_due", priceBusiness, nil), "past_due", plans.Business},
			{"deleted", sub("evt_8", 80, billing.EventSubscriptionDeleted, "canceled", priceBusiness, meta), "canceled", plans.Free},
			{"an older active update after the deletion", sub("evt_7", 70, billing.EventSubscriptionUpdated, "active", priceBusiness, meta), "canceled", plans.Free},
		}
		for _, st := range steps {
			r.deliver(t, st.payload)
			got := r.state(t, orgA)
			if got.Status != st.wantStatus || r.fake.planOf(orgA) != st.wantPlan {
				t.Errorf("after %q: status %s, plan %s; want %s, %s", st.name, got.Status, r.fake.planOf(orgA), st.wantStatus, st.wantPlan)
			}
		}
		var s billing.Summary
		r.getJSON(t, "/console/orgs/"+orgA+"/billing", tokenOwner, &s)
		if s.SubscriptionActive || s.Plan.PlanID != plans.Free {
			t.Errorf("summary after deletion = active %v, plan %s; want false, free", s.SubscriptionActive, s.Plan.PlanID)
		}
		// A new subscription after the old one ended applies, even though the old one's
		// deletion came later in time than nothing: it is newer.
		r.deliver(t, event("evt_9", billing.EventSubscriptionCreated, at(90), subscription("sub_new", "cus_a", "active", priceTeam, nil)))
		if got := r.state(t, orgA); got.SubscriptionID != "sub_new" || r.fake.planOf(orgA) != plans.Team {
			t.Errorf("after a new subscription: %s, plan %s; want sub_new, team", got.SubscriptionID, r.fake.planOf(orgA))
		}
		// The end of the earlier subscription, reported later, does not end the new one.
		r.deliver(t, event("evt_10", billing.EventSubscriptionDeleted, at(100), subscription("sub_a", "cus_a", "canceled", priceBusiness, meta)))
		if got := r.state(t, orgA); got.SubscriptionID != "sub_new" || !got.Active() || r.fake.planOf(orgA) != plans.Team {
			t.Errorf("after the old subscription's deletion: %s active %v, plan %s; want sub_new, true, team", got.SubscriptionID, got.Active(), r.fake.planOf(orgA))
		}
	})
}

// Events this deployment has nothing to do with are acknowledged (so Stripe stops sending
// them) and change nothing: other types, another product's customer, a one-off payment.
func TestWebhookIgnoresForeignEvents(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t), rigOptions{provider: &refusingProvider{}})
	for _, payload := range [][]byte{
		event("evt_x1", "invoice.paid", at(0), map[string]any{"id": "in_1", "object": "invoice", "customer": "cus_a"}),
		event("evt_x2", billing.EventSubscriptionUpdated, at(0), subscription("sub_z", "cus_unknown", "active", priceTeam, nil)),
		event("evt_x3", billing.EventCheckoutCompleted, at(0), map[string]any{"id": "cs_p", "object": "checkout.session", "mode": "payment", "client_reference_id": orgA}),
		event("evt_x4", billing.EventSubscriptionUpdated, at(0), subscription("sub_y", "cus_a", "active", "price_of_another_product", map[string]string{"org_id": orgA})),
	} {
		r.deliver(t, payload)
	}
	if st := r.state(t, orgA); st.Status != "" || len(r.fake.sets) != 0 {
		t.Errorf("after foreign events: state %+v, SetPlan calls %v; want none", st, r.fake.sets)
	}
}

// Two deliveries of different events racing end with the plan of the newer one, and the
// same event delivered concurrently is applied once.
func TestWebhookConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, rigOptions{provider: &refusingProvider{}})
		meta := map[string]string{"org_id": orgA}
		older := event("evt_old", billing.EventSubscriptionUpdated, at(10), subscription("sub_a", "cus_a", "active", priceTeam, meta))
		newer := event("evt_new", billing.EventSubscriptionUpdated, at(20), subscription("sub_a", "cus_a", "active", priceBusiness, meta))
		statuses := make(chan int)
		for _, p := range [][]byte{older, newer, newer, older} {
			go func() { statuses <- r.post(t, p, webhookSecret, time.Now()) }()
		}
		for range 4 {
			if got := <-statuses; got != http.StatusOK {
				t.Errorf("racing delivery = %d; want 200", got)
			}
		}
		if got := r.state(t, orgA); got.LastEventID != "evt_new" || r.fake.planOf(orgA) != plans.Business {
			t.Errorf("after racing deliveries: last event %s, plan %s; want evt_new, business", got.LastEventID, r.fake.planOf(orgA))
		}
		if n := len(r.audit.actions(billing.ActionSubscriptionChanged)); n < 1 || n > 2 {
			t.Errorf("%d subscription_changed entries; want 1 or 2 (once per applied event, never for the repeats)", n)
		}
	})
}

// On Lambda, aws-lambda-go-api-proxy splits Stripe-Signature ("t=...,v1=...") at its commas
// into several header values; the webhook still verifies it.
func TestWebhookSignatureSplitIntoHeaderValues(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, rigOptions{provider: &refusingProvider{}})
		payload := completed("evt_split", at(0), plans.Team)
		req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/console/billing/webhook", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		for _, part := range strings.Split(signatureOf(payload, time.Now()), ",") {
			req.Header.Add("Stripe-Signature", part)
		}
		resp, err := r.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("webhook with a split Stripe-Signature = %d; want 200", resp.StatusCode)
		}
		if got := r.fake.planOf(orgA); got != plans.Team {
			t.Errorf("plan after the webhook = %s; want team", got)
		}
	})
}
