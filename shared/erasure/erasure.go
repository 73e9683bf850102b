// Package erasure runs the two acts that remove people and organisations (docs/privacy.md §6):
// DELETE /console/orgs/{org_id}, by which an owner deletes an organisation, and DELETE
// /console/auth/me, by which a person erases their account. Each package that keeps something
// of theirs removes it with its own step (orgs.Purge, consoleauth.Erase, billing.CloseAccount,
// the registries' RemoveOrg and ForgetAddress); this package decides the order, so that a
// refusal changes nothing and an act that fails half-way is finished by sending it again.
package erasure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// OrgStep removes what a package keeps of an organisation being deleted; it must be
// idempotent.
type OrgStep func(ctx context.Context, orgID string) error

// AddressStep makes a package's records of an organisation stop naming an erased address; it
// must be idempotent.
type AddressStep func(ctx context.Context, orgID, email string) error

// Billing ends an organisation's billing; *billing.Service is one.
type Billing interface {
	CloseAccount(ctx context.Context, orgID string) error
}

// Deps are what the acts are built from.
type Deps struct {
	Auth *consoleauth.Service
	Orgs *orgs.Service
	// Billing, when not nil, closes the billing of a deleted organisation first.
	Billing Billing
	// RemoveOrg are the other packages' steps for a deleted organisation (feeds, alert rules);
	// what lives in the organisation's own partition goes with orgs.Purge.
	RemoveOrg []OrgStep
	// ForgetAddress are the other packages' steps for an erased address (keys, feeds,
	// webhook endpoints, alert rules); orgs.ForgetAddress runs first.
	ForgetAddress []AddressStep
	Logger        *slog.Logger
}

// StepUpPayloadSchema is the body of both acts.
var StepUpPayloadSchema = schema.Object(
	schema.Prop("totp_code", schema.String().MaxLen(16).OrNull().Describe("Required when the caller's account has TOTP enabled.")),
).Named("StepUpPayload")

type stepUpIn struct {
	TOTPCode *string `json:"totp_code"`
}

// Public sentences of the acts' refusals.
const (
	DetailTOTPRequired = "A valid, unused totp_code is required for this act from an account with TOTP enabled"
	detailLastOwner    = "You are the last owner of %q (%s), which has other members: make another member an owner, or delete the organisation, first"
)

// errorTable extends the organisations' table with the acts' own sentences.
var errorTable = orgs.ErrorTable.With(
	httpapi.ErrorRule{Err: orgs.ErrTOTPRequired, Status: http.StatusForbidden, Detail: DetailTOTPRequired},
	httpapi.ErrorRule{Err: billing.ErrProvider, Status: http.StatusServiceUnavailable, Detail: billing.DetailProviderFailure},
)

// New returns the acts' dependencies on the services of a group: the records that feeds,
// alert rules, webhook endpoints and keys keep of organisations and addresses, and billing
// (which may be nil).
func New(auth *consoleauth.Service, og *orgs.Service, keys *apikey.Keys, reg *feeds.Registry, rules *alerts.Rules,
	endpoints *webhooks.Endpoints, bill *billing.Service, log *slog.Logger) Deps {
	d := Deps{
		Auth: auth, Orgs: og, Logger: log,
		RemoveOrg:     []OrgStep{reg.RemoveOrg, rules.RemoveOrg},
		ForgetAddress: []AddressStep{keys.ForgetAddress, reg.ForgetAddress, endpoints.ForgetAddress, rules.ForgetAddress},
	}
	if bill != nil {
		d.Billing = bill
	}
	return d
}

var (
	session = []httpapi.Security{httpapi.SecuritySession}
	limited = httpapi.ErrorResponse("More than 5 TOTP attempts on the caller's account in 15 minutes.", httpapi.RetryAfter)
)

// OrgRoutes returns the deletion of an organisation, for the console-orgs group.
func OrgRoutes(d Deps) []httpapi.Route {
	x := newActs(d)
	return []httpapi.Route{
		{
			Method: http.MethodDelete, Path: orgs.OrgRoutePrefix, OperationID: "deleteOrg", Tags: []string{"console organisations"}, Security: session,
			Summary: "Delete the organisation (owner, TOTP step-up)",
			Description: "Closes its billing (the Stripe customer is deleted, which cancels the subscription), revokes every key " +
				"(their streams end), removes its feeds, webhooks, alert rules, members, invitations, audit log and usage, and " +
				"its name with them. Its events stay on the network until they expire. A deletion that failed half-way is " +
				"finished by sending it again (docs/privacy.md §6).",
			Params: []schema.Param{schema.Path("org_id", schema.String())},
			Body:   StepUpPayloadSchema, OptionalBody: true,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("Deleted.", consoleauth.OkResponseSchema),
				http.StatusForbidden:          httpapi.ErrorResponse("The caller is not an owner, or has TOTP and sent no valid, unused totp_code."),
				http.StatusNotFound:           httpapi.ErrorResponse("No such organisation, or the caller is not a member."),
				http.StatusTooManyRequests:    limited,
				http.StatusServiceUnavailable: httpapi.ErrorResponse("Stripe did not answer; nothing was deleted.", httpapi.RetryAfter),
			},
			Handler: httpapi.JSON(http.StatusOK, consoleauth.AsCaller(x.deleteOrg)),
			Errors:  errorTable,
		},
	}
}

