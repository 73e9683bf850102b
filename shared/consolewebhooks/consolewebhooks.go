// Package consolewebhooks serves an organisation's webhook endpoints, their deliveries and its
// alert rules to the console (docs/webhooks.md §4, §5): owners register endpoints (the signing
// secret shown once), change, disable, delete them, rotate their secret, redeliver a delivery,
// and make, change and delete alert rules; every member reads them and each delivery's
// attempts. Changes are written to the audit log. A caller who is not a member, or an endpoint
// or rule of another organisation, gets 404 (docs/api.md §4.3).
package consolewebhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// Deps are what the routes are built from.
type Deps struct {
	Orgs      orgs.Accessor
	Endpoints *webhooks.Endpoints
	Queue     *webhooks.Queue
	Rules     *alerts.Rules
	// Delivering tells whether this deployment runs the producer and the dispatcher; when it
	// does not, registering an endpoint is refused rather than accepted in silence.
	Delivering bool
	Clock      clock.Clock
}

// Public sentences of the errors (docs/api.md §7, shape 1).
const (
	DetailNotFound         = "Webhook endpoint not found in this organisation"
	DetailDeliveryNotFound = "Delivery not found for this endpoint"
	DetailCap              = "The organisation has as many webhook endpoints as it may; delete one first"
	DetailBusy             = "The endpoint changed while this request ran; retry"
	DetailNotDelivering    = "Webhook deliveries do not run on this deployment yet (docs/webhooks.md)"
	// MsgBadURL is the validation message of a URL the dispatcher would refuse.
	MsgBadURL = "The URL must be an absolute https URL without credentials"
)

// Schemas of the routes.
var (
	kinds       = schema.Array(schema.Enum(webhooks.Kinds...)).Count(1, len(webhooks.Kinds)).Describe("What the endpoint is told of (docs/webhooks.md §1).")
	endpointURL = schema.String().Len(1, webhooks.MaxURLLen).Describe("Where deliveries are POSTed: an absolute https URL without credentials (a refusal does not echo it).")
	description = schema.String().MaxLen(webhooks.MaxDescriptionLen).Printable().OrEmpty()

	CreateEndpointPayloadSchema = schema.Object(
		schema.Req("url", endpointURL),
		schema.Req("kinds", kinds),
		schema.Prop("description", description),
		schema.Prop("enabled", schema.Boolean().WithDefault(true)),
	).Named("CreateWebhookEndpointPayload")
	EndpointUpdateSchema = schema.Object(
		schema.Prop("url", endpointURL),
		schema.Prop("kinds", kinds),
		schema.Prop("description", description),
		schema.Prop("enabled", schema.Boolean().Describe("true also clears a disabled_reason.")),
	).Named("WebhookEndpointUpdate").Describe("Only the fields sent are written.")
	EndpointPublicSchema = schema.Object(
		schema.Req("endpoint_id", schema.String()),
		schema.Req("url", schema.String()),
		schema.Req("description", schema.String()),
		schema.Req("kinds", schema.Array(schema.Enum(webhooks.Kinds...))),
		schema.Req("enabled", schema.Boolean()),
		schema.Req("disabled_reason", schema.String().OrNull().Describe("Why the service disabled the endpoint (its receiver answered 410).")),
		schema.Req("created_at", schema.DateTime()),
		schema.Req("created_by_email", schema.String().OrNull()),
		schema.Req("updated_at", schema.DateTime()),
		schema.Req("rotated_at", schema.DateTime().OrNull()),
		schema.Req("previous_secret_until", schema.DateTime().OrNull().Describe("While the previous secret still signs, beside the new one.")),
	).Named("WebhookEndpointPublic").Describe("An endpoint; its signing secret is never included.")
	IssuedEndpointSchema = schema.Object(
		schema.Req("secret", schema.String().Describe("The signing secret, whsec_ and 64 hex digits: shown this once, stored sealed.")),
		schema.Req("endpoint", EndpointPublicSchema),
	).Named("IssuedWebhookEndpoint")
	AttemptSchema = schema.Object(
		schema.Req("at", schema.DateTime()),
		schema.Req("status", schema.Integer().Describe("The receiver's HTTP status; 0 when none came.")),
		schema.Prop("error", schema.String().Describe("Why no status came: a refused connection, a timeout.")),
		schema.Req("latency_ms", schema.Integer().Min(0)),
	).Named("WebhookAttempt")
	DeliveryPublicSchema = schema.Object(
		schema.Req("delivery_id", schema.String()),
		schema.Req("endpoint_id", schema.String()),
		schema.Req("kind", schema.Enum(webhooks.Kinds...)),
		schema.Req("created_at", schema.DateTime()),
		schema.Req("state", schema.Enum(webhooks.StatePending, webhooks.StateDelivered, webhooks.StateFailed, webhooks.StateDropped)),
		schema.Req("reason", schema.String().OrNull()),
		schema.Req("next_attempt_at", schema.DateTime().OrNull().Describe("When a pending delivery is tried next.")),
		schema.Req("attempts", schema.Array(AttemptSchema)),
		schema.Req("body", schema.FreeObject().Describe("The JSON body, as sent.")),
	).Named("WebhookDelivery")
)

