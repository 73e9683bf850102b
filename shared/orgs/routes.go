package orgs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
)

// Payload and record schemas, named as docs/api.md §2.9 and §10.3 name them.
var (
	role = schema.Enum(RoleOwner, RoleMember)

	CreateOrgPayloadSchema = schema.Object(
		schema.Req("name", schema.String().Len(1, MaxNameLen).Printable()),
	).Named("CreateOrgPayload")
	OrganisationUpdateSchema = schema.Object(
		schema.Prop("name", schema.String().Len(1, MaxNameLen).Printable()),
	).Named("OrganisationUpdate").Describe("Only the fields sent are written.")
	OrganisationSchema = schema.Object(
		schema.Req("org_id", schema.String()),
		schema.Req("name", schema.String()),
		schema.Req("plan", schema.String().Describe("The plan id (GET /console/plans).")),
		schema.Req("created_at", schema.DateTime()),
		schema.Req("role", role.Describe("The caller's role in the organisation.")),
	).Named("Organisation")
	InvitePayloadSchema = schema.Object(
		schema.Req("email", schema.Email().MaxLen(254)),
		schema.Prop("role", schema.Enum(RoleOwner, RoleMember).WithDefault(RoleMember)),
	).Named("InvitePayload")
	InvitePublicSchema = schema.Object(
		schema.Req("invite_id", schema.String()),
		schema.Req("email", schema.String()),
		schema.Req("role", role),
		schema.Prop("invited_by_email", schema.String().OrNull()),
		schema.Prop("created_at", schema.DateTime().OrNull()),
		schema.Prop("expires_at", schema.DateTime().OrNull()),
	).Named("InvitePublic").Describe("A pending invitation; its token is never included.")
	MemberPublicSchema = schema.Object(
		schema.Req("user_id", schema.String()),
		schema.Req("email", schema.String()),
		schema.Req("display_name", schema.String().OrNull()),
		schema.Req("role", role),
		schema.Req("joined_at", schema.DateTime()),
	).Named("MemberPublic")
	MembersListSchema = schema.Object(
		schema.Req("members", schema.Array(MemberPublicSchema)),
		schema.Req("invitations", schema.Array(InvitePublicSchema).Describe("Pending invitations only.")),
	).Named("MembersList")
	MemberUpdateSchema = schema.Object(
		schema.Req("role", schema.Enum(RoleOwner, RoleMember)),
	).Named("MemberUpdate")
	AcceptInvitePayloadSchema = schema.Object(
		schema.Req("token", schema.String().Len(1, 200).Describe("The token of the invitation link's fragment.")),
	).Named("AcceptInvitePayload")
	CreateKeyPayloadSchema = schema.Object(
		schema.Req("label", schema.String().Len(1, apikey.MaxLabelLen).Printable()),
		schema.Prop("environment", schema.Enum(apikey.Live, apikey.Sandbox).WithDefault(apikey.Sandbox)),
		schema.Prop("totp_code", schema.String().MaxLen(16).OrNull().Describe("Required when the caller's account has TOTP enabled.")),
	).Named("CreateKeyPayload")
	ApiKeyPublicSchema = schema.Object(
		schema.Req("key_id", schema.String()),
		schema.Req("label", schema.String()),
		schema.Req("environment", schema.Enum(apikey.Live, apikey.Sandbox)),
		schema.Req("prefix", schema.String().Describe("The first characters of the raw key; the secret is never shown again.")),
		schema.Prop("created_at", schema.DateTime().OrNull()),
		schema.Prop("created_by_email", schema.String().OrNull()),
		schema.Prop("last_used_at", schema.DateTime().OrNull()),
		schema.Prop("revoked", schema.Boolean().WithDefault(false)),
		schema.Prop("revoked_at", schema.DateTime().OrNull()),
	).Named("ApiKeyPublic")
	IssuedKeySchema = schema.Object(
		schema.Req("key", schema.String().Describe("The raw key, svc_ + 43 base62 characters: shown this once, stored only as SHA-256.")),
		schema.Req("api_key", ApiKeyPublicSchema),
	).Named("IssuedKey")
	AuditEntryPublicSchema = schema.Object(
		schema.Req("audit_id", schema.String()),
		schema.Req("action", schema.String()),
		schema.Prop("actor_user_id", schema.String().OrNull()),
		schema.Prop("actor_email", schema.String().OrNull().Describe("Stored at write time: it survives the removal of the actor.")),
		schema.Prop("target", schema.String().OrNull()),
		schema.Prop("detail", schema.FreeObject().WithDefault(map[string]any{})),
		schema.Prop("created_at", schema.DateTime().OrNull()),
	).Named("AuditEntryPublic")
)

