package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// Storage layout (single-table design, docs/architecture.md §2):
//
//	pk "org#<org_id>"              sk "billing"  the organisation's billing state
//	    org_id, customer_id, subscription_id, status, plan_id, event_at, event_rank,
//	    last_event_id, version, updated_at
//	    metered_item_id, and per period p ("2006-01") the last usage report:
//	    overage_<p> (quantity), overage_<p>_item, overage_<p>_final (1 once closed)
//	pk "stripecustomer#<cus_id>"   sk "billing"  which organisation a Stripe customer is
//	    org_id, customer_id
//	pk "billing#subscribed"        sk "org#<org_id>"  an organisation with an active
//	    subscription (the overage job's index; written with the state)
//
// version increases with every write, and every write is conditional on the version it read:
// concurrent webhooks and checkouts cannot lose each other's changes.
const (
	skBilling        = "billing"
	pkCustomerPrefix = "stripecustomer#"
)

func stateKey(org string) store.Key { return store.Key{PK: "org#" + org, SK: skBilling} }

// pkSubscribed is the partition of the subscribed organisations' index. One partition is
// enough: it holds one small item per paying organisation and is read once an hour.
const pkSubscribed = "billing#subscribed"

func subscribedKey(org string) store.Key { return store.Key{PK: pkSubscribed, SK: "org#" + org} }

func subscribedItem(org string) store.Item {
	k := subscribedKey(org)
	return store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK, "org_id": org}
}

func customerKey(customerID string) store.Key {
	return store.Key{PK: pkCustomerPrefix + customerID, SK: skBilling}
}

// maxAttempts bounds the optimistic retries of one change.
const maxAttempts = 8

// State is an organisation's billing state as the webhooks and checkout have left it.
type State struct {
	OrgID string
	// CustomerID is the organisation's Stripe customer, created once by its first checkout
	// and reused ever after; empty: no billing account yet (the portal answers 409).
	CustomerID string
	// SubscriptionID, Status and PlanID are the latest state of its subscription.
	SubscriptionID string
	Status         string
	PlanID         string
	// MeteredItemID is the subscription's item at the plan's metered price, which overage
	// is reported on; empty: no overage charge (no metered price configured at checkout).
	MeteredItemID string
	// Reported is, per period ("2006-01"), the last usage report made for it (see
	// ReportOverage); it is kept for the current and the previous period only.
	Reported map[string]Report
	// EventAt and EventRank order the state: a webhook older than EventAt, or as old with a
	// lower rank, does not overwrite it (see newer).
	EventAt   time.Time
	EventRank int
	// LastEventID is the Stripe event that set the state; the same event again is a no-op.
	LastEventID string
	Version     int64
}

// Active reports whether the subscription currently grants its plan: active, trialing, or
// past due while Stripe retries the payment (dropping a paying customer to free on the first
// failed charge would cut their seats and keys for a card that is about to be retried).
func (s State) Active() bool {
	switch s.Status {
	case "active", "trialing", "past_due":
		return true
	}
	return false
}

// hasSubscription reports whether Stripe ever reported a subscription for the organisation:
// only then do webhooks decide its plan (an enterprise plan set by hand is never touched).
func (s State) hasSubscription() bool { return s.Status != "" }

// statusRank orders the states of a Stripe subscription by how late in its life they come,
// to order two events of the same second (event.created has second resolution, and Stripe
// sends created, updated and checkout.session.completed within one second).
func statusRank(status string) int {
	switch status {
	case "incomplete":
		return 0
	case "trialing":
		return 1
	case "active":
		return 2
	case "past_due":
		return 3
	case "unpaid", "paused":
		return 4
	case "canceled", "incomplete_expired":
		return 5
	}
	return 0
}

func stateFromItem(org string, it store.Item) State {
	return State{
		OrgID:          org,
		CustomerID:     it.String("customer_id"),
		SubscriptionID: it.String("subscription_id"),
		Status:         it.String("status"),
		PlanID:         it.String("plan_id"),
		MeteredItemID:  it.String("metered_item_id"),
		Reported:       reportsFromItem(it),
		EventAt:        time.Unix(it.Int("event_at"), 0).UTC(),
		EventRank:      int(it.Int("event_rank")),
		LastEventID:    it.String("last_event_id"),
		Version:        it.Int("version"),
	}
}

// State returns the billing state of org; an organisation that never started a checkout has
// the zero State.
func (s *Service) State(ctx context.Context, org string) (State, error) {
	it, err := s.table.Get(ctx, stateKey(org))
	if errors.Is(err, store.ErrNotFound) {
		return State{OrgID: org}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("billing: read state of %s: %w", org, err)
	}
	return stateFromItem(org, it), nil
}

// versionCond holds when the state item is still at version v (absent for 0).
func versionCond(v int64) store.Condition {
	if v == 0 {
		return store.IfAttrNotExists("version")
	}
	return store.IfEqual("version", v)
}

