// Package orgs is the console's organisations (route group console-orgs, docs/architecture.md §4):
// organisations, members and invitations, roles, the organisation's API keys and its audit log
// (docs/api.md §2.9, §3, §4.3, §4.4, §5, §7, §8 and §10.3).
//
// # Membership first
//
// Every /console/orgs/{org_id}/... route resolves the caller's membership before anything else,
// with one BatchGet of the organisation item and the caller's member item: no membership (or no
// such organisation) is 404, and a member asking for an owner act is 403 (docs/api.md §10.3
// (Roles)). Resources named in the path (user_id, invite_id, key_id) are then read inside the
// caller's organisation's partition only, so an id of another organisation is not found
// (docs/api.md §4.3). MembershipMiddleware does the resolving for the organisation-scoped routes of
// every group (usage and billing included), before the router validates query and body, so a
// non-member gets 404 whatever they send, never 422.
//
// # Storage layout
//
//	pk "org#<org_id>"           sk "org"                 org_id, name, plan, created_at, owners, rev
//	pk "org#<org_id>"           sk "member#<user_id>"    user_id, email, role, joined_at
//	pk "org#<org_id>"           sk "invite#<invite_id>"  invite_id, email, role, invited_by(_email),
//	                                                     created_at, expires_at, token_hash; TTL expires_at
//	pk "userorg#<user_id>"      sk "org#<org_id>"        role: the organisations of a user (TOTP
//	                                                     audit, GET /console/orgs)
//	pk "invitetoken#<sha256>"   sk "invite"              org_id, invite_id; TTL expires_at
//
// The organisation item carries two guards, changed in the same transaction as the members:
//
//   - owners counts the owners; demoting, removing or letting an owner leave decrements it
//     under the condition owners > 1, so the last owner stays even under concurrent requests
//     (docs/api.md §4.3, §10.3: 409);
//   - rev is bumped by every change to the members and invitations. An invitation counts the
//     seats (members plus live invitations, docs/api.md §4.3) and writes under the condition that rev
//     is still what it read, so two concurrent invitations cannot both take the last seat.
//
// Invitation tokens are 256-bit random strings stored only as SHA-256 (docs/api.md §10.3); they
// appear in the invitation e-mail's link and nowhere else, never in a response or in the audit log.
package orgs

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/store"
)

// Roles (docs/api.md §5 "Console authentication" rule 6).
const (
	RoleOwner  = "owner"
	RoleMember = "member"
)

// FreePlan is the plan of a new organisation (docs/api.md §10.3).
const FreePlan = "free"

// Free plan caps (docs/api.md §8, §10.3), used when Options.Caps is nil.
const (
	FreeLiveKeyCap = 1
	FreeSeatCap    = 3
)

// InvitationTTL is how long an invitation lasts (docs/api.md §10.3: 7 days).
const InvitationTTL = 7 * 24 * time.Hour

// MaxNameLen is the longest organisation name, in characters (docs/api.md §8).
const MaxNameLen = 80

// The console caps of docs/api.md §10.3 (deployment values; docs/api.md §8 rule 5 leaves them open).
var (
	OrgCreationCap     = ratelimit.Rule{Name: "console-org-creation", Limit: 10, Window: 24 * time.Hour}
	InviteActorCap     = ratelimit.Rule{Name: "console-invites-actor", Limit: 20, Window: time.Hour}
	InviteRecipientCap = ratelimit.Rule{Name: "console-invites-recipient", Limit: 3, Window: 24 * time.Hour}
	KeyIssuanceCap     = ratelimit.Rule{Name: "console-key-issuance", Limit: 30, Window: time.Hour}
)

// Audit actions of docs/api.md §10.3 written by this package.
const (
	ActionOrgCreated          = "org.created"
	ActionOrgUpdated          = "org.updated"
	ActionMemberInvited       = "member.invited"
	ActionInvitationResent    = "invitation.resent"
	ActionInvitationWithdrawn = "invitation.withdrawn"
	ActionInvitationAccepted  = "invitation.accepted"
	ActionMemberRoleChanged   = "member.role_changed"
	ActionMemberRemoved       = "member.removed"
	ActionMemberLeft          = "member.left"
	ActionKeyIssued           = "key.issued"
	ActionKeyRevoked          = "key.revoked"
)

