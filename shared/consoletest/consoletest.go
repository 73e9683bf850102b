// Package consoletest holds what the console packages' tests (consoleauth, orgs, billing,
// consoleusage) each needed of their own: an inbox standing in for the outbox, fixed sessions
// in place of consoleauth's store, and signing in over HTTP with the e-mailed code (docs/api.md
// §4.2) and turning TOTP on (docs/api.md §10.3), through apitest's client. It is imported by tests
// only.
package consoletest

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/mail"
)

// Inbox is a mailer that keeps what it is given, as the outbox would write it. It is safe for
// concurrent use.
type Inbox struct {
	mu   sync.Mutex
	msgs []mail.Message
}

var _ mail.Mailer = (*Inbox)(nil)

// Send keeps m, refusing one the outbox would refuse.
func (b *Inbox) Send(_ context.Context, m mail.Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
	return nil
}

// All returns every message sent, oldest first.
func (b *Inbox) All() []mail.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]mail.Message(nil), b.msgs...)
}

// To returns the messages sent to addr, oldest first.
func (b *Inbox) To(addr string) []mail.Message {
	var out []mail.Message
	for _, m := range b.All() {
		if m.To == addr {
			out = append(out, m)
		}
	}
	return out
}

// Count returns how many messages were sent.
func (b *Inbox) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

var sixDigits = regexp.MustCompile(`\b[0-9]{6}\b`)

// LastCode returns the code of the latest sign-in code message to addr, or fails t.
func (b *Inbox) LastCode(t testing.TB, addr string) string {
	t.Helper()
	msgs := b.To(addr)
	for i := len(msgs) - 1; i >= 0; i-- {
		if c := sixDigits.FindString(msgs[i].Text); c != "" && strings.Contains(msgs[i].Subject, "sign-in code") {
			return c
		}
	}
	t.Fatalf("no sign-in code sent to %s", addr)
	return ""
}

// Sessions stands in for consoleauth's session store (consoleauth.Authenticator), for tests
// about a group's own rules: session token -> caller. No temp token is valid.
type Sessions map[string]consoleauth.Caller

var _ consoleauth.Authenticator = Sessions(nil)

// Authenticate returns the caller of token, or consoleauth.ErrUnauthenticated.
func (s Sessions) Authenticate(_ context.Context, token string) (consoleauth.Caller, error) {
	if c, ok := s[token]; ok {
		return c, nil
	}
	return consoleauth.Caller{}, consoleauth.ErrUnauthenticated
}

// AuthenticateTemp refuses every temp token.
func (s Sessions) AuthenticateTemp(context.Context, string) (consoleauth.Caller, error) {
	return consoleauth.Caller{}, consoleauth.ErrUnauthenticated
}

// SignIn signs addr up or in over HTTP with the code e-mailed to inbox (docs/api.md §4.2), for an
// account without TOTP, and returns the session.
func SignIn(c apitest.Client, inbox *Inbox, addr string) consoleauth.SessionOut {
	c.T.Helper()
	r := c.Call(http.MethodPost, "/console/auth/request-code", "", apitest.JSON(map[string]string{"email": addr}))
	c.Expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "request-code "+addr)
	code := inbox.LastCode(c.T, strings.ToLower(addr))
	r = c.Call(http.MethodPost, "/console/auth/verify-code", "", apitest.JSON(map[string]string{"email": addr, "code": code}))
	c.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-code "+addr)
	return apitest.Decode[consoleauth.SessionOut](c.T, r)
}

// TOTPCode returns the TOTP code of secret at now (the injected clock's).
func TOTPCode(t testing.TB, secret string, now time.Time) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// EnableTOTP turns TOTP on for the session token over HTTP (setup, then confirm with the code
// of now) and returns the secret and the recovery codes. The confirm consumes now's time step.
func EnableTOTP(c apitest.Client, token string, now time.Time) (secret string, recovery []string) {
	c.T.Helper()
	r := c.Call(http.MethodPost, "/console/auth/totp/setup", token, "")
	c.Expect(r, http.StatusOK, consoleauth.TotpEnrolmentSchema, "totp/setup")
	secret = apitest.Decode[consoleauth.TotpEnrolmentOut](c.T, r).Secret
	r = c.Call(http.MethodPost, "/console/auth/totp/confirm", token, apitest.JSON(map[string]string{"code": TOTPCode(c.T, secret, now)}))
	c.Expect(r, http.StatusOK, consoleauth.RecoveryCodesSchema, "totp/confirm")
	return secret, apitest.Decode[consoleauth.RecoveryCodesOut](c.T, r).Codes
}

// Accounts stands in for consoleauth's accounts where a test builds the organisations service
// without the auth service: user id is an account whose address is <id>@example.com.
type Accounts struct{}

// User returns the account id.
func (Accounts) User(_ context.Context, id string) (consoleauth.User, error) {
	return consoleauth.User{ID: id, Email: id + "@example.com"}, nil
}

// Users returns the accounts ids.
func (a Accounts) Users(ctx context.Context, ids []string) (map[string]consoleauth.User, error) {
	out := make(map[string]consoleauth.User, len(ids))
	for _, id := range ids {
		out[id], _ = a.User(ctx, id)
	}
	return out, nil
}

// NoTOTP verifies no code: the accounts of these tests have no TOTP.
type NoTOTP struct{}

// VerifyTOTP answers consoleauth.ErrTOTPNotEnabled.
func (NoTOTP) VerifyTOTP(context.Context, string, string) error { return consoleauth.ErrTOTPNotEnabled }

// DiscardMail sends nothing.
type DiscardMail struct{}

// Send drops m.
func (DiscardMail) Send(context.Context, mail.Message) error { return nil }

// inviteToken is the token of an invitation link: <console>accept-invite#token=<token>.
var inviteToken = regexp.MustCompile(`accept-invite#token=([A-Za-z0-9_]+)`)

// CreateOrg creates an organisation named name over HTTP for the session token, whose user
// becomes its owner, and returns its id.
func CreateOrg(c apitest.Client, token, name string) string {
	c.T.Helper()
	r := c.Call(http.MethodPost, "/console/orgs", token, apitest.JSON(map[string]string{"name": name}))
	if r.Status != http.StatusCreated {
		c.T.Fatalf("create organisation %s: %s", name, r)
	}
	return apitest.Decode[struct {
		OrgID string `json:"org_id"`
	}](c.T, r).OrgID
}

// Join invites addr into org as role over HTTP with the owner's session token, signs addr in
// and accepts with the link e-mailed to inbox; it returns addr's session token.
func Join(c apitest.Client, inbox *Inbox, ownerToken, org, addr, role string) string {
	c.T.Helper()
	r := c.Call(http.MethodPost, "/console/orgs/"+org+"/members", ownerToken, apitest.JSON(map[string]string{"email": addr, "role": role}))
	if r.Status != http.StatusCreated {
		c.T.Fatalf("invite %s: %s", addr, r)
	}
	msgs := inbox.To(addr)
	m := inviteToken.FindStringSubmatch(msgs[len(msgs)-1].Text)
	if m == nil {
		c.T.Fatalf("no invitation link in %q", msgs[len(msgs)-1].Text)
	}
	token := SignIn(c, inbox, addr).Token
	if r = c.Call(http.MethodPost, "/console/invitations/accept", token, apitest.JSON(map[string]string{"token": m[1]})); r.Status != http.StatusOK {
		c.T.Fatalf("%s accepts: %s", addr, r)
	}
	return token
}
