// Package audit is the audit log of an organisation (docs/api.md §4.3 GET
// /console/orgs/{org_id}/audit, §2.9 AuditEntryPublic, §10.3 audit actions): who changed what,
// written when the change is made, read newest first by any member.
//
// # Storage layout
//
//	pk "org#<org_id>"  sk "audit#<created_at, fixed-width UTC>#<audit_id>"
//	    audit_id, org_id, action, actor_user_id, actor_email, target, detail (JSON text), created_at
//
// Entries live in the organisation's partition (docs/architecture.md §2), and their sort key
// starts with the time in a fixed-width format, so a descending query with a limit reads the
// newest entries and nothing else. The random audit_id after the time keeps two entries of
// the same instant apart.
//
// actor_email is copied into the entry at write time (docs/api.md §2.9: it survives the removal of
// the actor), never looked up when the log is read.
//
// # Secrets
//
// detail never holds a secret (docs/api.md §10.3). Record and PutOp refuse a detail carrying a
// member whose name says it holds one (token, key, code, secret, password, ...), so a careless
// caller fails loudly in its tests instead of writing a credential into a log every member can
// read.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
)

// Limits of List (docs/api.md §4.3: query limit, default 50).
const (
	// DefaultLimit is how many entries the audit route returns when no limit is given.
	DefaultLimit = 50
	// MaxLimit is the largest limit List honours; the route refuses a larger one with 422.
	MaxLimit = 500
)

const (
	pkOrgPrefix = "org#"
	skPrefix    = "audit#"
)

// Attribute names.
const (
	attrAuditID   = "audit_id"
	attrOrgID     = "org_id"
	attrAction    = "action"
	attrActorID   = "actor_user_id"
	attrActorMail = "actor_email"
	attrTarget    = "target"
	attrDetail    = "detail"
	attrCreatedAt = "created_at"
)

// Errors of the package. Check them with errors.Is.
var (
	// ErrInvalid is returned for an entry that cannot be written: no organisation or action,
	// a detail that cannot be encoded, or a List limit outside 1..MaxLimit.
	ErrInvalid = errors.New("audit: invalid entry")
	// ErrSecretDetail is returned when detail names a member that holds a secret (docs/api.md
	// §10.3: detail never holds a secret).
	ErrSecretDetail = errors.New("audit: detail would hold a secret")
)

// secretNames are detail members refused outright. Identifiers such as key_id or invite_id
// and a key's listed prefix are not secrets and are allowed.
var secretNames = []string{"token", "secret", "password", "code", "totp_code", "key", "raw_key", "api_key", "hash", "token_hash"}

// Entry is one audit entry, with the JSON of AuditEntryPublic (docs/api.md §2.9).
type Entry struct {
	AuditID     string         `json:"audit_id"`
	Action      string         `json:"action"`
	ActorUserID *string        `json:"actor_user_id"`
	ActorEmail  *string        `json:"actor_email"`
	Target      *string        `json:"target"`
	Detail      map[string]any `json:"detail"`
	CreatedAt   time.Time      `json:"created_at"`
}

// Options configure a Log; the zero value is ready to use.
type Options struct {
	// Clock stamps created_at; clock.System when nil.
	Clock clock.Clock
}

// Log is the audit log on one table. It is safe for concurrent use.
type Log struct {
	table store.Table
	clock clock.Clock

	mu   sync.Mutex
	last time.Time // the latest sort-key time this process handed out
}

// New returns the audit log on table.
func New(table store.Table, opts Options) *Log {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	return &Log{table: table, clock: opts.Clock}
}

// Record writes one entry in organisation orgID's log. actorUserID, actorEmail and target may
// be empty (stored as null); detail may be nil (stored as {}).
func (l *Log) Record(ctx context.Context, orgID, action, actorUserID, actorEmail, target string, detail map[string]any) error {
	op, _, err := l.PutOp(orgID, action, actorUserID, actorEmail, target, detail)
	if err != nil {
		return err
	}
	if err := l.table.Put(ctx, op.Item, op.Cond); err != nil {
		return fmt.Errorf("audit: record %s in organisation %s: %w", action, orgID, err)
	}
	return nil
}

