package billing_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §5 API key rule 3 and §10.3: a plan change updates the live-key and seat caps.
// With the real organisations and audit log: a completed checkout of team lifts the live-key
// cap from the free plan's 1 to team's 3 and the seat cap from 3 to 10; the subscription's
// deletion brings back free's caps; the audit log holds the changes.
func TestPlanChangeMovesCaps(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ctx := context.Background()
		catalogue := testPlans()
		log := audit.New(tab, audit.Options{Clock: tab.Clock})
		og, err := orgs.New(tab, orgs.Options{
			Clock: tab.Clock, Mailer: consoletest.DiscardMail{}, Keys: apikey.New(tab, apikey.Options{Clock: tab.Clock}),
			Audit: log, Users: consoletest.Accounts{}, TOTP: consoletest.NoTOTP{}, ConsoleURL: consoleURL, Caps: catalogue.Caps,
		})
		if err != nil {
			t.Fatal(err)
		}
		owner := consoleauth.Caller{User: consoleauth.User{ID: "usr_owner", Email: "owner@example.com"}}
		org, err := og.CreateOrg(ctx, orgs.ActorOf(owner), "Fleet")
		if err != nil {
			t.Fatal(err)
		}
		r := newRig(t, tab, rigOptions{provider: &refusingProvider{}, orgs: og, audit: log})

		// liveKeys issues live keys until the cap refuses one, and returns how many it issued
		// (the ones already held count against the cap).
		liveKeys := func() int {
			t.Helper()
			m, err := og.Resolve(ctx, org.OrgID, owner.User.ID)
			if err != nil {
				t.Fatal(err)
			}
			for n := 0; n < 20; n++ {
				_, _, err := og.IssueKey(ctx, m, owner, fmt.Sprintf("key %d", n), apikey.Live, nil)
				if errors.Is(err, apikey.ErrLiveKeyCap) {
					return n
				}
				if err != nil {
					t.Fatalf("IssueKey: %v", err)
				}
			}
			t.Fatal("no live-key cap after 20 keys")
			return 0
		}
		// seats invites members until the seat cap refuses one, and returns how many it invited.
		seats := func() int {
			t.Helper()
			m, err := og.Resolve(ctx, org.OrgID, owner.User.ID)
			if err != nil {
				t.Fatal(err)
			}
			for n := 0; n < 20; n++ {
				_, err := og.Invite(ctx, m, orgs.ActorOf(owner), fmt.Sprintf("m%d-%s@example.com", n, m.Org.Plan), orgs.RoleMember)
				if errors.Is(err, orgs.ErrSeatCap) {
					return n
				}
				if err != nil {
					t.Fatalf("Invite: %v", err)
				}
			}
			t.Fatal("no seat cap after 20 invitations")
			return 0
		}
		if got := liveKeys(); got != 1 {
			t.Errorf("live keys on free = %d; want 1", got)
		}
		if got := seats(); got != 2 { // the owner holds one of the 3 seats
			t.Errorf("invitations on free = %d; want 2 (3 seats, the owner's included)", got)
		}

		r.deliver(t, event("evt_1", billing.EventCheckoutCompleted, at(0), map[string]any{
			"id": "cs_1", "object": "checkout.session", "mode": "subscription", "customer": "cus_1",
			"subscription": "sub_1", "client_reference_id": org.OrgID, "payment_status": "paid",
			"metadata": map[string]string{"org_id": org.OrgID, "plan_id": plans.Team},
		}))
		if _, plan, _, _ := og.Access(ctx, org.OrgID, owner.User.ID); plan != plans.Team {
			t.Fatalf("plan after checkout = %s; want team", plan)
		}
		if got := liveKeys(); got != 2 { // 1 held + 2 more = team's 3
			t.Errorf("more live keys on team = %d; want 2 (cap 3, 1 held)", got)
		}
		if got := seats(); got != 7 { // 3 seats taken + 7 = team's 10
			t.Errorf("more invitations on team = %d; want 7 (cap 10, 3 taken)", got)
		}

		r.deliver(t, event("evt_2", billing.EventSubscriptionDeleted, at(60),
			subscription("sub_1", "cus_1", "canceled", priceTeam, nil)))
		if _, plan, _, _ := og.Access(ctx, org.OrgID, owner.User.ID); plan != plans.Free {
			t.Fatalf("plan after deletion = %s; want free", plan)
		}
		if got := liveKeys(); got != 0 {
			t.Errorf("live keys after falling back to free = %d more; want 0 (3 held, cap 1)", got)
		}

		// A subscription naming an organisation this table does not hold (another deployment on
		// the same Stripe account) is acknowledged, so Stripe does not retry it for days.
		r.deliver(t, event("evt_3", billing.EventSubscriptionCreated, at(70),
			subscription("sub_9", "cus_9", "active", priceTeam, map[string]string{"org_id": "org_elsewhere"})))

		entries, err := log.List(ctx, org.OrgID, 50)
		if err != nil {
			t.Fatal(err)
		}
		var changes []string
		for _, e := range entries {
			if e.Action == billing.ActionSubscriptionChanged {
				changes = append(changes, fmt.Sprint(e.Detail["plan_id"]))
			}
		}
		if fmt.Sprint(changes) != "[free team]" { // newest first
			t.Errorf("subscription_changed entries (newest first) = %v; want [free team]", changes)
		}
	})
}
