// Package groupapi is what every route group's API shares (docs/architecture.md §4): the
// description and tags of the document, the markers of console and table routes, and the
// shape of one group built on its own, as a Lambda function serves it. It imports no group,
// so that a function linking it links only its own group.
package groupapi

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"github.com/aws/aws-lambda-go/events"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi"
)

// Base is what every group is built from, including the one that never reads the table.
type Base struct {
	Config config.Config
	// Build identifies the running build (GET /health).
	Build  string
	Clock  clock.Clock
	Logger *slog.Logger
}

// Group is one route group built on its own, for a Lambda function: its API and what the
// function must do besides serving it. Every field but API may be nil.
type Group struct {
	API *httpapi.API
	// Scheduled runs the job an EventBridge schedule invokes the function for (the billing
	// group's overage report).
	Scheduled func(context.Context) error
	// Settle waits, before an invocation returns, for the writes it started that must not
	// outlive it: an instance may be frozen as soon as it answers (apikey.Keys.Wait).
	Settle func(context.Context) error
	// Flush writes what the invocations counted in memory (metering.Meter.Flush); the function
	// calls it in batches and when it shuts down.
	Flush func(context.Context) error
	// Close releases the group's store once it is flushed.
	Close func(context.Context) error
	// Stream handles a batch of the table's stream (the events group's webhook producer,
	// docs/webhooks.md §3).
	Stream func(context.Context, events.DynamoDBEvent) events.DynamoDBEventResponse
	// Queue handles a batch of the webhook turns' queue (the console-orgs group's dispatcher).
	Queue func(context.Context, events.SQSEvent) events.SQSEventResponse
}

// Constructor builds a group for a Lambda function from the instance's configuration.
type Constructor func(ctx context.Context, b Base) (*Group, error)

// NewAPI returns an API without routes, with the document's description and tags, the CORS
// origins of b.Config, and middleware around every route (the credentials its routes take).
func NewAPI(b Base, middleware ...httpapi.RouteMiddleware) *httpapi.API {
	return httpapi.New(httpapi.Config{
		Logger:      b.Logger,
		Clock:       b.Clock,
		CORSOrigins: b.Config.CORSOrigins,
		Middleware:  middleware,
		Description: "Real-time, short-lived road hazard events shared between organisations, " +
			"and the console where organisations manage themselves.",
		Tags: tags,
	})
}

// tags describe the groups of operations in the document, in the order a reader meets them.
var tags = []httpapi.Tag{
	{Name: "meta", Description: "What the service is, its health, this document, the event taxonomy and the limits. Open."},
	{Name: "events", Description: "Publish, query, revise, close and signal road events, and mint stream tickets. API key."},
	{Name: "exports", Description: "The active events around a point or in a box as Waze CIFS, WZDx, TDx or DATEX II SRTI documents. API key."},
	{Name: "stream", Description: "Live changes of the events around a point, as server-sent events. API key or stream ticket."},
	{Name: "console auth", Description: "Sign-in by e-mailed code and TOTP, recovery codes, the profile and sign-out."},
	{Name: "console organisations", Description: "Organisations, their members, invitations and audit log."},
	{Name: "console keys", Description: "The API keys of an organisation: issue, list and revoke."},
	{Name: "console usage", Description: "What an organisation's keys used, by day, and how alive its events are."},
	{Name: "console quality", Description: "How the network judges an organisation's reports."},
	{Name: "console road", Description: "The network's events around a point, one event and its evidence, the organisation's own active events, closing and revising them, and stream tickets, for the console's map."},
	{Name: "console webhooks", Description: "An organisation's webhook endpoints, their signing secrets and their deliveries with every attempt."},
	{Name: "console feeds", Description: "The open-data feeds an organisation imports: register, change, pause, delete, poll now, and each feed's health."},
	{Name: "console billing", Description: "Plans, the billing summary, checkout, the billing portal and the payment provider's webhook."},
}

// Private marks the console's routes NoStore (docs/api.md §11.3): their answers belong to one
// user, and many hold a credential (a session token, a TOTP secret, recovery codes, a new API
// key).
func Private(routes []httpapi.Route) []httpapi.Route {
	for i := range routes {
		routes[i].NoStore = true
	}
	return routes
}

// ReadsTable declares on routes, but for the operations named in tableFree, the 503 with
// Retry-After that answers a table briefly out of reach (httpapi.Unavailable,
// docs/operations.md §1); a route that declares a 503 of its own gets both in one
// description.
func ReadsTable(routes []httpapi.Route, tableFree ...string) []httpapi.Route {
	for i := range routes {
		if slices.Contains(tableFree, routes[i].OperationID) {
			continue
		}
		rs := maps.Clone(routes[i].Responses)
		if rs == nil {
			rs = map[int]httpapi.Response{}
		}
		resp, own := rs[http.StatusServiceUnavailable]
		if !own {
			resp = httpapi.Unavailable
		} else {
			resp.Description += " Or: " + httpapi.Unavailable.Description
			if !slices.ContainsFunc(resp.Headers, func(h httpapi.Header) bool { return h.Name == httpapi.RetryAfter.Name }) {
				resp.Headers = append(slices.Clone(resp.Headers), httpapi.RetryAfter)
			}
		}
		rs[http.StatusServiceUnavailable] = resp
		routes[i].Responses = rs
	}
	return routes
}
