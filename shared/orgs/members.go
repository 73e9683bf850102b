package orgs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/store"
)

// maxAttempts bounds the optimistic retries of a write refused because the organisation's
// members changed meanwhile.
const maxAttempts = 5

// normalizeEmail is the identity of an address, as consoleauth has it: trimmed, lower case.
func normalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// newToken returns an invitation token: "ivt_" and 52 characters of base32 (260 random bits).
func newToken() string { return tokenPrefix + rand.Text() + rand.Text() }

// ListMembers returns the members (oldest first) and the pending, unexpired invitations
// (docs/api.md §4.3: together, in one answer). Readable by any member.
func (s *Service) ListMembers(ctx context.Context, m Membership) ([]Member, []Invitation, error) {
	members, invites, err := s.seats(ctx, m.Org.OrgID)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(members))
	for i, mem := range members {
		ids[i] = mem.UserID
	}
	users, err := s.users.Users(ctx, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("orgs: read the members of %s: %w", m.Org.OrgID, err)
	}
	for i := range members {
		if u, ok := users[members[i].UserID]; ok {
			members[i].DisplayName = u.DisplayName
		}
	}
	out := make([]Invitation, len(invites))
	for i, inv := range invites {
		out[i] = inv.Invitation
	}
	return members, out, nil
}