// ApiKeyPublic is the console's view of a key (docs/api.md §2.9): never its secret.
type ApiKeyPublic struct {
	KeyID          string     `json:"key_id"`
	Label          string     `json:"label"`
	Environment    string     `json:"environment"`
	Prefix         string     `json:"prefix"`
	CreatedAt      *time.Time `json:"created_at"`
	CreatedByEmail *string    `json:"created_by_email"`
	LastUsedAt     *time.Time `json:"last_used_at"`
	Revoked        bool       `json:"revoked"`
	RevokedAt      *time.Time `json:"revoked_at"`
}

// OptionalTime is t in UTC, or nil (null in a console record) when it is zero.
func OptionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// KeyPublic returns the ApiKeyPublic view of k.
func KeyPublic(k apikey.Key) ApiKeyPublic {
	opt := OptionalTime
	out := ApiKeyPublic{
		KeyID: k.KeyID, Label: k.Label, Environment: k.Environment, Prefix: k.Prefix,
		CreatedAt: opt(k.CreatedAt), LastUsedAt: opt(k.LastUsedAt), Revoked: k.Revoked, RevokedAt: opt(k.RevokedAt),
	}
	if k.CreatedByEmail != "" {
		e := k.CreatedByEmail
		out.CreatedByEmail = &e
	}
	return out
}

// IssuedKey is the answer of key issuance (docs/api.md §2.9): the raw key, this once.
type IssuedKey struct {
	Key    string       `json:"key"`
	APIKey ApiKeyPublic `json:"api_key"`
}

// MembersList is the members route's answer (docs/api.md §10.3).
type MembersList struct {
	Members     []Member     `json:"members"`
	Invitations []Invitation `json:"invitations"`
}

type createOrgIn struct {
	Name string `json:"name"`
}

type updateOrgIn struct {
	Name *string `json:"name"`
}

type inviteIn struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

type memberUpdateIn struct {
	Role string `json:"role"`
}

type acceptIn struct {
	Token string `json:"token"`
}

type createKeyIn struct {
	Label       string  `json:"label"`
	Environment string  `json:"environment"`
	TOTPCode    *string `json:"totp_code"`
}

// Public sentences of the handler errors (docs/api.md §7, shape 1).
const (
	DetailOrgNotFound       = "Organisation not found"
	DetailMemberNotFound    = "Member not found in this organisation"
	DetailInviteNotFound    = "Invitation not found in this organisation"
	DetailKeyNotFound       = "API key not found in this organisation"
	DetailInvitationInvalid = "Invitation not found, already used, withdrawn or expired"
	DetailOwnerOnly         = "Only an owner of the organisation may do this"
	DetailLastOwner         = "The organisation's last owner cannot be demoted, removed or leave; make another member owner first"
	DetailSeatCap           = "Every seat of the plan is taken by members and pending invitations"
	DetailAlreadyMember     = "This address is already a member of the organisation"
	DetailAlreadyInvited    = "This address already has a pending invitation; resend it instead"
	DetailEmailMismatch     = "This invitation was sent to another e-mail address; sign in with that address to accept it"
	DetailTOTPRequired      = "A valid, unused totp_code is required to issue a key from an account with TOTP enabled"
	DetailLiveKeyCap        = "The plan's live key cap is reached; revoke a live key or change plan"
	DetailOrgCreationCap    = "Too many organisations created today; retry later"
	DetailInviteCap         = "Too many invitations; retry later"
	DetailKeyIssuanceCap    = "Too many keys issued in this organisation this hour; retry later"
	DetailTOTPAttempts      = "Too many TOTP attempts for this account; retry later"
	DetailBusy              = "The organisation changed while this request ran; retry"
	DetailInvalid           = "The request names a value the organisation cannot take"
)

