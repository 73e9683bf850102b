package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// Event is a verified Stripe event: its id, type, created time (Unix seconds) and the raw
// JSON of its data.object.
type Event struct {
	ID      string
	Type    string
	Created int64
	Object  json.RawMessage
}

// The event types that change billing state (docs/api.md §6: "billing webhooks ... change billing
// state"); every other type is acknowledged and ignored.
const (
	EventCheckoutCompleted   = "checkout.session.completed"
	EventSubscriptionCreated = "customer.subscription.created"
	EventSubscriptionUpdated = "customer.subscription.updated"
	EventSubscriptionDeleted = "customer.subscription.deleted"
)

// checkoutObject is the part of a Checkout Session read here.
type checkoutObject struct {
	Mode              string            `json:"mode"`
	Customer          json.RawMessage   `json:"customer"`
	Subscription      json.RawMessage   `json:"subscription"`
	ClientReferenceID string            `json:"client_reference_id"`
	PaymentStatus     string            `json:"payment_status"`
	Metadata          map[string]string `json:"metadata"`
}

// subscriptionObject is the part of a Subscription read here.
type subscriptionObject struct {
	ID       string            `json:"id"`
	Customer json.RawMessage   `json:"customer"`
	Status   string            `json:"status"`
	Metadata map[string]string `json:"metadata"`
	Items    struct {
		Data []struct {
			ID    string `json:"id"`
			Price struct {
				ID string `json:"id"`
			} `json:"price"`
		} `json:"data"`
	} `json:"items"`
}

// idOf reads an expandable Stripe field: an id string, or an object with an id.
func idOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.ID
	}
	return ""
}

// HandleEvent applies a verified event (see the package doc for the idempotency and ordering
// rules). An event about an organisation or plan this deployment does not know is logged and
// ignored, so Stripe stops retrying it; an error means Stripe should retry.
func (s *Service) HandleEvent(ctx context.Context, ev Event) error {
	var c change
	var err error
	switch ev.Type {
	case EventCheckoutCompleted:
		c, err = s.checkoutChange(ctx, ev)
	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		c, err = s.subscriptionChange(ctx, ev)
	default:
		s.ignore(ctx, ev, "event type not handled")
		return nil
	}
	if err != nil {
		return err
	}
	if c.OrgID == "" {
		s.ignore(ctx, ev, "no organisation of this deployment")
		return nil
	}
	before, after, out, err := s.apply(ctx, c)
	if err != nil {
		return err
	}
	switch out {
	case applied:
		if before.Status != after.Status || before.PlanID != after.PlanID {
			s.record(ctx, c.OrgID, ActionSubscriptionChanged, "", "", after.SubscriptionID, map[string]any{
				"event_id": ev.ID, "event_type": ev.Type,
				"status": after.Status, "plan_id": effectivePlan(after),
				"previous_status": before.Status, "previous_plan_id": effectivePlan(before),
			})
		}
	case stale:
		s.ignore(ctx, ev, "older than the organisation's billing state")
	case ignored:
		s.ignore(ctx, ev, "about a subscription the organisation no longer has")
	}
	// Also on a duplicate: a first delivery that failed at this step is completed by Stripe's
	// retry, which is a duplicate by then.
	return s.syncPlan(ctx, c.OrgID)
}

func (s *Service) checkoutChange(ctx context.Context, ev Event) (change, error) {
	var o checkoutObject
	if err := json.Unmarshal(ev.Object, &o); err != nil {
		return change{}, fmt.Errorf("billing: decode %s %s: %w", ev.Type, ev.ID, err)
	}
	if o.Mode != "subscription" {
		return change{}, nil
	}
	c := change{
		EventID: ev.ID, Created: time.Unix(ev.Created, 0).UTC(),
		OrgID:          o.ClientReferenceID,
		CustomerID:     idOf(o.Customer),
		SubscriptionID: idOf(o.Subscription),
		PlanID:         o.Metadata[MetaPlanID],
		// A completed checkout of a subscription is paid (or needs no payment) unless Stripe
		// says the payment is still pending; then the subscription events will say more.
		Status: "active",
	}
	if o.PaymentStatus == "unpaid" {
		c.Status = "incomplete"
	}
	if c.OrgID == "" {
		c.OrgID = o.Metadata[MetaOrgID]
	}
	if p, ok := s.plans.Get(c.PlanID); !ok || !p.SelfServe {
		s.log.LogAttrs(ctx, slog.LevelWarn, "billing: completed checkout names no self-serve plan",
			slog.String("event_id", ev.ID), slog.String("plan_id", c.PlanID))
		return change{}, nil
	}
	return c, nil
}

func (s *Service) subscriptionChange(ctx context.Context, ev Event) (change, error) {
	var o subscriptionObject
	if err := json.Unmarshal(ev.Object, &o); err != nil {
		return change{}, fmt.Errorf("billing: decode %s %s: %w", ev.Type, ev.ID, err)
	}
	c := change{
		EventID: ev.ID, Created: time.Unix(ev.Created, 0).UTC(),
		OrgID:          o.Metadata[MetaOrgID],
		CustomerID:     idOf(o.Customer),
		SubscriptionID: o.ID,
		Status:         o.Status,
	}
	if ev.Type == EventSubscriptionDeleted {
		c.Status = "canceled" // whatever the object says, a deleted subscription has ended
	}
	// The price decides the plan (a plan change in the portal changes the price); the
	// metadata written at checkout is the fallback.
	for _, it := range o.Items.Data {
		if p, ok := s.plans.ByPriceID(it.Price.ID); ok && c.PlanID == "" {
			c.PlanID = p.ID
		}
		// The item overage is reported on (docs/console.md §3): the one
		// at a plan's metered price. None: the subscription has no overage charge.
		if s.plans.IsMeteredPrice(it.Price.ID) && c.MeteredItemID == "" {
			c.MeteredItemID = it.ID
		}
	}
	c.HasItems = true
	if c.PlanID == "" {
		c.PlanID = o.Metadata[MetaPlanID]
	}
	if c.OrgID == "" {
		org, err := s.orgOfCustomer(ctx, c.CustomerID)
		if err != nil {
			return change{}, err
		}
		c.OrgID = org
	}
	if _, ok := s.plans.Get(c.PlanID); !ok && !terminal(c.Status) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "billing: subscription of a price no plan sells",
			slog.String("event_id", ev.ID), slog.String("subscription_id", o.ID))
		return change{}, nil
	}
	return c, nil
}

func (s *Service) ignore(ctx context.Context, ev Event, why string) {
	s.log.LogAttrs(ctx, slog.LevelDebug, "billing: webhook changes nothing",
		slog.String("event_id", ev.ID), slog.String("type", ev.Type), slog.String("why", why))
}