// seats reads the members and the live invitations of an organisation.
func (s *Service) seats(ctx context.Context, org string) ([]Member, []invitation, error) {
	mitems, err := s.table.Query(ctx, store.Query{PK: pkOrgPrefix + org, Prefix: skMemberPrefix})
	if err != nil {
		return nil, nil, fmt.Errorf("orgs: list members of %s: %w", org, err)
	}
	iitems, err := s.table.Query(ctx, store.Query{PK: pkOrgPrefix + org, Prefix: skInvitePrefix})
	if err != nil {
		return nil, nil, fmt.Errorf("orgs: list invitations of %s: %w", org, err)
	}
	members := make([]Member, 0, len(mitems))
	for _, it := range mitems {
		members = append(members, memberFrom(it))
	}
	now := s.clock.Now()
	invites := make([]invitation, 0, len(iitems))
	for _, it := range iitems {
		// The table hides items past their TTL; the explicit check keeps the rule independent
		// of when the adapter's clock and this one tick.
		if inv := invitationFrom(it); inv.ExpiresAt.After(now) {
			invites = append(invites, inv)
		}
	}
	slices.SortFunc(members, func(a, b Member) int { return a.JoinedAt.Compare(b.JoinedAt) })
	slices.SortFunc(invites, func(a, b invitation) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return members, invites, nil
}

// Owners returns organisation orgID (Role empty) and the addresses of its owners, for a notice the service sends on its own account rather than a member's: a verdict
// on the organisation's events (docs/network.md §2). ErrNotFound when it does not exist.
func (s *Service) Owners(ctx context.Context, orgID string) (Organisation, []string, error) {
	if err := knownID("organisation", orgID); err != nil {
		return Organisation{}, nil, err
	}
	it, err := s.table.Get(ctx, orgKey(orgID))
	if errors.Is(err, store.ErrNotFound) {
		return Organisation{}, nil, fmt.Errorf("organisation %s: %w", orgID, ErrNotFound)
	}
	if err != nil {
		return Organisation{}, nil, fmt.Errorf("orgs: read organisation %s: %w", orgID, err)
	}
	members, _, err := s.seats(ctx, orgID)
	if err != nil {
		return Organisation{}, nil, err
	}
	var owners []string
	for _, m := range members {
		if m.Role == RoleOwner {
			owners = append(owners, m.Email)
		}
	}
	return orgFrom(it), owners, nil
}

// Invite invites email with role (owner act, docs/api.md §4.3). The seat cap of the plan counts
// members and live invitations together (ErrSeatCap past it); the invitation is written under the
// condition that the organisation's members did not change since they were counted, so concurrent
// invitations cannot exceed the cap. Capped per actor and per recipient (docs/api.md §10.3). The
// invitation e-mail carries the token in its link; the token is returned nowhere.
func (s *Service) Invite(ctx context.Context, m Membership, actor Actor, email, role string) (Invitation, error) {
	if err := ownerOnly(m); err != nil {
		return Invitation{}, err
	}
	if role == "" {
		role = RoleMember
	}
	if role != RoleOwner && role != RoleMember {
		return Invitation{}, fmt.Errorf("%w: role %q", ErrInvalid, role)
	}
	email = normalizeEmail(email)
	rev := m.rev
	plan := m.Org.Plan
	counted := false
	for range maxAttempts {
		members, invites, err := s.seats(ctx, m.Org.OrgID)
		if err != nil {
			return Invitation{}, err
		}
		for _, mem := range members {
			if mem.Email == email {
				return Invitation{}, fmt.Errorf("invite %s: %w", email, ErrAlreadyMember)
			}
		}
		for _, inv := range invites {
			if inv.Email == email {
				return Invitation{}, fmt.Errorf("invite %s: %w", email, ErrAlreadyInvited)
			}
		}
		if _, seatCap := s.caps(plan); seatCap > 0 && len(members)+len(invites) >= seatCap {
			return Invitation{}, fmt.Errorf("organisation %s has %d members and %d invitations of %d seats: %w",
				m.Org.OrgID, len(members), len(invites), seatCap, ErrSeatCap)
		}
		if !counted {
			if err := s.allowInvitation(ctx, actor, email); err != nil {
				return Invitation{}, err
			}
			counted = true
		}
		inv, token := s.newInvitation(m.Org.OrgID, actor, email, role)
		auditOp, _, err := s.audit.PutOp(m.Org.OrgID, ActionMemberInvited, actor.UserID, actor.Email, inv.InviteID,
			map[string]any{"email": email, "role": role})
		if err != nil {
			return Invitation{}, err
		}
		err = s.transact(ctx, []store.Op{
			store.UpdateOp(orgKey(m.Org.OrgID), store.Update{Add: map[string]int64{attrRev: 1}}, store.IfEqual(attrRev, rev)),
			store.PutOp(inv.item(), store.IfNotExists()),
			store.PutOp(inv.tokenItem(), store.IfNotExists()),
			addressOp(email, m.Org.OrgID),
			auditOp,
		})
		var ce *store.ConditionError
		switch {
		case errors.As(err, &ce) && ce.Op == 0:
			// The members or invitations changed since they were counted: count again.
			org, gerr := s.table.Get(ctx, orgKey(m.Org.OrgID))
			if errors.Is(gerr, store.ErrNotFound) {
				return Invitation{}, fmt.Errorf("organisation %s: %w", m.Org.OrgID, ErrNotFound)
			}
			if gerr != nil {
				return Invitation{}, fmt.Errorf("orgs: reread organisation %s: %w", m.Org.OrgID, gerr)
			}
			rev, plan = org.Int(attrRev), org.String(attrPlan)
			continue
		case err != nil:
			return Invitation{}, fmt.Errorf("orgs: write invitation: %w", err)
		}
		s.sendInvitation(ctx, m.Org, actor, inv, token)
		return inv.Invitation, nil
	}
	return Invitation{}, fmt.Errorf("invite %s: %w", email, ErrBusy)
}

func (s *Service) newInvitation(org string, actor Actor, email, role string) (invitation, string) {
	now := s.clock.Now().UTC()
	token := newToken()
	inv := invitation{
		Invitation: Invitation{
			InviteID:  invitationPrefix + strings.ToLower(rand.Text()),
			Email:     email,
			Role:      role,
			CreatedAt: now,
			ExpiresAt: now.Add(InvitationTTL),
		},
		orgID:     org,
		invitedBy: actor.UserID,
		tokenHash: tokenHash(token),
	}
	if actor.Email != "" {
		e := actor.Email
		inv.InvitedByEmail = &e
	}
	return inv, token
}

// getInvitation reads a live invitation of org, or ErrNotFound.
func (s *Service) getInvitation(ctx context.Context, org, id string) (invitation, error) {
	if err := knownID("invitation", id); err != nil {
		return invitation{}, err
	}
	it, err := s.table.Get(ctx, inviteKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return invitation{}, fmt.Errorf("invitation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return invitation{}, fmt.Errorf("orgs: read invitation %s: %w", id, err)
	}
	inv := invitationFrom(it)
	if !inv.ExpiresAt.After(s.clock.Now()) {
		return invitation{}, fmt.Errorf("invitation %s expired: %w", id, ErrNotFound)
	}
	return inv, nil
}

// Resend replaces a pending invitation with a new one (docs/api.md §3: a new invite_id, the old one
// retired) and e-mails its new link. It takes no extra seat (docs/api.md §4.3) and counts in the
// invitation caps, since it sends an invitation e-mail (docs/api.md §10.3).
func (s *Service) Resend(ctx context.Context, m Membership, actor Actor, inviteID string) (Invitation, error) {
	if err := ownerOnly(m); err != nil {
		return Invitation{}, err
	}
	old, err := s.getInvitation(ctx, m.Org.OrgID, inviteID)
	if err != nil {
		return Invitation{}, err
	}
	if err := s.allowInvitation(ctx, actor, old.Email); err != nil {
		return Invitation{}, err
	}
	inv, token := s.newInvitation(m.Org.OrgID, actor, old.Email, old.Role)
	auditOp, _, err := s.audit.PutOp(m.Org.OrgID, ActionInvitationResent, actor.UserID, actor.Email, inv.InviteID,
		map[string]any{"email": inv.Email, "role": inv.Role, "replaces": old.InviteID})
	if err != nil {
		return Invitation{}, err
	}
	err = s.transact(ctx, []store.Op{
		store.DeleteOp(inviteKey(m.Org.OrgID, old.InviteID), store.IfExists()),
		store.DeleteOp(tokenKey(old.tokenHash), store.Condition{}),
		store.PutOp(inv.item(), store.IfNotExists()),
		store.PutOp(inv.tokenItem(), store.IfNotExists()),
		store.UpdateOp(orgKey(m.Org.OrgID), store.Update{Add: map[string]int64{attrRev: 1}}, store.IfExists()),
		auditOp,
	})
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && (ce.Op == 0 || ce.Op == 4):
		return Invitation{}, fmt.Errorf("invitation %s retired meanwhile: %w", inviteID, ErrNotFound)
	case err != nil:
		return Invitation{}, fmt.Errorf("orgs: resend invitation %s: %w", inviteID, err)
	}
	s.sendInvitation(ctx, m.Org, actor, inv, token)
	return inv.Invitation, nil
}

// Withdraw deletes a pending invitation (owner act); its link stops working at once.
func (s *Service) Withdraw(ctx context.Context, m Membership, actor Actor, inviteID string) error {
	if err := ownerOnly(m); err != nil {
		return err
	}
	inv, err := s.getInvitation(ctx, m.Org.OrgID, inviteID)
	if err != nil {
		return err
	}
	auditOp, _, err := s.audit.PutOp(m.Org.OrgID, ActionInvitationWithdrawn, actor.UserID, actor.Email, inv.InviteID,
		map[string]any{"email": inv.Email, "role": inv.Role})
	if err != nil {
		return err
	}
	err = s.transact(ctx, []store.Op{
		store.DeleteOp(inviteKey(m.Org.OrgID, inv.InviteID), store.IfExists()),
		store.DeleteOp(tokenKey(inv.tokenHash), store.Condition{}),
		store.UpdateOp(orgKey(m.Org.OrgID), store.Update{Add: map[string]int64{attrRev: 1}}, store.IfExists()),
		auditOp,
	})
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("invitation %s retired meanwhile: %w", inviteID, ErrNotFound)
	case err != nil:
		return fmt.Errorf("orgs: withdraw invitation %s: %w", inviteID, err)
	}
	return nil
}

