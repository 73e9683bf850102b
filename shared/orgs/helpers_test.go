package orgs_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// consoleURL is the console address the tests configure; invitation links start with it.
const consoleURL = "http://console.test/app/"

// inbox is consoletest's, which also finds the invitation links sent.
type inbox struct{ consoletest.Inbox }

var inviteLink = regexp.MustCompile(regexp.QuoteMeta(consoleURL) + `accept-invite#token=([A-Za-z0-9_]+)`)

var jsonBody = consoletest.JSON

// lastInviteToken returns the token of the latest invitation link sent to addr.
func (b *inbox) lastInviteToken(t *testing.T, addr string) string {
	t.Helper()
	msgs := b.To(addr)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := inviteLink.FindStringSubmatch(msgs[i].Text); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no invitation link sent to %s", addr)
	return ""
}

// env is the whole service (every group) on one adapter's table with its fake clock, and an
// inbox for the console's e-mail.
type env struct {
	t     *testing.T
	tab   tables.Table
	clock *clock.Fake
	h     http.Handler
	inbox *inbox
	// keys is the service's key store: Wait for its background last_used_at writes.
	keys *apikey.Keys
	// meter is the service's meter; it writes through, so usage reads see every count.
	meter *metering.Meter
	// seen holds every response body, to show that no token ever appears in one.
	seen *bodies
	// routes are the routes the service serves.
	routes []httpapi.Route
	// logs holds every line the service logged (debug level and up), to show that no secret
	// is ever logged.
	logs *consoletest.LogBuffer
}

type bodies struct {
	mu  sync.Mutex
	all []string
}

func (b *bodies) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.all...)
}

// with returns a copy of e that reports to t, for subtests.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

func newEnv(t *testing.T, tab tables.Table) *env {
	t.Helper()
	return newEnvCaps(t, tab, nil)
}

// seatsUncapped is a plan's caps (live keys, seats) for tests about other limits: one live
// key, no seat cap.
func seatsUncapped(string) (int, int) { return 1, 0 }

func newEnvCaps(t *testing.T, tab tables.Table, caps func(string) (int, int)) *env {
	t.Helper()
	return newEnvGroups(t, tab, caps, routetable.GroupConsoleAuth, routetable.GroupConsoleOrgs, routetable.GroupEvents)
}

// newEnvGroups serves groups (every group when none are named).
func newEnvGroups(t *testing.T, tab tables.Table, caps func(string) (int, int), groups ...routetable.Group) *env {
	t.Helper()
	cfg := config.Default()
	cfg.Console.HashKey = bytes.Repeat([]byte{0x5a}, 32)
	cfg.Console.SealKey = bytes.Repeat([]byte{0xa5}, 32)
	cfg.ConsoleURL = consoleURL
	e := &env{t: t, tab: tab, clock: tab.Clock, inbox: &inbox{}, seen: &bodies{}, logs: &consoletest.LogBuffer{},
		keys:  apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1, WriteThrough: true})}
	api, err := app.New(app.Deps{
		Config: cfg, Build: "test", Table: tab.Table, Clock: tab.Clock,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Mailer: e.inbox, PlanCaps: caps, Keys: e.keys, Meter: e.meter,
	}, groups...)
	if err != nil {
		t.Fatal(err)
	}
	e.h = api.Handler()
	e.routes = api.Routes()
	return e
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
	w := consoletest.Serve(e.t, e.h, method, path, token, body)
	e.seen.mu.Lock()
	e.seen.all = append(e.seen.all, w.Body.String())
	e.seen.mu.Unlock()
	return response{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

// send is call for consoletest's sign-in and TOTP steps.
func (e *env) send(method, path, token, body string) (int, []byte) {
	e.t.Helper()
	r := e.call(method, path, token, body)
	return r.status, r.body
}

// expect fails the test unless r has status want; with a schema the body must match it.
func (e *env) expect(r response, want int, s *schema.Schema, what string) {
	e.t.Helper()
	if r.status != want {
		e.t.Fatalf("%s = %s; want %d", what, r, want)
	}
	if s != nil {
		consoletest.CheckBody(e.t, r.body, s, what)
	}
}

// expectDetail fails unless r has status want and a {"detail": <sentence>} body.
func (e *env) expectDetail(r response, want int, what string) string {
	e.t.Helper()
	if r.status != want {
		e.t.Fatalf("%s = %s; want %d", what, r, want)
	}
	var d struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &d); err != nil || d.Detail == "" {
		e.t.Fatalf("%s: body %s is not {\"detail\": <sentence>} (spec 7)", what, r.body)
	}
	return d.Detail
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %s as %T: %v", r.body, v, err)
	}
	return v
}

