package billing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v76"
	portalsession "github.com/stripe/stripe-go/v76/billingportal/session"
	checkoutsession "github.com/stripe/stripe-go/v76/checkout/session"
	"github.com/stripe/stripe-go/v76/customer"
	"github.com/stripe/stripe-go/v76/usagerecord"
)

// Provider is the payment provider the console sells plans through, an adapter like the
// table and the mailer; *Stripe is the one the service uses.
type Provider interface {
	// CreateCustomer creates the billing account of an organisation, with the e-mail address
	// receipts go to. idempotencyKey makes a retried or concurrent call create one customer,
	// not two.
	CreateCustomer(ctx context.Context, orgID, email, idempotencyKey string) (customerID string, err error)
	// CreateCheckout starts a hosted checkout of a subscription and returns its page.
	CreateCheckout(ctx context.Context, req CheckoutRequest) (url string, err error)
	// CreatePortal opens the hosted billing portal of a customer and returns its page.
	CreatePortal(ctx context.Context, customerID, returnURL string) (url string, err error)
	// ReportUsage sets the usage of a metered subscription item for the billing period
	// holding rec.Timestamp to rec.Quantity (action=set: a repeat never adds to it).
	ReportUsage(ctx context.Context, rec UsageRecord) error
	// DeleteCustomer deletes a customer, which cancels its subscriptions at once; a customer
	// already deleted is done.
	DeleteCustomer(ctx context.Context, customerID string) error
}

// UsageRecord is one report of a metered subscription item's usage (docs/console.md §3).
type UsageRecord struct {
	SubscriptionItemID string
	// Quantity is the period's total so far, in units of the metered price (1 000 reads).
	Quantity int64
	// Timestamp places the record in its billing period.
	Timestamp time.Time
	// IdempotencyKey collapses retries of one call: <item>-<period>-<quantity>.
	IdempotencyKey string
}

// CheckoutRequest is what a checkout session is made from.
type CheckoutRequest struct {
	OrgID   string
	PlanID  string
	PriceID string
	// MeteredPriceID, when not empty, is added as a second line item, without a quantity
	// (Stripe refuses one for a metered price): reads beyond the plan's included ones.
	MeteredPriceID string
	// BillingCycleAnchor, when not zero, starts the subscription's billing periods on it
	// (the first of next month): the overage is computed per calendar month (UTC), so
	// Stripe's periods must be calendar months too for a reported total to land in the
	// period it counts.
	BillingCycleAnchor time.Time
	CustomerID         string
	SuccessURL         string
	CancelURL          string
}

// Stripe is the Provider on Stripe's API (stripe-go), or on stripe-mock with an API base.
type Stripe struct {
	key     string
	backend stripe.Backend
}

var _ Provider = (*Stripe)(nil)

// stripeTimeout bounds one call to Stripe, so a slow Stripe cannot hold a console request.
const stripeTimeout = 20 * time.Second

// NewStripe returns the Stripe adapter with secret key key. apiBase overrides Stripe's
// address (stripe-mock) when not empty; httpClient, when not nil, makes the calls (tests
// record them through it). The key is only ever sent to Stripe, never logged: stripe-go's own
// logger is silenced, since it prints request details.
func NewStripe(key, apiBase string, httpClient *http.Client) *Stripe {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: stripeTimeout}
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:    httpClient,
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if apiBase != "" {
		cfg.URL = stripe.String(apiBase)
	}
	return &Stripe{key: key, backend: stripe.GetBackendWithConfig(stripe.APIBackend, cfg)}
}

// CreateCustomer creates a Stripe customer carrying the organisation id in its metadata, so
// that the Stripe dashboard and webhooks lead back to the organisation.
func (s *Stripe) CreateCustomer(ctx context.Context, orgID, email, idempotencyKey string) (string, error) {
	p := &stripe.CustomerParams{Email: stripe.String(email), Name: stripe.String(orgID)}
	p.Context = ctx
	p.AddMetadata(MetaOrgID, orgID)
	p.SetIdempotencyKey(idempotencyKey)
	c, err := (&customer.Client{B: s.backend, Key: s.key}).New(p)
	if err != nil {
		return "", fmt.Errorf("stripe: create customer of %s: %w", orgID, err)
	}
	return c.ID, nil
}

