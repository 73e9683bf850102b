package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/dynamodb/faulttest"
)

// The tests of this file drive the whole service on a DynamoDB table behind a fault injector
// (faulttest), one test per way DynamoDB fails, through reads and writes of every group that
// answers requests (the stream has tests of its own). Whatever the fault, every answer is the
// route's own answer or 503 with Retry-After, never a 500 (docs/operations.md §1); once
// DynamoDB answers again every acknowledged write is there, and a publish or a sign-in that
// got a 503 is completed by its retry (with the same client_event_id, as the client retry
// rules of docs/api.md §7 ask).

// faultConsoleURL is the console address; invitation links start with it.
const faultConsoleURL = "http://console.test/app/"

var faultInviteLink = regexp.MustCompile(regexp.QuoteMeta(faultConsoleURL) + `accept-invite#token=([A-Za-z0-9_]+)`)

// faultRounds is how many times the table of calls runs while calls fail at random.
const faultRounds = 2

// faultEnv is the service twice over one DynamoDB table: Client's calls go through the fault
// injector, direct's do not, to set the test up and to read what the table holds once
// DynamoDB answers again. The fixture is a signed-in owner of an organisation with a live key
// and an event, a member, and what the calls of each round need.
type faultEnv struct {
	apitest.Client
	direct apitest.Client
	tab    faulttest.Table
	inbox  *consoletest.Inbox

	owner   consoleauth.SessionOut
	member  consoleauth.SessionOut
	org     string
	liveKey string
	event   string
	// per round (0 is the round where every call fails): a session of a user who logs out
	// (which ends all the user's sessions, docs/api.md §5), a sign-in code, an invitation to
	// withdraw, one to accept with its token, a sandbox key to revoke
	leavers  []string
	codes    []string
	invites  []string
	accepts  []acceptance
	toRevoke []string
}

type acceptance struct{ token, session string }

// newFaultEnv builds the env for faults of kind: with short attempts for a hang, else with
// attempts that wait for a slow DynamoDB Local, and quick retries.
func newFaultEnv(t *testing.T, kind faulttest.Kind) *faultEnv {
	t.Helper()
	opts := dynamodb.Options{BaseDelay: time.Millisecond}
	if kind == faulttest.Hang {
		opts.AttemptTimeout = faultAttempt
	}
	tab := faulttest.NewTable(t, opts)
	cfg := apptest.Config()
	cfg.Store = config.StoreDynamoDB // no area cache: every read goes to the table
	cfg.ConsoleURL = faultConsoleURL
	logs := &apitest.LogBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	e := &faultEnv{tab: tab, inbox: &consoletest.Inbox{}}
	serve := func(table store.Table) apitest.Client {
		keys := apikey.New(table, apikey.Options{Clock: tab.Clock, Logger: logger})
		api := apptest.New(t, app.Deps{Config: cfg, Table: table, Clock: tab.Clock, Logger: logger,
			Mailer: e.inbox, Keys: keys, PlanCaps: func(string) (int, int) { return 100, 0 }})
		t.Cleanup(func() {
			tab.Faults.Clear()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := keys.Wait(ctx); err != nil {
				t.Errorf("keys.Wait = %v", err)
			}
		})
		return apitest.Client{T: t, Handler: api.Handler()}
	}
	e.Client, e.direct = serve(tab.Table), serve(tab.Direct)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", logs.String())
		}
	})

	d := e.direct
	e.owner = consoletest.SignIn(d, e.inbox, "owner@example.com")
	r := d.Call("POST", "/console/orgs", e.owner.Token, `{"name":"Faulty Roads"}`)
	d.Expect(r, http.StatusCreated, orgs.OrganisationSchema, "create the organisation")
	e.org = apitest.Decode[orgs.Organisation](t, r).OrgID
	e.liveKey = apitest.Decode[orgs.IssuedKey](t, e.issueKey("live")).Key
	r = d.Call("POST", "/v1/events", e.liveKey, `{"type":"object_on_road","lat":48.85,"lon":2.35}`)
	d.Expect(r, http.StatusCreated, nil, "publish the event")
	e.event = apitest.Decode[struct {
		EventID string `json:"event_id"`
	}](t, r).EventID
	e.member = e.join("member@example.com")
	for i := range faultRounds + 1 {
		e.leavers = append(e.leavers, consoletest.SignIn(d, e.inbox, fmt.Sprintf("leaver%d@example.com", i)).Token)
		signer := fmt.Sprintf("signer%d@example.com", i)
		d.Expect(d.Call("POST", "/console/auth/request-code", "", apitest.JSON(map[string]string{"email": signer})), http.StatusOK, nil, "request a code")
		e.codes = append(e.codes, apitest.JSON(map[string]string{"email": signer, "code": e.inbox.LastCode(t, signer)}))
		e.invites = append(e.invites, e.invite(fmt.Sprintf("withdrawn%d@example.com", i)).InviteID)
		addr := fmt.Sprintf("joiner%d@example.com", i)
		e.invite(addr)
		e.accepts = append(e.accepts, acceptance{token: e.inviteToken(addr), session: consoletest.SignIn(d, e.inbox, addr).Token})
		e.toRevoke = append(e.toRevoke, apitest.Decode[orgs.IssuedKey](t, e.issueKey("sandbox")).APIKey.KeyID)
	}
	return e
}

