package consoleauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"github.com/roadevents/roadevents/shared/store"
)

// TOTP parameters: RFC 6238 defaults, which every authenticator app supports.
const (
	totpPeriod = 30 // seconds per time step
	totpSkew   = 1  // steps accepted either side of now, for clock drift and typing time
	totpDigits = otp.DigitsSix
)

const purposeRecovery = "recovery-code"

// sealContext binds a sealed TOTP secret to its user (package seal).
func sealContext(userID string) string { return "totp-secret:" + userID }

// Enrolment is what SetupTOTP hands out (TotpEnrolment, docs/api.md §10.3): the secret in base32
// and the otpauth:// URL an authenticator app reads from a QR code.
type Enrolment struct {
	Secret     string
	OTPAuthURL string
	Issuer     string
	Account    string
}

// RecoveryCodes is a new set of recovery codes, shown once (docs/api.md §5 console rule 4).
type RecoveryCodes struct {
	Codes       []string
	GeneratedAt time.Time
}

// SetupTOTP starts an enrolment (docs/api.md §3: off -> enrolment pending): a new secret, sealed on
// the account until ConfirmTOTP. A second setup before confirming replaces the first. While
// TOTP is on it returns ErrTOTPEnabled (docs/api.md §10.3: 409).
func (s *Service) SetupTOTP(ctx context.Context, userID string) (Enrolment, error) {
	a, err := s.getAccount(ctx, userID)
	if err != nil {
		return Enrolment{}, err
	}
	if a.TOTPEnabled {
		return Enrolment{}, ErrTOTPEnabled
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: s.issuer, AccountName: a.Email, Period: totpPeriod, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return Enrolment{}, fmt.Errorf("consoleauth: generate TOTP secret: %w", err)
	}
	sealed, err := s.sealer.Seal(ctx, []byte(key.Secret()), sealContext(a.ID))
	if err != nil {
		return Enrolment{}, fmt.Errorf("consoleauth: seal TOTP secret: %w", err)
	}
	_, err = s.table.Update(ctx, userKey(a.ID), store.Update{Set: map[string]any{attrTOTPPending: sealed}},
		store.And(store.IfExists(), store.IfNotEqual(attrTOTPEnabled, true)))
	if errors.Is(err, store.ErrConditionFailed) {
		return Enrolment{}, ErrTOTPEnabled // turned on meanwhile (or the user is gone)
	}
	if err != nil {
		return Enrolment{}, fmt.Errorf("consoleauth: store TOTP enrolment: %w", err)
	}
	return Enrolment{Secret: key.Secret(), OTPAuthURL: key.URL(), Issuer: s.issuer, Account: a.Email}, nil
}

// ConfirmTOTP turns TOTP on with a valid code of the pending secret (docs/api.md §3: enrolment
// pending -> on) and returns the recovery codes, in clear this once (docs/api.md §5 console rule 4). The
// code is consumed: it cannot be replayed at sign-in.
func (s *Service) ConfirmTOTP(ctx context.Context, userID, code string) (RecoveryCodes, error) {
	a, err := s.getAccount(ctx, userID)
	if err != nil {
		return RecoveryCodes{}, err
	}
	switch {
	case a.TOTPEnabled:
		return RecoveryCodes{}, ErrTOTPEnabled
	case len(a.totpPending) == 0:
		return RecoveryCodes{}, ErrNoEnrolment
	}
	step, err := s.matchStep(ctx, a.ID, a.totpPending, code)
	if err != nil {
		return RecoveryCodes{}, err
	}
	rc, ops := s.newRecoverySet(a.ID)
	old, err := s.recoveryKeys(ctx, a.ID)
	if err != nil {
		return RecoveryCodes{}, err
	}
	for _, k := range old {
		ops = append(ops, store.DeleteOp(k, store.Condition{}))
	}
	ops = append(ops, store.UpdateOp(userKey(a.ID), store.Update{
		Set: map[string]any{
			attrTOTPEnabled: true, attrTOTPSecret: a.totpPending, attrTOTPLastStep: step,
			attrRecoveryTotal: int64(RecoveryCodeCount), attrRecoveryAt: store.FormatTime(rc.GeneratedAt),
		},
		Remove: []string{attrTOTPPending},
	}, store.And(store.IfNotEqual(attrTOTPEnabled, true), store.IfEqual(attrTOTPPending, a.totpPending))))
	if err := s.table.TransactWrite(ctx, ops); err != nil {
		if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict) {
			// Another setup or confirm got there first; the caller starts again.
			return RecoveryCodes{}, fmt.Errorf("%w: enrolment changed while confirming", ErrConflict)
		}
		return RecoveryCodes{}, fmt.Errorf("consoleauth: turn TOTP on: %w", err)
	}
	if s.onTOTPChange != nil {
		u := a.User
		u.TOTPEnabled = true
		s.onTOTPChange(ctx, u, "auth.totp_enabled")
	}
	return rc, nil
}