// Errors of the package. Check them with errors.Is.
var (
	// ErrNotFound is an organisation the caller is not a member of (or that does not exist),
	// or a member, invitation or key that the organisation does not have: 404 (docs/api.md §4.3).
	ErrNotFound = errors.New("orgs: not found")
	// ErrOwnerOnly is a member asking for an owner act: 403 (docs/api.md §10.3).
	ErrOwnerOnly = errors.New("orgs: owner act")
	// ErrLastOwner refuses demoting, removing or letting the last owner leave: 409 (docs/api.md §10.3).
	ErrLastOwner = errors.New("orgs: the last owner must stay")
	// ErrSeatCap is an invitation past the plan's seat cap: 409 (docs/api.md §10.3).
	ErrSeatCap = errors.New("orgs: seat cap reached")
	// ErrAlreadyMember is an invitation of, or an acceptance by, someone already a member: 409.
	ErrAlreadyMember = errors.New("orgs: already a member")
	// ErrAlreadyInvited is an invitation of an address with a live invitation: 409 (resend it).
	ErrAlreadyInvited = errors.New("orgs: address already invited")
	// ErrInvitationNotFound is an unknown, used, withdrawn, replaced or expired invitation
	// token: 404 (docs/api.md §10.3).
	ErrInvitationNotFound = errors.New("orgs: invitation not found or no longer valid")
	// ErrEmailMismatch is an acceptance by a user whose address is not the invited one: 403.
	ErrEmailMismatch = errors.New("orgs: invitation is for another address")
	// ErrTOTPRequired is a key issuance without a valid totp_code by a caller with TOTP: 403.
	ErrTOTPRequired = errors.New("orgs: a valid TOTP code is required")
	// ErrInvalid is an argument outside docs/api.md §8 and §10.3 (a name too long, an unknown role).
	ErrInvalid = errors.New("orgs: invalid request")
	// ErrLimited is a capped request: ratelimit's sentinel, so errors.As with
	// *ratelimit.LimitedError gives the rule and the Retry-After.
	ErrLimited = ratelimit.ErrLimited
	// ErrBusy is returned when concurrent changes kept refusing a write: 503, retry.
	ErrBusy = errors.New("orgs: concurrent changes, retry")
)

