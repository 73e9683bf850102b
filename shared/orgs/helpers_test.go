package orgs_test

import (
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// consoleURL is the console address the tests configure; invitation links start with it.
const consoleURL = "http://console.test/app/"

// inbox is consoletest's, which also finds the invitation links sent.
type inbox struct{ consoletest.Inbox }

var inviteLink = regexp.MustCompile(regexp.QuoteMeta(consoleURL) + `accept-invite#token=([A-Za-z0-9_]+)`)

// lastInviteToken returns the token of the latest invitation link sent to addr.
func (b *inbox) lastInviteToken(t testing.TB, addr string) string {
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
	apitest.Client
	tab   tables.Table
	clock *clock.Fake
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
	logs *apitest.LogBuffer
}

type bodies struct {
	mu  sync.Mutex
	all []string
}

func (b *bodies) add(r apitest.Response) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all = append(b.all, string(r.Body))
}

func (b *bodies) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.all...)
}

// with returns a copy of e that reports to t, for subtests.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.T = t
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
	cfg := apptest.Config()
	cfg.ConsoleURL = consoleURL
	e := &env{tab: tab, clock: tab.Clock, inbox: &inbox{}, seen: &bodies{}, logs: &apitest.LogBuffer{},
		keys:  apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1, WriteThrough: true})}
	api := apptest.New(t, app.Deps{
		Config: cfg, Table: tab.Table, Clock: tab.Clock,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Mailer: e.inbox, PlanCaps: caps, Keys: e.keys, Meter: e.meter,
	}, groups...)
	e.Client = apitest.Client{T: t, Handler: api.Handler(), Seen: e.seen.add}
	e.routes = api.Routes()
	return e
}

// user is a signed-in console user.
type user struct {
	email string
	token string
	id    string
}

// signIn signs addr up or in by e-mail code and returns the session.
func (e *env) signIn(addr string) user {
	e.T.Helper()
	s := consoletest.SignIn(e.Client, &e.inbox.Inbox, addr)
	return user{email: addr, token: s.Token, id: s.User.UserID}
}

// createOrg creates an organisation owned by u.
func (e *env) createOrg(u user, name string) orgs.Organisation {
	e.T.Helper()
	r := e.Call("POST", "/console/orgs", u.token, apitest.JSON(map[string]string{"name": name}))
	e.Expect(r, http.StatusCreated, orgs.OrganisationSchema, "create organisation "+name)
	return apitest.Decode[orgs.Organisation](e.T, r)
}

// invite invites addr to org as role and returns the invitation.
func (e *env) invite(owner user, org, addr, role string) orgs.Invitation {
	e.T.Helper()
	r := e.Call("POST", "/console/orgs/"+org+"/members", owner.token, apitest.JSON(map[string]string{"email": addr, "role": role}))
	e.Expect(r, http.StatusCreated, orgs.InvitePublicSchema, "invite "+addr)
	return apitest.Decode[orgs.Invitation](e.T, r)
}

// join invites addr to org as role, signs addr in and accepts; it returns the new member.
func (e *env) join(owner user, org, addr, role string) user {
	e.T.Helper()
	e.invite(owner, org, addr, role)
	u := e.signIn(addr)
	r := e.Call("POST", "/console/invitations/accept", u.token, apitest.JSON(map[string]string{"token": e.inbox.lastInviteToken(e.T, addr)}))
	e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "accept the invitation of "+addr)
	return u
}

// members reads the members list.
func (e *env) members(u user, org string) orgs.MembersList {
	e.T.Helper()
	r := e.Call("GET", "/console/orgs/"+org+"/members", u.token, "")
	e.Expect(r, http.StatusOK, orgs.MembersListSchema, "list members")
	return apitest.Decode[orgs.MembersList](e.T, r)
}

// auditLog reads the organisation's audit log.
func (e *env) auditLog(u user, org string) []auditEntry {
	e.T.Helper()
	r := e.Call("GET", "/console/orgs/"+org+"/audit?limit=500", u.token, "")
	e.Expect(r, http.StatusOK, nil, "audit log")
	return apitest.Decode[[]auditEntry](e.T, r)
}

// auditEntry is an entry as GET .../audit answers it.
type auditEntry = audit.Entry

// issueKey issues a key and returns the answer.
func (e *env) issueKey(u user, org, env, label string) apitest.Response {
	e.T.Helper()
	return e.Call("POST", "/console/orgs/"+org+"/keys", u.token, apitest.JSON(map[string]any{"label": label, "environment": env}))
}

// totpCode returns the TOTP code of secret now, on the injected clock.
func (e *env) totpCode(secret string) string {
	e.T.Helper()
	return consoletest.TOTPCode(e.T, secret, e.clock.Now())
}

// enableTOTP turns TOTP on for u and returns the secret; the clock moves to the next step so
// that a fresh code exists.
func (e *env) enableTOTP(u user) string {
	e.T.Helper()
	secret, _ := consoletest.EnableTOTP(e.Client, u.token, e.clock.Now())
	e.clock.Advance(30 * time.Second)
	return secret
}