// VerifyTOTP checks a live TOTP code of userID and consumes it (docs/api.md §5 console rule 2: a code is
// consumed when accepted and cannot be replayed, at verify or at key issuance). The console's
// key issuance calls it when the issuer's account has TOTP. Each call counts in the account's
// attempt cap, shared with verify-recovery (docs/api.md §10.3).
//
// Errors: *ratelimit.LimitedError (ErrLimited) past the cap; ErrTOTPNotEnabled; ErrInvalidTOTP for a
// wrong code or a replay; ErrUserNotFound.
func (s *Service) VerifyTOTP(ctx context.Context, userID, code string) error {
	_, err := s.verifyTOTP(ctx, userID, code)
	return err
}

func (s *Service) verifyTOTP(ctx context.Context, userID, code string) (account, error) {
	a, err := s.getAccount(ctx, userID)
	if err != nil {
		return account{}, err
	}
	if !a.TOTPEnabled || len(a.totpSecret) == 0 {
		return account{}, ErrTOTPNotEnabled
	}
	if err := s.countAttempt(ctx, userID); err != nil {
		return account{}, err
	}
	step, err := s.matchStep(ctx, a.ID, a.totpSecret, code)
	if err != nil {
		return account{}, err
	}
	if step <= a.lastStep {
		return account{}, fmt.Errorf("%w: replayed", ErrInvalidTOTP)
	}
	// Consume the step: the write holds only if no code of this step or a later one was
	// accepted meanwhile, so two requests racing with one code cannot both pass.
	it, err := s.table.Update(ctx, userKey(a.ID), store.Update{Set: map[string]any{attrTOTPLastStep: step}},
		store.And(store.IfEqual(attrTOTPEnabled, true), store.IfEqual(attrTOTPSecret, a.totpSecret),
			store.Or(store.IfAttrNotExists(attrTOTPLastStep), store.IfLess(attrTOTPLastStep, step))))
	if errors.Is(err, store.ErrConditionFailed) {
		return account{}, fmt.Errorf("%w: replayed", ErrInvalidTOTP)
	}
	if err != nil {
		return account{}, fmt.Errorf("consoleauth: consume TOTP code: %w", err)
	}
	return accountFrom(it), nil
}

// countAttempt counts one TOTP or recovery attempt of the account (docs/api.md §10.3).
func (s *Service) countAttempt(ctx context.Context, userID string) error {
	if err := s.totpCap.Admit(ctx, userID, s.clock.Now()); err != nil {
		return fmt.Errorf("consoleauth: TOTP attempt cap: %w", err)
	}
	return nil
}