// Accept makes the signed-in caller a member through an invitation token (docs/api.md §3, §4.3). An
// unknown, used, withdrawn, replaced or expired token is ErrInvitationNotFound (docs/api.md §10.3:
// 404); a caller whose address is not the invited one is ErrEmailMismatch (403); one already a
// member is ErrAlreadyMember (409). It returns the organisation with the caller's new role.
func (s *Service) Accept(ctx context.Context, c consoleauth.Caller, token string) (Organisation, error) {
	tok, err := s.table.Get(ctx, tokenKey(tokenHash(token)))
	if errors.Is(err, store.ErrNotFound) {
		return Organisation{}, ErrInvitationNotFound
	}
	if err != nil {
		return Organisation{}, fmt.Errorf("orgs: read invitation token: %w", err)
	}
	orgID, inviteID := tok.String(attrOrgID), tok.String(attrInviteID)
	inv, err := s.getInvitation(ctx, orgID, inviteID)
	if errors.Is(err, ErrNotFound) {
		return Organisation{}, fmt.Errorf("invitation %s: %w", inviteID, ErrInvitationNotFound)
	}
	if err != nil {
		return Organisation{}, err
	}
	if normalizeEmail(c.User.Email) != inv.Email {
		return Organisation{}, fmt.Errorf("invitation %s: %w", inviteID, ErrEmailMismatch)
	}
	orgItem, err := s.table.Get(ctx, orgKey(orgID))
	if errors.Is(err, store.ErrNotFound) || (err == nil && orgItem.Has(attrDeleting)) {
		return Organisation{}, fmt.Errorf("organisation %s of invitation %s: %w", orgID, inviteID, ErrInvitationNotFound)
	}
	if err != nil {
		return Organisation{}, fmt.Errorf("orgs: read organisation %s: %w", orgID, err)
	}
	now := s.clock.Now().UTC()
	up := store.Update{Add: map[string]int64{attrRev: 1}}
	if inv.Role == RoleOwner {
		up.Add[attrOwners] = 1
	}
	auditOp, _, err := s.audit.PutOp(orgID, ActionInvitationAccepted, c.User.ID, c.User.Email, inv.InviteID,
		map[string]any{"email": inv.Email, "role": inv.Role, "user_id": c.User.ID})
	if err != nil {
		return Organisation{}, err
	}
	err = s.transact(ctx, []store.Op{
		store.DeleteOp(inviteKey(orgID, inv.InviteID), store.IfExists()),
		store.DeleteOp(tokenKey(inv.tokenHash), store.IfExists()),
		store.PutOp(memberItem(orgID, c.User.ID, inv.Email, inv.Role, now), store.IfNotExists()),
		store.PutOp(userOrgItem(c.User.ID, orgID, inv.Role), store.Condition{}),
		store.UpdateOp(orgKey(orgID), up, store.And(store.IfExists(), store.IfAttrNotExists(attrDeleting))),
		auditOp,
	})
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && ce.Op == 2:
		return Organisation{}, fmt.Errorf("accept invitation %s: %w", inviteID, ErrAlreadyMember)
	case errors.As(err, &ce):
		return Organisation{}, fmt.Errorf("invitation %s used meanwhile: %w", inviteID, ErrInvitationNotFound)
	case err != nil:
		return Organisation{}, fmt.Errorf("orgs: accept invitation %s: %w", inviteID, err)
	}
	o := orgFrom(orgItem)
	o.Role = inv.Role
	return o, nil
}

