// Package routetable is the static table of the service's route groups (docs/architecture.md §4):
// which groups there are, which of them run as Lambdas, and the method and path of every route each
// group serves. Both the code that serves the routes (shared/app, whose tests check that each group
// serves exactly its rows) and the CDK stack (infra/stack, which wires each row to its group's
// function) read it, so the deployment knows the routes without building the service. It imports
// nothing of the project.
package routetable

import "slices"

// Group names a route group: one Lambda each on AWS, but for GroupStream.
type Group string

// The route groups.
const (
	GroupMeta        Group = "meta"
	GroupEvents      Group = "events"
	GroupConsoleAuth Group = "console-auth"
	// GroupConsoleOrgs is organisations, members, invitations, audit, keys, usage, vitality,
	// the publisher reputation, the feed registry and the webhook endpoints.
	GroupConsoleOrgs Group = "console-orgs"
	// GroupBilling is plans, the billing summary, checkout, portal and the Stripe webhook.
	GroupBilling Group = "billing"
	// GroupStream is GET /v1/stream, served by the long-lived processes only (streamer/ and
	// main.go): a Lambda cannot flush a response. Its tickets
	// (POST /v1/stream/tickets) are in GroupEvents.
	GroupStream Group = "stream"
)

// All lists every group, in the order they are mounted.
var All = []Group{GroupMeta, GroupEvents, GroupConsoleAuth, GroupConsoleOrgs, GroupBilling, GroupStream}

// Lambdas are the groups served by one Lambda function each, in All's order. GroupStream is
// not among them: a proxied Lambda response cannot be flushed, so GET /v1/stream lives in
// streamer/.
var Lambdas = slices.DeleteFunc(slices.Clone(All), func(g Group) bool { return g == GroupStream })

// IsLambda reports whether g is served by a Lambda function of its own.
func (g Group) IsLambda() bool { return slices.Contains(Lambdas, g) }

// Route is one row of the table: a method and a net/http pattern path ("/{$}" is the root
// only; a trailing "{name...}" matches the rest of the path).
type Route struct {
	Method string
	Path   string
}

// String is the route as net/http and the HTTP API key it: "GET /v1/events".
func (r Route) String() string { return r.Method + " " + r.Path }

// Routes returns the routes group g serves, none for an unknown group. The caller may modify
// the slice.
func (g Group) Routes() []Route { return slices.Clone(table[g]) }