// matchStep returns the time step whose code equals code, among now and totpSkew steps either
// side, comparing in constant time; the latest step wins if two match.
func (s *Service) matchStep(ctx context.Context, userID string, sealed []byte, code string) (int64, error) {
	code = strings.ReplaceAll(code, " ", "")
	if len(code) != totpDigits.Length() {
		return 0, fmt.Errorf("%w: not %d digits", ErrInvalidTOTP, totpDigits.Length())
	}
	secret, err := s.sealer.Open(ctx, sealed, sealContext(userID))
	if err != nil {
		return 0, fmt.Errorf("consoleauth: open TOTP secret of %s: %w", userID, err)
	}
	now := s.clock.Now().Unix() / totpPeriod
	found := int64(-1)
	for step := now - totpSkew; step <= now+totpSkew; step++ {
		want, err := hotp.GenerateCodeCustom(string(secret), uint64(step), hotp.ValidateOpts{Digits: totpDigits, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return 0, fmt.Errorf("consoleauth: TOTP code: %w", err)
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			found = step
		}
	}
	if found < 0 {
		return 0, ErrInvalidTOTP
	}
	return found, nil
}

// SignInTOTP is verify-totp (docs/api.md §4.2): the user comes from the temp token's caller, never
// from the body. The code is checked and consumed as by VerifyTOTP; then the temp token is
// consumed and a session minted, in one transaction.
func (s *Service) SignInTOTP(ctx context.Context, c Caller, code string) (*Session, error) {
	a, err := s.verifyTOTP(ctx, c.User.ID, code)
	if err != nil {
		return nil, err
	}
	return s.finishSignIn(ctx, a, c, nil)
}

// SignInRecovery is verify-recovery (docs/api.md §4.2, §5 console rule 2): a recovery code of the temp
// token's user, burned on use; it counts in the same attempt cap as verify-totp. The code is
// burned, the temp token consumed and the session minted in one transaction, so a code is
// never burned for nothing and never used twice.
func (s *Service) SignInRecovery(ctx context.Context, c Caller, code string) (*Session, error) {
	if err := s.countAttempt(ctx, c.User.ID); err != nil {
		return nil, err
	}
	a, err := s.getAccount(ctx, c.User.ID)
	if err != nil {
		return nil, err
	}
	norm := normalizeRecoveryCode(code)
	if norm == "" || !a.TOTPEnabled {
		return nil, ErrInvalidRecoveryCode
	}
	burn := store.DeleteOp(recoveryKey(a.ID, s.codeHash(purposeRecovery, a.ID, norm)), store.IfExists())
	sess, err := s.finishSignIn(ctx, a, c, []store.Op{burn})
	var ce *store.ConditionError
	if errors.As(err, &ce) && ce.Op == 3 {
		return nil, ErrInvalidRecoveryCode
	}
	return sess, err
}

// finishSignIn consumes the temp token and mints the session (with extra operations) in one
// transaction.
func (s *Service) finishSignIn(ctx context.Context, a account, c Caller, extra []store.Op) (*Session, error) {
	consume := store.DeleteOp(tempKey(c.TokenHash), store.And(store.IfExists(), store.IfEqual(attrEpoch, a.epoch)))
	sess, err := s.mintSession(ctx, a, append([]store.Op{consume}, extra...))
	var ce *store.ConditionError
	if errors.As(err, &ce) && ce.Op == 2 {
		return nil, fmt.Errorf("%w: temp token used meanwhile", ErrUnauthenticated)
	}
	return sess, err
}

// DisableTOTP turns TOTP off with a valid code (docs/api.md §3: on -> off): the secret and the
// recovery codes are discarded and every session of the user ends, the caller's included;
// the returned session is the caller's new one (docs/api.md §10.3). One transaction.
func (s *Service) DisableTOTP(ctx context.Context, userID, code string) (*Session, error) {
	a, err := s.verifyTOTP(ctx, userID, code)
	if err != nil {
		return nil, err
	}
	old, err := s.recoveryKeys(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	token := newToken(SessionPrefix)
	expires := now.Add(SessionTTL)
	ops := []store.Op{
		store.UpdateOp(userKey(a.ID), store.Update{
			Set:    map[string]any{attrTOTPEnabled: false, attrLastSeenAt: store.FormatTime(now)},
			Add:    map[string]int64{attrEpoch: 1},
			Remove: []string{attrTOTPSecret, attrTOTPPending, attrTOTPLastStep, attrRecoveryTotal, attrRecoveryAt},
		}, store.And(store.IfEqual(attrEpoch, a.epoch), store.IfEqual(attrTOTPEnabled, true))),
		store.PutOp(sessionItem(sessionKey(tokenHash(token)), a.ID, a.epoch+1, now, expires), store.IfNotExists()),
	}
	for _, k := range old {
		ops = append(ops, store.DeleteOp(k, store.Condition{}))
	}
	if err := s.table.TransactWrite(ctx, ops); err != nil {
		if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("%w: account changed while turning TOTP off", ErrConflict)
		}
		return nil, fmt.Errorf("consoleauth: turn TOTP off: %w", err)
	}
	u := a.User
	u.TOTPEnabled = false
	u.LastSeenAt = now
	if s.onTOTPChange != nil {
		s.onTOTPChange(ctx, u, "auth.totp_disabled")
	}
	return &Session{Token: token, ExpiresAt: expires, User: u}, nil
}

// RecoveryStatus returns how many recovery codes are left of how many (RecoveryCodesStatus);
// 0 of 0 without TOTP.
func (s *Service) RecoveryStatus(ctx context.Context, userID string) (remaining, total int, err error) {
	a, err := s.getAccount(ctx, userID)
	if err != nil {
		return 0, 0, err
	}
	if !a.TOTPEnabled {
		return 0, 0, nil
	}
	keys, err := s.recoveryKeys(ctx, userID)
	if err != nil {
		return 0, 0, err
	}
	return len(keys), int(a.recTotal), nil
}

// RegenerateRecovery replaces the recovery codes with a new set, after a live TOTP code
// (docs/api.md §5 console rule 4); the old set stops working in the same transaction.
func (s *Service) RegenerateRecovery(ctx context.Context, userID, code string) (RecoveryCodes, error) {
	a, err := s.verifyTOTP(ctx, userID, code)
	if err != nil {
		return RecoveryCodes{}, err
	}
	old, err := s.recoveryKeys(ctx, a.ID)
	if err != nil {
		return RecoveryCodes{}, err
	}
	rc, ops := s.newRecoverySet(a.ID)
	fresh := map[store.Key]bool{}
	for _, op := range ops {
		fresh[op.TargetKey()] = true
	}
	for _, k := range old {
		if !fresh[k] { // a new code equal to an old one (2^-50) is simply kept
			ops = append(ops, store.DeleteOp(k, store.Condition{}))
		}
	}
	ops = append(ops, store.UpdateOp(userKey(a.ID), store.Update{Set: map[string]any{
		attrRecoveryTotal: int64(RecoveryCodeCount), attrRecoveryAt: store.FormatTime(rc.GeneratedAt),
	}}, store.IfEqual(attrTOTPEnabled, true)))
	if err := s.table.TransactWrite(ctx, ops); err != nil {
		if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict) {
			return RecoveryCodes{}, fmt.Errorf("%w: account changed while regenerating", ErrConflict)
		}
		return RecoveryCodes{}, fmt.Errorf("consoleauth: regenerate recovery codes: %w", err)
	}
	return rc, nil
}