// What every route under /console/orgs/{org_id} documents, in this group and in the others
// (usage, billing) that the membership middleware guards.
var (
	OrgIDParam        = schema.Path("org_id", schema.String()).Describe("The organisation; 404 unless the caller is a member.")
	NotMemberResponse = httpapi.ErrorResponse("The caller is not a member of the organisation, or it does not exist.")
	OwnerOnlyResponse = httpapi.ErrorResponse("The caller is a member, not an owner.")
)

// Routes returns the console-orgs group's organisation, member, invitation, key and audit
// routes (docs/api.md §4.3, §4.4). Every route takes a session token (consoleauth.Middleware).
func Routes(s *Service) []httpapi.Route {
	h := &handlers{s: s}
	session := []httpapi.Security{httpapi.SecuritySession}
	orgTags := []string{"console organisations"}
	keyTags := []string{"console keys"}
	orgID := OrgIDParam
	userID := schema.Path("user_id", schema.String()).Describe("A member of the organisation.")
	inviteID := schema.Path("invite_id", schema.String()).Describe("A pending invitation of the organisation.")
	keyID := schema.Path("key_id", schema.String()).Describe("A key of the organisation.")
	ok := httpapi.JSONResponse("Done.", consoleauth.OkResponseSchema)
	notMember := NotMemberResponse
	notFound := func(what string) httpapi.Response {
		return httpapi.ErrorResponse("The caller is not a member of the organisation, or " + what + " is not the organisation's.")
	}
	ownerOnly := OwnerOnlyResponse
	lastOwner := httpapi.ErrorResponse("The caller is the organisation's last owner.")
	busy := httpapi.ErrorResponse("Concurrent changes to the organisation kept refusing the request; retry with backoff.")
	inviteLimited := httpapi.ErrorResponse("More than 20 invitations by this user in the current hour, or 3 to this address today.", httpapi.RetryAfter)
	routes := []httpapi.Route{
		{
			Method: http.MethodPost, Path: "/console/orgs", OperationID: "createOrg", Tags: orgTags, Security: session,
			Summary:     "Create an organisation; the caller becomes its owner",
			Description: "A new organisation is on the free plan. At most 10 organisations per user per day.",
			Body:        CreateOrgPayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusCreated:         httpapi.JSONResponse("The organisation, role owner.", OrganisationSchema),
				http.StatusTooManyRequests: httpapi.ErrorResponse("More than 10 organisations created by this user today.", httpapi.RetryAfter),
			},
			Handler: httpapi.JSON(http.StatusCreated, consoleauth.AsCaller(h.createOrg)),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs", OperationID: "listOrgs", Tags: orgTags, Security: session,
			Summary: "The caller's organisations, with the caller's role in each",
			Description: "Lets a returning user (a new browser) find their organisations and switch between them. " +
				"Ordered by name, then org_id; an empty array when the caller belongs to none.",
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Every organisation the caller is a member of.", schema.Array(OrganisationSchema)),
			},
			Handler: httpapi.JSON(http.StatusOK, consoleauth.AsCaller(h.listOrgs)),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}", OperationID: "getOrg", Tags: orgTags, Security: session,
			Summary:     "An organisation, with the caller's role",
			Description: "Readable by any member; a caller who is not a member gets 404.",
			Params:      []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The organisation.", OrganisationSchema),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.getOrg)),
		},
		{
			Method: http.MethodPatch, Path: "/console/orgs/{org_id}", OperationID: "updateOrg", Tags: orgTags, Security: session,
			Summary:     "Rename an organisation (owner)",
			Description: "Only an owner may rename; the change is written to the audit log.",
			Params:      []schema.Param{orgID},
			Body:        OrganisationUpdateSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:        httpapi.JSONResponse("The organisation.", OrganisationSchema),
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  notMember,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.updateOrg)),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/members", OperationID: "listMembers", Tags: orgTags, Security: session,
			Summary:     "Members and pending invitations, together",
			Description: "Members oldest first, then the invitations still pending. Readable by any member.",
			Params:      []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("Members (oldest first) and pending invitations.", MembersListSchema),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.listMembers)),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/members", OperationID: "inviteMember", Tags: orgTags, Security: session,
			Summary: "Invite someone by e-mail (owner)",
			Description: "The invitation lasts 7 days; the e-mail links to <console>accept-invite#token=<token>. The seat cap " +
				"of the plan counts members and pending invitations together. The token is never in a response.",
			Params: []schema.Param{orgID},
			Body:   InvitePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusCreated:            httpapi.JSONResponse("The pending invitation.", InvitePublicSchema),
				http.StatusForbidden:          ownerOnly,
				http.StatusNotFound:           notMember,
				http.StatusConflict:           httpapi.ErrorResponse("Every seat is taken, the address is a member already, or it has a pending invitation."),
				http.StatusTooManyRequests:    inviteLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusCreated, asMember(s, h.invite)),
		},
		{
			Method: http.MethodPatch, Path: "/console/orgs/{org_id}/members/{user_id}", OperationID: "updateMember", Tags: orgTags, Security: session,
			Summary:     "Change a member's role (owner)",
			Description: "Only an owner may change roles. The last owner cannot be demoted (409).",
			Params:      []schema.Param{orgID, userID},
			Body:        MemberUpdateSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("The member.", MemberPublicSchema),
				http.StatusForbidden:          ownerOnly,
				http.StatusNotFound:           notFound("the user"),
				http.StatusConflict:           httpapi.ErrorResponse("The member is the organisation's last owner."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.updateMember)),
			Errors:  notFoundAs(DetailMemberNotFound),
		},
		{
			Method: http.MethodDelete, Path: "/console/orgs/{org_id}/members/{user_id}", OperationID: "removeMember", Tags: orgTags, Security: session,
			Summary:     "Remove a member (owner)",
			Description: "The organisation's keys stay valid: keys belong to the organisation.",
			Params:      []schema.Param{orgID, userID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 ok,
				http.StatusForbidden:          ownerOnly,
				http.StatusNotFound:           notFound("the user"),
				http.StatusConflict:           httpapi.ErrorResponse("The member is the organisation's last owner."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.removeMember)),
			Errors:  notFoundAs(DetailMemberNotFound),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/leave", OperationID: "leaveOrg", Tags: orgTags, Security: session,
			Summary:     "Leave an organisation",
			Description: "Any member may leave, but the last owner (409).",
			Params:      []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 ok,
				http.StatusNotFound:           notMember,
				http.StatusConflict:           lastOwner,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.leave)),
		},
		{
			Method: http.MethodDelete, Path: "/console/orgs/{org_id}/invitations/{invite_id}", OperationID: "withdrawInvitation", Tags: orgTags, Security: session,
			Summary:     "Withdraw a pending invitation (owner)",
			Description: "Its token stops working at once. Only an owner may withdraw.",
			Params:      []schema.Param{orgID, inviteID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:        ok,
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  notFound("the invitation"),
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.withdraw)),
			Errors:  notFoundAs(DetailInviteNotFound),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/invitations/{invite_id}/resend", OperationID: "resendInvitation", Tags: orgTags, Security: session,
			Summary:     "Send a pending invitation again (owner)",
			Description: "Replaces the invitation with a new one (new invite_id, new link, 7 days); the old link stops working. No extra seat.",
			Params:      []schema.Param{orgID, inviteID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:              httpapi.JSONResponse("The new invitation.", InvitePublicSchema),
				http.StatusForbidden:       ownerOnly,
				http.StatusNotFound:        notFound("the invitation"),
				http.StatusTooManyRequests: inviteLimited,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.resend)),
			Errors:  notFoundAs(DetailInviteNotFound),
		},
		{
			Method: http.MethodPost, Path: "/console/invitations/accept", OperationID: "acceptInvitation", Tags: orgTags, Security: session,
			Summary:     "Accept an invitation with the token of its link",
			Description: "The signed-in user's address must be the invited one.",
			Body:        AcceptInvitePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:        httpapi.JSONResponse("The organisation, with the role the invitation gave.", OrganisationSchema),
				http.StatusForbidden: httpapi.ErrorResponse("The invitation was sent to another address."),
				http.StatusNotFound:  httpapi.ErrorResponse("Unknown, used, withdrawn, replaced or expired token."),
				http.StatusConflict:  httpapi.ErrorResponse("The caller is a member already."),
			},
			Handler: httpapi.JSON(http.StatusOK, consoleauth.AsCaller(h.accept)),
			Errors:  notFoundAs(DetailInvitationInvalid),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/audit", OperationID: "listAudit", Tags: orgTags, Security: session,
			Summary:     "The audit log, newest first",
			Description: "Who did what in the organisation, newest first, at most limit entries. Readable by any member.",
			Params: []schema.Param{orgID,
				schema.Query("limit", schema.Integer().Range(1, audit.MaxLimit).WithDefault(audit.DefaultLimit)).Describe("How many entries, newest first.")},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("Entries, newest first.", schema.Array(AuditEntryPublicSchema)),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.listAudit)),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/keys", OperationID: "listKeys", Tags: keyTags, Security: session,
			Summary:     "The organisation's API keys, newest first; prefixes only",
			Description: "A key's secret is shown once, when it is issued; this list shows prefixes, labels, environments and dates.",
			Params: []schema.Param{orgID,
				schema.Query("environment", schema.Enum(apikey.Live, apikey.Sandbox)).Describe("Keep the keys of this environment only."),
				schema.Query("include_revoked", schema.Boolean().WithDefault(true)).Describe("false hides revoked keys."),
			},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("Keys, newest first.", schema.Array(ApiKeyPublicSchema)),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.listKeys)),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/keys", OperationID: "issueKey", Tags: keyTags, Security: session,
			Summary: "Issue an API key (owner); the raw key is shown once",
			Description: "A caller whose account has TOTP sends a current totp_code, consumed on use. Live keys are capped by the " +
				"plan (Free: 1), sandbox keys are not. At most 30 issuances per organisation per hour. The other owners are e-mailed.",
			Params: []schema.Param{orgID},
			Body:   CreateKeyPayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusCreated:   httpapi.JSONResponse("The key, shown this once.", IssuedKeySchema),
				http.StatusForbidden: httpapi.ErrorResponse("The caller is not an owner, or has TOTP and sent no valid, unused totp_code."),
				http.StatusNotFound:  notMember,
				http.StatusConflict:  httpapi.ErrorResponse("The plan's live key cap is reached."),
				http.StatusTooManyRequests: httpapi.ErrorResponse("More than 30 keys issued in this organisation this hour, "+
					"or more than 5 TOTP attempts on the caller's account in 15 minutes.", httpapi.RetryAfter),
			},
			Handler: httpapi.JSON(http.StatusCreated, asMember(s, h.issueKey)),
		},
		{
			Method: http.MethodDelete, Path: "/console/orgs/{org_id}/keys/{key_id}", OperationID: "revokeKey", Tags: keyTags, Security: session,
			Summary:     "Revoke an API key (owner)",
			Description: "Effective from the next request that presents the key. No TOTP step-up.",
			Params:      []schema.Param{orgID, keyID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:        ok,
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  notFound("the key"),
			},
			Handler: httpapi.JSON(http.StatusOK, asMember(s, h.revokeKey)),
			Errors:  notFoundAs(DetailKeyNotFound),
		},
	}
	return ErrorTable.Defaults(routes)
}

