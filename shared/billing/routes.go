package billing

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/schema"
)

// Public sentences of the handler errors (docs/api.md §7, shape 1).
const (
	DetailOrgNotFound     = "Organisation not found"
	DetailOwnerOnly       = "Only an owner of the organisation can manage its billing"
	DetailUnconfigured    = "Billing is not configured on this deployment"
	DetailUnknownPlan     = "Unknown plan"
	DetailNotSelfServe    = "This plan cannot be bought through checkout"
	DetailSubscribed      = "The organisation already has a subscription; use the billing portal to change it"
	DetailNoAccount       = "The organisation has no billing account yet; start a checkout first"
	DetailBadSignature    = "Missing or invalid Stripe-Signature"
	DetailBusy            = "The billing state changed while this request ran; retry"
	DetailProviderFailure = "The payment provider did not answer; retry later"
)

// maxWebhookBytes bounds a webhook body; Stripe's events are a few KB.
const maxWebhookBytes = 256 << 10

// Schemas, named as docs/api.md §2.9 names them.
var (
	CheckoutPayloadSchema = schema.Object(
		schema.Req("plan", schema.String().Len(1, 40).Describe("A plan id of GET /console/plans, never a payment-provider price id.")),
	).Named("CheckoutPayload")
	BillingSessionPublicSchema = schema.Object(
		schema.Req("url", schema.String().Describe("Hosted page to redirect the browser to.")),
	).Named("BillingSessionPublic")
	BillingSummarySchema = schema.Object(
		schema.Req("org_id", schema.String()),
		schema.Req("plan", plans.PublicSchema),
		schema.Req("period_start", schema.Date().Describe("First day of the current calendar month (UTC).")),
		schema.Req("period_end", schema.Date().Describe("Last day of the current calendar month (UTC).")),
		schema.Req("totals", consoleusage.TotalsSchema), // live traffic of the month so far
		schema.Req("included_reads", schema.Integer().OrNull()),
		schema.Req("billing_configured", schema.Boolean().WithDefault(false)),
		schema.Req("subscription_active", schema.Boolean().WithDefault(false)),
	).Named("BillingSummary")
	webhookAckSchema = schema.Object(
		schema.Req("received", schema.Const(true)),
	).Named("WebhookReceived")
)

// Summary is the BillingSummary record (docs/api.md §2.9).
type Summary struct {
	OrgID              string              `json:"org_id"`
	Plan               plans.Public        `json:"plan"`
	PeriodStart        string              `json:"period_start"`
	PeriodEnd          string              `json:"period_end"`
	Totals             consoleusage.Totals `json:"totals"`
	IncludedReads      *int64              `json:"included_reads"`
	BillingConfigured  bool                `json:"billing_configured"`
	SubscriptionActive bool                `json:"subscription_active"`
}

// SessionOut is the BillingSessionPublic record (docs/api.md §2.9).
type SessionOut struct {
	URL string `json:"url"`
}

type checkoutIn struct {
	Plan string `json:"plan"`
}