// newRecoverySet draws RecoveryCodeCount codes and the put operations of their hashes.
func (s *Service) newRecoverySet(userID string) (RecoveryCodes, []store.Op) {
	rc := RecoveryCodes{GeneratedAt: s.clock.Now()}
	seen := map[string]bool{}
	var ops []store.Op
	for len(rc.Codes) < RecoveryCodeCount {
		code := newRecoveryCode()
		h := s.codeHash(purposeRecovery, userID, normalizeRecoveryCode(code))
		if seen[h] {
			continue
		}
		seen[h] = true
		rc.Codes = append(rc.Codes, code)
		k := recoveryKey(userID, h)
		ops = append(ops, store.PutOp(store.Item{
			store.AttrPK: k.PK, store.AttrSK: k.SK, attrCreatedAt: store.FormatTime(rc.GeneratedAt),
		}, store.Condition{}))
	}
	return rc, ops
}

// recoveryKeys lists the unused recovery codes of a user.
func (s *Service) recoveryKeys(ctx context.Context, userID string) ([]store.Key, error) {
	items, err := s.table.Query(ctx, store.Query{PK: pkUser + userID, Prefix: skRecovery})
	if err != nil {
		return nil, fmt.Errorf("consoleauth: list recovery codes: %w", err)
	}
	keys := make([]store.Key, len(items))
	for i, it := range items {
		keys[i] = it.Key()
	}
	return keys, nil
}