// The fixture's requests, sent directly.

func (e *faultEnv) issueKey(env string) apitest.Response {
	e.T.Helper()
	r := e.direct.Call("POST", "/console/orgs/"+e.org+"/keys", e.owner.Token, apitest.JSON(map[string]string{"label": "k", "environment": env}))
	e.direct.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue a "+env+" key")
	return r
}

func (e *faultEnv) invite(addr string) orgs.Invitation {
	e.T.Helper()
	r := e.direct.Call("POST", "/console/orgs/"+e.org+"/members", e.owner.Token, apitest.JSON(map[string]string{"email": addr, "role": "member"}))
	e.direct.Expect(r, http.StatusCreated, orgs.InvitePublicSchema, "invite "+addr)
	return apitest.Decode[orgs.Invitation](e.T, r)
}

func (e *faultEnv) inviteToken(addr string) string {
	e.T.Helper()
	msgs := e.inbox.To(addr)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := faultInviteLink.FindStringSubmatch(msgs[i].Text); m != nil {
			return m[1]
		}
	}
	e.T.Fatalf("no invitation link sent to %s", addr)
	return ""
}

func (e *faultEnv) join(addr string) consoleauth.SessionOut {
	e.T.Helper()
	e.invite(addr)
	s := consoletest.SignIn(e.direct, e.inbox, addr)
	r := e.direct.Call("POST", "/console/invitations/accept", s.Token, apitest.JSON(map[string]string{"token": e.inviteToken(addr)}))
	e.direct.Expect(r, http.StatusOK, orgs.OrganisationSchema, "accept the invitation of "+addr)
	return s
}

// faultCall is one request of the table, with the statuses it answers when DynamoDB works.
type faultCall struct {
	name                string
	method, path, token string
	body                string
	ok                  []int
	// tableFree marks a route that answers without the table.
	tableFree bool
}

// publishBody is the publish of round and call i, with a client_event_id of its own.
func publishBody(round int, id string) string {
	return fmt.Sprintf(`{"type":"object_on_road","lat":48.86,"lon":2.%d,"client_event_id":%q}`, 30+round, id)
}