// Routes returns the billing group (docs/api.md §4.4, §6): plans, billing summary, checkout, portal
// and the webhook. The console routes declare httpapi.SecuritySession: mount
// consoleauth.Middleware in the API.
func Routes(s *Service) []httpapi.Route {
	tags := []string{"console billing"}
	session := []httpapi.Security{httpapi.SecuritySession}
	orgID, notFound, ownerOnly := orgs.OrgIDParam, orgs.NotMemberResponse, orgs.OwnerOnlyResponse
	unconfigured := httpapi.ErrorResponse("Billing is not configured (no Stripe key), or the payment provider failed.")
	return []httpapi.Route{
		{
			Method: http.MethodGet, Path: "/console/plans", OperationID: "listPlans", Tags: tags,
			Summary:     "The plans of this deployment",
			Description: "Every plan with its price, included reads and caps, cheapest first. Open: no credential needed.",
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Every plan, cheapest first.", schema.Array(plans.PublicSchema)),
			},
			Handler: httpapi.JSON(http.StatusOK, s.listPlans),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/billing", OperationID: "getBilling", Tags: tags, Security: session,
			Summary:     "Plan and usage of the current calendar month",
			Description: "The current calendar month in UTC, live traffic only. Readable by any member.",
			Params:      []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The billing summary.", BillingSummarySchema),
				http.StatusNotFound: notFound,
			},
			Handler: httpapi.JSON(http.StatusOK, s.summary),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/billing/checkout", OperationID: "startCheckout", Tags: tags, Security: session,
			Summary: "Start buying a self-serve plan (owner only)",
			Description: "A Stripe Checkout Session in subscription mode for the plan's price; redirect the browser " +
				"to url. The organisation's billing account is created on its first checkout and reused.",
			Params: []schema.Param{orgID},
			Body:   CheckoutPayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("The hosted checkout page.", BillingSessionPublicSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("The free and enterprise plans, an unknown plan, or a plan without a configured price."),
				http.StatusForbidden:          ownerOnly,
				http.StatusNotFound:           notFound,
				http.StatusConflict:           httpapi.ErrorResponse("Already subscribed: use the portal."),
				http.StatusServiceUnavailable: unconfigured,
			},
			Handler: httpapi.JSON(http.StatusOK, s.checkout),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/billing/portal", OperationID: "openBillingPortal", Tags: tags, Security: session,
			Summary:     "Open the hosted billing portal (owner only)",
			Description: "A Stripe billing portal session for the organisation's billing account; redirect the browser to url. The account exists after a first checkout (409 before).",
			Params:      []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("The hosted portal page.", BillingSessionPublicSchema),
				http.StatusForbidden:          ownerOnly,
				http.StatusNotFound:           notFound,
				http.StatusConflict:           httpapi.ErrorResponse("No billing account yet: start a checkout first."),
				http.StatusServiceUnavailable: unconfigured,
			},
			Handler: httpapi.JSON(http.StatusOK, s.portal),
		},
		{
			Method: http.MethodPost, Path: "/console/billing/webhook", OperationID: "stripeWebhook", Tags: tags,
			Summary: "Stripe's billing webhooks (called by Stripe, not by clients)",
			Description: "Verified with the Stripe-Signature header; handles checkout.session.completed and " +
				"customer.subscription.created, updated and deleted, idempotently and in order. Other events are acknowledged and ignored.",
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("Received.", webhookAckSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("Unsigned or badly signed, or not an event; nothing changed."),
				http.StatusServiceUnavailable: httpapi.ErrorResponse("Signed, but this deployment has no webhook secret to check it with."),
			},
			Handler: httpapi.HandlerFunc(s.webhook),
		},
	}
}

func (s *Service) listPlans(*httpapi.Request[httpapi.NoBody]) ([]plans.Public, error) {
	all := s.plans.All()
	out := make([]plans.Public, 0, len(all))
	for _, p := range all {
		out = append(out, p.Public())
	}
	return out, nil
}

// access is who the caller is in the path's organisation (docs/api.md §4.3: not a member is 404).
type access struct {
	org, role, plan string
	caller          consoleauth.Caller
}

func (s *Service) access(r *http.Request) (access, error) {
	c, ok := consoleauth.CallerFrom(r.Context())
	if !ok {
		return access{}, errors.New("billing: route served without consoleauth.Middleware")
	}
	org := r.PathValue("org_id")
	role, plan, ok, err := s.orgs.Access(r.Context(), org, c.User.ID)
	if err != nil {
		return access{}, fmt.Errorf("billing: resolve membership of %s: %w", org, err)
	}
	if !ok {
		return access{}, httpapi.NotFound(DetailOrgNotFound)
	}
	return access{org: org, role: role, plan: plan, caller: c}, nil
}

