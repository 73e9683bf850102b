package orgs

import (
	"errors"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/schema"
)

// Payload and record schemas, named as spec 2.9 and contract 3 name them.
var (
	role = schema.Enum(RoleOwner, RoleMember)

	CreateOrgPayloadSchema = schema.Object(
		schema.Req("name", schema.String().Len(1, MaxNameLen)),
	).Named("CreateOrgPayload")
	OrganisationUpdateSchema = schema.Object(
		schema.Prop("name", schema.String().Len(1, MaxNameLen)),
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
		schema.Req("label", schema.String().Len(1, apikey.MaxLabelLen)),
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

// ApiKeyPublic is the console's view of a key (spec 2.9): never its secret.
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

// KeyPublic returns the ApiKeyPublic view of k.
func KeyPublic(k apikey.Key) ApiKeyPublic {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		u := t.UTC()
		return &u
	}
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

// IssuedKey is the answer of key issuance (spec 2.9): the raw key, this once.
type IssuedKey struct {
	Key    string       `json:"key"`
	APIKey ApiKeyPublic `json:"api_key"`
}

// MembersList is the members route's answer (contract 3).
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

// Public sentences of the handler errors (spec 7, shape 1).
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
// routes (spec 4.3, 4.4). Every route takes a session token (consoleauth.Middleware).
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
	return []httpapi.Route{
		{
			Method: http.MethodPost, Path: "/console/orgs", OperationID: "createOrg", Tags: orgTags, Security: session,
			Summary:     "Create an organisation; the caller becomes its owner",
			Description: "A new organisation is on the free plan. At most 10 organisations per user per day.",
			Body:        CreateOrgPayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusCreated:         httpapi.JSONResponse("The organisation, role owner.", OrganisationSchema),
				http.StatusTooManyRequests: httpapi.ErrorResponse("More than 10 organisations created by this user today.", httpapi.RetryAfter),
			},
			Handler: httpapi.HandlerFunc(h.createOrg),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs", OperationID: "listOrgs", Tags: orgTags, Security: session,
			Summary: "The caller's organisations, with the caller's role in each",
			Description: "An addition to spec 4.3, which has no route for a returning user (a new browser) to find " +
				"their organisations and switch between them. Ordered by name, then org_id; an empty array when " +
				"the caller belongs to none.",
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Every organisation the caller is a member of.", schema.Array(OrganisationSchema)),
			},
			Handler: httpapi.HandlerFunc(h.listOrgs),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}", OperationID: "getOrg", Tags: orgTags, Security: session,
			Summary: "An organisation, with the caller's role",
			Params:  []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The organisation.", OrganisationSchema),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.HandlerFunc(h.getOrg),
		},
		{
			Method: http.MethodPatch, Path: "/console/orgs/{org_id}", OperationID: "updateOrg", Tags: orgTags, Security: session,
			Summary: "Rename an organisation (owner)",
			Params:  []schema.Param{orgID},
			Body:    OrganisationUpdateSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:        httpapi.JSONResponse("The organisation.", OrganisationSchema),
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  notMember,
			},
			Handler: httpapi.HandlerFunc(h.updateOrg),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/members", OperationID: "listMembers", Tags: orgTags, Security: session,
			Summary: "Members and pending invitations, together",
			Params:  []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("Members (oldest first) and pending invitations.", MembersListSchema),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.HandlerFunc(h.listMembers),
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
			Handler: httpapi.HandlerFunc(h.invite),
		},
		{
			Method: http.MethodPatch, Path: "/console/orgs/{org_id}/members/{user_id}", OperationID: "updateMember", Tags: orgTags, Security: session,
			Summary: "Change a member's role (owner)",
			Params:  []schema.Param{orgID, userID},
			Body:    MemberUpdateSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("The member.", MemberPublicSchema),
				http.StatusForbidden:          ownerOnly,
				http.StatusNotFound:           notFound("the user"),
				http.StatusConflict:           httpapi.ErrorResponse("The member is the organisation's last owner."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.updateMember),
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
			Handler: httpapi.HandlerFunc(h.removeMember),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/leave", OperationID: "leaveOrg", Tags: orgTags, Security: session,
			Summary: "Leave an organisation",
			Params:  []schema.Param{orgID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 ok,
				http.StatusNotFound:           notMember,
				http.StatusConflict:           lastOwner,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.HandlerFunc(h.leave),
		},
		{
			Method: http.MethodDelete, Path: "/console/orgs/{org_id}/invitations/{invite_id}", OperationID: "withdrawInvitation", Tags: orgTags, Security: session,
			Summary: "Withdraw a pending invitation (owner)",
			Params:  []schema.Param{orgID, inviteID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:        ok,
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  notFound("the invitation"),
			},
			Handler: httpapi.HandlerFunc(h.withdraw),
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
			Handler: httpapi.HandlerFunc(h.resend),
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
			Handler: httpapi.HandlerFunc(h.accept),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/audit", OperationID: "listAudit", Tags: orgTags, Security: session,
			Summary: "The audit log, newest first",
			Params: []schema.Param{orgID,
				schema.Query("limit", schema.Integer().Range(1, audit.MaxLimit).WithDefault(audit.DefaultLimit)).Describe("How many entries, newest first.")},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("Entries, newest first.", schema.Array(AuditEntryPublicSchema)),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.HandlerFunc(h.listAudit),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/keys", OperationID: "listKeys", Tags: keyTags, Security: session,
			Summary: "The organisation's API keys, newest first; prefixes only",
			Params: []schema.Param{orgID,
				schema.Query("environment", schema.Enum(apikey.Live, apikey.Sandbox)).Describe("Keep the keys of this environment only."),
				schema.Query("include_revoked", schema.Boolean().WithDefault(true)).Describe("false hides revoked keys."),
			},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("Keys, newest first.", schema.Array(ApiKeyPublicSchema)),
				http.StatusNotFound: notMember,
			},
			Handler: httpapi.HandlerFunc(h.listKeys),
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
			Handler: httpapi.HandlerFunc(h.issueKey),
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
			Handler: httpapi.HandlerFunc(h.revokeKey),
		},
	}
}