// member reads the member userID of org, or ErrNotFound.
func (s *Service) member(ctx context.Context, org, userID string) (Member, error) {
	if err := knownID("member", userID); err != nil {
		return Member{}, err
	}
	it, err := s.table.Get(ctx, memberKey(org, userID))
	if errors.Is(err, store.ErrNotFound) {
		return Member{}, fmt.Errorf("member %s: %w", userID, ErrNotFound)
	}
	if err != nil {
		return Member{}, fmt.Errorf("orgs: read member %s: %w", userID, err)
	}
	return memberFrom(it), nil
}

// ChangeRole sets the role of member userID (owner act). Demoting the last owner is
// ErrLastOwner (docs/api.md §10.3: 409): the owners counter is decremented under owners > 1 in the
// same transaction, so two owners demoting each other concurrently cannot both succeed.
func (s *Service) ChangeRole(ctx context.Context, m Membership, actor Actor, userID, role string) (Member, error) {
	if err := ownerOnly(m); err != nil {
		return Member{}, err
	}
	if role != RoleOwner && role != RoleMember {
		return Member{}, fmt.Errorf("%w: role %q", ErrInvalid, role)
	}
	for range maxAttempts {
		target, err := s.member(ctx, m.Org.OrgID, userID)
		if err != nil {
			return Member{}, err
		}
		if target.Role == role {
			return s.withName(ctx, target), nil
		}
		up := store.Update{Add: map[string]int64{attrRev: 1}}
		orgCond := store.IfExists()
		if role == RoleMember {
			up.Add[attrOwners] = -1
			orgCond = store.IfGreater(attrOwners, int64(1))
		} else {
			up.Add[attrOwners] = 1
		}
		auditOp, _, err := s.audit.PutOp(m.Org.OrgID, ActionMemberRoleChanged, actor.UserID, actor.Email, userID,
			map[string]any{"email": target.Email, "from": target.Role, "to": role})
		if err != nil {
			return Member{}, err
		}
		err = s.transact(ctx, []store.Op{
			store.UpdateOp(memberKey(m.Org.OrgID, userID), store.Update{Set: map[string]any{attrRole: role}}, store.IfEqual(attrRole, target.Role)),
			store.UpdateOp(orgKey(m.Org.OrgID), up, orgCond),
			store.PutOp(userOrgItem(userID, m.Org.OrgID, role), store.Condition{}),
			auditOp,
		})
		var ce *store.ConditionError
		switch {
		case errors.As(err, &ce) && ce.Op == 1:
			return Member{}, fmt.Errorf("demote %s: %w", userID, ErrLastOwner)
		case errors.As(err, &ce):
			continue // the member changed meanwhile: read again
		case err != nil:
			return Member{}, fmt.Errorf("orgs: change role of %s: %w", userID, err)
		}
		target.Role = role
		return s.withName(ctx, target), nil
	}
	return Member{}, fmt.Errorf("change role of %s: %w", userID, ErrBusy)
}