// Organisation is an organisation as the caller sees it (docs/api.md §10.3 Organisation).
type Organisation struct {
	OrgID     string    `json:"org_id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	CreatedAt time.Time `json:"created_at"`
	// Role is the caller's role in it.
	Role string `json:"role"`
}

// Member is one member (docs/api.md §10.3 MemberPublic).
type Member struct {
	UserID      string    `json:"user_id"`
	Email       string    `json:"email"`
	DisplayName *string   `json:"display_name"`
	Role        string    `json:"role"`
	JoinedAt    time.Time `json:"joined_at"`
}

// Invitation is one pending invitation (docs/api.md §2.9 InvitePublic); the token is never part of it.
type Invitation struct {
	InviteID       string    `json:"invite_id"`
	Email          string    `json:"email"`
	Role           string    `json:"role"`
	InvitedByEmail *string   `json:"invited_by_email"`
	CreatedAt      time.Time `json:"created_at"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// Users reads accounts; *consoleauth.Service is one.
type Users interface {
	User(ctx context.Context, id string) (consoleauth.User, error)
	// Users returns the accounts with ids that exist, by id.
	Users(ctx context.Context, ids []string) (map[string]consoleauth.User, error)
}

// TOTPVerifier checks and consumes a TOTP code (docs/api.md §5 console rule 2); *consoleauth.Service is one.
type TOTPVerifier interface {
	VerifyTOTP(ctx context.Context, userID, code string) error
}

var (
	_ Users        = (*consoleauth.Service)(nil)
	_ TOTPVerifier = (*consoleauth.Service)(nil)
)

// Options configure a Service.
type Options struct {
	// Clock decides expiry and cap windows; clock.System when nil. Give it the table's clock.
	Clock clock.Clock
	// Logger receives failures that are not answered to a client; slog.Default() when nil.
	Logger *slog.Logger
	// Mailer sends invitations and key-issuance notices. Required.
	Mailer mail.Mailer
	// Keys is the API key store. Required.
	Keys *apikey.Keys
	// Audit is the audit log; one on the table when nil.
	Audit *audit.Log
	// Users reads the members' accounts (display names). Required.
	Users Users
	// TOTP verifies the step-up code of key issuance. Required.
	TOTP TOTPVerifier
	// ConsoleURL is where the console is served, ending in "/"; the invitation link is
	// <ConsoleURL>accept-invite#token=<token>.
	ConsoleURL string
	// Issuer names the service in e-mails; consoleauth.DefaultIssuer when empty.
	Issuer string
	// Caps returns the live-key and seat caps of a plan (0: uncapped); when nil, every plan
	// gets the Free plan's (1 live key, 3 seats).
	Caps func(planID string) (liveKeyCap, seatCap int)
}

// Service is the organisations of one table. It is safe for concurrent use.
type Service struct {
	table      store.Table
	clock      clock.Clock
	log        *slog.Logger
	mailer     mail.Mailer
	keys       *apikey.Keys
	audit      *audit.Log
	users      Users
	totp       TOTPVerifier
	consoleURL string
	issuer     string
	caps       func(string) (int, int)

	orgCap, inviteActorCap, inviteRecipientCap, keyCap *ratelimit.Limiter
}

// New returns the service on table.
func New(table store.Table, opts Options) (*Service, error) {
	switch {
	case table == nil:
		return nil, fmt.Errorf("%w: no table", ErrInvalid)
	case opts.Mailer == nil, opts.Keys == nil, opts.Users == nil, opts.TOTP == nil:
		return nil, fmt.Errorf("%w: Mailer, Keys, Users and TOTP are required", ErrInvalid)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Audit == nil {
		opts.Audit = audit.New(table, audit.Options{Clock: opts.Clock})
	}
	if opts.Issuer == "" {
		opts.Issuer = consoleauth.DefaultIssuer
	}
	if opts.Caps == nil {
		opts.Caps = func(string) (int, int) { return FreeLiveKeyCap, FreeSeatCap }
	}
	s := &Service{
		table: table, clock: opts.Clock, log: opts.Logger, mailer: opts.Mailer, keys: opts.Keys,
		audit: opts.Audit, users: opts.Users, totp: opts.TOTP, consoleURL: opts.ConsoleURL,
		issuer: opts.Issuer, caps: opts.Caps,
	}
	for _, l := range []struct {
		dst  **ratelimit.Limiter
		rule ratelimit.Rule
	}{{&s.orgCap, OrgCreationCap}, {&s.inviteActorCap, InviteActorCap}, {&s.inviteRecipientCap, InviteRecipientCap}, {&s.keyCap, KeyIssuanceCap}} {
		lim, err := ratelimit.New(table, l.rule)
		if err != nil {
			return nil, err
		}
		*l.dst = lim
	}
	return s, nil
}

// Audit returns the audit log the service writes to.
func (s *Service) Audit() *audit.Log { return s.audit }

// Actor is who makes a change: the signed-in user, as the audit log records them.
type Actor struct {
	UserID string
	Email  string
}

// ActorOf returns the actor of a console caller.
func ActorOf(c consoleauth.Caller) Actor { return Actor{UserID: c.User.ID, Email: c.User.Email} }

// allow counts one request against a cap, as a *ratelimit.LimitedError past it.
func (s *Service) allow(ctx context.Context, l *ratelimit.Limiter, rule ratelimit.Rule, subject string) error {
	if err := l.Admit(ctx, subject, s.clock.Now()); err != nil {
		return fmt.Errorf("orgs: %s cap: %w", rule.Name, err)
	}
	return nil
}

// allowInvitation counts one invitation e-mail against both caps of docs/api.md §10.3, the actor's
// 20 an hour and the recipient's 3 a day, in one transaction: a call refused by either spends
// nothing of the other.
func (s *Service) allowInvitation(ctx context.Context, actor Actor, email string) error {
	err := ratelimit.AdmitAll(ctx, s.clock.Now(),
		ratelimit.Check{Limiter: s.inviteActorCap, Subject: actor.UserID},
		ratelimit.Check{Limiter: s.inviteRecipientCap, Subject: ratelimit.AddressSubject(email)})
	if err != nil {
		return fmt.Errorf("orgs: invitation caps: %w", err)
	}
	return nil
}

// transact runs ops, retrying a transaction refused for a collision with another write.
func (s *Service) transact(ctx context.Context, ops []store.Op) error {
	var err error
	for range 4 {
		if err = s.table.TransactWrite(ctx, ops); !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return err
}

// CreateOrg creates an organisation named name on the Free plan with the actor as its only
// owner (docs/api.md §4.3), capped per user per day (docs/api.md §10.3).
func (s *Service) CreateOrg(ctx context.Context, actor Actor, name string) (Organisation, error) {
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameLen {
		return Organisation{}, fmt.Errorf("%w: name of %d characters", ErrInvalid, n)
	}
	if err := s.allow(ctx, s.orgCap, OrgCreationCap, actor.UserID); err != nil {
		return Organisation{}, err
	}
	now := s.clock.Now().UTC()
	o := Organisation{OrgID: "org_" + strings.ToLower(rand.Text()), Name: name, Plan: FreePlan, CreatedAt: now, Role: RoleOwner}
	ok := orgKey(o.OrgID)
	auditOp, _, err := s.audit.PutOp(o.OrgID, ActionOrgCreated, actor.UserID, actor.Email, o.OrgID, map[string]any{"name": name})
	if err != nil {
		return Organisation{}, err
	}
	err = s.transact(ctx, []store.Op{
		store.PutOp(store.Item{
			store.AttrPK: ok.PK, store.AttrSK: ok.SK,
			attrOrgID: o.OrgID, attrName: name, attrPlan: FreePlan, attrCreatedAt: store.FormatTime(now),
			attrOwners: int64(1), attrRev: int64(0),
		}, store.IfNotExists()),
		store.PutOp(memberItem(o.OrgID, actor.UserID, actor.Email, RoleOwner, now), store.IfNotExists()),
		store.PutOp(userOrgItem(actor.UserID, o.OrgID, RoleOwner), store.Condition{}),
		addressOp(actor.Email, o.OrgID),
		auditOp,
	})
	if err != nil {
		return Organisation{}, fmt.Errorf("orgs: create organisation: %w", err)
	}
	return o, nil
}

// Membership is the caller's membership of an organisation, resolved once per request.
type Membership struct {
	Org  Organisation // Role is the caller's
	Self Member       // DisplayName not filled
	rev  int64
	// deleting: the organisation is being deleted (BeginDeletion); only its deletion sees it.
	deleting bool
}

// Resolve returns the membership of userID in orgID with one BatchGet (the organisation item
// and the member item), or ErrNotFound when either is missing (docs/api.md §4.3: 404).
func (s *Service) Resolve(ctx context.Context, orgID, userID string) (Membership, error) {
	if err := knownID("organisation", orgID); err != nil {
		return Membership{}, err
	}
	if err := knownID("user", userID); err != nil {
		return Membership{}, err
	}
	items, err := s.table.BatchGet(ctx, []store.Key{orgKey(orgID), memberKey(orgID, userID)})
	if err != nil {
		return Membership{}, fmt.Errorf("orgs: resolve membership in %s: %w", orgID, err)
	}
	var org, mem store.Item
	for _, it := range items {
		switch it.Key() {
		case orgKey(orgID):
			org = it
		case memberKey(orgID, userID):
			mem = it
		}
	}
	if org == nil || mem == nil {
		return Membership{}, fmt.Errorf("organisation %s: %w", orgID, ErrNotFound)
	}
	m := memberFrom(mem)
	o := orgFrom(org)
	o.Role = m.Role
	return Membership{Org: o, Self: m, rev: org.Int(attrRev), deleting: org.Has(attrDeleting)}, nil
}

// Access tells billing the caller's role in an organisation and the organisation's plan; ok is
// false when userID is not a member or the organisation does not exist (answer 404). Behind
// MembershipMiddleware, which resolved the same membership for the request, it reads nothing.
func (s *Service) Access(ctx context.Context, orgID, userID string) (role, plan string, ok bool, err error) {
	if m, ok := MembershipFrom(ctx); ok && m.Org.OrgID == orgID && m.Self.UserID == userID {
		return m.Org.Role, m.Org.Plan, true, nil
	}
	m, err := s.Resolve(ctx, orgID, userID)
	if errors.Is(err, ErrNotFound) || m.deleting {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	return m.Org.Role, m.Org.Plan, true, nil
}

// ListOrgs returns the organisations userID is a member of, each with the user's role, ordered by
// name (code point order) then org_id; empty when none. GET /console/orgs serves it, so that a
// returning user on a new browser finds their organisations (docs/console.md §1). One
// Query of the user's partition, then one BatchGet of each organisation item and the user's member
// item: the member item, not the partition's copy of the role, decides, so an organisation the user
// has left never appears.
func (s *Service) ListOrgs(ctx context.Context, userID string) ([]Organisation, error) {
	out := []Organisation{}
	if userID == "" {
		return out, nil
	}
	items, err := s.table.Query(ctx, store.Query{PK: userOrgPartition(userID), Prefix: pkOrgPrefix})
	if err != nil {
		return nil, fmt.Errorf("orgs: list organisations of user %s: %w", userID, err)
	}
	if len(items) == 0 {
		return out, nil
	}
	keys := make([]store.Key, 0, 2*len(items))
	for _, it := range items {
		org := strings.TrimPrefix(it.Key().SK, pkOrgPrefix)
		keys = append(keys, orgKey(org), memberKey(org, userID))
	}
	got, err := s.table.BatchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("orgs: read organisations of user %s: %w", userID, err)
	}
	found := map[string]Organisation{}
	roles := map[string]string{}
	for _, it := range got {
		k := it.Key()
		org := strings.TrimPrefix(k.PK, pkOrgPrefix)
		switch k.SK {
		case skOrg:
			if !it.Has(attrDeleting) {
				found[org] = orgFrom(it)
			}
		case skMemberPrefix + userID:
			roles[org] = it.String(attrRole)
		}
	}
	for org, o := range found {
		role, ok := roles[org]
		if !ok {
			continue
		}
		o.Role = role
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Organisation) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.OrgID, b.OrgID))
	})
	return out, nil
}