type handlers struct {
	s *Service
}

// caller is set by consoleauth.Middleware on every route with Security.
func caller(r *http.Request) (consoleauth.Caller, error) {
	c, ok := consoleauth.CallerFrom(r.Context())
	if !ok {
		return consoleauth.Caller{}, errors.New("orgs: route served without consoleauth.Middleware")
	}
	return c, nil
}

// resolve is the first step of every /console/orgs/{org_id}/... route: the caller and their
// membership, 404 without one (spec 4.3). MembershipMiddleware has resolved it before the
// router validated the input; the handler resolves it itself only when served without it.
func (h *handlers) resolve(r *http.Request) (consoleauth.Caller, Membership, error) {
	c, err := caller(r)
	if err != nil {
		return c, Membership{}, err
	}
	if m, ok := MembershipFrom(r.Context()); ok {
		return c, m, nil
	}
	m, err := h.s.Resolve(r.Context(), httpapi.Params(r).String("org_id"), c.User.ID)
	if err != nil {
		return c, Membership{}, fail(err, DetailOrgNotFound)
	}
	return c, m, nil
}

// fail maps the package's errors to responses (STYLE.md guideline 5); notFound is the
// sentence of ErrNotFound on this route. The cause is logged, never sent.
func fail(err error, notFound string) error {
	pub := func(e *httpapi.Error) error {
		e.Cause = err
		return e
	}
	var limited *ratelimit.LimitedError
	switch {
	case errors.As(err, &limited):
		detail := DetailInviteCap
		switch limited.Rule {
		case OrgCreationCap.Name:
			detail = DetailOrgCreationCap
		case KeyIssuanceCap.Name:
			detail = DetailKeyIssuanceCap
		case consoleauth.TOTPAttemptCap.Name:
			detail = DetailTOTPAttempts
		}
		return pub(httpapi.TooManyRequests(detail, limited.RetryAfter))
	case errors.Is(err, ErrNotFound):
		return pub(httpapi.NotFound(notFound))
	case errors.Is(err, ErrInvitationNotFound):
		return pub(httpapi.NotFound(DetailInvitationInvalid))
	case errors.Is(err, ErrOwnerOnly):
		return pub(httpapi.Forbidden(DetailOwnerOnly))
	case errors.Is(err, ErrEmailMismatch):
		return pub(httpapi.Forbidden(DetailEmailMismatch))
	case errors.Is(err, ErrTOTPRequired):
		return pub(httpapi.Forbidden(DetailTOTPRequired))
	case errors.Is(err, ErrLastOwner):
		return pub(httpapi.Conflict(DetailLastOwner))
	case errors.Is(err, ErrSeatCap):
		return pub(httpapi.Conflict(DetailSeatCap))
	case errors.Is(err, ErrAlreadyMember):
		return pub(httpapi.Conflict(DetailAlreadyMember))
	case errors.Is(err, ErrAlreadyInvited):
		return pub(httpapi.Conflict(DetailAlreadyInvited))
	case errors.Is(err, apikey.ErrLiveKeyCap):
		return pub(httpapi.Conflict(DetailLiveKeyCap))
	case errors.Is(err, ErrInvalid):
		return pub(httpapi.NewError(http.StatusUnprocessableEntity, DetailInvalid, nil))
	case errors.Is(err, ErrBusy):
		return pub(httpapi.NewError(http.StatusServiceUnavailable, DetailBusy, nil))
	}
	return err
}