// CreateCheckout creates a Checkout Session in subscription mode for one unit of the price.
// The organisation and plan ride along as client_reference_id and metadata, on the session
// and on the subscription it creates, so that webhooks name them.
func (s *Stripe) CreateCheckout(ctx context.Context, req CheckoutRequest) (string, error) {
	p := &stripe.CheckoutSessionParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		Customer:          stripe.String(req.CustomerID),
		ClientReferenceID: stripe.String(req.OrgID),
		SuccessURL:        stripe.String(req.SuccessURL),
		CancelURL:         stripe.String(req.CancelURL),
		LineItems: []*stripe.CheckoutSessionLineItemParams{
			{Price: stripe.String(req.PriceID), Quantity: stripe.Int64(1)},
		},
		SubscriptionData: &stripe.CheckoutSessionSubscriptionDataParams{
			Metadata: map[string]string{MetaOrgID: req.OrgID, MetaPlanID: req.PlanID},
		},
	}
	if req.MeteredPriceID != "" {
		p.LineItems = append(p.LineItems, &stripe.CheckoutSessionLineItemParams{Price: stripe.String(req.MeteredPriceID)})
	}
	if !req.BillingCycleAnchor.IsZero() {
		p.SubscriptionData.BillingCycleAnchor = stripe.Int64(req.BillingCycleAnchor.Unix())
	}
	p.Context = ctx
	p.AddMetadata(MetaOrgID, req.OrgID)
	p.AddMetadata(MetaPlanID, req.PlanID)
	cs, err := (&checkoutsession.Client{B: s.backend, Key: s.key}).New(p)
	if err != nil {
		return "", fmt.Errorf("stripe: create checkout session of %s: %w", req.OrgID, err)
	}
	if cs.URL == "" {
		return "", fmt.Errorf("stripe: checkout session %s has no url", cs.ID)
	}
	return cs.URL, nil
}

// CreatePortal creates a billing portal session returning to returnURL.
func (s *Stripe) CreatePortal(ctx context.Context, customerID, returnURL string) (string, error) {
	p := &stripe.BillingPortalSessionParams{
		Customer:  stripe.String(customerID),
		ReturnURL: stripe.String(returnURL),
	}
	p.Context = ctx
	ps, err := (&portalsession.Client{B: s.backend, Key: s.key}).New(p)
	if err != nil {
		return "", fmt.Errorf("stripe: create portal session of %s: %w", customerID, err)
	}
	if ps.URL == "" {
		return "", fmt.Errorf("stripe: portal session %s has no url", ps.ID)
	}
	return ps.URL, nil
}

// ReportUsage creates a usage record with action=set (stripe-go v76 usagerecord.New) under
// the record's Idempotency-Key.
func (s *Stripe) ReportUsage(ctx context.Context, rec UsageRecord) error {
	p := &stripe.UsageRecordParams{
		SubscriptionItem: stripe.String(rec.SubscriptionItemID),
		Action:           stripe.String("set"),
		Quantity:         stripe.Int64(rec.Quantity),
		Timestamp:        stripe.Int64(rec.Timestamp.Unix()),
	}
	p.Context = ctx
	p.SetIdempotencyKey(rec.IdempotencyKey)
	if _, err := (&usagerecord.Client{B: s.backend, Key: s.key}).New(p); err != nil {
		return fmt.Errorf("stripe: report usage of %s: %w", rec.SubscriptionItemID, err)
	}
	return nil
}

// DeleteCustomer deletes the customer (stripe-go v76 customer.Del): Stripe cancels its
// subscriptions at once and keeps no address of it, while its invoices stay in the Stripe
// account's records. A customer Stripe does not know (deleted before) is done.
func (s *Stripe) DeleteCustomer(ctx context.Context, customerID string) error {
	p := &stripe.CustomerParams{}
	p.Context = ctx
	_, err := (&customer.Client{B: s.backend, Key: s.key}).Del(customerID, p)
	if se, ok := errors.AsType[*stripe.Error](err); ok && se.HTTPStatusCode == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stripe: delete customer %s: %w", customerID, err)
	}
	return nil
}