// AccountRoutes returns the erasure of an account, for the console-auth group, which serves
// every /console/auth path (the load balancer routes by path alone).
func AccountRoutes(d Deps) []httpapi.Route {
	x := newActs(d)
	return []httpapi.Route{
		{
			Method: http.MethodDelete, Path: "/console/auth/me", OperationID: "deleteMe", Tags: []string{"console auth"}, Security: session,
			Summary: "Erase the signed-in person's account (TOTP step-up)",
			Description: "Ends every session, erases the address, display name, TOTP secret, recovery codes and the invitations " +
				"addressed to it, leaves every organisation, and deletes those of which the person is the only member. Audit " +
				"entries of their acts stay, without their address. Refused while they are the last owner of an organisation " +
				"that has other members (docs/privacy.md §6).",
			Body: StepUpPayloadSchema, OptionalBody: true,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("Erased; the session no longer works.", consoleauth.OkResponseSchema),
				http.StatusForbidden:          httpapi.ErrorResponse("The caller's account has TOTP and the request has no valid, unused totp_code."),
				http.StatusConflict:           httpapi.ErrorResponse("The caller is the last owner of an organisation with other members; the detail names it."),
				http.StatusTooManyRequests:    limited,
				http.StatusServiceUnavailable: httpapi.ErrorResponse("Stripe did not answer while an organisation of the person's own was deleted.", httpapi.RetryAfter),
			},
			Handler: httpapi.JSON(http.StatusOK, consoleauth.AsCaller(x.deleteMe)),
			Errors:  errorTable,
		},
	}
}

type acts struct{ d Deps }

func newActs(d Deps) acts {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return acts{d}
}

var done = consoleauth.OkResponse{OK: true}

func (x acts) deleteOrg(r *httpapi.Request[stepUpIn], c consoleauth.Caller) (consoleauth.OkResponse, error) {
	ctx := r.Context()
	m, ok := orgs.MembershipFrom(ctx)
	if !ok {
		return consoleauth.OkResponse{}, errors.New("erasure: organisation route served without orgs.MembershipMiddleware")
	}
	if err := m.RequireOwner(); err != nil {
		return consoleauth.OkResponse{}, err
	}
	if err := x.d.Orgs.StepUp(ctx, c, r.Body.TOTPCode, "delete organisation"); err != nil {
		return consoleauth.OkResponse{}, err
	}
	if err := x.removeOrg(ctx, m); err != nil {
		return consoleauth.OkResponse{}, err
	}
	x.d.Logger.LogAttrs(ctx, slog.LevelInfo, "organisation deleted", slog.String("org_id", m.Org.OrgID), slog.String("user_id", c.User.ID))
	return done, nil
}

// removeOrg deletes m's organisation: billing first (a failure of Stripe changes nothing),
// then the mark that hides it from every route, the other packages' records, and its own.
func (x acts) removeOrg(ctx context.Context, m orgs.Membership) error {
	org := m.Org.OrgID
	if x.d.Billing != nil {
		if err := x.d.Billing.CloseAccount(ctx, org); err != nil {
			return err
		}
	}
	if err := x.d.Orgs.BeginDeletion(ctx, m); err != nil {
		return err
	}
	for _, step := range x.d.RemoveOrg {
		if err := step(ctx, org); err != nil {
			return err
		}
	}
	return x.d.Orgs.Purge(ctx, org, webhooks.DeliveryPrefix)
}

func (x acts) deleteMe(r *httpapi.Request[stepUpIn], c consoleauth.Caller) (consoleauth.OkResponse, error) {
	ctx := r.Context()
	// The refusal first: an act that cannot proceed spends none of the account's TOTP attempts.
	plan, err := x.d.Orgs.PlanDeparture(ctx, c.User.ID)
	if last, ok := errors.AsType[*orgs.LastOwnerError](err); ok {
		return consoleauth.OkResponse{}, httpapi.NewError(http.StatusConflict, fmt.Sprintf(detailLastOwner, last.Org.Name, last.Org.OrgID), err)
	}
	if err != nil {
		return consoleauth.OkResponse{}, err
	}
	if err := x.d.Orgs.StepUp(ctx, c, r.Body.TOTPCode, "erase account"); err != nil {
		return consoleauth.OkResponse{}, err
	}
	// The organisations to forget the address in, read before anything goes: those it is
	// filed under, and those the person belongs to (a membership made before the filing).
	named, err := x.d.Orgs.Footprint(ctx, c.User.Email)
	if err != nil {
		return consoleauth.OkResponse{}, err
	}
	for _, m := range plan.Leave {
		named = append(named, m.Org.OrgID)
	}
	for _, m := range plan.Delete {
		if err := x.removeOrg(ctx, m); err != nil {
			return consoleauth.OkResponse{}, err
		}
	}
	for _, m := range plan.Leave {
		if err := x.d.Orgs.Depart(ctx, m); err != nil && !errors.Is(err, orgs.ErrNotFound) {
			return consoleauth.OkResponse{}, err
		}
	}
	slices.Sort(named)
	for _, org := range slices.Compact(named) {
		if slices.ContainsFunc(plan.Delete, func(m orgs.Membership) bool { return m.Org.OrgID == org }) {
			continue
		}
		if err := x.d.Orgs.ForgetAddress(ctx, org, c.User.Email); err != nil {
			return consoleauth.OkResponse{}, err
		}
		for _, step := range x.d.ForgetAddress {
			if err := step(ctx, org, c.User.Email); err != nil {
				return consoleauth.OkResponse{}, err
			}
		}
	}
	if err := x.d.Orgs.ForgetRecipient(ctx, c.User.Email); err != nil {
		return consoleauth.OkResponse{}, err
	}
	if err := x.d.Auth.Erase(ctx, c.User.ID); err != nil {
		return consoleauth.OkResponse{}, err
	}
	x.d.Logger.LogAttrs(ctx, slog.LevelInfo, "account erased", slog.String("user_id", c.User.ID),
		slog.Int("organisations_left", len(plan.Leave)), slog.Int("organisations_deleted", len(plan.Delete)))
	return done, nil
}