func (s *Service) withName(ctx context.Context, mem Member) Member {
	if u, err := s.users.User(ctx, mem.UserID); err == nil {
		mem.DisplayName = u.DisplayName
	}
	return mem
}

// Remove removes member userID (owner act); the organisation's keys stay (docs/api.md §4.3: keys
// belong to the organisation). Removing the last owner is ErrLastOwner.
func (s *Service) Remove(ctx context.Context, m Membership, actor Actor, userID string) error {
	if err := ownerOnly(m); err != nil {
		return err
	}
	return s.removeMember(ctx, m.Org.OrgID, actor, userID, ActionMemberRemoved)
}

// Leave removes the caller from the organisation (any member); the last owner cannot leave.
func (s *Service) Leave(ctx context.Context, m Membership, actor Actor) error {
	return s.removeMember(ctx, m.Org.OrgID, actor, m.Self.UserID, ActionMemberLeft)
}

func (s *Service) removeMember(ctx context.Context, org string, actor Actor, userID, action string) error {
	for range maxAttempts {
		target, err := s.member(ctx, org, userID)
		if err != nil {
			return err
		}
		up := store.Update{Add: map[string]int64{attrRev: 1}}
		orgCond := store.IfExists()
		if target.Role == RoleOwner {
			up.Add[attrOwners] = -1
			orgCond = store.IfGreater(attrOwners, int64(1))
		}
		auditOp, _, err := s.audit.PutOp(org, action, actor.UserID, actor.Email, userID,
			map[string]any{"email": target.Email, "role": target.Role})
		if err != nil {
			return err
		}
		err = s.transact(ctx, []store.Op{
			store.DeleteOp(memberKey(org, userID), store.IfEqual(attrRole, target.Role)),
			store.UpdateOp(orgKey(org), up, orgCond),
			store.DeleteOp(userOrgKey(userID, org), store.Condition{}),
			auditOp,
		})
		var ce *store.ConditionError
		switch {
		case errors.As(err, &ce) && ce.Op == 1:
			return fmt.Errorf("remove %s: %w", userID, ErrLastOwner)
		case errors.As(err, &ce):
			continue
		case err != nil:
			return fmt.Errorf("orgs: remove member %s: %w", userID, err)
		}
		return nil
	}
	return fmt.Errorf("remove %s: %w", userID, ErrBusy)
}