// calls is the table of one round: every group, its reads and its writes.
func (e *faultEnv) calls(round int) []faultCall {
	orgPath := "/console/orgs/" + e.org
	ev := "/v1/events/" + e.event
	owner := e.owner.Token
	return []faultCall{
		{name: "health", method: "GET", path: "/health", ok: []int{200}, tableFree: true},
		{name: "taxonomy", method: "GET", path: "/v1/meta/taxonomy", ok: []int{200}, tableFree: true},
		{name: "plans", method: "GET", path: "/console/plans", ok: []int{200}, tableFree: true},
		// events
		{name: "publish", method: "POST", path: "/v1/events", token: e.liveKey,
			body: publishBody(round, fmt.Sprintf("r%d", round)), ok: []int{201}},
		{name: "query", method: "GET", path: "/v1/events?lat=48.85&lon=2.35&radius=5000", token: e.liveKey, ok: []int{200}},
		{name: "get", method: "GET", path: ev, token: e.liveKey, ok: []int{200}},
		{name: "revise", method: "POST", path: ev + "/revisions", token: e.liveKey,
			body: fmt.Sprintf(`{"lat":48.85,"lon":2.35%d}`, round), ok: []int{200}},
		{name: "signal", method: "POST", path: ev + "/signals", token: e.liveKey,
			body: fmt.Sprintf(`{"action":"confirm","reporter_token":"r%d"}`, round), ok: []int{200}},
		{name: "stream ticket", method: "POST", path: "/v1/stream/tickets", token: e.liveKey, ok: []int{201}},
		// console-auth
		{name: "request code", method: "POST", path: "/console/auth/request-code",
			body: fmt.Sprintf(`{"email":"new%d@example.com"}`, round), ok: []int{200}},
		{name: "sign in", method: "POST", path: "/console/auth/verify-code", body: e.codes[round], ok: []int{200}},
		{name: "verify a wrong code", method: "POST", path: "/console/auth/verify-code",
			body: `{"email":"owner@example.com","code":"000000"}`, ok: []int{400}},
		{name: "me", method: "GET", path: "/console/auth/me", token: owner, ok: []int{200}},
		{name: "update me", method: "PATCH", path: "/console/auth/me", token: owner,
			body: fmt.Sprintf(`{"display_name":"Owner %d"}`, round), ok: []int{200}},
		{name: "totp setup", method: "POST", path: "/console/auth/totp/setup", token: owner, ok: []int{200}},
		{name: "recovery codes", method: "GET", path: "/console/auth/recovery-codes", token: owner, ok: []int{200}},
		{name: "logout", method: "POST", path: "/console/auth/logout", token: e.leavers[round], ok: []int{200}},
		// console-orgs
		{name: "create organisation", method: "POST", path: "/console/orgs", token: owner,
			body: fmt.Sprintf(`{"name":"Round %d"}`, round), ok: []int{201, 429}},
		{name: "list organisations", method: "GET", path: "/console/orgs", token: owner, ok: []int{200}},
		{name: "get organisation", method: "GET", path: orgPath, token: owner, ok: []int{200}},
		{name: "rename organisation", method: "PATCH", path: orgPath, token: owner,
			body: fmt.Sprintf(`{"name":"Faulty Roads %d"}`, round), ok: []int{200}},
		{name: "members", method: "GET", path: orgPath + "/members", token: owner, ok: []int{200}},
		{name: "invite", method: "POST", path: orgPath + "/members", token: owner,
			body: fmt.Sprintf(`{"email":"invited%d@example.com","role":"member"}`, round), ok: []int{201, 429}},
		{name: "change role", method: "PATCH", path: orgPath + "/members/" + e.member.User.UserID, token: owner,
			body: `{"role":"member"}`, ok: []int{200}},
		{name: "withdraw invitation", method: "DELETE", path: orgPath + "/invitations/" + e.invites[round], token: owner, ok: []int{200}},
		{name: "accept invitation", method: "POST", path: "/console/invitations/accept", token: e.accepts[round].session,
			body: apitest.JSON(map[string]string{"token": e.accepts[round].token}), ok: []int{200}},
		{name: "audit", method: "GET", path: orgPath + "/audit", token: owner, ok: []int{200}},
		{name: "keys", method: "GET", path: orgPath + "/keys", token: owner, ok: []int{200}},
		{name: "issue key", method: "POST", path: orgPath + "/keys", token: owner,
			body: `{"label":"issued under faults","environment":"sandbox"}`, ok: []int{201, 429}},
		{name: "revoke key", method: "DELETE", path: orgPath + "/keys/" + e.toRevoke[round], token: owner, ok: []int{200}},
		{name: "usage", method: "GET", path: orgPath + "/usage", token: owner, ok: []int{200}},
		{name: "vitality", method: "GET", path: orgPath + "/vitality", token: owner, ok: []int{200}},
		{name: "reputation", method: "GET", path: orgPath + "/reputation", token: owner, ok: []int{200}},
		// billing
		{name: "billing summary", method: "GET", path: orgPath + "/billing", token: owner, ok: []int{200}},
	}
}

