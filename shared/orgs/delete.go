package orgs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/store"
)

// The deletion of an organisation and the erasure of a person, as far as the organisations
// are concerned (docs/privacy.md §6). Package erasure runs the two acts; this file gives it
// the steps that touch what this package keeps.

// attrDeleting marks an organisation being deleted: from then on it is gone for every route
// but its deletion (MembershipMiddleware) and from every member's list.
const attrDeleting = "deleting_at"

// pkAddress is the partition of an address, shared with consoleauth (whose index from the
// address to the account is its item "user"): this package files there, under "org#<org_id>",
// each organisation whose records may name the address (made by it, joined by it, invited
// it), so that erasing the person finds them all, those they have left included.
const pkAddress = "useremail#"

func addressKey(email, org string) store.Key {
	return store.Key{PK: pkAddress + normalizeEmail(email), SK: pkOrgPrefix + org}
}

// addressOp files organisation org under email's partition (see pkAddress).
func addressOp(email, org string) store.Op {
	k := addressKey(email, org)
	return store.PutOp(store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK, attrOrgID: org}, store.Condition{})
}

// Footprint returns the organisations whose records may name email (see pkAddress).
func (s *Service) Footprint(ctx context.Context, email string) ([]string, error) {
	items, err := s.table.Query(ctx, store.Query{PK: pkAddress + normalizeEmail(email), Prefix: pkOrgPrefix})
	if err != nil {
		return nil, fmt.Errorf("orgs: read the organisations of an address: %w", err)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.String(attrOrgID))
	}
	return out, nil
}

// StepUp checks the TOTP step-up of a sensitive owner act (docs/api.md §5 console rule 2): when
// the caller's account has TOTP, code must be a valid, unused code, which it consumes
// (ErrTOTPRequired otherwise, ErrLimited past the attempts' cap). act names the act in errors.
func (s *Service) StepUp(ctx context.Context, c consoleauth.Caller, code *string, act string) error {
	if !c.User.TOTPEnabled {
		return nil
	}
	if code == nil || *code == "" {
		return fmt.Errorf("%s without totp_code: %w", act, ErrTOTPRequired)
	}
	err := s.totp.VerifyTOTP(ctx, c.User.ID, *code)
	switch {
	case errors.Is(err, ErrLimited):
		return fmt.Errorf("%s: %w", act, err)
	case errors.Is(err, consoleauth.ErrInvalidTOTP), errors.Is(err, consoleauth.ErrTOTPNotEnabled):
		return fmt.Errorf("%s: %w: %w", act, ErrTOTPRequired, err)
	case err != nil:
		return fmt.Errorf("orgs: verify TOTP for %s: %w", act, err)
	}
	return nil
}

// BeginDeletion marks m's organisation as being deleted (owner act). Marking it again is
// answered as done: a deletion that failed half-way is finished by sending it again.
func (s *Service) BeginDeletion(ctx context.Context, m Membership) error {
	if err := ownerOnly(m); err != nil {
		return err
	}
	_, err := s.table.Update(ctx, orgKey(m.Org.OrgID), store.Update{
		Set: map[string]any{attrDeleting: store.FormatTime(s.clock.Now())},
		Add: map[string]int64{attrRev: 1},
	}, store.IfExists())
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("organisation %s: %w", m.Org.OrgID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("orgs: mark organisation %s deleted: %w", m.Org.OrgID, err)
	}
	return nil
}

// Purge removes what this package keeps of an organisation marked by BeginDeletion: it revokes
// every key (their streams end with the revocation, docs/api.md §4.4), removes the invitations
// and their tokens, every other record of the organisation's partition (audit log, usage,
// billing state, webhook endpoints), then its members, their entries in their lists of
// organisations, and last the organisation itself, its name with it. The records whose sort
// keys begin with one of expiring, which expire on their own and name no one (webhook
// deliveries), are not even read: they are left to their expiry, so that a busy endpoint's
// month of them does not make the deletion outlast a request (docs/performance.md §16). Run
// the other packages' teardowns before: once the organisation is gone, nothing finds it again.
func (s *Service) Purge(ctx context.Context, org string, expiring ...string) error {
	keys, err := s.keys.List(ctx, org, "", false)
	if err != nil {
		return fmt.Errorf("orgs: list the keys of %s: %w", org, err)
	}
	for _, k := range keys {
		if _, err := s.keys.Revoke(ctx, org, k.KeyID, nil); err != nil && !errors.Is(err, apikey.ErrAlreadyRevoked) && !errors.Is(err, apikey.ErrNotFound) {
			return fmt.Errorf("orgs: revoke key %s of %s: %w", k.KeyID, org, err)
		}
	}
	items, err := s.readAround(ctx, pkOrgPrefix+org, expiring)
	if err != nil {
		return fmt.Errorf("orgs: read organisation %s to delete it: %w", org, err)
	}
	var records, members []store.Key
	var last store.Item
	for _, it := range items {
		k := it.Key()
		switch {
		case k.SK == skOrg:
			last = it
		case strings.HasPrefix(k.SK, skMemberPrefix):
			// The member's filing under their address goes too; a former member's stays
			// until they are erased.
			members = append(members, userOrgKey(it.String(attrUserID), org), addressKey(it.String(attrEmail), org), k)
		case strings.HasPrefix(k.SK, skInvitePrefix):
			inv := invitationFrom(it)
			records = append(records, tokenKey(inv.tokenHash), addressKey(inv.Email, org), k)
		default:
			records = append(records, k)
		}
	}
	// The members last, so that a purge that fails half-way leaves the organisation to its
	// owners, who finish it by deleting again.
	if err := store.DeleteKeys(ctx, s.table, records); err != nil {
		return err
	}
	if err := store.DeleteKeys(ctx, s.table, members); err != nil {
		return err
	}
	if last != nil {
		if err := s.table.Delete(ctx, orgKey(org), store.IfExists()); err != nil && !errors.Is(err, store.ErrConditionFailed) {
			return fmt.Errorf("orgs: delete organisation %s: %w", org, err)
		}
	}
	return nil
}