// ownerAct resolves the caller as an owner of a configured billing (docs/api.md §10.3: checkout and
// portal are owner acts; docs/api.md §10.4: 503 while billing is off).
func (s *Service) ownerAct(r *http.Request) (access, error) {
	a, err := s.access(r)
	if err != nil {
		return a, err
	}
	if a.role != RoleOwner {
		return a, httpapi.Forbidden(DetailOwnerOnly)
	}
	if !s.Configured() {
		return a, httpapi.NewError(http.StatusServiceUnavailable, DetailUnconfigured, nil)
	}
	return a, nil
}

func (s *Service) summary(in *httpapi.Request[httpapi.NoBody]) (Summary, error) {
	r := in.HTTP
	a, err := s.access(r)
	if err != nil {
		return Summary{}, err
	}
	p, ok := s.plans.Get(a.plan)
	if !ok {
		// A plan this deployment does not list: show its id rather than fail the page.
		p = plans.Plan{ID: a.plan, Name: a.plan}
	}
	now := s.clock.Now()
	first, last := Period(now)
	days, err := s.meter.Read(r.Context(), a.org, "live", first, now)
	if err != nil {
		return Summary{}, fmt.Errorf("billing: read usage of %s: %w", a.org, err)
	}
	st, err := s.State(r.Context(), a.org)
	if err != nil {
		return Summary{}, err
	}
	return Summary{
		OrgID: a.org, Plan: p.Public(),
		PeriodStart:        first.Format(metering.DateFormat),
		PeriodEnd:          last.Format(metering.DateFormat),
		Totals:             consoleusage.TotalsOf(metering.Sum(days)),
		IncludedReads:      p.IncludedReads,
		BillingConfigured:  s.Configured(),
		SubscriptionActive: st.Active(),
	}, nil
}

func (s *Service) checkout(in *httpapi.Request[checkoutIn]) (SessionOut, error) {
	r := in.HTTP
	a, err := s.ownerAct(r)
	if err != nil {
		return SessionOut{}, err
	}
	p, ok := s.plans.Get(in.Body.Plan)
	switch {
	case !ok:
		return SessionOut{}, httpapi.BadRequest(DetailUnknownPlan)
	case !p.SelfServe || p.PriceID == "":
		// Free and enterprise are never sold through checkout (docs/api.md §4.4), nor a self-serve
		// plan whose price this deployment did not configure.
		return SessionOut{}, httpapi.BadRequest(DetailNotSelfServe)
	}
	if s.consoleURL == "" {
		return SessionOut{}, httpapi.NewError(http.StatusServiceUnavailable, DetailUnconfigured, errors.New("billing: no console URL for checkout's return pages"))
	}
	ctx := r.Context()
	st, err := s.State(ctx, a.org)
	if err != nil {
		return SessionOut{}, err
	}
	if st.Active() {
		return SessionOut{}, httpapi.Conflict(DetailSubscribed)
	}
	customerID, err := s.ensureCustomer(ctx, a.org, a.caller.User.Email)
	if err != nil {
		return SessionOut{}, providerFailure(err)
	}
	req := CheckoutRequest{
		OrgID: a.org, PlanID: p.ID, PriceID: p.PriceID, CustomerID: customerID,
		SuccessURL: s.consoleURL + "billing?checkout=success",
		CancelURL:  s.consoleURL + "billing?checkout=cancelled",
	}
	if p.MeteredPriceID != "" {
		// Overage is counted per calendar month (UTC), like the billing summary: the
		// subscription's periods start on the first of the month so that each reported
		// total falls in the period it counts (docs/console.md §3).
		req.MeteredPriceID = p.MeteredPriceID
		_, last := Period(s.clock.Now())
		req.BillingCycleAnchor = last.AddDate(0, 0, 1)
	}
	url, err := s.provider.CreateCheckout(ctx, req)
	if err != nil {
		return SessionOut{}, providerFailure(err)
	}
	s.record(ctx, a.org, ActionCheckoutStarted, a.caller.User.ID, a.caller.User.Email, p.ID, map[string]any{"plan_id": p.ID})
	return SessionOut{URL: url}, nil
}

