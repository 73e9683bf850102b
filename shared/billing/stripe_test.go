package billing_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.4 against stripe-mock: checkout is a Checkout Session in subscription mode for the
// plan's configured price; the organisation's customer is created once and reused; the url
// answered is the session's; the portal opens for that customer. stripe-mock answers canned
// objects, so the test asserts what billing sends and what it does with the answers.
func TestCheckoutAndPortalOnStripeMock(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		rec := &recorder{}
		r := newRig(t, tab, rigOptions{provider: stripeMock(t, rec)})

		checkout := func(plan string) string {
			t.Helper()
			status, body := r.do(t, http.MethodPost, "/console/orgs/"+orgA+"/billing/checkout", tokenOwner, `{"plan":"`+plan+`"}`)
			if status != http.StatusOK {
				t.Fatalf("checkout %s = %d %s; want 200", plan, status, body)
			}
			var out billing.SessionOut
			decode(t, body, &out)
			return out.URL
		}
		urlTeam := checkout(plans.Team)
		// The first checkout was abandoned (no webhook): a second one, for another plan, reuses
		// the customer.
		urlBusiness := checkout(plans.Business)

		customers := rec.to("/v1/customers")
		if len(customers) != 1 {
			t.Fatalf("%d customers created; want 1 for two checkouts of one organisation", len(customers))
		}
		customerID, _ := customers[0].Response["id"].(string)
		if customerID == "" || customers[0].Form.Get("metadata[org_id]") != orgA || customers[0].Form.Get("email") != "owner@example.com" {
			t.Errorf("customer request %v answered id %q; want metadata[org_id]=%s, the owner's e-mail, an id", customers[0].Form, customerID, orgA)
		}
		if st := r.state(t, orgA); st.CustomerID != customerID {
			t.Errorf("stored customer = %q; want %q", st.CustomerID, customerID)
		}
		sessions := rec.to("/v1/checkout/sessions")
		if len(sessions) != 2 {
			t.Fatalf("%d checkout sessions created; want 2", len(sessions))
		}
		for i, tc := range []struct {
			plan, price, url string
		}{{plans.Team, priceTeam, urlTeam}, {plans.Business, priceBusiness, urlBusiness}} {
			f := sessions[i].Form
			for k, want := range map[string]string{
				"mode":                                 "subscription",
				"customer":                             customerID,
				"line_items[0][price]":                 tc.price,
				"line_items[0][quantity]":              "1",
				"client_reference_id":                  orgA,
				"success_url":                          consoleURL + "billing?checkout=success",
				"cancel_url":                           consoleURL + "billing?checkout=cancelled",
				"metadata[plan_id]":                    tc.plan,
				"subscription_data[metadata][org_id]":  orgA,
				"subscription_data[metadata][plan_id]": tc.plan,
			} {
				if got := f.Get(k); got != want {
					t.Errorf("checkout %s sent %s=%q; want %q", tc.plan, k, got, want)
				}
			}
			if want, _ := sessions[i].Response["url"].(string); want == "" || tc.url != want {
				t.Errorf("checkout %s answered url %q; want the session's url %q", tc.plan, tc.url, want)
			}
		}
		started := r.audit.actions(billing.ActionCheckoutStarted)
		if len(started) != 2 || started[0].actor != "usr_owner" || started[0].detail["plan_id"] != plans.Team {
			t.Errorf("billing.checkout_started entries = %+v; want 2, by usr_owner, the first for team", started)
		}

		status, body := r.do(t, http.MethodPost, "/console/orgs/"+orgA+"/billing/portal", tokenOwner, "")
		if status != http.StatusOK {
			t.Fatalf("portal = %d %s; want 200", status, body)
		}
		var out billing.SessionOut
		decode(t, body, &out)
		portals := rec.to("/v1/billing_portal/sessions")
		if len(portals) != 1 || portals[0].Form.Get("customer") != customerID || portals[0].Form.Get("return_url") != consoleURL+"billing" {
			t.Fatalf("portal requests = %+v; want 1 for %s returning to %sbilling", portals, customerID, consoleURL)
		}
		if want, _ := portals[0].Response["url"].(string); want == "" || out.URL != want {
			t.Errorf("portal answered url %q; want the portal session's url %q", out.URL, want)
		}
		if n := len(rec.to("/v1/customers")); n != 1 {
			t.Errorf("%d customers after the portal; want still 1", n)
		}

		// docs/privacy.md §6: deleting the organisation deletes its customer, which cancels its
		// subscription; closing again (a deletion sent again after a failure) is done too.
		if err := r.svc.CloseAccount(context.Background(), orgA); err != nil {
			t.Fatalf("CloseAccount = %v", err)
		}
		deleted := rec.to("/v1/customers/" + customerID)
		if len(deleted) != 1 || deleted[0].Method != http.MethodDelete || deleted[0].Response["deleted"] != true {
			t.Fatalf("requests to the customer = %+v; want one DELETE, answered deleted", deleted)
		}
		if err := r.svc.CloseAccount(context.Background(), orgA); err != nil {
			t.Fatalf("CloseAccount again = %v", err)
		}
	})
}

// Two owners' checkouts racing for one organisation store one customer, and both sessions
// are for it.
func TestConcurrentCheckoutsShareOneCustomer(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		rec := &recorder{}
		r := newRig(t, tab, rigOptions{provider: stripeMock(t, rec)})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if status, body := r.do(t, http.MethodPost, "/console/orgs/"+orgA+"/billing/checkout", tokenOwner, `{"plan":"team"}`); status != http.StatusOK {
					t.Errorf("checkout = %d %s; want 200", status, body)
				}
			})
		}
		wg.Wait()
		stored := r.state(t, orgA).CustomerID
		for _, s := range rec.to("/v1/checkout/sessions") {
			if got := s.Form.Get("customer"); got != stored {
				t.Errorf("a checkout session was for customer %q; want the stored %q", got, stored)
			}
		}
	})
}