// send sends c through the faults and checks the answer: one of c.ok, or 503 {"detail"} with
// a Retry-After of whole seconds (docs/operations.md §1). It returns the answer.
func send(client apitest.Client, c faultCall) apitest.Response {
	client.T.Helper()
	r := client.Call(c.method, c.path, c.token, c.body)
	switch {
	case slices.Contains(c.ok, r.Status):
		if r.Status >= 400 {
			client.ExpectDetail(r, r.Status, c.name)
		}
	case r.Status == http.StatusServiceUnavailable:
		client.ExpectDetail(r, r.Status, c.name)
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
			client.T.Errorf("%s: 503 with Retry-After %q; want whole seconds, at least 1", c.name, r.Header.Get("Retry-After"))
		}
	default:
		client.T.Errorf("%s = %s; want one of %v, or 503 with Retry-After", c.name, r, c.ok)
	}
	return r
}

// outcomes are the answers of the writes whose results are checked once the fault is gone.
type outcomes struct {
	mu        sync.Mutex
	publishes []outcome
	signIns   []outcome
	orgs      []outcome
	keys      []outcome
}

type outcome struct {
	body string
	r    apitest.Response
}

func (o *outcomes) record(c faultCall, r apitest.Response) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch c.name {
	case "publish":
		o.publishes = append(o.publishes, outcome{c.body, r})
	case "sign in":
		o.signIns = append(o.signIns, outcome{c.body, r})
	case "create organisation":
		o.orgs = append(o.orgs, outcome{c.body, r})
	case "issue key":
		o.keys = append(o.keys, outcome{c.body, r})
	}
}

// runFault runs the table of calls under fault: every call failing first, then half of the
// attempts failing at random, and checks what the table holds once DynamoDB answers again.
func runFault(t *testing.T, e *faultEnv, fault faulttest.Fault) {
	t.Helper()
	var got outcomes
	e.tab.Faults.Set(fault)
	t.Run("every call fails", func(t *testing.T) {
		for _, c := range e.calls(0) {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel() // nothing can change, and hung calls wait together
				client := e.Client
				client.T = t
				r := send(client, c)
				if !c.tableFree && r.Status != http.StatusServiceUnavailable {
					t.Errorf("%s while every DynamoDB call fails (%s) = %s; want 503", c.name, fault.Kind, r)
				}
				got.record(c, r)
			})
		}
	})
	fault.Rate = 0.5
	e.tab.Faults.Set(fault)
	for round := 1; round <= faultRounds; round++ {
		for _, c := range e.calls(round) {
			got.record(c, send(e.Client, c))
		}
	}
	e.tab.Faults.Clear()
	if e.tab.Faults.Injected() == 0 {
		t.Fatalf("no fault was injected")
	}
	e.checkOutcomes(&got, fault.Kind == faulttest.ResetAfter)
}