type handlers struct {
	s *Service
}

// ErrorTable gives the package's errors their status and public sentence (docs/api.md §7, shape 1);
// a route names the thing its 404 is about with notFoundAs. The cause is logged, never sent.
var ErrorTable = httpapi.ErrorTable{
	{Err: OrgCreationCap.Refusal(), Status: http.StatusTooManyRequests, Detail: DetailOrgCreationCap},
	{Err: KeyIssuanceCap.Refusal(), Status: http.StatusTooManyRequests, Detail: DetailKeyIssuanceCap},
	{Err: consoleauth.TOTPAttemptCap.Refusal(), Status: http.StatusTooManyRequests, Detail: DetailTOTPAttempts},
	{Err: ErrLimited, Status: http.StatusTooManyRequests, Detail: DetailInviteCap},
	{Err: ErrNotFound, Status: http.StatusNotFound, Detail: DetailOrgNotFound},
	{Err: ErrInvitationNotFound, Status: http.StatusNotFound, Detail: DetailInvitationInvalid},
	{Err: ErrOwnerOnly, Status: http.StatusForbidden, Detail: DetailOwnerOnly},
	{Err: ErrEmailMismatch, Status: http.StatusForbidden, Detail: DetailEmailMismatch},
	{Err: ErrTOTPRequired, Status: http.StatusForbidden, Detail: DetailTOTPRequired},
	{Err: ErrLastOwner, Status: http.StatusConflict, Detail: DetailLastOwner},
	{Err: ErrSeatCap, Status: http.StatusConflict, Detail: DetailSeatCap},
	{Err: ErrAlreadyMember, Status: http.StatusConflict, Detail: DetailAlreadyMember},
	{Err: ErrAlreadyInvited, Status: http.StatusConflict, Detail: DetailAlreadyInvited},
	{Err: apikey.ErrLiveKeyCap, Status: http.StatusConflict, Detail: DetailLiveKeyCap},
	{Err: ErrInvalid, Status: http.StatusUnprocessableEntity, Detail: DetailInvalid},
	{Err: ErrBusy, Status: http.StatusServiceUnavailable, Detail: DetailBusy},
}

