// Package billing sells the self-serve plans through Stripe and keeps each organisation's
// plan in step with its subscription (docs/api.md §4.4, §6 "billing webhooks", §10.3 and §10.4):
//
//   - GET /console/plans: the catalogue (package plans), open.
//   - GET /console/orgs/{org_id}/billing: the BillingSummary of the current calendar month
//     (UTC), live traffic only, for any member.
//   - POST /console/orgs/{org_id}/billing/checkout: an owner starts a Stripe Checkout Session
//     in subscription mode for the plan's configured price. The organisation's Stripe customer
//     is created on its first checkout and reused ever after.
//   - POST /console/orgs/{org_id}/billing/portal: an owner opens Stripe's billing portal.
//   - POST /console/billing/webhook: Stripe reports checkout completion and subscription
//     changes; the signature (Stripe-Signature) is verified with stripe-go's webhook package.
//
// Billing is off unless a Stripe key is configured (docs/api.md §10.4): checkout and portal answer
// 503 and the summary says billing_configured false.
//
// # Webhooks: idempotent and ordered
//
// Stripe delivers each event at least once and in no particular order. The state of an
// organisation's subscription (State) records the event that set it (its id, its created
// time and how late in a subscription's life its status comes):
//
//   - the same event delivered again finds its id in the state and changes nothing;
//   - an event older than the state (by created, then by status rank within one second) does
//     not overwrite it;
//   - every write is conditional on the version it read, so two deliveries racing in two
//     processes cannot both apply.
//
// After a change the organisation's plan is set (Orgs.SetPlan) from the state as it stands,
// which moves the live-key and seat caps with it (package plans), and re-checked until the
// state did not move meanwhile: the plan always ends as the latest state says, whatever the
// interleaving. A failure returns 500, so Stripe retries; the retry is a duplicate and only
// redoes the plan step, which is idempotent.
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/store"
)

// Orgs is what billing needs of the organisations; *orgs.Service is one.
type Orgs interface {
	// Access returns the user's role in the organisation and its plan; ok is false when the
	// user is not a member or there is no such organisation.
	Access(ctx context.Context, orgID, userID string) (role, plan string, ok bool, err error)
	// SetPlan moves the organisation to plan id, and its caps with it; an error wrapping
	// orgs.ErrNotFound means there is no such organisation.
	SetPlan(ctx context.Context, orgID, planID string) error
}

// Auditor records audit entries; *audit.Log is one.
type Auditor interface {
	Record(ctx context.Context, orgID, action, actorUserID, actorEmail, target string, detail map[string]any) error
}

// Meter reads daily counts; *metering.Meter is one.
type Meter interface {
	Read(ctx context.Context, org, env string, from, to time.Time) ([]metering.Day, error)
}

var _ Meter = (*metering.Meter)(nil)

// The audit actions of docs/api.md §10.3.
const (
	ActionCheckoutStarted     = "billing.checkout_started"
	ActionSubscriptionChanged = "billing.subscription_changed"
)

// Metadata keys set on Stripe objects, read back from webhooks.
const (
	MetaOrgID  = "org_id"
	MetaPlanID = "plan_id"
)

// RoleOwner is the role of docs/api.md §10.3 that may start checkout and open the portal.
const RoleOwner = "owner"

// Errors of the package. Check them with errors.Is.
var (
	// ErrBusy is returned when concurrent changes kept refusing a write.
	ErrBusy = errors.New("billing: state kept changing; retry")
	// ErrProvider is returned when Stripe failed a call that an act depends on.
	ErrProvider = errors.New("billing: the payment provider failed")
)