func (s *Service) portal(in *httpapi.Request[httpapi.NoBody]) (SessionOut, error) {
	r := in.HTTP
	a, err := s.ownerAct(r)
	if err != nil {
		return SessionOut{}, err
	}
	st, err := s.State(r.Context(), a.org)
	if err != nil {
		return SessionOut{}, err
	}
	if st.CustomerID == "" {
		return SessionOut{}, httpapi.Conflict(DetailNoAccount)
	}
	if s.consoleURL == "" {
		return SessionOut{}, httpapi.NewError(http.StatusServiceUnavailable, DetailUnconfigured, errors.New("billing: no console URL for the portal's return page"))
	}
	url, err := s.provider.CreatePortal(r.Context(), st.CustomerID, s.consoleURL+"billing")
	if err != nil {
		return SessionOut{}, providerFailure(err)
	}
	return SessionOut{URL: url}, nil
}

// providerFailure answers a failed call to Stripe with 503 (retry later); ErrBusy too. Both
// say when to retry, as every passing 503 does (docs/operations.md §1).
func providerFailure(err error) error {
	detail := DetailProviderFailure
	if errors.Is(err, ErrBusy) {
		detail = DetailBusy
	}
	return httpapi.NewError(http.StatusServiceUnavailable, detail, err).WithHeader("Retry-After", "2")
}

// webhook applies a Stripe event. Its checks come in the same order whatever the billing
// state (docs/api.md §10.3): a call that is not signed at all is 400; a signed one that this
// deployment cannot check, having no webhook secret (billing off, or on without the secret),
// is 503; a signature that does not verify is 400.
func (s *Service) webhook(w http.ResponseWriter, r *http.Request) error {
	// The header's values joined again: Stripe-Signature is one comma-separated value
	// ("t=...,v1=..."), which aws-lambda-go-api-proxy splits at its commas into several
	// values on Lambda, so Get alone would see only "t=..." and refuse every delivery.
	signature := strings.Join(r.Header.Values("Stripe-Signature"), ",")
	if !signed(signature) {
		return httpapi.NewError(http.StatusBadRequest, DetailBadSignature, errors.New("billing: webhook without a signature"))
	}
	if s.webhookSecret == "" {
		return httpapi.NewError(http.StatusServiceUnavailable, DetailUnconfigured, errors.New("billing: no webhook secret"))
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBytes))
	if err != nil {
		return httpapi.NewError(http.StatusBadRequest, DetailBadSignature, fmt.Errorf("billing: read webhook: %w", err))
	}
	ev, err := webhook.ConstructEventWithOptions(payload, signature, s.webhookSecret,
		webhook.ConstructEventOptions{
			Tolerance: s.tolerance,
			// Events come in the API version of the webhook endpoint, which may differ from
			// stripe-go's; only the few fields read below are relied on.
			IgnoreAPIVersionMismatch: true,
		})
	if err != nil {
		return httpapi.NewError(http.StatusBadRequest, DetailBadSignature, fmt.Errorf("billing: webhook refused: %w", err))
	}
	if err := s.HandleEvent(r.Context(), Event{ID: ev.ID, Type: string(ev.Type), Created: ev.Created, Object: ev.Data.Raw}); err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"received": true})
}

// signed reports whether a Stripe-Signature header has the form of a signature: a timestamp
// (t=<digits>) and at least one v1=<64 hex digits>. Whether it verifies is stripe-go's to say.
func signed(header string) bool {
	var stamped, v1 bool
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			_, err := strconv.ParseInt(v, 10, 64)
			stamped = err == nil
		case "v1":
			_, err := hex.DecodeString(v)
			v1 = v1 || err == nil && len(v) == 64
		}
	}
	return stamped && v1
}