// PutOp returns the write of one entry as a transaction operation, for a caller that records a
// change in the same transaction as the change itself (so that neither exists without the
// other), and the entry as it will read.
func (l *Log) PutOp(orgID, action, actorUserID, actorEmail, target string, detail map[string]any) (store.Op, Entry, error) {
	if orgID == "" || action == "" {
		return store.Op{}, Entry{}, fmt.Errorf("%w: organisation %q, action %q", ErrInvalid, orgID, action)
	}
	if detail == nil {
		detail = map[string]any{}
	}
	for name := range detail {
		for _, s := range secretNames {
			if strings.EqualFold(name, s) {
				return store.Op{}, Entry{}, fmt.Errorf("%w: member %q of %s", ErrSecretDetail, name, action)
			}
		}
	}
	raw, err := json.Marshal(detail)
	if err != nil {
		return store.Op{}, Entry{}, fmt.Errorf("%w: detail of %s: %v", ErrInvalid, action, err)
	}
	now := l.clock.Now().UTC()
	at := l.sortTime(now)
	e := Entry{
		AuditID:   "aud_" + strings.ToLower(rand.Text()),
		Action:    action,
		Detail:    detail,
		CreatedAt: now,
	}
	it := store.Item{
		store.AttrPK:  pkOrgPrefix + orgID,
		store.AttrSK:  skPrefix + store.FormatTime(at) + "#" + e.AuditID,
		attrAuditID:   e.AuditID,
		attrOrgID:     orgID,
		attrAction:    action,
		attrDetail:    string(raw),
		attrCreatedAt: store.FormatTime(now),
	}
	if actorUserID != "" {
		it[attrActorID] = actorUserID
		e.ActorUserID = &actorUserID
	}
	if actorEmail != "" {
		it[attrActorMail] = actorEmail
		e.ActorEmail = &actorEmail
	}
	if target != "" {
		it[attrTarget] = target
		e.Target = &target
	}
	return store.PutOp(it, store.IfNotExists()), e, nil
}

// sortTime is the time of an entry's sort key: now, or just after the previous entry of this
// process when the clock has not moved on (a coarse or frozen clock), so that the changes one
// process makes in a row read back in the order they were made.
func (l *Log) sortTime(now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !now.After(l.last) {
		now = l.last.Add(time.Nanosecond)
	}
	l.last = now
	return now
}

// List returns the newest limit entries of organisation orgID, newest first (docs/api.md §4.3).
// limit must be 1..MaxLimit.
func (l *Log) List(ctx context.Context, orgID string, limit int) ([]Entry, error) {
	if orgID == "" || limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("%w: list organisation %q with limit %d (want 1..%d)", ErrInvalid, orgID, limit, MaxLimit)
	}
	items, err := l.table.Query(ctx, store.Query{PK: pkOrgPrefix + orgID, Prefix: skPrefix, Desc: true, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("audit: list organisation %s: %w", orgID, err)
	}
	out := make([]Entry, 0, len(items))
	for _, it := range items {
		e := Entry{
			AuditID: it.String(attrAuditID),
			Action:  it.String(attrAction),
			Detail:  map[string]any{},
		}
		e.CreatedAt = it.Time(attrCreatedAt)
		if s := it.String(attrDetail); s != "" {
			if err := json.Unmarshal([]byte(s), &e.Detail); err != nil {
				return nil, fmt.Errorf("audit: entry %s of organisation %s: detail: %w", e.AuditID, orgID, err)
			}
		}
		for name, dst := range map[string]**string{attrActorID: &e.ActorUserID, attrActorMail: &e.ActorEmail, attrTarget: &e.Target} {
			if it.Has(name) {
				v := it.String(name)
				*dst = &v
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// ForgetAddress makes organisation orgID's log stop naming an erased person by address
// (docs/privacy.md §6): actor_email becomes null where they acted, and a detail member that
// holds the address (the invitee of member.invited, the member of member.removed...) holds
// null instead. The entries stay, with the actor's user id, which no longer names anyone.
func (l *Log) ForgetAddress(ctx context.Context, orgID, email string) error {
	return store.ForgetValue(ctx, l.table, store.Query{PK: pkOrgPrefix + orgID, Prefix: skPrefix}, email,
		func(it store.Item) map[string]any {
			raw := it.String(attrDetail)
			if !strings.Contains(strings.ToLower(raw), strings.ToLower(email)) {
				return nil
			}
			var detail map[string]any
			if json.Unmarshal([]byte(raw), &detail) != nil {
				return nil
			}
			for name, v := range detail {
				if s, ok := v.(string); ok && strings.EqualFold(s, email) {
					detail[name] = nil
				}
			}
			out, err := json.Marshal(detail)
			if err != nil || string(out) == raw {
				return nil
			}
			return map[string]any{attrDetail: string(out)}
		})
}
