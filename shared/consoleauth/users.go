package consoleauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/roadevents/roadevents/shared/store"
)

// Key prefixes and sort keys (see the package doc).
const (
	pkUser     = "user#"
	skUser     = "user"
	skRecovery = "recovery#"
	// skSessionLog lists an account's sessions in its partition, by creation time.
	skSessionLog = "session#"
	pkUserEmail  = "useremail#"
	pkCode       = "authcode#"
	skCode       = "code"
	pkSession    = "session#"
	skSession    = "session"
	pkTemp       = "temptoken#"
	skTemp       = "temp"
)

// Attribute names.
const (
	attrUserID        = "user_id"
	attrEmail         = "email"
	attrDisplayName   = "display_name"
	attrLocale        = "locale"
	attrCreatedAt     = "created_at"
	attrLastSeenAt    = "last_seen_at"
	attrEpoch         = "epoch"
	attrTOTPEnabled   = "totp_enabled"
	attrTOTPSecret    = "totp_secret"  // sealed
	attrTOTPPending   = "totp_pending" // sealed, between setup and confirm
	attrTOTPLastStep  = "totp_last_step"
	attrRecoveryTotal = "recovery_total"
	attrRecoveryAt    = "recovery_generated_at"
	attrHash          = "hash"
	attrAttempts      = "attempts"
	attrExpiresAt     = "expires_at"
)

func userKey(id string) store.Key        { return store.Key{PK: pkUser + id, SK: skUser} }
func emailKey(email string) store.Key    { return store.Key{PK: pkUserEmail + email, SK: skUser} }
func codeKey(email string) store.Key     { return store.Key{PK: pkCode + email, SK: skCode} }
func sessionKey(hash string) store.Key   { return store.Key{PK: pkSession + hash, SK: skSession} }
func tempKey(hash string) store.Key      { return store.Key{PK: pkTemp + hash, SK: skTemp} }
func recoveryKey(id, h string) store.Key { return store.Key{PK: pkUser + id, SK: skRecovery + h} }

// account is the stored account: the User and what only this package reads.
type account struct {
	User
	epoch       int64
	totpSecret  []byte // sealed
	totpPending []byte // sealed
	lastStep    int64  // last TOTP time step accepted; -1 when none
	recTotal    int64
}

func accountFrom(it store.Item) account {
	a := account{
		User: User{
			ID:          it.String(attrUserID),
			Email:       it.String(attrEmail),
			Locale:      it.String(attrLocale),
			TOTPEnabled: it.Bool(attrTOTPEnabled),
			CreatedAt:   it.Time(attrCreatedAt),
			LastSeenAt:  it.Time(attrLastSeenAt),
		},
		epoch:       it.Int(attrEpoch),
		totpSecret:  it.Bytes(attrTOTPSecret),
		totpPending: it.Bytes(attrTOTPPending),
		lastStep:    -1,
		recTotal:    it.Int(attrRecoveryTotal),
	}
	if it.Has(attrDisplayName) {
		name := it.String(attrDisplayName)
		a.DisplayName = &name
	}
	if a.Locale == "" {
		a.Locale = DefaultLocale
	}
	if it.Has(attrTOTPLastStep) {
		a.lastStep = it.Int(attrTOTPLastStep)
	}
	return a
}

// getAccount reads the account with id, or ErrUserNotFound.
func (s *Service) getAccount(ctx context.Context, id string) (account, error) {
	it, err := s.table.Get(ctx, userKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return account{}, fmt.Errorf("%w: %s", ErrUserNotFound, id)
	}
	if err != nil {
		return account{}, fmt.Errorf("consoleauth: read user %s: %w", id, err)
	}
	return accountFrom(it), nil
}

// User returns the account with id, or ErrUserNotFound (for the console's other groups).
func (s *Service) User(ctx context.Context, id string) (User, error) {
	a, err := s.getAccount(ctx, id)
	return a.User, err
}

