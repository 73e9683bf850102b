package orgs

import (
	"context"
	"errors"
	"fmt"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/store"
)

// ListKeys returns the organisation's keys, newest first, of one environment when env is not
// empty, without the revoked ones unless includeRevoked (docs/api.md §4.4). Readable by any member.
func (s *Service) ListKeys(ctx context.Context, m Membership, env string, includeRevoked bool) ([]apikey.Key, error) {
	keys, err := s.keys.List(ctx, m.Org.OrgID, env, includeRevoked)
	if errors.Is(err, apikey.ErrInvalidRequest) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return keys, err
}

// IssueKey issues a key (owner act, docs/api.md §5 API key rules 1-4). When the caller's own
// account has TOTP, totpCode must be a valid, unused code (ErrTOTPRequired otherwise; the code is
// consumed). Issuance is capped per organisation per hour (docs/api.md §10.3), live keys by the
// plan's cap (apikey.ErrLiveKeyCap, 409), and the other owners are e-mailed.
func (s *Service) IssueKey(ctx context.Context, m Membership, c consoleauth.Caller, label, env string, totpCode *string) (string, apikey.Key, error) {
	if err := ownerOnly(m); err != nil {
		return "", apikey.Key{}, err
	}
	if err := s.StepUp(ctx, c, totpCode, "issue key"); err != nil {
		return "", apikey.Key{}, err
	}
	if err := s.allow(ctx, s.keyCap, KeyIssuanceCap, m.Org.OrgID); err != nil {
		return "", apikey.Key{}, err
	}
	liveCap, _ := s.caps(m.Org.Plan)
	actor := ActorOf(c)
	raw, key, err := s.keys.Issue(ctx, apikey.IssueRequest{
		OrgID: m.Org.OrgID, Environment: env, Label: label,
		CreatedBy: actor.UserID, CreatedByEmail: actor.Email, LiveKeyCap: liveCap,
		Also: s.auditKey(m.Org.OrgID, ActionKeyIssued, actor),
	})
	if errors.Is(err, apikey.ErrInvalidRequest) {
		return "", apikey.Key{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return "", apikey.Key{}, err
	}
	s.notifyOwners(ctx, m.Org, actor, key)
	return raw, key, nil
}

// RevokeKey revokes a key of the organisation (owner act, no TOTP step-up: docs/api.md §4.4); it is
// refused from the next /v1 request on. Revoking a revoked key is answered as done, once
// audited. A key of another organisation is ErrNotFound.
func (s *Service) RevokeKey(ctx context.Context, m Membership, actor Actor, keyID string) error {
	if err := ownerOnly(m); err != nil {
		return err
	}
	if err := knownID("key", keyID); err != nil {
		return err
	}
	_, err := s.keys.Revoke(ctx, m.Org.OrgID, keyID, s.auditKey(m.Org.OrgID, ActionKeyRevoked, actor))
	switch {
	case errors.Is(err, apikey.ErrNotFound):
		return fmt.Errorf("key %s: %w", keyID, ErrNotFound)
	case errors.Is(err, apikey.ErrAlreadyRevoked):
		return nil
	}
	return err
}

// auditKey returns the audit entry of a key's issuance or revocation as a write of the same
// transaction (docs/api.md §10.3), naming the key by its label, environment and prefix, never its
// secret.
func (s *Service) auditKey(org, action string, actor Actor) func(apikey.Key) ([]store.Op, error) {
	return func(key apikey.Key) ([]store.Op, error) {
		op, _, err := s.audit.PutOp(org, action, actor.UserID, actor.Email, key.KeyID,
			map[string]any{"label": key.Label, "environment": key.Environment, "prefix": key.Prefix})
		if err != nil {
			return nil, err
		}
		return []store.Op{op}, nil
	}
}