// SetPlan moves an organisation to planID (billing calls it when a subscription changes);
// ErrNotFound when the organisation does not exist.
func (s *Service) SetPlan(ctx context.Context, orgID, planID string) error {
	if orgID == "" || planID == "" {
		return fmt.Errorf("%w: organisation %q, plan %q", ErrInvalid, orgID, planID)
	}
	_, err := s.table.Update(ctx, orgKey(orgID), store.Update{Set: map[string]any{attrPlan: planID}}, store.IfExists())
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("set plan of organisation %s: %w", orgID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("orgs: set plan of organisation %s: %w", orgID, err)
	}
	return nil
}

// UpdateOrg renames the organisation (owner act, docs/api.md §4.3 PATCH); a nil name changes nothing.
func (s *Service) UpdateOrg(ctx context.Context, m Membership, actor Actor, name *string) (Organisation, error) {
	if err := ownerOnly(m); err != nil {
		return Organisation{}, err
	}
	if name == nil || *name == m.Org.Name {
		return m.Org, nil
	}
	if n := utf8.RuneCountInString(*name); n < 1 || n > MaxNameLen {
		return Organisation{}, fmt.Errorf("%w: name of %d characters", ErrInvalid, n)
	}
	auditOp, _, err := s.audit.PutOp(m.Org.OrgID, ActionOrgUpdated, actor.UserID, actor.Email, m.Org.OrgID,
		map[string]any{"name": *name, "previous_name": m.Org.Name})
	if err != nil {
		return Organisation{}, err
	}
	err = s.transact(ctx, []store.Op{
		store.UpdateOp(orgKey(m.Org.OrgID), store.Update{Set: map[string]any{attrName: *name}}, store.IfExists()),
		auditOp,
	})
	if err != nil {
		return Organisation{}, fmt.Errorf("orgs: rename organisation %s: %w", m.Org.OrgID, err)
	}
	o := m.Org
	o.Name = *name
	return o, nil
}

