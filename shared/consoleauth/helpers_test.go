package consoleauth_test

import (
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// sixDigits finds an e-mailed sign-in code.
var sixDigits = regexp.MustCompile(`\b[0-9]{6}\b`)

// env is the service with the console-auth group (and the events group, for /v1) on one
// adapter's table, with the table's fake clock and an inbox for the codes.
type env struct {
	apitest.Client
	tab     tables.Table
	clock   *clock.Fake
	inbox   *consoletest.Inbox
	logs    *apitest.LogBuffer
	sealer  seal.Sealer
	hashKey []byte
}

func newEnv(t *testing.T, tab tables.Table) *env {
	t.Helper()
	return newEnvWith(t, tab, nil)
}

// newEnvWith builds the env with mailer m (the inbox when nil).
func newEnvWith(t *testing.T, tab tables.Table, m mail.Mailer) *env {
	t.Helper()
	cfg := apptest.Config()
	sealer, err := seal.NewAESGCM(cfg.Console.SealKey)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{tab: tab, clock: tab.Clock, inbox: &consoletest.Inbox{}, logs: &apitest.LogBuffer{}, sealer: sealer, hashKey: cfg.Console.HashKey}
	if m == nil {
		m = e.inbox
	}
	api := apptest.New(t, app.Deps{
		Config: cfg, Table: tab.Table, Clock: tab.Clock,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Mailer: m, Sealer: sealer,
	}, routetable.GroupConsoleAuth, routetable.GroupEvents)
	e.Client = apitest.Client{T: t, Handler: api.Handler()}
	return e
}

// with returns a copy of e that reports to t, for subtests.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.T = t
	return &c
}

// service returns a second consoleauth.Service on the same table and keys: another process
// of the same deployment (as the key-issuance route of another group will be).
func (e *env) service() *consoleauth.Service {
	s, err := consoleauth.New(e.tab.Table, consoleauth.Options{
		Clock: e.clock, Mailer: e.inbox, Sealer: e.sealer, HashKey: e.hashKey,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return s
}

// requestCode asks for a code and returns it from the inbox.
func (e *env) requestCode(addr string) string {
	e.T.Helper()
	r := e.Call("POST", "/console/auth/request-code", "", apitest.JSON(map[string]string{"email": addr}))
	e.Expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "request-code "+addr)
	return e.inbox.LastCode(e.T, strings.ToLower(addr))
}

func (e *env) verifyCode(addr, code string) apitest.Response {
	e.T.Helper()
	return e.Call("POST", "/console/auth/verify-code", "", apitest.JSON(map[string]string{"email": addr, "code": code}))
}

// signIn signs addr in (an account without TOTP) and returns the session.
func (e *env) signIn(addr string) consoleauth.SessionOut {
	e.T.Helper()
	return consoletest.SignIn(e.Client, e.inbox, addr)
}

// challenge signs addr in up to the TOTP step and returns the temp_token.
func (e *env) challenge(addr string) string {
	e.T.Helper()
	r := e.verifyCode(addr, e.requestCode(addr))
	e.Expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "verify-code "+addr+" with TOTP")
	ch := apitest.Decode[consoleauth.AuthChallengeOut](e.T, r)
	if ch.Method != "totp" || ch.TempToken == nil {
		e.T.Fatalf("verify-code with TOTP = %s; want method totp and a temp_token", r)
	}
	return *ch.TempToken
}

// code returns the TOTP code of secret now, on the injected clock.
func (e *env) code(secret string) string {
	e.T.Helper()
	return consoletest.TOTPCode(e.T, secret, e.clock.Now())
}

// nextStep moves the clock to the next TOTP time step, so that a fresh code exists.
func (e *env) nextStep() { e.clock.Advance(30 * time.Second) }

// enableTOTP runs setup and confirm for the session and returns the secret and the recovery
// codes. The confirm consumes the current step's code.
func (e *env) enableTOTP(token string) (string, []string) {
	e.T.Helper()
	return consoletest.EnableTOTP(e.Client, token, e.clock.Now())
}

// nextWindow moves the clock past the current 15-minute cap window (docs/api.md §10.3), to the
// start of the next TOTP step.
func (e *env) nextWindow() {
	now := e.clock.Now()
	e.clock.Set(now.Truncate(15 * time.Minute).Add(15 * time.Minute))
}

// totpAt returns the TOTP code of secret at t.
func totpAt(secret string, t time.Time) (string, error) { return totp.GenerateCode(secret, t) }

// wrongCode returns a 6-digit code that no time step inside the skew accepts now.
func (e *env) wrongCode(secret string) string {
	e.T.Helper()
	valid := map[string]bool{}
	for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		c, err := totpAt(secret, e.clock.Now().Add(d))
		if err != nil {
			e.T.Fatal(err)
		}
		valid[c] = true
	}
	for _, c := range []string{"000000", "111111", "222222", "333333"} {
		if !valid[c] {
			return c
		}
	}
	e.T.Fatal("no wrong code found")
	return ""
}

// wrongEmailCode returns a 6-digit code other than code.
func (e *env) wrongEmailCode(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}
