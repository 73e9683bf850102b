package consoleauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/store"
)

const purposeEmailCode = "email-code"

// RequestCode e-mails a fresh sign-in code to email, whether or not it has an account
// (docs/api.md §4.2: an unknown address gets its account when the code is verified), and returns
// the normalised address. The new code replaces any earlier one. It is capped per address for every
// address (docs/api.md §10.3): past the cap it returns a *ratelimit.LimitedError and sends nothing.
func (s *Service) RequestCode(ctx context.Context, email string) (string, error) {
	email = normalizeEmail(email)
	now := s.clock.Now()
	err := s.codeCap.Admit(ctx, ratelimit.AddressSubject(email), now)
	if err != nil {
		return "", fmt.Errorf("consoleauth: code request cap: %w", err)
	}
	code := newEmailCode()
	expires := now.Add(CodeTTL)
	k := codeKey(email)
	err = s.table.Put(ctx, store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK,
		attrHash:      s.codeHash(purposeEmailCode, email, code),
		attrAttempts:  int64(0),
		attrExpiresAt: expires.Unix(),
		store.AttrTTL: expires.Unix(),
	}, store.Condition{})
	if err != nil {
		return "", fmt.Errorf("consoleauth: store code: %w", err)
	}
	if err := s.mailer.Send(ctx, s.codeMessage(email, code)); err != nil {
		return "", fmt.Errorf("consoleauth: send code: %w", err)
	}
	return email, nil
}

// codeMessage says what the code is for and how long it lasts. The subject never holds the
// code: subjects are logged by the outbox and shown in notification previews.
func (s *Service) codeMessage(email, code string) mail.Message {
	minutes := int(CodeTTL / time.Minute)
	where := "the console"
	if s.consoleURL != "" {
		where = "the console (" + s.consoleURL + ")"
	}
	text := fmt.Sprintf("Your %s sign-in code is:\n\n    %s\n\n"+
		"Enter it in %s to sign in, or to create your account if this address has none yet.\n"+
		"It expires in %d minutes and works once.\n\n"+
		"If you did not ask for it, ignore this message: nobody can sign in without the code.\n",
		s.issuer, code, where, minutes)
	link := ""
	if s.consoleURL != "" {
		link = fmt.Sprintf(` (<a href="%s">%s</a>)`, html.EscapeString(s.consoleURL), html.EscapeString(s.consoleURL))
	}
	htmlBody := fmt.Sprintf(`<!DOCTYPE html><html><body>`+
		`<p>Your %s sign-in code is:</p>`+
		`<p style="font-size:24px;font-family:monospace;letter-spacing:4px"><b>%s</b></p>`+
		`<p>Enter it in the console%s to sign in, or to create your account if this address has none yet.<br>`+
		`It expires in %d minutes and works once.</p>`+
		`<p>If you did not ask for it, ignore this message: nobody can sign in without the code.</p>`+
		`</body></html>`,
		html.EscapeString(s.issuer), code, link, minutes)
	return mail.Message{
		To:      email,
		Subject: fmt.Sprintf("Your %s sign-in code", s.issuer),
		Text:    text,
		HTML:    strings.TrimSpace(htmlBody),
	}
}

// Challenge is the answer of a verified code for an account with TOTP (docs/api.md §2.9
// AuthChallenge): the session waits for VerifyTOTP or VerifyRecovery with TempToken.
type Challenge struct {
	TempToken string
	ExpiresAt time.Time
}

// VerifyCode consumes the e-mailed code of email and signs the address in, creating its
// account on first use. Without TOTP it returns a Session; with TOTP a Challenge and no
// session (docs/api.md §4.2). Every failure is ErrInvalidCode: unknown address, wrong code, expired
// code (10 minutes), used code (single-use), dead code (5 tries).
//
// Each try is counted before the code is compared, in one conditional write, so that
// parallel guesses cannot get more than MaxCodeAttempts comparisons out of one code.
func (s *Service) VerifyCode(ctx context.Context, email, code string) (*Session, *Challenge, error) {
	email = normalizeEmail(email)
	// The hash is computed whatever happens next, so an unknown address costs the same work
	// as a known one.
	got := s.codeHash(purposeEmailCode, email, code)
	now := s.clock.Now()
	k := codeKey(email)
	it, err := s.table.Update(ctx, k, store.Update{Add: map[string]int64{attrAttempts: 1}},
		store.And(store.IfExists(), store.IfLess(attrAttempts, int64(MaxCodeAttempts)), store.IfGreater(attrExpiresAt, now.Unix())))
	switch {
	case errors.Is(err, store.ErrConditionFailed):
		return nil, nil, ErrInvalidCode // no code, expired, or dead
	case err != nil:
		return nil, nil, fmt.Errorf("consoleauth: count code attempt: %w", err)
	}
	stored := it.String(attrHash)
	if !hashEqual(got, stored) {
		return nil, nil, ErrInvalidCode
	}
	// Creating the account of an address is idempotent, so it may come before the code is
	// used up; then the code is consumed in the transaction that writes the session (or the
	// temp token): a sign-in that fails leaves the code usable, and one whose answer is lost
	// is replayed by the table's retry (docs/operations.md §1). Single use: of two requests
	// with this very code, only the one that deletes it goes on.
	a, err := s.signUpOrIn(ctx, email)
	if err != nil {
		return nil, nil, err
	}
	consume := store.DeleteOp(k, store.And(store.IfExists(), store.IfEqual(attrHash, stored)))
	var (
		sess *Session
		ch   *Challenge
		at   int // the index of consume in the transaction
	)
	if a.TOTPEnabled {
		ch, err = s.newChallenge(ctx, a, consume)
		at = 1
	} else {
		sess, err = s.mintSession(ctx, a, []store.Op{consume})
		at = 2
	}
	if ce, ok := errors.AsType[*store.ConditionError](err); ok && ce.Op == at {
		return nil, nil, ErrInvalidCode
	}
	if err != nil {
		return nil, nil, err
	}
	return sess, ch, nil
}