// RequireOwner refuses, as ErrOwnerOnly, a member who is not an owner: for the owner acts of
// other packages.
func (m Membership) RequireOwner() error { return ownerOnly(m) }

func ownerOnly(m Membership) error {
	if m.Self.Role != RoleOwner {
		return fmt.Errorf("organisation %s: %w", m.Org.OrgID, ErrOwnerOnly)
	}
	return nil
}

// RecordUserAction writes action in the audit log of every organisation the user belongs to:
// the consoleauth.Options.OnTOTPChange hook (docs/api.md §10.3: auth.totp_enabled and
// auth.totp_disabled, in every organisation the user belongs to). Failures are logged.
func (s *Service) RecordUserAction(ctx context.Context, u consoleauth.User, action string) {
	items, err := s.table.Query(ctx, store.Query{PK: userOrgPartition(u.ID), Prefix: pkOrgPrefix})
	if err != nil {
		s.log.Error("orgs: list organisations of a user for the audit log", "user_id", u.ID, "action", action, "error", err.Error())
		return
	}
	for _, it := range items {
		org := strings.TrimPrefix(it.Key().SK, pkOrgPrefix)
		if err := s.audit.Record(ctx, org, action, u.ID, u.Email, u.ID, nil); err != nil {
			s.log.Error("orgs: record a user's action", "org_id", org, "action", action, "error", err.Error())
		}
	}
}