// notFoundAs is ErrorTable with detail as the sentence of ErrNotFound.
func notFoundAs(detail string) httpapi.ErrorTable {
	return ErrorTable.With(httpapi.ErrorRule{Err: ErrNotFound, Status: http.StatusNotFound, Detail: detail})
}

// asMember adapts an operation on the caller's membership of {org_id} (404 without one,
// docs/api.md §4.3). MembershipMiddleware has resolved it before the router validated the input; it
// is resolved here only when the route is served without it.
func asMember[In, Out any](s *Service, f func(r *httpapi.Request[In], c consoleauth.Caller, m Membership) (Out, error)) func(*httpapi.Request[In]) (Out, error) {
	return consoleauth.AsCaller(func(r *httpapi.Request[In], c consoleauth.Caller) (Out, error) {
		m, ok := MembershipFrom(r.Context())
		if !ok {
			var err error
			if m, err = s.Resolve(r.Context(), r.Params.String("org_id"), c.User.ID); err != nil {
				var zero Out
				return zero, ErrorTable.Public(err)
			}
		}
		return f(r, c, m)
	})
}

var okResponse = consoleauth.OkResponse{OK: true}

// done answers OkResponse for an operation that returns only its error.
func done(err error) (consoleauth.OkResponse, error) { return okResponse, err }