// Users returns the accounts with ids that exist, by id, in one BatchGet (the table splits a
// long list): a member list shows every member's name without one read per member.
func (s *Service) Users(ctx context.Context, ids []string) (map[string]User, error) {
	keys := make([]store.Key, len(ids))
	for i, id := range ids {
		keys[i] = userKey(id)
	}
	items, err := s.table.BatchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("consoleauth: read %d users: %w", len(ids), err)
	}
	out := make(map[string]User, len(items))
	for _, it := range items {
		u := accountFrom(it).User
		out[u.ID] = u
	}
	return out, nil
}

// userByEmail returns the account of a normalised address, or ErrUserNotFound.
func (s *Service) userByEmail(ctx context.Context, email string) (account, error) {
	it, err := s.table.Get(ctx, emailKey(email))
	if errors.Is(err, store.ErrNotFound) {
		return account{}, ErrUserNotFound
	}
	if err != nil {
		return account{}, fmt.Errorf("consoleauth: read address index: %w", err)
	}
	return s.getAccount(ctx, it.String(attrUserID))
}

// signUpOrIn returns the account of a normalised address, creating it when there is none
// (docs/api.md §4.2: sign-up and sign-in are the same route). Two first sign-ins racing create one
// account: the address item is written only if absent, in the same transaction.
func (s *Service) signUpOrIn(ctx context.Context, email string) (account, error) {
	for range 3 {
		a, err := s.userByEmail(ctx, email)
		if !errors.Is(err, ErrUserNotFound) {
			return a, err
		}
		now := s.clock.Now()
		a = account{User: User{ID: newUserID(), Email: email, Locale: DefaultLocale, CreatedAt: now}, lastStep: -1}
		uk, ek := userKey(a.ID), emailKey(email)
		err = s.table.TransactWrite(ctx, []store.Op{
			store.PutOp(store.Item{store.AttrPK: ek.PK, store.AttrSK: ek.SK, attrUserID: a.ID}, store.IfNotExists()),
			store.PutOp(store.Item{
				store.AttrPK: uk.PK, store.AttrSK: uk.SK,
				attrUserID: a.ID, attrEmail: email, attrLocale: DefaultLocale,
				attrCreatedAt: store.FormatTime(now), attrEpoch: int64(0), attrTOTPEnabled: false,
			}, store.IfNotExists()),
		})
		switch {
		case err == nil:
			return a, nil
		case errors.Is(err, store.ErrConditionFailed), errors.Is(err, store.ErrConflict):
			continue // created meanwhile: read it
		default:
			return account{}, fmt.Errorf("consoleauth: create account: %w", err)
		}
	}
	return account{}, fmt.Errorf("%w: creating the account of an address", ErrConflict)
}

// ProfileChange is what UpdateProfile writes; a nil field is left as it is.
type ProfileChange struct {
	// SetDisplayName writes DisplayName (nil clears it) when true.
	SetDisplayName bool
	DisplayName    *string
	// Locale is written when not nil.
	Locale *string
}

// UpdateProfile writes only the fields of ch that were sent (docs/api.md §4.2) and returns the user.
func (s *Service) UpdateProfile(ctx context.Context, userID string, ch ProfileChange) (User, error) {
	u := store.Update{Set: map[string]any{}}
	if ch.SetDisplayName {
		if ch.DisplayName == nil {
			u.Remove = append(u.Remove, attrDisplayName)
		} else {
			u.Set[attrDisplayName] = *ch.DisplayName
		}
	}
	if ch.Locale != nil {
		u.Set[attrLocale] = *ch.Locale
	}
	if len(u.Set) == 0 && len(u.Remove) == 0 {
		return s.User(ctx, userID)
	}
	it, err := s.table.Update(ctx, userKey(userID), u, store.IfExists())
	if errors.Is(err, store.ErrConditionFailed) {
		return User{}, fmt.Errorf("%w: %s", ErrUserNotFound, userID)
	}
	if err != nil {
		return User{}, fmt.Errorf("consoleauth: update profile of %s: %w", userID, err)
	}
	return accountFrom(it).User, nil
}
