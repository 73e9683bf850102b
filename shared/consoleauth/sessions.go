package consoleauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// sessionItem is a session or temp token as stored: by hash, with its user, the epoch it was
// minted in and its expiry (also its TTL).
func sessionItem(k store.Key, userID string, epoch int64, now, expires time.Time) store.Item {
	return store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK,
		attrUserID:    userID,
		attrEpoch:     epoch,
		attrCreatedAt: store.FormatTime(now),
		attrExpiresAt: expires.Unix(),
		store.AttrTTL: expires.Unix(),
	}
}

// mintSession writes a new session of a in its current epoch and stamps last_seen_at, in one
// transaction whose condition is that the epoch has not moved (a logout racing a sign-in wins).
// extra operations join the transaction (consuming a temp token, burning a recovery code); a
// failed condition of one of them is returned as *store.ConditionError with its index
// shifted by two.
func (s *Service) mintSession(ctx context.Context, a account, extra []store.Op) (*Session, error) {
	now := s.clock.Now()
	token := newToken(SessionPrefix)
	expires := now.Add(SessionTTL)
	ops := []store.Op{
		store.UpdateOp(userKey(a.ID), store.Update{Set: map[string]any{attrLastSeenAt: store.FormatTime(now)}},
			store.And(store.IfExists(), store.IfEqual(attrEpoch, a.epoch))),
		store.PutOp(sessionItem(sessionKey(tokenHash(token)), a.ID, a.epoch, now, expires), store.IfNotExists()),
	}
	ops = append(ops, extra...)
	// The account's list of its sessions, for the export of its data (docs/privacy.md §1); last,
	// so that the indexes of extra stay as documented.
	ops = append(ops, store.PutOp(store.Item{
		store.AttrPK: userKey(a.ID).PK, store.AttrSK: skSessionLog + store.FormatTime(now),
		attrEpoch: a.epoch, attrCreatedAt: store.FormatTime(now), attrExpiresAt: expires.Unix(), store.AttrTTL: expires.Unix(),
	}, store.Condition{}))
	if err := s.table.TransactWrite(ctx, ops); err != nil {
		var ce *store.ConditionError
		if errors.As(err, &ce) {
			if ce.Op == 0 {
				return nil, fmt.Errorf("%w: signed out while signing in", ErrUnauthenticated)
			}
			return nil, err
		}
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("%w: %w", ErrConflict, err)
		}
		return nil, fmt.Errorf("consoleauth: write session: %w", err)
	}
	u := a.User
	u.LastSeenAt = now
	return &Session{Token: token, ExpiresAt: expires, User: u}, nil
}

// newChallenge writes a temp token for the TOTP step of a's sign-in, in one transaction with
// consume (operation 1): a failed condition of consume is returned as *store.ConditionError.
func (s *Service) newChallenge(ctx context.Context, a account, consume store.Op) (*Challenge, error) {
	now := s.clock.Now()
	token := newToken(TempPrefix)
	expires := now.Add(TempTokenTTL)
	err := s.table.TransactWrite(ctx, []store.Op{
		store.PutOp(sessionItem(tempKey(tokenHash(token)), a.ID, a.epoch, now, expires), store.IfNotExists()),
		consume,
	})
	if ce, ok := errors.AsType[*store.ConditionError](err); ok && ce.Op == 1 {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("consoleauth: write temp token: %w", err)
	}
	return &Challenge{TempToken: token, ExpiresAt: expires}, nil
}

// SessionInfo is one session of an account as its export shows it: never its token.
type SessionInfo struct {
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Sessions returns the account's sessions that still open the console, oldest first: made in
// its current epoch (not ended by a sign-out) and not expired.
func (s *Service) Sessions(ctx context.Context, userID string) ([]SessionInfo, error) {
	a, err := s.getAccount(ctx, userID)
	if err != nil {
		return nil, err
	}
	items, err := s.table.Query(ctx, store.Query{PK: userKey(userID).PK, Prefix: skSessionLog})
	if err != nil {
		return nil, fmt.Errorf("consoleauth: list the sessions of %s: %w", userID, err)
	}
	out := []SessionInfo{}
	for _, it := range items {
		if it.Int(attrEpoch) == a.epoch {
			out = append(out, SessionInfo{CreatedAt: it.Time(attrCreatedAt), ExpiresAt: time.Unix(it.Int(attrExpiresAt), 0).UTC()})
		}
	}
	return out, nil
}

// Caller is who a console request authenticated as.
type Caller struct {
	User User
	// TokenHash names the credential (the SHA-256 of the token), never the token itself.
	TokenHash string
	account   account
}

// Authenticate returns the caller of a session token: well-formed, known, not expired, and
// of the account's current epoch (not ended by logout or totp/disable). Every refusal is
// ErrUnauthenticated; other errors are failures of the table. Two strongly consistent Gets.
func (s *Service) Authenticate(ctx context.Context, token string) (Caller, error) {
	return s.authenticate(ctx, token, SessionPrefix, sessionKey)
}

// AuthenticateTemp is Authenticate for a temp_token (verify-totp and verify-recovery only).
func (s *Service) AuthenticateTemp(ctx context.Context, token string) (Caller, error) {
	return s.authenticate(ctx, token, TempPrefix, tempKey)
}

func (s *Service) authenticate(ctx context.Context, token, prefix string, key func(string) store.Key) (Caller, error) {
	if !wellFormed(token, prefix) {
		return Caller{}, fmt.Errorf("%w: not a %s token", ErrUnauthenticated, prefix)
	}
	h := tokenHash(token)
	it, err := s.table.Get(ctx, key(h))
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, fmt.Errorf("%w: unknown or expired %s token", ErrUnauthenticated, prefix)
	}
	if err != nil {
		return Caller{}, fmt.Errorf("consoleauth: read token: %w", err)
	}
	// The table hides items past their TTL; the explicit check keeps the rule independent of
	// when the adapter's clock and this one tick.
	if it.Int(attrExpiresAt) <= s.clock.Now().Unix() {
		return Caller{}, fmt.Errorf("%w: expired %s token", ErrUnauthenticated, prefix)
	}
	a, err := s.getAccount(ctx, it.String(attrUserID))
	if errors.Is(err, ErrUserNotFound) {
		return Caller{}, fmt.Errorf("%w: token of a removed user", ErrUnauthenticated)
	}
	if err != nil {
		return Caller{}, err
	}
	if it.Int(attrEpoch) != a.epoch {
		return Caller{}, fmt.Errorf("%w: %s token ended by logout", ErrUnauthenticated, prefix)
	}
	return Caller{User: a.User, TokenHash: h, account: a}, nil
}

// Renew mints a new session for the caller (docs/api.md §4.2 GET /console/auth/me: a fresh token);
// the caller's token stays valid until its own expiry or a logout (docs/api.md §10.3).
func (s *Service) Renew(ctx context.Context, c Caller) (*Session, error) {
	return s.mintSession(ctx, c.account, nil)
}

// Logout ends every session and temp token of the user (docs/api.md §5 console rule 5) by moving the
// account's epoch; no token needs to be found.
func (s *Service) Logout(ctx context.Context, userID string) error {
	_, err := s.table.Update(ctx, userKey(userID), store.Update{Add: map[string]int64{attrEpoch: 1}}, store.IfExists())
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("%w: %s", ErrUserNotFound, userID)
	}
	if err != nil {
		return fmt.Errorf("consoleauth: log out %s: %w", userID, err)
	}
	return nil
}