// user is a signed-in console user.
type user struct {
	email string
	token string
	id    string
}

// signIn signs addr up or in by e-mail code and returns the session.
func (e *env) signIn(addr string) user {
	e.t.Helper()
	s := consoletest.SignIn(e.t, e.send, &e.inbox.Inbox, addr)
	return user{email: addr, token: s.Token, id: s.User.UserID}
}

// createOrg creates an organisation owned by u.
func (e *env) createOrg(u user, name string) orgs.Organisation {
	e.t.Helper()
	r := e.call("POST", "/console/orgs", u.token, jsonBody(map[string]string{"name": name}))
	e.expect(r, http.StatusCreated, orgs.OrganisationSchema, "create organisation "+name)
	return decode[orgs.Organisation](e.t, r)
}

// invite invites addr to org as role and returns the invitation.
func (e *env) invite(owner user, org, addr, role string) orgs.Invitation {
	e.t.Helper()
	r := e.call("POST", "/console/orgs/"+org+"/members", owner.token, jsonBody(map[string]string{"email": addr, "role": role}))
	e.expect(r, http.StatusCreated, orgs.InvitePublicSchema, "invite "+addr)
	return decode[orgs.Invitation](e.t, r)
}

// join invites addr to org as role, signs addr in and accepts; it returns the new member.
func (e *env) join(owner user, org, addr, role string) user {
	e.t.Helper()
	e.invite(owner, org, addr, role)
	u := e.signIn(addr)
	r := e.call("POST", "/console/invitations/accept", u.token, jsonBody(map[string]string{"token": e.inbox.lastInviteToken(e.t, addr)}))
	e.expect(r, http.StatusOK, orgs.OrganisationSchema, "accept the invitation of "+addr)
	return u
}

// members reads the members list.
func (e *env) members(u user, org string) orgs.MembersList {
	e.t.Helper()
	r := e.call("GET", "/console/orgs/"+org+"/members", u.token, "")
	e.expect(r, http.StatusOK, orgs.MembersListSchema, "list members")
	return decode[orgs.MembersList](e.t, r)
}

// auditLog reads the organisation's audit log.
func (e *env) auditLog(u user, org string) []auditEntry {
	e.t.Helper()
	r := e.call("GET", "/console/orgs/"+org+"/audit?limit=500", u.token, "")
	e.expect(r, http.StatusOK, nil, "audit log")
	return decode[[]auditEntry](e.t, r)
}

// auditEntry is an entry as GET .../audit answers it.
type auditEntry = audit.Entry

// issueKey issues a key and returns the answer.
func (e *env) issueKey(u user, org, env, label string) response {
	e.t.Helper()
	return e.call("POST", "/console/orgs/"+org+"/keys", u.token, jsonBody(map[string]any{"label": label, "environment": env}))
}

// totpCode returns the TOTP code of secret now, on the injected clock.
func (e *env) totpCode(secret string) string {
	e.t.Helper()
	return consoletest.TOTPCode(e.t, secret, e.clock.Now())
}

// enableTOTP turns TOTP on for u and returns the secret; the clock moves to the next step so
// that a fresh code exists.
func (e *env) enableTOTP(u user) string {
	e.t.Helper()
	secret, _ := consoletest.EnableTOTP(e.t, e.send, u.token, e.clock.Now())
	e.clock.Advance(30 * time.Second)
	return secret
}