// Options configure a Service.
type Options struct {
	Orgs  Orgs
	Audit Auditor
	Meter Meter
	Plans *plans.Catalogue
	// Provider sells the plans; nil means billing is off (docs/api.md §10.4: no STRIPE_SECRET_KEY).
	Provider Provider
	// WebhookSecret verifies Stripe-Signature (whsec_...); empty refuses every webhook.
	WebhookSecret string
	// WebhookTolerance is how old a signed webhook may be; stripe-go's default (5 minutes)
	// when 0. Stripe's replay protection: a captured delivery cannot be replayed later.
	WebhookTolerance time.Duration
	// ConsoleURL is the console's address, ending in "/": checkout returns to
	// <ConsoleURL>billing?checkout=success (or cancelled) and the portal to <ConsoleURL>billing.
	ConsoleURL string
	// Clock decides the current month; clock.System when nil.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Service is billing on one table. It is safe for concurrent use.
type Service struct {
	table         store.Table
	orgs          Orgs
	audit         Auditor
	meter         Meter
	plans         *plans.Catalogue
	provider      Provider
	webhookSecret string
	tolerance     time.Duration
	consoleURL    string
	clock         clock.Clock
	log           *slog.Logger
}

// New returns the billing service on table.
func New(table store.Table, opts Options) (*Service, error) {
	switch {
	case table == nil:
		return nil, errors.New("billing: no table")
	case opts.Orgs == nil:
		return nil, errors.New("billing: no Orgs")
	case opts.Meter == nil:
		return nil, errors.New("billing: no Meter")
	case opts.Plans == nil:
		return nil, errors.New("billing: no plan catalogue")
	}
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{
		table: table, orgs: opts.Orgs, audit: opts.Audit, meter: opts.Meter, plans: opts.Plans,
		provider: opts.Provider, webhookSecret: opts.WebhookSecret, tolerance: opts.WebhookTolerance,
		consoleURL: opts.ConsoleURL, clock: opts.Clock, log: opts.Logger,
	}, nil
}

// Configured reports whether billing is on (docs/api.md §10.4).
func (s *Service) Configured() bool { return s.provider != nil }

// record writes an audit entry; a failure is logged and does not undo what was done (the
// change itself is already in Stripe or in the table).
func (s *Service) record(ctx context.Context, org, action, userID, email, target string, detail map[string]any) {
	if s.audit == nil {
		return
	}
	if err := s.audit.Record(ctx, org, action, userID, email, target, detail); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "billing: audit entry not written",
			slog.String("org_id", org), slog.String("action", action), slog.String("error", err.Error()))
	}
}

// syncPlan sets org's plan from its billing state and repeats until the state did not move
// while it did so, so that the plan ends as the latest state says even when two webhooks
// interleave (see the package doc). An organisation without a subscription is left alone.
func (s *Service) syncPlan(ctx context.Context, org string) error {
	st, err := s.State(ctx, org)
	if err != nil {
		return err
	}
	for range maxAttempts {
		if !st.hasSubscription() {
			return nil
		}
		err := s.orgs.SetPlan(ctx, org, effectivePlan(st))
		if errors.Is(err, orgs.ErrNotFound) {
			// Stripe names an organisation this table does not hold (another deployment on
			// the same Stripe account): acknowledged, so that Stripe stops retrying.
			s.log.LogAttrs(ctx, slog.LevelWarn, "billing: subscription of an unknown organisation", slog.String("org_id", org))
			return nil
		}
		if err != nil {
			return fmt.Errorf("billing: set plan of %s: %w", org, err)
		}
		again, err := s.State(ctx, org)
		if err != nil {
			return err
		}
		if again.Version == st.Version {
			return nil
		}
		st = again
	}
	return fmt.Errorf("billing: set plan of %s: %w", org, ErrBusy)
}

// effectivePlan is the plan a subscription state grants: its plan while active, free once it
// has ended or before it was paid for.
func effectivePlan(st State) string {
	if st.Active() && st.PlanID != "" {
		return st.PlanID
	}
	return plans.Free
}

// Period is the calendar month (UTC) holding t: its first and last day.
func Period(t time.Time) (first, last time.Time) {
	y, m, _ := t.UTC().Date()
	first = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return first, first.AddDate(0, 1, -1)
}

// CloseAccount ends the billing of an organisation being deleted (docs/privacy.md §6): its
// Stripe customer is deleted, which cancels the subscription at once, and the indexes that
// lead from Stripe and the overage reports to it go. Its billing state goes with the
// organisation's records. A failure of Stripe is answered as ErrProvider (502), before
// anything else of the organisation changed.
func (s *Service) CloseAccount(ctx context.Context, org string) error {
	st, err := s.State(ctx, org)
	if err != nil {
		return err
	}
	if st.CustomerID != "" {
		if s.provider == nil {
			return fmt.Errorf("billing: organisation %s has a Stripe customer but billing is off: %w", org, ErrProvider)
		}
		if err := s.provider.DeleteCustomer(ctx, st.CustomerID); err != nil {
			return fmt.Errorf("%w: %w", ErrProvider, err)
		}
		if err := s.table.Delete(ctx, customerKey(st.CustomerID), store.Condition{}); err != nil {
			return fmt.Errorf("billing: forget customer of %s: %w", org, err)
		}
	}
	if err := s.table.Delete(ctx, subscribedKey(org), store.Condition{}); err != nil {
		return fmt.Errorf("billing: forget the subscription of %s: %w", org, err)
	}
	return nil
}