// ensureCustomer returns org's Stripe customer, creating it on first use. The customer is
// created with an idempotency key derived from the organisation, so two checkouts racing
// create one Stripe customer; the first to store it wins and the other reuses it.
func (s *Service) ensureCustomer(ctx context.Context, org, email string) (string, error) {
	for range maxAttempts {
		st, err := s.State(ctx, org)
		if err != nil {
			return "", err
		}
		if st.CustomerID != "" {
			return st.CustomerID, nil
		}
		id, err := s.provider.CreateCustomer(ctx, org, email, "roadevents-customer-"+org)
		if err != nil {
			return "", err
		}
		err = s.table.TransactWrite(ctx, []store.Op{
			store.UpdateOp(stateKey(org), store.Update{
				Set: map[string]any{"org_id": org, "customer_id": id, "version": st.Version + 1,
					"updated_at": s.clock.Now().UTC().Format(time.RFC3339)},
			}, versionCond(st.Version)),
			store.PutOp(store.Item{
				store.AttrPK: customerKey(id).PK, store.AttrSK: customerKey(id).SK,
				"org_id": org, "customer_id": id,
			}, store.Condition{}),
		})
		if isRace(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("billing: store customer of %s: %w", org, err)
		}
		return id, nil
	}
	return "", fmt.Errorf("billing: store customer of %s: %w", org, ErrBusy)
}

func isRace(err error) bool {
	return errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict)
}

// orgOfCustomer returns the organisation of a Stripe customer, and "" for a customer that is
// not one of ours (a Stripe account may serve other products too).
func (s *Service) orgOfCustomer(ctx context.Context, customerID string) (string, error) {
	if customerID == "" {
		return "", nil
	}
	it, err := s.table.Get(ctx, customerKey(customerID))
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("billing: look up customer %s: %w", customerID, err)
	}
	return it.String("org_id"), nil
}

// change is what one webhook event says about an organisation's subscription.
type change struct {
	EventID        string
	Created        time.Time
	OrgID          string
	CustomerID     string
	SubscriptionID string
	Status         string
	PlanID         string
	// MeteredItemID is the item at a metered price; it is only known from a subscription
	// event (HasItems), a completed checkout leaves the stored one as it is.
	MeteredItemID string
	HasItems      bool
}

// outcome says what apply did with a change.
type outcome int

const (
	applied   outcome = iota + 1
	duplicate         // the same event was applied before
	stale             // an older event than the state's
	ignored           // about a subscription that is no longer the organisation's
)

// newer reports whether c may replace st: a later event, or one of the same second that
// comes later in a subscription's life. The provider may deliver events late and out of
// order, and an out-of-order older event must not overwrite a newer state.
func newer(c change, st State) bool {
	if !st.hasSubscription() {
		return true
	}
	if c.Created.After(st.EventAt) {
		return true
	}
	return c.Created.Equal(st.EventAt) && statusRank(c.Status) >= st.EventRank
}

func terminal(status string) bool { return statusRank(status) == 5 }

// apply writes c into the organisation's state when it is new and newer, and returns the
// state before and after.
func (s *Service) apply(ctx context.Context, c change) (before, after State, _ outcome, _ error) {
	for range maxAttempts {
		st, err := s.State(ctx, c.OrgID)
		if err != nil {
			return st, st, 0, err
		}
		switch {
		case st.LastEventID == c.EventID:
			return st, st, duplicate, nil
		case !newer(c, st):
			return st, st, stale, nil
		case st.Active() && c.SubscriptionID != "" && st.SubscriptionID != "" &&
			c.SubscriptionID != st.SubscriptionID && terminal(c.Status):
			// The end of an earlier subscription must not end the current one.
			return st, st, ignored, nil
		}
		next := st
		next.Status, next.PlanID, next.SubscriptionID = c.Status, c.PlanID, c.SubscriptionID
		if c.CustomerID != "" {
			next.CustomerID = c.CustomerID
		}
		if c.HasItems {
			next.MeteredItemID = c.MeteredItemID
		} else if c.SubscriptionID != st.SubscriptionID {
			next.MeteredItemID = "" // another subscription's item; its own events will say
		}
		next.EventAt, next.EventRank, next.LastEventID = c.Created, statusRank(c.Status), c.EventID
		next.Version = st.Version + 1
		ops := []store.Op{store.UpdateOp(stateKey(c.OrgID), store.Update{Set: map[string]any{
			"org_id": c.OrgID, "customer_id": next.CustomerID, "subscription_id": next.SubscriptionID,
			"status": next.Status, "plan_id": next.PlanID, "metered_item_id": next.MeteredItemID,
			"event_at": next.EventAt.Unix(), "event_rank": int64(next.EventRank), "last_event_id": next.LastEventID,
			"version": next.Version, "updated_at": s.clock.Now().UTC().Format(time.RFC3339),
		}}, versionCond(st.Version))}
		// The index of subscribed organisations the overage job walks, in the same
		// transaction as the state it follows, so that the two never disagree.
		if next.Active() {
			ops = append(ops, store.PutOp(subscribedItem(c.OrgID), store.Condition{}))
		} else {
			ops = append(ops, store.DeleteOp(subscribedKey(c.OrgID), store.Condition{}))
		}
		if c.CustomerID != "" && c.CustomerID != st.CustomerID {
			ops = append(ops, store.PutOp(store.Item{
				store.AttrPK: customerKey(c.CustomerID).PK, store.AttrSK: customerKey(c.CustomerID).SK,
				"org_id": c.OrgID, "customer_id": c.CustomerID,
			}, store.Condition{}))
		}
		err = s.table.TransactWrite(ctx, ops)
		if isRace(err) {
			continue
		}
		if err != nil {
			return st, st, 0, fmt.Errorf("billing: write state of %s: %w", c.OrgID, err)
		}
		return st, next, applied, nil
	}
	return State{}, State{}, 0, fmt.Errorf("billing: write state of %s: %w", c.OrgID, ErrBusy)
}
