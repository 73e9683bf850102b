package consoleauth_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// sixDigits finds an e-mailed sign-in code.
var sixDigits = regexp.MustCompile(`\b[0-9]{6}\b`)

var jsonBody = consoletest.JSON

// env is the service with the console-auth group (and the events group, for /v1) on one
// adapter's table, with the table's fake clock and an inbox for the codes.
type env struct {
	t       *testing.T
	tab     tables.Table
	clock   *clock.Fake
	h       http.Handler
	inbox   *consoletest.Inbox
	logs    *consoletest.LogBuffer
	cfg     config.Config
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
	cfg := config.Default()
	cfg.Console.HashKey = bytes.Repeat([]byte{0x5a}, 32)
	cfg.Console.SealKey = bytes.Repeat([]byte{0xa5}, 32)
	sealer, err := seal.NewAESGCM(cfg.Console.SealKey)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, tab: tab, clock: tab.Clock, inbox: &consoletest.Inbox{}, logs: &consoletest.LogBuffer{}, cfg: cfg, sealer: sealer, hashKey: cfg.Console.HashKey}
	if m == nil {
		m = e.inbox
	}
	api, err := app.New(app.Deps{
		Config: cfg, Build: "test", Table: tab.Table, Clock: tab.Clock,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Keys:   apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		Meter:  metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
		Mailer: m, Sealer: sealer,
	}, routetable.GroupConsoleAuth, routetable.GroupEvents)
	if err != nil {
		t.Fatal(err)
	}
	e.h = api.Handler()
	return e
}

// with returns a copy of e that reports to t, for subtests.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
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
		e.t.Fatal(err)
	}
	return s
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string { return http.StatusText(r.status) + " " + string(r.body) }

// call sends one request; token, when set, goes in Authorization: Bearer.
func (e *env) call(method, path, token, body string) response {
	e.t.Helper()
	if token != "" {
		token = "Bearer " + token
	}
	return e.callAuth(method, path, token, body)
}

// callAuth sends one request with the Authorization header auth, when set.
func (e *env) callAuth(method, path, auth, body string) response {
	e.t.Helper()
	w := consoletest.Serve(e.t, e.h, method, path, auth, body)
	return response{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

// send is call for consoletest's sign-in and TOTP steps.
func (e *env) send(method, path, token, body string) (int, []byte) {
	e.t.Helper()
	r := e.call(method, path, token, body)
	return r.status, r.body
}

// expect fails the test unless r has status want; with a schema, the body must also be valid
// against it (the documented response, contract 1).
func (e *env) expect(r response, want int, s *schema.Schema, what string) {
	e.t.Helper()
	if r.status != want {
		e.t.Fatalf("%s = %s; want %d", what, r, want)
	}
	if s != nil {
		consoletest.CheckBody(e.t, r.body, s, what)
	}
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %s as %T: %v", r.body, v, err)
	}
	return v
}

// requestCode asks for a code and returns it from the inbox.
func (e *env) requestCode(addr string) string {
	e.t.Helper()
	r := e.call("POST", "/console/auth/request-code", "", jsonBody(map[string]string{"email": addr}))
	e.expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "request-code "+addr)
	return e.inbox.LastCode(e.t, strings.ToLower(addr))
}

func (e *env) verifyCode(addr, code string) response {
	e.t.Helper()
	return e.call("POST", "/console/auth/verify-code", "", jsonBody(map[string]string{"email": addr, "code": code}))
}

// signIn signs addr in (an account without TOTP) and returns the session.
func (e *env) signIn(addr string) consoleauth.SessionOut {
	e.t.Helper()
	return consoletest.SignIn(e.t, e.send, e.inbox, addr)
}

// challenge signs addr in up to the TOTP step and returns the temp_token.
func (e *env) challenge(addr string) string {
	e.t.Helper()
	r := e.verifyCode(addr, e.requestCode(addr))
	e.expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "verify-code "+addr+" with TOTP")
	ch := decode[consoleauth.AuthChallengeOut](e.t, r)
	if ch.Method != "totp" || ch.TempToken == nil {
		e.t.Fatalf("verify-code with TOTP = %s; want method totp and a temp_token", r)
	}
	return *ch.TempToken
}

// code returns the TOTP code of secret now, on the injected clock.
func (e *env) code(secret string) string {
	e.t.Helper()
	return consoletest.TOTPCode(e.t, secret, e.clock.Now())
}

// nextStep moves the clock to the next TOTP time step, so that a fresh code exists.
func (e *env) nextStep() { e.clock.Advance(30 * time.Second) }

// enableTOTP runs setup and confirm for the session and returns the secret and the recovery
// codes. The confirm consumes the current step's code.
func (e *env) enableTOTP(token string) (string, []string) {
	e.t.Helper()
	return consoletest.EnableTOTP(e.t, e.send, token, e.clock.Now())
}

// nextWindow moves the clock past the current 15-minute cap window (contract 3), to the
// start of the next TOTP step.
func (e *env) nextWindow() {
	now := e.clock.Now()
	e.clock.Set(now.Truncate(15 * time.Minute).Add(15 * time.Minute))
}

func detail(t *testing.T, r response) string {
	t.Helper()
	var d struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatalf("body %s is not {\"detail\": <sentence>}: %v", r.body, err)
	}
	return d.Detail
}

// totpAt returns the TOTP code of secret at t.
func totpAt(secret string, t time.Time) (string, error) { return totp.GenerateCode(secret, t) }

// wrongCode returns a 6-digit code that no time step inside the skew accepts now.
func (e *env) wrongCode(secret string) string {
	e.t.Helper()
	valid := map[string]bool{}
	for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		c, err := totpAt(secret, e.clock.Now().Add(d))
		if err != nil {
			e.t.Fatal(err)
		}
		valid[c] = true
	}
	for _, c := range []string{"000000", "111111", "222222", "333333"} {
		if !valid[c] {
			return c
		}
	}
	e.t.Fatal("no wrong code found")
	return ""
}

// wrongEmailCode returns a 6-digit code other than code.
func (e *env) wrongEmailCode(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}