// EndpointPublic is the console's view of an endpoint.
type EndpointPublic struct {
	EndpointID     string     `json:"endpoint_id"`
	URL            string     `json:"url"`
	Description    string     `json:"description"`
	Kinds          []string   `json:"kinds"`
	Enabled        bool       `json:"enabled"`
	DisabledReason *string    `json:"disabled_reason"`
	CreatedAt      time.Time  `json:"created_at"`
	CreatedByEmail *string    `json:"created_by_email"`
	UpdatedAt      time.Time  `json:"updated_at"`
	RotatedAt      *time.Time `json:"rotated_at"`
	PreviousUntil  *time.Time `json:"previous_secret_until"`
}

// IssuedEndpoint is an endpoint with its new secret, shown once.
type IssuedEndpoint struct {
	Secret   string         `json:"secret"`
	Endpoint EndpointPublic `json:"endpoint"`
}

// DeliveryPublic is the console's view of a delivery.
type DeliveryPublic struct {
	DeliveryID    string             `json:"delivery_id"`
	EndpointID    string             `json:"endpoint_id"`
	Kind          string             `json:"kind"`
	CreatedAt     time.Time          `json:"created_at"`
	State         string             `json:"state"`
	Reason        *string            `json:"reason"`
	NextAttemptAt *time.Time         `json:"next_attempt_at"`
	Attempts      []webhooks.Attempt `json:"attempts"`
	Body          json.RawMessage    `json:"body"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// PublicEndpoint returns the console's view of ep.
func PublicEndpoint(ep webhooks.Endpoint, now time.Time) EndpointPublic {
	out := EndpointPublic{EndpointID: ep.ID, URL: ep.URL, Description: ep.Description, Kinds: ep.Kinds, Enabled: ep.Enabled,
		DisabledReason: nullable(ep.DisabledReason), CreatedAt: ep.CreatedAt.UTC(), CreatedByEmail: nullable(ep.CreatedByEmail),
		UpdatedAt: ep.UpdatedAt.UTC(), RotatedAt: orgs.OptionalTime(ep.RotatedAt)}
	if ep.PreviousUntil.After(now) {
		out.PreviousUntil = orgs.OptionalTime(ep.PreviousUntil)
	}
	if out.Kinds == nil {
		out.Kinds = []string{}
	}
	return out
}

// PublicDelivery returns the console's view of d.
func PublicDelivery(d webhooks.Delivery) DeliveryPublic {
	out := DeliveryPublic{DeliveryID: d.ID, EndpointID: d.Endpoint, Kind: d.Kind, CreatedAt: d.CreatedAt.UTC(), State: d.State,
		Reason: nullable(d.Reason), Attempts: d.Attempts, Body: json.RawMessage(d.Body)}
	if d.State == webhooks.StatePending {
		out.NextAttemptAt = orgs.OptionalTime(d.NextAttemptAt)
	}
	if out.Attempts == nil {
		out.Attempts = []webhooks.Attempt{}
	}
	return out
}

type updateIn struct {
	URL         *string  `json:"url"`
	Kinds       []string `json:"kinds"`
	Description *string  `json:"description"`
	Enabled     *bool    `json:"enabled"`
}

func (u updateIn) draft() webhooks.EndpointDraft {
	return webhooks.EndpointDraft{URL: u.URL, Kinds: u.Kinds, Description: u.Description, Enabled: u.Enabled}
}

// ErrorTable gives the errors their status and public sentence.
var ErrorTable = notDelivering.With(
	httpapi.ErrorRule{Err: webhooks.ErrNotFound, Status: http.StatusNotFound, Detail: DetailNotFound},
	httpapi.ErrorRule{Err: webhooks.ErrDeliveryNotFound, Status: http.StatusNotFound, Detail: DetailDeliveryNotFound},
	httpapi.ErrorRule{Err: webhooks.ErrCap, Status: http.StatusConflict, Detail: DetailCap},
	httpapi.ErrorRule{Err: webhooks.ErrBusy, Status: http.StatusServiceUnavailable, Detail: DetailBusy},
)

// notDelivering answers the caller's refusals and a deployment where deliveries do not run,
// for the endpoints' routes and the rules'.
var notDelivering = orgs.CallerErrors.With(
	httpapi.ErrorRule{Err: errNotDelivering, Status: http.StatusServiceUnavailable, Detail: DetailNotDelivering},
)

var errNotDelivering = errors.New("consolewebhooks: no producer or dispatcher runs on this deployment")

// Routes returns the webhook routes, for the console-orgs group.
func Routes(d Deps) []httpapi.Route {
	if d.Clock == nil {
		d.Clock = clock.System
	}
	h := handlers{d: d}
	session := []httpapi.Security{httpapi.SecuritySession}
	tags := []string{"console webhooks"}
	endpointID := schema.Path("endpoint_id", schema.String()).Describe("An endpoint of the organisation.")
	deliveryID := schema.Path("delivery_id", schema.String()).Describe("A delivery to the endpoint.")
	one := httpapi.JSONResponse("The endpoint.", EndpointPublicSchema)
	issued := httpapi.JSONResponse("The endpoint and its signing secret, shown this once.", IssuedEndpointSchema)
	ownerOnly := orgs.OwnerOnlyResponse
	notFound := httpapi.ErrorResponse("The caller is not a member of the organisation, or the endpoint is not the organisation's.")
	busy := httpapi.ErrorResponse("The endpoint kept changing under concurrent requests; retry.")
	base := "/console/orgs/{org_id}/webhooks"
	routes := []httpapi.Route{
		{
			Method: http.MethodGet, Path: base, OperationID: "listWebhookEndpoints", Tags: tags, Security: session,
			Summary: "The organisation's webhook endpoints, oldest first", Description: "Readable by any member; secrets are never shown again.",
			Params:    []schema.Param{orgs.OrgIDParam},
			Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("Endpoints.", schema.Array(EndpointPublicSchema)), http.StatusNotFound: orgs.NotMemberResponse},
			Handler:   httpapi.JSON(http.StatusOK, h.list),
		},
		{
			Method: http.MethodPost, Path: base, OperationID: "createWebhookEndpoint", Tags: tags, Security: session,
			Summary: "Register a webhook endpoint (owner)",
			Description: fmt.Sprintf("Deliveries of the kinds chosen are signed with a secret shown in this answer only (docs/webhooks.md §2). "+
				"At most %d endpoints per organisation. Written to the audit log.", webhooks.MaxEndpointsPerOrg),
			Params: []schema.Param{orgs.OrgIDParam}, Body: CreateEndpointPayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusCreated: issued, http.StatusForbidden: ownerOnly, http.StatusNotFound: orgs.NotMemberResponse,
				http.StatusConflict:           httpapi.ErrorResponse("The organisation has as many endpoints as it may."),
				http.StatusServiceUnavailable: httpapi.ErrorResponse("Deliveries do not run on this deployment yet, or a registration at the same moment; retry."),
			},
			Handler: httpapi.JSON(http.StatusCreated, h.create),
		},
		{
			Method: http.MethodGet, Path: base + "/{endpoint_id}", OperationID: "getWebhookEndpoint", Tags: tags, Security: session,
			Summary: "A webhook endpoint", Description: "Readable by any member.",
			Params:    []schema.Param{orgs.OrgIDParam, endpointID},
			Responses: map[int]httpapi.Response{http.StatusOK: one, http.StatusNotFound: notFound},
			Handler:   httpapi.JSON(http.StatusOK, h.get),
		},
		{
			Method: http.MethodPatch, Path: base + "/{endpoint_id}", OperationID: "updateWebhookEndpoint", Tags: tags, Security: session,
			Summary: "Change, disable or enable a webhook endpoint (owner)", Description: "Only the fields sent are written. Written to the audit log.",
			Params: []schema.Param{orgs.OrgIDParam, endpointID}, Body: EndpointUpdateSchema,
			Responses: map[int]httpapi.Response{http.StatusOK: one, http.StatusForbidden: ownerOnly, http.StatusNotFound: notFound, http.StatusServiceUnavailable: busy},
			Handler:   httpapi.JSON(http.StatusOK, h.update),
		},
		{
			Method: http.MethodDelete, Path: base + "/{endpoint_id}", OperationID: "deleteWebhookEndpoint", Tags: tags, Security: session,
			Summary: "Delete a webhook endpoint (owner)", Description: "Its pending deliveries are dropped. Written to the audit log.",
			Params:    []schema.Param{orgs.OrgIDParam, endpointID},
			Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("Done.", consoleauth.OkResponseSchema), http.StatusForbidden: ownerOnly, http.StatusNotFound: notFound},
			Handler:   httpapi.JSON(http.StatusOK, h.delete),
		},
		{
			Method: http.MethodPost, Path: base + "/{endpoint_id}/rotate", OperationID: "rotateWebhookSecret", Tags: tags, Security: session,
			Summary: "Give a webhook endpoint a new signing secret (owner)",
			Description: "The new secret is shown this once; the previous one still signs, beside it, for 24 hours (docs/webhooks.md §2). " +
				"Written to the audit log.",
			Params:    []schema.Param{orgs.OrgIDParam, endpointID},
			Responses: map[int]httpapi.Response{http.StatusOK: issued, http.StatusForbidden: ownerOnly, http.StatusNotFound: notFound, http.StatusServiceUnavailable: busy},
			Handler:   httpapi.JSON(http.StatusOK, h.rotate),
		},
		{
			Method: http.MethodGet, Path: base + "/{endpoint_id}/deliveries", OperationID: "listWebhookDeliveries", Tags: tags, Security: session,
			Summary: "An endpoint's deliveries, newest first, with every attempt", Description: "Readable by any member. Deliveries are kept 30 days.",
			Params: []schema.Param{orgs.OrgIDParam, endpointID,
				schema.Query("limit", schema.Integer().Range(1, 200).WithDefault(50)).Describe("How many, newest first.")},
			Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("Deliveries.", schema.Array(DeliveryPublicSchema)), http.StatusNotFound: notFound},
			Handler:   httpapi.JSON(http.StatusOK, h.deliveries),
		},
		{
			Method: http.MethodPost, Path: base + "/{endpoint_id}/deliveries/{delivery_id}/redeliver", OperationID: "redeliverWebhook", Tags: tags, Security: session,
			Summary:     "Send a delivery again (owner)",
			Description: "The delivery is pending again, due at once, with 24 hours of retries of its own; a pending one is left as it is.",
			Params:      []schema.Param{orgs.OrgIDParam, endpointID, deliveryID},
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("The delivery.", DeliveryPublicSchema), http.StatusForbidden: ownerOnly,
				http.StatusNotFound:           httpapi.ErrorResponse("The caller is not a member, or the delivery is not one of the organisation's endpoint."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, h.redeliver),
		},
	}
	return append(ErrorTable.Defaults(routes), ruleRoutes(h)...)
}

type handlers struct {
	d Deps
}

// caller resolves the caller's organisation and, as an actor, the caller (orgs.CallerIn).
func (h handlers) caller(r *http.Request, owner bool) (string, webhooks.Actor, error) {
	org, a, err := orgs.CallerIn(r, h.d.Orgs, owner)
	return org, webhooks.Actor{UserID: a.UserID, Email: a.Email}, err
}

// badURL answers the refusal of a URL as a validation error at body.url, without the URL.
func badURL(err error) error {
	if !errors.Is(err, webhooks.ErrInvalid) {
		return err
	}
	return schema.Errors{{Type: schema.ErrValue, Loc: []any{"body", "url"}, Msg: MsgBadURL}}
}

func (h handlers) list(r *httpapi.Request[httpapi.NoBody]) ([]EndpointPublic, error) {
	org, _, err := h.caller(r.HTTP, false)
	if err != nil {
		return nil, err
	}
	list, err := h.d.Endpoints.List(r.Context(), org)
	out := make([]EndpointPublic, len(list))
	for i, ep := range list {
		out[i] = PublicEndpoint(ep, h.d.Clock.Now())
	}
	return out, err
}

func (h handlers) create(r *httpapi.Request[updateIn]) (IssuedEndpoint, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return IssuedEndpoint{}, err
	}
	if !h.d.Delivering {
		return IssuedEndpoint{}, errNotDelivering
	}
	ep, secret, err := h.d.Endpoints.Create(r.Context(), org, actor, r.Body.draft())
	return IssuedEndpoint{Secret: secret, Endpoint: PublicEndpoint(ep, h.d.Clock.Now())}, badURL(err)
}

func (h handlers) get(r *httpapi.Request[httpapi.NoBody]) (EndpointPublic, error) {
	org, _, err := h.caller(r.HTTP, false)
	if err != nil {
		return EndpointPublic{}, err
	}
	ep, err := h.d.Endpoints.Get(r.Context(), org, r.Params.String("endpoint_id"))
	return PublicEndpoint(ep, h.d.Clock.Now()), err
}

func (h handlers) update(r *httpapi.Request[updateIn]) (EndpointPublic, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return EndpointPublic{}, err
	}
	ep, err := h.d.Endpoints.Update(r.Context(), org, r.Params.String("endpoint_id"), actor, r.Body.draft())
	return PublicEndpoint(ep, h.d.Clock.Now()), badURL(err)
}

func (h handlers) delete(r *httpapi.Request[httpapi.NoBody]) (consoleauth.OkResponse, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return consoleauth.OkResponse{}, err
	}
	return consoleauth.OkResponse{OK: true}, h.d.Endpoints.Delete(r.Context(), org, r.Params.String("endpoint_id"), actor)
}

func (h handlers) rotate(r *httpapi.Request[httpapi.NoBody]) (IssuedEndpoint, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return IssuedEndpoint{}, err
	}
	ep, secret, err := h.d.Endpoints.Rotate(r.Context(), org, r.Params.String("endpoint_id"), actor)
	return IssuedEndpoint{Secret: secret, Endpoint: PublicEndpoint(ep, h.d.Clock.Now())}, err
}

func (h handlers) deliveries(r *httpapi.Request[httpapi.NoBody]) ([]DeliveryPublic, error) {
	org, _, err := h.caller(r.HTTP, false)
	if err != nil {
		return nil, err
	}
	ep, err := h.d.Endpoints.Get(r.Context(), org, r.Params.String("endpoint_id"))
	if err != nil {
		return nil, err
	}
	list, err := h.d.Queue.List(r.Context(), org, ep.ID, int(r.Params.Int("limit")))
	out := make([]DeliveryPublic, len(list))
	for i, d := range list {
		out[i] = PublicDelivery(d)
	}
	return out, err
}

func (h handlers) redeliver(r *httpapi.Request[httpapi.NoBody]) (DeliveryPublic, error) {
	org, _, err := h.caller(r.HTTP, true)
	if err != nil {
		return DeliveryPublic{}, err
	}
	d, err := h.d.Queue.Redeliver(r.Context(), org, r.Params.String("endpoint_id"), r.Params.String("delivery_id"))
	return PublicDelivery(d), err
}
