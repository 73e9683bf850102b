package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
)

// newBilling builds the billing group on the organisations og and the plan catalogue.
// Billing is on only with a Stripe key (docs/api.md §10.4); the key never leaves the Stripe
// adapter.
func newBilling(d Deps, og *orgs.Service, catalogue *plans.Catalogue, serving bool) (*billing.Service, error) {
	cfg := d.Config.Billing
	var provider billing.Provider
	if cfg.Configured() {
		provider = billing.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIBase, nil)
	}
	consoleURL := d.Config.ConsoleURL
	if consoleURL != "" && !strings.HasSuffix(consoleURL, "/") {
		consoleURL += "/"
	}
	if serving {
		switch {
		case !cfg.Configured():
			d.Logger.Info("billing is off (no STRIPE_SECRET_KEY): checkout and portal answer 503")
		case cfg.StripeWebhookSecret == "":
			d.Logger.Warn("no STRIPE_WEBHOOK_SECRET: Stripe's webhooks are refused, so subscriptions never reach the plans")
		case consoleURL == "":
			d.Logger.Warn("no console address (ROADEVENTS_CONSOLE_URL): checkout and portal have no page to return to and answer 503")
		}
	}
	s, err := billing.New(d.Table, billing.Options{
		Orgs: og, Audit: og.Audit(), Meter: d.Meter, Plans: catalogue, Provider: provider,
		WebhookSecret: cfg.StripeWebhookSecret, ConsoleURL: consoleURL,
		Clock: d.Clock, Logger: d.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return s, nil
}

// Billing returns the billing service, for the overage job (billing.Service.ReportOverage),
// which no route runs: main.go's hourly ticker and the billing function's scheduled
// invocations do.
func (a *API) Billing() *billing.Service { return a.billing }

// scheduledEvent is the part of an EventBridge event that tells a schedule rule's
// invocation from an HTTP API one.
type scheduledEvent struct {
	Source     string `json:"source"`
	DetailType string `json:"detail-type"`
}

// IsScheduledEvent reports whether payload is an EventBridge scheduled event (source
// aws.events, detail-type "Scheduled Event"), as an EventBridge schedule rule sends it.
func IsScheduledEvent(payload []byte) bool {
	var ev scheduledEvent
	return json.Unmarshal(payload, &ev) == nil && ev.Source == "aws.events" && ev.DetailType == "Scheduled Event"
}

// BillingHandler is the billing function's Lambda handler (lambda.Handler): an EventBridge
// scheduled event (the stack's hourly rule) runs one pass of the overage job; every other
// invocation is an HTTP API request (payload format 2.0), served by l through
// aws-lambda-go-api-proxy.
func (l *Lambda) BillingHandler() lambda.Handler {
	return billingHandler{l: l, proxy: httpadapter.NewV2(l)}
}

type billingHandler struct {
	l     *Lambda
	proxy *httpadapter.HandlerAdapterV2
}

var _ lambda.Handler = billingHandler{}

// Invoke dispatches one invocation. A failed overage pass returns its error, so the
// invocation fails and EventBridge's retry runs the pass again: it is idempotent.
func (h billingHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if IsScheduledEvent(payload) {
		if err := h.l.api.Billing().ReportOverage(ctx); err != nil {
			return nil, fmt.Errorf("report overage: %w", err)
		}
		return []byte(`{"overage_reported":true}`), nil
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode HTTP API event: %w", err)
	}
	resp, err := h.proxy.ProxyWithContext(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}
