package apikey

import (
	"strings"

	"github.com/roadevents/roadevents/shared/store"
)

// Key layout (see the package doc). The organisation partition "org#<org_id>" is shared with
// the other records of an organisation (docs/architecture.md §2); this package owns the
// sort keys starting with "apikey".
const (
	pkLookupPrefix = "apikey#"
	skLookup       = "apikey"
	pkOrgPrefix    = "org#"
	skKeyPrefix    = "apikey#"
	skLiveCounter  = "apikeys#live"
)

// Attribute names.
const (
	attrKeyID          = "key_id"
	attrOrgID          = "org_id"
	attrEnv            = "environment"
	attrLabel          = "label"
	attrPrefix         = "prefix"
	attrHash           = "hash"
	attrCreatedAt      = "created_at"
	attrCreatedBy      = "created_by"
	attrCreatedByEmail = "created_by_email"
	attrLastUsedAt     = "last_used_at"
	attrRevoked        = "revoked"
	attrRevokedAt      = "revoked_at"
	attrActive         = "active"
)

func lookupKey(hash string) store.Key { return store.Key{PK: pkLookupPrefix + hash, SK: skLookup} }

// IsLookupItem reports whether k is the key of a key's lookup item, the one Authenticate reads
// and Revoke marks revoked: what the stream hub watches in the change feed.
func IsLookupItem(k store.Key) bool {
	return k.SK == skLookup && strings.HasPrefix(k.PK, pkLookupPrefix)
}

// Revoked tells, from a change of the table's feed, the id of the key it revoked: a lookup item
// written revoked that was not revoked before.
func Revoked(ch store.Change) (keyID string, ok bool) {
	if !IsLookupItem(ch.Key) || ch.New == nil || !ch.New.Bool(attrRevoked) || ch.Old != nil && ch.Old.Bool(attrRevoked) {
		return "", false
	}
	id := ch.New.String(attrKeyID)
	return id, id != ""
}

func orgPartition(org string) string { return pkOrgPrefix + org }

func listingKey(org, keyID string) store.Key {
	return store.Key{PK: orgPartition(org), SK: skKeyPrefix + keyID}
}

func liveCounterKey(org string) store.Key {
	return store.Key{PK: orgPartition(org), SK: skLiveCounter}
}

// lookupItem is what Authenticate reads: just enough to make a Principal and refuse a
// revoked key.
func (k Key) lookupItem() store.Item {
	lk := lookupKey(k.Hash)
	return store.Item{
		store.AttrPK: lk.PK,
		store.AttrSK: lk.SK,
		attrKeyID:    k.KeyID,
		attrOrgID:    k.OrgID,
		attrEnv:      k.Environment,
		attrHash:     k.Hash,
		attrRevoked:  false,
	}
}

// listingItem is the full record, under the organisation's partition.
func (k Key) listingItem() store.Item {
	lk := listingKey(k.OrgID, k.KeyID)
	it := store.Item{
		store.AttrPK:  lk.PK,
		store.AttrSK:  lk.SK,
		attrKeyID:     k.KeyID,
		attrOrgID:     k.OrgID,
		attrEnv:       k.Environment,
		attrLabel:     k.Label,
		attrPrefix:    k.Prefix,
		attrHash:      k.Hash,
		attrCreatedAt: formatTime(k.CreatedAt),
		attrRevoked:   false,
	}
	if k.CreatedBy != "" {
		it[attrCreatedBy] = k.CreatedBy
	}
	if k.CreatedByEmail != "" {
		it[attrCreatedByEmail] = k.CreatedByEmail
	}
	return it
}

func keyFromItem(it store.Item) Key {
	return Key{
		KeyID:          it.String(attrKeyID),
		OrgID:          it.String(attrOrgID),
		Environment:    it.String(attrEnv),
		Label:          it.String(attrLabel),
		Prefix:         it.String(attrPrefix),
		Hash:           it.String(attrHash),
		CreatedAt:      parseTime(it.String(attrCreatedAt)),
		CreatedBy:      it.String(attrCreatedBy),
		CreatedByEmail: it.String(attrCreatedByEmail),
		LastUsedAt:     parseTime(it.String(attrLastUsedAt)),
		Revoked:        it.Bool(attrRevoked),
		RevokedAt:      parseTime(it.String(attrRevokedAt)),
	}
}