// checkOutcomes checks, with DynamoDB answering again, that every acknowledged write is there,
// that a publish answered 503 left either nothing or the whole event (with its area index),
// which its retry with the same client_event_id returns (docs/api.md §4.1 rule 1), and that a
// sign-in answered 503 left its code usable, unless the fault let writes through and lost their
// answers (applied): then the code may have gone with a session nobody received.
func (e *faultEnv) checkOutcomes(got *outcomes, applied bool) {
	e.T.Helper()
	d := e.direct
	type published struct {
		EventID string `json:"event_id"`
	}
	for _, p := range got.publishes {
		switch p.r.Status {
		case http.StatusCreated:
			ev := apitest.Decode[published](e.T, p.r).EventID
			d.Expect(d.Call("GET", "/v1/events/"+ev, e.liveKey, ""), http.StatusOK, nil, "read the acknowledged event "+ev)
			if !e.listed(ev) {
				e.T.Errorf("acknowledged event %s is not in the area query", ev)
			}
		case http.StatusServiceUnavailable:
			// docs/api.md §7: resend with the same client_event_id; the first attempt's event, if
			// it was written, is replayed (200), or this one creates it (201).
			r := d.Call("POST", "/v1/events", e.liveKey, p.body)
			if r.Status != http.StatusOK && r.Status != http.StatusCreated {
				e.T.Errorf("publish %s again after its 503 = %s; want 200 or 201", p.body, r)
				continue
			}
			ev := apitest.Decode[published](e.T, r).EventID
			if r.Status == http.StatusOK && !e.listed(ev) {
				e.T.Errorf("event %s, written before its publish answered 503, is not in the area query", ev)
			}
		}
	}
	for _, o := range got.signIns {
		if o.r.Status != http.StatusServiceUnavailable {
			continue
		}
		r := d.Call("POST", "/console/auth/verify-code", "", o.body)
		if r.Status != http.StatusOK && (!applied || r.Status != http.StatusBadRequest) {
			e.T.Errorf("sign in again with the code of a sign-in answered 503 = %s; want 200", r)
		}
	}
	for _, o := range got.orgs {
		if o.r.Status == http.StatusCreated {
			org := apitest.Decode[orgs.Organisation](e.T, o.r).OrgID
			d.Expect(d.Call("GET", "/console/orgs/"+org, e.owner.Token, ""), http.StatusOK, orgs.OrganisationSchema, "read the acknowledged organisation")
		}
	}
	for _, k := range got.keys {
		if k.r.Status == http.StatusCreated {
			key := apitest.Decode[orgs.IssuedKey](e.T, k.r).Key
			d.Expect(d.Call("GET", "/v1/events/"+e.event, key, ""), http.StatusOK, nil, "use the acknowledged key")
		}
	}
}

// listed tells whether the area query around the published events lists ev.
func (e *faultEnv) listed(ev string) bool {
	e.T.Helper()
	r := e.direct.Call("GET", "/v1/events?lat=48.86&lon=2.32&radius=5000", e.liveKey, "")
	e.direct.Expect(r, http.StatusOK, nil, "area query")
	for _, x := range apitest.Decode[[]struct {
		EventID string `json:"event_id"`
	}](e.T, r) {
		if x.EventID == ev {
			return true
		}
	}
	return false
}

// faultAttempt keeps the hung attempts of these tests short, as the base delay of their
// backoff (1 ms) keeps their retries quick; the service runs dynamodb.DefaultAttemptTimeout
// and DefaultBaseDelay.
const faultAttempt = 50 * time.Millisecond

func TestDynamoDBThrottled(t *testing.T) {
	t.Parallel()
	for _, kind := range []faulttest.Kind{faulttest.Throttle, faulttest.RequestThrottle} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			runFault(t, newFaultEnv(t, kind), faulttest.Fault{Kind: kind})
		})
	}
}

func TestDynamoDBServerErrors(t *testing.T) {
	t.Parallel()
	for _, kind := range []faulttest.Kind{faulttest.InternalError, faulttest.ServiceUnavailable} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			runFault(t, newFaultEnv(t, kind), faulttest.Fault{Kind: kind})
		})
	}
}

func TestDynamoDBHangs(t *testing.T) {
	t.Parallel()
	runFault(t, newFaultEnv(t, faulttest.Hang), faulttest.Fault{Kind: faulttest.Hang})
}

func TestDynamoDBResetsBeforeTheRequest(t *testing.T) {
	t.Parallel()
	runFault(t, newFaultEnv(t, faulttest.ResetBefore), faulttest.Fault{Kind: faulttest.ResetBefore})
}

// The dangerous case: DynamoDB carried the write out and the answer was lost.
func TestDynamoDBResetsAfterTheWrite(t *testing.T) {
	t.Parallel()
	runFault(t, newFaultEnv(t, faulttest.ResetAfter), faulttest.Fault{Kind: faulttest.ResetAfter})
}