// table holds each group's routes in the order the group declares them.
var table = map[Group][]Route{
	GroupMeta: {
		{"GET", "/health"},
		{"GET", "/{$}"},
		{"GET", "/openapi.json"},
		{"GET", "/v1/meta/event-types"},
		{"GET", "/v1/meta/taxonomy"},
		{"GET", "/v1/meta/limits"},
		{"GET", "/v1/meta/basemap"},
	},
	GroupEvents: {
		{"POST", "/v1/events"},
		{"GET", "/v1/events"},
		{"GET", "/v1/events/{event_id}"},
		{"POST", "/v1/events/{event_id}/revisions"},
		{"POST", "/v1/events/{event_id}/close"},
		{"GET", "/v1/events/{event_id}/evidence"},
		{"POST", "/v1/events/{event_id}/signals"},
		{"GET", "/v1/exports/cifs"},
		{"GET", "/v1/exports/wzdx"},
		{"GET", "/v1/exports/tdx"},
		{"GET", "/v1/exports/datex2"},
		{"POST", "/v1/stream/tickets"},
		{"GET", "/console/orgs/{org_id}/events"},
		{"GET", "/console/orgs/{org_id}/events/{event_id}"},
		{"GET", "/console/orgs/{org_id}/events/{event_id}/evidence"},
		{"POST", "/console/orgs/{org_id}/events/{event_id}/revisions"},
		{"POST", "/console/orgs/{org_id}/events/{event_id}/close"},
		{"POST", "/console/orgs/{org_id}/stream/tickets"},
		{"GET", "/console/orgs/{org_id}/own-events"},
	},
	GroupConsoleAuth: {
		{"GET", "/console/auth/me/export"},
		{"POST", "/console/auth/request-code"},
		{"POST", "/console/auth/verify-code"},
		{"POST", "/console/auth/verify-totp"},
		{"POST", "/console/auth/verify-recovery"},
		{"POST", "/console/auth/totp/setup"},
		{"POST", "/console/auth/totp/confirm"},
		{"POST", "/console/auth/totp/disable"},
		{"GET", "/console/auth/recovery-codes"},
		{"POST", "/console/auth/recovery-codes/regenerate"},
		{"GET", "/console/auth/me"},
		{"PATCH", "/console/auth/me"},
		{"DELETE", "/console/auth/me"},
		{"POST", "/console/auth/logout"},
	},
	GroupConsoleOrgs: {
		{"POST", "/console/orgs"},
		{"GET", "/console/orgs"},
		{"GET", "/console/orgs/{org_id}"},
		{"PATCH", "/console/orgs/{org_id}"},
		{"DELETE", "/console/orgs/{org_id}"},
		{"GET", "/console/orgs/{org_id}/members"},
		{"POST", "/console/orgs/{org_id}/members"},
		{"PATCH", "/console/orgs/{org_id}/members/{user_id}"},
		{"DELETE", "/console/orgs/{org_id}/members/{user_id}"},
		{"POST", "/console/orgs/{org_id}/leave"},
		{"DELETE", "/console/orgs/{org_id}/invitations/{invite_id}"},
		{"POST", "/console/orgs/{org_id}/invitations/{invite_id}/resend"},
		{"POST", "/console/invitations/accept"},
		{"GET", "/console/orgs/{org_id}/audit"},
		{"GET", "/console/orgs/{org_id}/keys"},
		{"POST", "/console/orgs/{org_id}/keys"},
		{"DELETE", "/console/orgs/{org_id}/keys/{key_id}"},
		{"GET", "/console/orgs/{org_id}/usage"},
		{"GET", "/console/orgs/{org_id}/vitality"},
		{"GET", "/console/orgs/{org_id}/reputation"},
		{"GET", "/console/orgs/{org_id}/feeds"},
		{"POST", "/console/orgs/{org_id}/feeds"},
		{"GET", "/console/orgs/{org_id}/feeds/{feed_id}"},
		{"PATCH", "/console/orgs/{org_id}/feeds/{feed_id}"},
		{"DELETE", "/console/orgs/{org_id}/feeds/{feed_id}"},
		{"POST", "/console/orgs/{org_id}/feeds/{feed_id}/poll"},
		{"GET", "/console/orgs/{org_id}/webhooks"},
		{"POST", "/console/orgs/{org_id}/webhooks"},
		{"GET", "/console/orgs/{org_id}/webhooks/{endpoint_id}"},
		{"PATCH", "/console/orgs/{org_id}/webhooks/{endpoint_id}"},
		{"DELETE", "/console/orgs/{org_id}/webhooks/{endpoint_id}"},
		{"POST", "/console/orgs/{org_id}/webhooks/{endpoint_id}/rotate"},
		{"GET", "/console/orgs/{org_id}/webhooks/{endpoint_id}/deliveries"},
		{"POST", "/console/orgs/{org_id}/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver"},
		{"GET", "/console/orgs/{org_id}/alert-rules"},
		{"POST", "/console/orgs/{org_id}/alert-rules"},
		{"GET", "/console/orgs/{org_id}/alert-rules/{rule_id}"},
		{"PATCH", "/console/orgs/{org_id}/alert-rules/{rule_id}"},
		{"DELETE", "/console/orgs/{org_id}/alert-rules/{rule_id}"},
	},
	GroupBilling: {
		{"GET", "/console/plans"},
		{"GET", "/console/orgs/{org_id}/billing"},
		{"POST", "/console/orgs/{org_id}/billing/checkout"},
		{"POST", "/console/orgs/{org_id}/billing/portal"},
		{"POST", "/console/billing/webhook"},
	},
	GroupStream: {
		{"GET", "/v1/stream"},
	},
}