var okResponse = consoleauth.OkResponse{OK: true}

func (h *handlers) createOrg(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[createOrgIn](r)
	if err != nil {
		return err
	}
	o, err := h.s.CreateOrg(r.Context(), ActorOf(c), in.Name)
	if err != nil {
		return fail(err, DetailOrgNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusCreated, o)
}

func (h *handlers) listOrgs(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	list, err := h.s.ListOrgs(r.Context(), c.User.ID)
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, list)
}

func (h *handlers) getOrg(w http.ResponseWriter, r *http.Request) error {
	_, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, m.Org)
}

func (h *handlers) updateOrg(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[updateOrgIn](r)
	if err != nil {
		return err
	}
	o, err := h.s.UpdateOrg(r.Context(), m, ActorOf(c), in.Name)
	if err != nil {
		return fail(err, DetailOrgNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, o)
}

func (h *handlers) listMembers(w http.ResponseWriter, r *http.Request) error {
	_, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	members, invites, err := h.s.ListMembers(r.Context(), m)
	if err != nil {
		return fail(err, DetailOrgNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, MembersList{Members: members, Invitations: invites})
}

func (h *handlers) invite(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[inviteIn](r)
	if err != nil {
		return err
	}
	inv, err := h.s.Invite(r.Context(), m, ActorOf(c), in.Email, in.Role)
	if err != nil {
		return fail(err, DetailOrgNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusCreated, inv)
}

func (h *handlers) updateMember(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[memberUpdateIn](r)
	if err != nil {
		return err
	}
	mem, err := h.s.ChangeRole(r.Context(), m, ActorOf(c), httpapi.Params(r).String("user_id"), in.Role)
	if err != nil {
		return fail(err, DetailMemberNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, mem)
}

func (h *handlers) removeMember(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	if err := h.s.Remove(r.Context(), m, ActorOf(c), httpapi.Params(r).String("user_id")); err != nil {
		return fail(err, DetailMemberNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, okResponse)
}

func (h *handlers) leave(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	if err := h.s.Leave(r.Context(), m, ActorOf(c)); err != nil {
		return fail(err, DetailOrgNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, okResponse)
}

func (h *handlers) withdraw(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	if err := h.s.Withdraw(r.Context(), m, ActorOf(c), httpapi.Params(r).String("invite_id")); err != nil {
		return fail(err, DetailInviteNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, okResponse)
}

func (h *handlers) resend(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	inv, err := h.s.Resend(r.Context(), m, ActorOf(c), httpapi.Params(r).String("invite_id"))
	if err != nil {
		return fail(err, DetailInviteNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, inv)
}

func (h *handlers) accept(w http.ResponseWriter, r *http.Request) error {
	c, err := caller(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[acceptIn](r)
	if err != nil {
		return err
	}
	o, err := h.s.Accept(r.Context(), c, in.Token)
	if err != nil {
		return fail(err, DetailInvitationInvalid)
	}
	return httpapi.WriteJSON(w, http.StatusOK, o)
}

func (h *handlers) listAudit(w http.ResponseWriter, r *http.Request) error {
	_, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	entries, err := h.s.audit.List(r.Context(), m.Org.OrgID, int(httpapi.Params(r).Int("limit")))
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(w, http.StatusOK, entries)
}

func (h *handlers) listKeys(w http.ResponseWriter, r *http.Request) error {
	_, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	p := httpapi.Params(r)
	keys, err := h.s.ListKeys(r.Context(), m, p.String("environment"), p.Bool("include_revoked"))
	if err != nil {
		return fail(err, DetailOrgNotFound)
	}
	out := make([]ApiKeyPublic, len(keys))
	for i, k := range keys {
		out[i] = KeyPublic(k)
	}
	return httpapi.WriteJSON(w, http.StatusOK, out)
}

func (h *handlers) issueKey(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	in, err := httpapi.Body[createKeyIn](r)
	if err != nil {
		return err
	}
	raw, key, err := h.s.IssueKey(r.Context(), m, c, in.Label, in.Environment, in.TOTPCode)
	if err != nil {
		return fail(err, DetailOrgNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusCreated, IssuedKey{Key: raw, APIKey: KeyPublic(key)})
}

func (h *handlers) revokeKey(w http.ResponseWriter, r *http.Request) error {
	c, m, err := h.resolve(r)
	if err != nil {
		return err
	}
	if err := h.s.RevokeKey(r.Context(), m, ActorOf(c), httpapi.Params(r).String("key_id")); err != nil {
		return fail(err, DetailKeyNotFound)
	}
	return httpapi.WriteJSON(w, http.StatusOK, okResponse)
}