func (h *handlers) createOrg(r *httpapi.Request[createOrgIn], c consoleauth.Caller) (Organisation, error) {
	return h.s.CreateOrg(r.Context(), ActorOf(c), r.Body.Name)
}

func (h *handlers) listOrgs(r *httpapi.Request[httpapi.NoBody], c consoleauth.Caller) ([]Organisation, error) {
	return h.s.ListOrgs(r.Context(), c.User.ID)
}

func (h *handlers) getOrg(_ *httpapi.Request[httpapi.NoBody], _ consoleauth.Caller, m Membership) (Organisation, error) {
	return m.Org, nil
}

func (h *handlers) updateOrg(r *httpapi.Request[updateOrgIn], c consoleauth.Caller, m Membership) (Organisation, error) {
	return h.s.UpdateOrg(r.Context(), m, ActorOf(c), r.Body.Name)
}

func (h *handlers) listMembers(r *httpapi.Request[httpapi.NoBody], _ consoleauth.Caller, m Membership) (MembersList, error) {
	members, invites, err := h.s.ListMembers(r.Context(), m)
	return MembersList{Members: members, Invitations: invites}, err
}

func (h *handlers) invite(r *httpapi.Request[inviteIn], c consoleauth.Caller, m Membership) (Invitation, error) {
	return h.s.Invite(r.Context(), m, ActorOf(c), r.Body.Email, r.Body.Role)
}

func (h *handlers) updateMember(r *httpapi.Request[memberUpdateIn], c consoleauth.Caller, m Membership) (Member, error) {
	return h.s.ChangeRole(r.Context(), m, ActorOf(c), r.Params.String("user_id"), r.Body.Role)
}

func (h *handlers) removeMember(r *httpapi.Request[httpapi.NoBody], c consoleauth.Caller, m Membership) (consoleauth.OkResponse, error) {
	return done(h.s.Remove(r.Context(), m, ActorOf(c), r.Params.String("user_id")))
}

