package orgs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// Key layout (see the package doc). The organisation partition "org#<org_id>" is shared with
// package apikey (sort keys "apikey...") and package audit ("audit#...").
const (
	pkOrgPrefix      = "org#"
	skOrg            = "org"
	skMemberPrefix   = "member#"
	skInvitePrefix   = "invite#"
	pkUserOrgPrefix  = "userorg#"
	pkInviteToken    = "invitetoken#"
	skInviteToken    = "invite"
	invitationPrefix = "inv_"
	tokenPrefix      = "ivt_"
)

// Attribute names.
const (
	attrOrgID       = "org_id"
	attrName        = "name"
	attrPlan        = "plan"
	attrCreatedAt   = "created_at"
	attrOwners      = "owners"
	attrRev         = "rev"
	attrUserID      = "user_id"
	attrEmail       = "email"
	attrRole        = "role"
	attrJoinedAt    = "joined_at"
	attrInviteID    = "invite_id"
	attrInvitedBy   = "invited_by"
	attrInvitedByEm = "invited_by_email"
	attrExpiresAt   = "expires_at"
	attrTokenHash   = "token_hash"
)

// MaxIDBytes is the longest id a path may name: every id this service mints (org_, usr_,
// inv_, key ids) is far shorter, and a longer one could only overflow the store's key limit
// (store.MaxKeyBytes, DynamoDB's own) and turn a lookup of nothing into a 500 instead of the
// 404 docs/api.md §7 gives an id that names nothing.
const MaxIDBytes = 128

// knownID refuses, as ErrNotFound, an id no record can have (empty or over MaxIDBytes), before
// it reaches the store.
func knownID(kind, id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return fmt.Errorf("%s %.40q: %w", kind, id, ErrNotFound)
	}
	return nil
}

func orgKey(org string) store.Key { return store.Key{PK: pkOrgPrefix + org, SK: skOrg} }

func memberKey(org, user string) store.Key {
	return store.Key{PK: pkOrgPrefix + org, SK: skMemberPrefix + user}
}

func inviteKey(org, id string) store.Key {
	return store.Key{PK: pkOrgPrefix + org, SK: skInvitePrefix + id}
}

func userOrgPartition(user string) string { return pkUserOrgPrefix + user }

func userOrgKey(user, org string) store.Key {
	return store.Key{PK: userOrgPartition(user), SK: pkOrgPrefix + org}
}

func tokenKey(hash string) store.Key { return store.Key{PK: pkInviteToken + hash, SK: skInviteToken} }

// tokenHash is the SHA-256 an invitation token is stored and looked up by (docs/api.md §10.3).
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func memberItem(org, user, email, role string, joined time.Time) store.Item {
	k := memberKey(org, user)
	return store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK,
		attrOrgID: org, attrUserID: user, attrEmail: email, attrRole: role, attrJoinedAt: store.FormatTime(joined),
	}
}

func userOrgItem(user, org, role string) store.Item {
	k := userOrgKey(user, org)
	return store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK, attrOrgID: org, attrRole: role}
}

func orgFrom(it store.Item) Organisation {
	return Organisation{
		OrgID:     it.String(attrOrgID),
		Name:      it.String(attrName),
		Plan:      it.String(attrPlan),
		CreatedAt: it.Time(attrCreatedAt),
	}
}

func memberFrom(it store.Item) Member {
	return Member{
		UserID:   it.String(attrUserID),
		Email:    it.String(attrEmail),
		Role:     it.String(attrRole),
		JoinedAt: it.Time(attrJoinedAt),
	}
}

// invitation is the stored invitation: the public record and what only this package reads.
type invitation struct {
	Invitation
	orgID     string
	invitedBy string
	tokenHash string
}

func (inv invitation) item() store.Item {
	k := inviteKey(inv.orgID, inv.InviteID)
	it := store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK,
		attrOrgID: inv.orgID, attrInviteID: inv.InviteID, attrEmail: inv.Email, attrRole: inv.Role,
		attrCreatedAt: store.FormatTime(inv.CreatedAt), attrExpiresAt: store.FormatTime(inv.ExpiresAt),
		attrTokenHash: inv.tokenHash,
		// Past its expiry an invitation is gone for every read, the seat count included.
		store.AttrTTL: inv.ExpiresAt.Unix(),
	}
	if inv.invitedBy != "" {
		it[attrInvitedBy] = inv.invitedBy
	}
	if inv.InvitedByEmail != nil {
		it[attrInvitedByEm] = *inv.InvitedByEmail
	}
	return it
}

func (inv invitation) tokenItem() store.Item {
	k := tokenKey(inv.tokenHash)
	return store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK,
		attrOrgID: inv.orgID, attrInviteID: inv.InviteID,
		store.AttrTTL: inv.ExpiresAt.Unix(),
	}
}

func invitationFrom(it store.Item) invitation {
	inv := invitation{
		Invitation: Invitation{
			InviteID:  it.String(attrInviteID),
			Email:     it.String(attrEmail),
			Role:      it.String(attrRole),
			CreatedAt: it.Time(attrCreatedAt),
			ExpiresAt: it.Time(attrExpiresAt),
		},
		orgID:     it.String(attrOrgID),
		invitedBy: it.String(attrInvitedBy),
		tokenHash: it.String(attrTokenHash),
	}
	if it.Has(attrInvitedByEm) {
		e := it.String(attrInvitedByEm)
		inv.InvitedByEmail = &e
	}
	return inv
}
