// Package consoletest holds what the console packages' tests (consoleauth, orgs, billing,
// usage) each needed of their own: an inbox standing in for the outbox, a log buffer safe for
// concurrent handlers, fixed sessions in place of consoleauth's store, one request to a
// handler, a body checked against its documented schema, and signing in over HTTP with the
// e-mailed code (spec 4.2) and turning TOTP on (contract 3). It is imported by tests only.
package consoletest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/schema"
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

// LogBuffer collects the log lines of concurrent handlers.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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

// Serve sends one request to h in process: body, when set, as JSON; auth, when set, as the
// Authorization header.
func Serve(t testing.TB, h http.Handler, method, path, auth, body string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// CheckBody fails t unless body is JSON valid against s (the documented response, contract 1).
func CheckBody(t testing.TB, body []byte, s *schema.Schema, what string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: body %s is not JSON: %v", what, body, err)
	}
	if errs := s.Validate(v, []any{"response"}); len(errs) > 0 {
		t.Fatalf("%s: body %s does not match %s: %v", what, body, s.Name, errs)
	}
}

// JSON encodes v as a request body.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Send is how a test's client sends one console request: token, when set, as the bearer;
// body, when set, as JSON. It returns the status and the body.
type Send func(method, path, token, body string) (int, []byte)

// post sends body to path, wants status want and a body valid against s, and decodes it.
func post[T any](t testing.TB, send Send, path, token, body string, s *schema.Schema, what string) T {
	t.Helper()
	status, out := send(http.MethodPost, path, token, body)
	if status != http.StatusOK {
		t.Fatalf("%s = %d %s; want 200", what, status, out)
	}
	CheckBody(t, out, s, what)
	var v T
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: decode %s: %v", what, out, err)
	}
	return v
}

// SignIn signs addr up or in over HTTP with the code e-mailed to inbox (spec 4.2), for an
// account without TOTP, and returns the session.
func SignIn(t testing.TB, send Send, inbox *Inbox, addr string) consoleauth.SessionOut {
	t.Helper()
	post[consoleauth.AuthChallengeOut](t, send, "/console/auth/request-code", "", JSON(map[string]string{"email": addr}),
		consoleauth.AuthChallengeSchema, "request-code "+addr)
	code := inbox.LastCode(t, strings.ToLower(addr))
	return post[consoleauth.SessionOut](t, send, "/console/auth/verify-code", "", JSON(map[string]string{"email": addr, "code": code}),
		consoleauth.SessionSchema, "verify-code "+addr)
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
func EnableTOTP(t testing.TB, send Send, token string, now time.Time) (secret string, recovery []string) {
	t.Helper()
	enr := post[consoleauth.TotpEnrolmentOut](t, send, "/console/auth/totp/setup", token, "",
		consoleauth.TotpEnrolmentSchema, "totp/setup")
	codes := post[consoleauth.RecoveryCodesOut](t, send, "/console/auth/totp/confirm", token,
		JSON(map[string]string{"code": TOTPCode(t, enr.Secret, now)}), consoleauth.RecoveryCodesSchema, "totp/confirm")
	return enr.Secret, codes.Codes
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