func (h *handlers) leave(r *httpapi.Request[httpapi.NoBody], c consoleauth.Caller, m Membership) (consoleauth.OkResponse, error) {
	return done(h.s.Leave(r.Context(), m, ActorOf(c)))
}

func (h *handlers) withdraw(r *httpapi.Request[httpapi.NoBody], c consoleauth.Caller, m Membership) (consoleauth.OkResponse, error) {
	return done(h.s.Withdraw(r.Context(), m, ActorOf(c), r.Params.String("invite_id")))
}

func (h *handlers) resend(r *httpapi.Request[httpapi.NoBody], c consoleauth.Caller, m Membership) (Invitation, error) {
	return h.s.Resend(r.Context(), m, ActorOf(c), r.Params.String("invite_id"))
}

func (h *handlers) accept(r *httpapi.Request[acceptIn], c consoleauth.Caller) (Organisation, error) {
	return h.s.Accept(r.Context(), c, r.Body.Token)
}

func (h *handlers) listAudit(r *httpapi.Request[httpapi.NoBody], _ consoleauth.Caller, m Membership) ([]audit.Entry, error) {
	return h.s.audit.List(r.Context(), m.Org.OrgID, int(r.Params.Int("limit")))
}

func (h *handlers) listKeys(r *httpapi.Request[httpapi.NoBody], _ consoleauth.Caller, m Membership) ([]ApiKeyPublic, error) {
	keys, err := h.s.ListKeys(r.Context(), m, r.Params.String("environment"), r.Params.Bool("include_revoked"))
	out := make([]ApiKeyPublic, len(keys))
	for i, k := range keys {
		out[i] = KeyPublic(k)
	}
	return out, err
}

func (h *handlers) issueKey(r *httpapi.Request[createKeyIn], c consoleauth.Caller, m Membership) (IssuedKey, error) {
	raw, key, err := h.s.IssueKey(r.Context(), m, c, r.Body.Label, r.Body.Environment, r.Body.TOTPCode)
	return IssuedKey{Key: raw, APIKey: KeyPublic(key)}, err
}

func (h *handlers) revokeKey(r *httpapi.Request[httpapi.NoBody], c consoleauth.Caller, m Membership) (consoleauth.OkResponse, error) {
	return done(h.s.RevokeKey(r.Context(), m, ActorOf(c), r.Params.String("key_id")))
}

// Accessor tells a user's role in an organisation and its plan; *Service is one. ok is false
// when the user is not a member or the organisation does not exist.
type Accessor interface {
	Access(ctx context.Context, orgID, userID string) (role, plan string, ok bool, err error)
}

var _ Accessor = (*Service)(nil)

// CallerErrors answers CallerIn's refusals: 404 without a membership, 403 for a member where
// an owner is asked. The routes of other packages add their own rules to it (With).
var CallerErrors = httpapi.ErrorTable{
	{Err: ErrNotFound, Status: http.StatusNotFound, Detail: DetailOrgNotFound},
	{Err: ErrOwnerOnly, Status: http.StatusForbidden, Detail: DetailOwnerOnly},
}

// CallerIn resolves the console caller of r in the organisation of its {org_id}, for the
// routes of other packages under /console/orgs/{org_id} (docs/api.md §4.3): ErrNotFound (404)
// without a membership, ErrOwnerOnly (403) for a member when owner is asked. It returns the
// organisation's id and the caller as the actor of the audit log.
func CallerIn(r *http.Request, a Accessor, owner bool) (string, Actor, error) {
	c, ok := consoleauth.CallerFrom(r.Context())
	if !ok {
		return "", Actor{}, errors.New("orgs: route served without consoleauth.Middleware")
	}
	org := r.PathValue("org_id")
	role, _, ok, err := a.Access(r.Context(), org, c.User.ID)
	switch {
	case err != nil:
		return "", Actor{}, fmt.Errorf("orgs: resolve membership of %s: %w", org, err)
	case !ok:
		return "", Actor{}, fmt.Errorf("organisation %s: %w", org, ErrNotFound)
	case owner && role != RoleOwner:
		return "", Actor{}, fmt.Errorf("organisation %s: %w", org, ErrOwnerOnly)
	}
	return org, ActorOf(c), nil
}