// readAround reads partition pk but the items whose sort keys begin with one of skip: the
// ranges between them, in as many queries.
func (s *Service) readAround(ctx context.Context, pk string, skip []string) ([]store.Item, error) {
	skip = slices.Sorted(slices.Values(skip))
	var out []store.Item
	from := ""
	for _, p := range skip {
		items, err := s.table.Query(ctx, store.Query{PK: pk, From: from, To: p})
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		from = p[:len(p)-1] + string(p[len(p)-1]+1) // the first sort key past the prefix
	}
	items, err := s.table.Query(ctx, store.Query{PK: pk, From: from})
	if err != nil {
		return nil, err
	}
	return append(out, items...), nil
}

// Departure is what erasing a person's account does to their organisations.
type Departure struct {
	// Leave are the organisations they leave: others stay, an owner among them.
	Leave []Membership
	// Delete are the organisations of which they are the only member, deleted with them.
	Delete []Membership
}

// LastOwnerError refuses an erasure while the person is the last owner of an organisation
// with other members (docs/privacy.md §6): someone must be made an owner, or the
// organisation deleted, first.
type LastOwnerError struct{ Org Organisation }

func (e *LastOwnerError) Error() string {
	return fmt.Sprintf("the last owner of %s, which has other members: %v", e.Org.OrgID, ErrLastOwner)
}

func (e *LastOwnerError) Unwrap() error { return ErrLastOwner }

// PlanDeparture decides what erasing userID does to each of their organisations, or refuses
// with *LastOwnerError, before anything is changed.
func (s *Service) PlanDeparture(ctx context.Context, userID string) (Departure, error) {
	list, err := s.ListOrgs(ctx, userID)
	if err != nil {
		return Departure{}, err
	}
	var d Departure
	for _, o := range list {
		m, err := s.Resolve(ctx, o.OrgID, userID)
		if errors.Is(err, ErrNotFound) {
			continue // left or deleted meanwhile
		}
		if err != nil {
			return Departure{}, err
		}
		members, _, err := s.seats(ctx, o.OrgID)
		if err != nil {
			return Departure{}, err
		}
		owners := 0
		for _, mem := range members {
			if mem.Role == RoleOwner {
				owners++
			}
		}
		switch {
		case len(members) == 1:
			d.Delete = append(d.Delete, m)
		case m.Org.Role == RoleOwner && owners == 1:
			return Departure{}, &LastOwnerError{Org: m.Org}
		default:
			d.Leave = append(d.Leave, m)
		}
	}
	return d, nil
}

// Depart removes the person of m from its organisation for their erasure: the log records
// that they left, by their id; their address is forgotten after (ForgetAddress).
func (s *Service) Depart(ctx context.Context, m Membership) error {
	return s.removeMember(ctx, m.Org.OrgID, Actor{UserID: m.Self.UserID}, m.Self.UserID, ActionMemberLeft)
}

// ForgetAddress makes organisation org's records stop naming an erased person's address
// (docs/privacy.md §6): the invitations addressed to it go with their tokens, those it sent
// lose invited_by_email, and the audit log forgets it (audit.Log.ForgetAddress). The
// records of other packages forget it through their own ForgetAddress.
func (s *Service) ForgetAddress(ctx context.Context, org, email string) error {
	email = normalizeEmail(email)
	items, err := s.table.Query(ctx, store.Query{PK: pkOrgPrefix + org, Prefix: skInvitePrefix})
	if err != nil {
		return fmt.Errorf("orgs: read the invitations of %s: %w", org, err)
	}
	for _, it := range items {
		if inv := invitationFrom(it); inv.Email == email {
			err := s.transact(ctx, []store.Op{
				store.DeleteOp(inviteKey(org, inv.InviteID), store.Condition{}),
				store.DeleteOp(tokenKey(inv.tokenHash), store.Condition{}),
			})
			if err != nil {
				return fmt.Errorf("orgs: delete invitation %s: %w", inv.InviteID, err)
			}
		}
	}
	if err := store.ForgetValue(ctx, s.table, store.Query{PK: pkOrgPrefix + org, Prefix: skInvitePrefix}, email, nil); err != nil {
		return err
	}
	return s.audit.ForgetAddress(ctx, org, email)
}

// ForgetRecipient drops the windows of the cap on invitations an erased address received,
// once for all organisations: their keys derive from the address (docs/privacy.md §6).
func (s *Service) ForgetRecipient(ctx context.Context, email string) error {
	return s.inviteRecipientCap.Forget(ctx, ratelimit.AddressSubject(normalizeEmail(email)), s.clock.Now())
}
