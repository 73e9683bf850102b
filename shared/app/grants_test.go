package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consolefeeds"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/embedded"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// The test of this file holds the grants of shared/routetable (docs/security.md §6), which the
// CDK stack turns into each function's IAM policy, to what each group does. Every group runs
// alone, as on AWS (app.New with one group), over one table whose every call is recorded with
// the group that made it, and with an e-mail and a sealer that record their callers too. A
// front that routes each request to its group by the route table, as the load balancer does,
// takes a realistic tour of every route: sign-ins with and without TOTP, organisations,
// invitations, keys, publishing and the network's rules down to a verdict, tickets and a
// stream, and billing against a stand-in for Stripe. The groups run as on Lambda on DynamoDB
// (no area cache, merge guards written) and write their usage and last_used_at after each
// request, as a function does before it returns.

// grantsTime is the clock of the tour; TOTP codes are taken from it.
var grantsTime = time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC)

// itemCall is one recorded call: an action on the item of a partition key.
type itemCall struct {
	action routetable.ItemAction
	pk     string
}

// callLog is what each group did. It is safe for concurrent use.
type callLog struct {
	mu    sync.Mutex
	items map[routetable.Group][]itemCall
	kms   map[routetable.Group]map[routetable.KMSAction]bool
	mail  map[routetable.Group]int
	turns map[routetable.Group]int
}

func (l *callLog) item(g routetable.Group, a routetable.ItemAction, pk string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items[g] = append(l.items[g], itemCall{a, pk})
}

func (l *callLog) kmsCall(g routetable.Group, a routetable.KMSAction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kms[g] == nil {
		l.kms[g] = map[routetable.KMSAction]bool{}
	}
	l.kms[g][a] = true
}

func (l *callLog) mailed(g routetable.Group) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mail[g]++
}

// recordedTable is the shared table as one group sees it: every call is logged as the IAM
// action DynamoDB would authorize it by (routetable.ItemAction).
type recordedTable struct {
	store.Table
	group routetable.Group
	log   *callLog
}

var _ store.Table = recordedTable{}

func (t recordedTable) Get(ctx context.Context, k store.Key) (store.Item, error) {
	t.log.item(t.group, routetable.GetItem, k.PK)
	return t.Table.Get(ctx, k)
}

func (t recordedTable) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	t.log.item(t.group, routetable.PutItem, item.Key().PK)
	return t.Table.Put(ctx, item, cond)
}

func (t recordedTable) Delete(ctx context.Context, k store.Key, cond store.Condition) error {
	t.log.item(t.group, routetable.DeleteItem, k.PK)
	return t.Table.Delete(ctx, k, cond)
}

func (t recordedTable) Update(ctx context.Context, k store.Key, u store.Update, cond store.Condition) (store.Item, error) {
	t.log.item(t.group, routetable.UpdateItem, k.PK)
	return t.Table.Update(ctx, k, u, cond)
}

func (t recordedTable) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	t.log.item(t.group, routetable.Query, q.PK)
	return t.Table.Query(ctx, q)
}

func (t recordedTable) BatchGet(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	for _, k := range keys {
		t.log.item(t.group, routetable.BatchGetItem, k.PK)
	}
	return t.Table.BatchGet(ctx, keys)
}

// transactAction is the action DynamoDB checks for each operation of a transaction.
var transactAction = map[store.OpKind]routetable.ItemAction{
	store.OpPut: routetable.PutItem, store.OpDelete: routetable.DeleteItem,
	store.OpUpdate: routetable.UpdateItem, store.OpCheck: routetable.ConditionCheckItem,
}

func (t recordedTable) TransactWrite(ctx context.Context, ops []store.Op) error {
	for _, op := range ops {
		t.log.item(t.group, transactAction[op.Kind], op.TargetKey().PK)
	}
	return t.Table.TransactWrite(ctx, ops)
}

// Close leaves the shared table open: the test closes it.
func (t recordedTable) Close() error { return nil }

// recordedSealer stands in for the KMS sealer: Seal is kms:Encrypt, Open kms:Decrypt.
type recordedSealer struct {
	seal.Sealer
	group routetable.Group
	log   *callLog
}

func (s recordedSealer) Seal(ctx context.Context, plaintext []byte, context string) ([]byte, error) {
	s.log.kmsCall(s.group, routetable.KMSEncrypt)
	return s.Sealer.Seal(ctx, plaintext, context)
}

func (s recordedSealer) Open(ctx context.Context, sealed []byte, context string) ([]byte, error) {
	s.log.kmsCall(s.group, routetable.KMSDecrypt)
	return s.Sealer.Open(ctx, sealed, context)
}

// recordedMailer delivers to the shared inbox and records who sent.
type recordedMailer struct {
	inbox *consoletest.Inbox
	group routetable.Group
	log   *callLog
}

func (m recordedMailer) Send(ctx context.Context, msg mail.Message) error {
	m.log.mailed(m.group)
	return m.inbox.Send(ctx, msg)
}

// recordedTurns counts the webhook turns each group sends (routetable.Grants.SendsTurns).
type recordedTurns struct {
	group routetable.Group
	log   *callLog
}

func (r recordedTurns) Send(context.Context, webhooks.Turn) error {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.turns[r.group]++
	return nil
}

// stripeStandIn answers every Stripe call with an object that has what the billing group reads
// of a customer, a checkout or portal session and a usage record: an id and a URL.
func stripeStandIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"cus_grants","object":"customer","url":"https://stripe.test/session","quantity":1}`)
}

const grantsWebhookSecret = "whsec_grants_test"

// groupProcess is one group served as its function (or, for the stream, the streamer) serves it.
type groupProcess struct {
	group routetable.Group
	api   *apptest.API
	keys  *apikey.Keys
	meter *metering.Meter
	logs  *apitest.LogBuffer
}

// ServeHTTP serves r, then writes the usage counts and last_used_at, as app.Lambda does before
// an invocation returns.
func (p *groupProcess) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.api.Handler().ServeHTTP(w, r)
	p.finish()
}

func (p *groupProcess) finish() {
	ctx, cancel := context.WithTimeout(context.Background(), apitest.Within)
	defer cancel()
	p.meter.Flush(ctx)
	p.keys.Wait(ctx)
}

// grantsTour is the service as the test drives it.
type grantsTour struct {
	apitest.Client
	t      *testing.T
	clk    *clock.Fake
	inbox  *consoletest.Inbox
	log    *callLog
	groups map[routetable.Group]*groupProcess
	// served counts the requests each route of the table answered other than 404 and 405.
	served   map[string]int
	servedMu sync.Mutex
	front    *httptest.Server
	hub      *stream.Hub
	// db and sealer are the table and the sealer under the groups, unrecorded, for what the
	// tour sets up as another process would have (a webhook endpoint and its delivery).
	db     store.Table
	sealer seal.Sealer
}

// newGrantsTour builds every group on one recorded embedded table. Each group's configuration
// holds only the secrets its grants name, so a group that used another would say so in its log.
func newGrantsTour(t *testing.T) *grantsTour {
	t.Helper()
	clk := clock.NewFake(grantsTime)
	db, err := embedded.Open(filepath.Join(t.TempDir(), config.EmbeddedStoreFile), embedded.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	stripe := httptest.NewServer(http.HandlerFunc(stripeStandIn))
	t.Cleanup(stripe.Close)
	aes, err := seal.NewAESGCM(bytes.Repeat([]byte{0xa5}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	tour := &grantsTour{t: t, clk: clk, inbox: &consoletest.Inbox{}, served: map[string]int{}, db: db, sealer: aes,
		log:    &callLog{items: map[routetable.Group][]itemCall{}, kms: map[routetable.Group]map[routetable.KMSAction]bool{}, mail: map[routetable.Group]int{}, turns: map[routetable.Group]int{}},
		groups: map[routetable.Group]*groupProcess{}}

	ctx, stop := context.WithCancel(context.Background())
	hub := stream.NewHub(stream.HubOptions{Clock: clk, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); hub.Run(ctx, db, stream.EventsDecoder()) }()
	t.Cleanup(func() { hub.Drain(); stop(); <-hubDone })
	apitest.Eventually(t, "the hub follows the feed", hub.Ready)
	tour.hub = hub

	mux := http.NewServeMux()
	for _, g := range routetable.All {
		cfg := grantsConfig(g.Grants().Secrets, stripe.URL)
		table := recordedTable{Table: db, group: g, log: tour.log}
		logs := &apitest.LogBuffer{}
		logger := slog.New(slog.NewJSONHandler(logs, nil))
		p := &groupProcess{group: g, logs: logs,
			keys:  apikey.New(table, apikey.Options{Clock: clk, Logger: logger}),
			meter: metering.New(table, metering.Options{Clock: clk, Logger: logger, FlushInterval: -1})}
		deps := app.Deps{Config: cfg, Table: table, Clock: clk, Logger: logger, Keys: p.keys, Meter: p.meter,
			Mailer: recordedMailer{inbox: tour.inbox, group: g, log: tour.log},
			Sealer: recordedSealer{Sealer: aes, group: g, log: tour.log},
			// Turns go to their queue, as on AWS, so that the table's calls are those of AWS.
			Turns:    recordedTurns{group: g, log: tour.log},
			PlanCaps: func(string) (int, int) { return 10, 0 }}
		if g == routetable.GroupStream {
			deps.Hub = hub
		}
		p.api = apptest.New(t, deps, g)
		tour.groups[g] = p
		for _, r := range g.Routes() {
			pattern := r.String()
			mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				rw := &statusWriter{ResponseWriter: w}
				p.ServeHTTP(rw, req)
				if rw.status != http.StatusNotFound && rw.status != http.StatusMethodNotAllowed {
					tour.servedMu.Lock()
					tour.served[pattern]++
					tour.servedMu.Unlock()
				}
			}))
		}
	}
	// Preflights and paths no route knows go to meta, as on AWS.
	mux.Handle("/", tour.groups[routetable.GroupMeta])
	tour.Client = apitest.Client{T: t, Handler: mux}
	tour.front = httptest.NewServer(mux)
	t.Cleanup(tour.front.Close)
	return tour
}

// grantsConfig is a Lambda's configuration on DynamoDB with only the given secrets.
func grantsConfig(secrets []string, stripeURL string) config.Config {
	cfg := config.Default()
	cfg.Store = config.StoreDynamoDB // as on Lambda: no area cache, merge guards written
	cfg.ConsoleURL = "http://console.test/app/"
	// A verdict after two decided events (docs/network.md §2), so that the tour reaches one.
	cfg.Reputation = config.Reputation{MinHistory: 2, VerdictPercent: 80, WindowDays: 30}
	cfg.Billing.Team.PriceID, cfg.Billing.Team.MeteredPriceID = "price_team", "price_team_reads"
	cfg.Billing.Team.IncludedReads = 1 // so that the overage job has reads to report
	cfg.Feeds.AllowPrivate = true      // the tour's feed is on loopback
	for _, s := range secrets {
		switch s {
		case routetable.SecretEventIDKey:
			cfg.EventIDKey = bytes.Repeat([]byte{0x3c}, 32)
		case routetable.SecretAuthHashKey:
			cfg.Console.HashKey = bytes.Repeat([]byte{0x5a}, 32)
		case routetable.SecretStripeKey:
			cfg.Billing.StripeSecretKey, cfg.Billing.StripeAPIBase = "sk_test_grants", stripeURL
		case routetable.SecretStripeHook:
			cfg.Billing.StripeWebhookSecret = grantsWebhookSecret
		}
	}
	return cfg
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// call sends one request and expects want.
func (g *grantsTour) call(method, path, token, body string, want int, what string) apitest.Response {
	g.t.Helper()
	r := g.Call(method, path, token, body)
	g.Expect(r, want, nil, what)
	return r
}

// tick moves the clock past the current TOTP step, so that the next code is a new one.
func (g *grantsTour) tick() { g.clk.Advance(30 * time.Second) }

func (g *grantsTour) totp(secret string) string {
	g.tick()
	return consoletest.TOTPCode(g.t, secret, g.clk.Now())
}

// inviteToken is the token of the latest invitation link sent to addr.
func (g *grantsTour) inviteToken(addr string) string {
	g.t.Helper()
	msgs := g.inbox.To(addr)
	for i := len(msgs) - 1; i >= 0; i-- {
		if _, tok, ok := strings.Cut(msgs[i].Text, "accept-invite#token="); ok {
			return strings.Fields(tok)[0]
		}
	}
	g.t.Fatalf("no invitation link sent to %s", addr)
	return ""
}

// streamSnapshot opens GET /v1/stream over the network with auth (a key as a bearer
// credential, or a ticket in the query), reads up to the snapshot and hangs up.
func (g *grantsTour) streamSnapshot(query, key string) {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.front.URL+"/v1/stream?lat=48.85&lon=2.35&radius=5000"+query, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), apitest.Within)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		g.t.Fatalf("GET /v1/stream: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		g.t.Fatalf("GET /v1/stream = %d %s; want 200", resp.StatusCode, body)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		if lines.Text() == "event: "+stream.FrameSnapshot {
			return
		}
	}
	g.t.Fatalf("GET /v1/stream ended before its snapshot: %v", lines.Err())
}

// webhook delivers a subscription event of the tour's customer as Stripe would, signed.
func (g *grantsTour) webhook(kind string, metadata map[string]string) {
	g.t.Helper()
	status := "active"
	if kind == "customer.subscription.deleted" {
		status = "canceled"
	}
	payload, _ := json.Marshal(map[string]any{
		"id": "evt_" + kind, "object": "event", "type": kind, "created": g.clk.Now().Unix(), "api_version": "2023-10-16",
		"data": map[string]any{"object": map[string]any{
			"id": "sub_1", "customer": "cus_grants", "status": status, "metadata": metadata,
			"items": map[string]any{"data": []any{
				map[string]any{"id": "si_flat", "price": map[string]any{"id": "price_team"}},
				map[string]any{"id": "si_reads", "price": map[string]any{"id": "price_team_reads"}},
			}},
		}},
	})
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: grantsWebhookSecret, Timestamp: time.Now()})
	req := httptest.NewRequest(http.MethodPost, "/console/billing/webhook", bytes.NewReader(signed.Payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", signed.Header)
	w := httptest.NewRecorder()
	g.Handler.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		g.t.Fatalf("webhook %s = %d %s; want 200", kind, w.Code, w.Body)
	}
}

// tourEveryRoute takes the service through every route of the table.
func (g *grantsTour) tourEveryRoute() {
	t := g.t
	// meta, and what goes to it on AWS: a preflight and an unknown path.
	for _, p := range []string{"/health", "/", "/openapi.json", "/v1/meta/event-types", "/v1/meta/taxonomy", "/v1/meta/limits", "/v1/meta/basemap"} {
		g.call("GET", p, "", "", http.StatusOK, p)
	}
	g.call("GET", "/nowhere", "", "", http.StatusNotFound, "an unknown path")

	// console-auth: an owner with TOTP, a second sign-in through each second factor.
	owner := consoletest.SignIn(g.Client, g.inbox, "ada@example.com").Token
	g.call("GET", "/console/auth/me", owner, "", http.StatusOK, "me")
	g.call("PATCH", "/console/auth/me", owner, `{"display_name":"Ada"}`, http.StatusOK, "update me")
	secret, _ := consoletest.EnableTOTP(g.Client, owner, g.clk.Now())
	g.call("GET", "/console/auth/recovery-codes", owner, "", http.StatusOK, "recovery codes left")
	r := g.call("POST", "/console/auth/recovery-codes/regenerate", owner, apitest.JSON(map[string]string{"code": g.totp(secret)}), http.StatusOK, "regenerate recovery codes")
	recovery := apitest.Decode[consoleauth.RecoveryCodesOut](t, r).Codes
	challenge := func() string {
		g.call("POST", "/console/auth/request-code", "", `{"email":"ada@example.com"}`, http.StatusOK, "request a code")
		r := g.call("POST", "/console/auth/verify-code", "", apitest.JSON(map[string]string{"email": "ada@example.com", "code": g.inbox.LastCode(t, "ada@example.com")}), http.StatusOK, "verify the code")
		temp := apitest.Decode[struct {
			TempToken *string `json:"temp_token"`
		}](t, r).TempToken
		if temp == nil {
			t.Fatalf("verify-code for a TOTP account answered %s; want a challenge", r)
		}
		return *temp
	}
	g.call("POST", "/console/auth/verify-totp", challenge(), apitest.JSON(map[string]string{"code": g.totp(secret)}), http.StatusOK, "second factor: TOTP")
	second := apitest.Decode[consoleauth.SessionOut](t, g.call("POST", "/console/auth/verify-recovery", challenge(), apitest.JSON(map[string]string{"code": recovery[0]}), http.StatusOK, "second factor: a recovery code")).Token

	// console-orgs: an organisation, its members and invitations, its keys.
	r = g.call("POST", "/console/orgs", owner, `{"name":"Alpha"}`, http.StatusCreated, "create an organisation")
	alpha := apitest.Decode[orgs.Organisation](t, r).OrgID
	op := "/console/orgs/" + alpha
	g.call("GET", "/console/orgs", owner, "", http.StatusOK, "list organisations")
	g.call("GET", op, owner, "", http.StatusOK, "get the organisation")
	g.call("PATCH", op, owner, `{"name":"Alpha Roads"}`, http.StatusOK, "rename it")
	join := func(addr, role string) (session, userID string) {
		g.call("POST", op+"/members", owner, apitest.JSON(map[string]string{"email": addr, "role": role}), http.StatusCreated, "invite "+addr)
		s := consoletest.SignIn(g.Client, g.inbox, addr)
		g.call("POST", "/console/invitations/accept", s.Token, apitest.JSON(map[string]string{"token": g.inviteToken(addr)}), http.StatusOK, addr+" accepts")
		return s.Token, s.User.UserID
	}
	_, bobID := join("bob@example.com", "member")
	carol, _ := join("carol@example.com", "member")
	g.call("PATCH", op+"/members/"+bobID, owner, `{"role":"owner"}`, http.StatusOK, "make bob an owner")
	g.call("DELETE", op+"/members/"+bobID, owner, "", http.StatusOK, "remove bob")
	g.call("POST", op+"/leave", carol, "", http.StatusOK, "carol leaves")
	r = g.call("POST", op+"/members", owner, `{"email":"dan@example.com","role":"member"}`, http.StatusCreated, "invite dan")
	invite := apitest.Decode[orgs.Invitation](t, r).InviteID
	r = g.call("POST", op+"/invitations/"+invite+"/resend", owner, "", http.StatusOK, "resend dan's invitation")
	g.call("DELETE", op+"/invitations/"+apitest.Decode[orgs.Invitation](t, r).InviteID, owner, "", http.StatusOK, "withdraw it")
	g.call("GET", op+"/members", owner, "", http.StatusOK, "members")
	// TOTP attempts share one budget per account and 15 minutes (docs/security.md §4).
	g.clk.Advance(16 * time.Minute)
	issue := func(env string) orgs.IssuedKey {
		body := apitest.JSON(map[string]string{"label": env, "environment": env, "totp_code": g.totp(secret)})
		return apitest.Decode[orgs.IssuedKey](t, g.call("POST", op+"/keys", owner, body, http.StatusCreated, "issue a "+env+" key"))
	}
	alphaKey := issue("live").Key
	g.call("DELETE", op+"/keys/"+issue("sandbox").APIKey.KeyID, owner, "", http.StatusOK, "revoke the sandbox key")
	g.call("GET", op+"/keys", owner, "", http.StatusOK, "keys")

	// Another organisation, whose reporters judge Alpha's events.
	brian := consoletest.SignIn(g.Client, g.inbox, "brian@example.com").Token
	bravo := apitest.Decode[orgs.Organisation](t, g.call("POST", "/console/orgs", brian, `{"name":"Bravo"}`, http.StatusCreated, "create Bravo")).OrgID
	bravoKey := apitest.Decode[orgs.IssuedKey](t, g.call("POST", "/console/orgs/"+bravo+"/keys", brian, `{"label":"app","environment":"live"}`, http.StatusCreated, "issue Bravo's key")).Key

	// events: publish (and its replay), read, query, revise, signal, evidence, close, ticket.
	publish := func(lat string, id string) string {
		body := fmt.Sprintf(`{"type":"object_on_road","lat":%s,"lon":2.35,"client_event_id":%q}`, lat, id)
		r := g.call("POST", "/v1/events", alphaKey, body, http.StatusCreated, "publish "+id)
		g.call("POST", "/v1/events", alphaKey, body, http.StatusOK, "replay "+id)
		return apitest.Decode[event.Event](t, r).ID
	}
	// A deny quorum ends an event. After the first, Alpha has too little history to be judged;
	// after the second, both of its decided events denied, its standing falls: a verdict
	// invalidates its other event and e-mails its owner (docs/network.md §2).
	denied1, denied2, standing := publish("48.86", "b"), publish("48.87", "c"), publish("48.89", "d")
	for _, id := range []string{denied1, denied2} {
		for i := range 3 {
			g.call("POST", "/v1/events/"+id+"/signals", bravoKey, fmt.Sprintf(`{"action":"deny","reporter_token":"d%d"}`, i), http.StatusOK, "deny")
		}
	}
	if got := apitest.Decode[event.Event](t, g.call("GET", "/v1/events/"+standing, bravoKey, "", http.StatusOK, "the other event")).Status; got != event.StatusInvalidated {
		t.Fatalf("after the verdict Alpha's other event is %s; want invalidated (the tour must reach a verdict)", got)
	}
	ev := "/v1/events/" + publish("48.85", "a")
	g.call("GET", "/v1/events?lat=48.85&lon=2.35&radius=5000", bravoKey, "", http.StatusOK, "query")
	for _, format := range []string{"cifs", "wzdx", "tdx", "datex2"} {
		g.call("GET", "/v1/exports/"+format+"?bbox=2.30,48.80,2.40,48.90", bravoKey, "", http.StatusOK, "export "+format)
	}
	g.call("GET", ev, bravoKey, "", http.StatusOK, "get")
	g.call("GET", ev, alphaKey, "", http.StatusOK, "Alpha reads its own event: beyond its plan's included reads")
	g.call("POST", ev+"/revisions", alphaKey, `{"lat":48.8501,"lon":2.35}`, http.StatusOK, "revise")
	g.call("POST", ev+"/signals", bravoKey, `{"action":"confirm","reporter_token":"r1"}`, http.StatusOK, "confirm")
	// Bravo reports the same hazard twice: each report merges into Alpha's (docs/network.md §1),
	// the second without changing it (Bravo counts once).
	for _, lon := range []string{"2.3501", "2.3502"} {
		body := `{"type":"object_on_road","lat":48.8501,"lon":` + lon + `}`
		merged := apitest.Decode[event.Event](t, g.call("POST", "/v1/events", bravoKey, body, http.StatusCreated, "Bravo reports the same hazard"))
		if merged.Status != event.StatusMerged {
			t.Fatalf("Bravo's report of Alpha's hazard is %s; want merged (the tour must reach a merge)", merged.Status)
		}
	}
	g.call("GET", ev+"/evidence", alphaKey, "", http.StatusOK, "evidence")
	// The console's Road page: the same operations as a member, no key (docs/console.md §5).
	road := op + "/events"
	g.call("GET", road+"?lat=48.85&lon=2.35&radius=5000", owner, "", http.StatusOK, "the console's map")
	g.call("GET", op+"/own-events", owner, "", http.StatusOK, "the console's list of own events")
	g.call("GET", strings.Replace(ev, "/v1/events", road, 1), owner, "", http.StatusOK, "the console's inspector")
	g.call("GET", strings.Replace(ev, "/v1/events", road, 1)+"/evidence", owner, "", http.StatusOK, "the inspector's evidence")
	g.call("POST", strings.Replace(ev, "/v1/events", road, 1)+"/revisions", owner, `{"lat":48.8502,"lon":2.35}`, http.StatusOK, "revise in the console")
	g.call("POST", op+"/stream/tickets", owner, "", http.StatusCreated, "the map's stream ticket")
	g.call("POST", strings.Replace(publish("48.84", "e"), "ev_", road+"/ev_", 1)+"/close", owner, "", http.StatusOK, "close in the console")
	g.call("POST", ev+"/close", alphaKey, "", http.StatusOK, "close")
	ticket := apitest.Decode[struct {
		Ticket string `json:"ticket"`
	}](t, g.call("POST", "/v1/stream/tickets", alphaKey, "", http.StatusCreated, "a ticket")).Ticket

	// stream, as the streamer serves it: with a key, and with a ticket.
	g.streamSnapshot("", alphaKey)
	g.streamSnapshot("&ticket="+ticket, "")
	apitest.Eventually(t, "the streams end", func() bool { return g.hub.Stats().Subscribers == 0 })
	g.groups[routetable.GroupStream].finish()

	// console-orgs' feed registry, and the events group's scheduled job that polls a feed,
	// then ends the events of the deleted feed (docs/interop.md §13).
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"incidents":[{"incident":{"id":"r1","type":"HAZARD","subtype":"HAZARD_ON_ROAD_OBJECT",`+
			`"polyline":"48.8000 2.3500 48.8003 2.3500","street":"A1"}}]}`)
	}))
	defer upstream.Close()
	r = g.call("POST", op+"/feeds", owner, apitest.JSON(map[string]string{"url": upstream.URL, "format": "cifs", "environment": "live"}),
		http.StatusCreated, "register a feed")
	feed := op + "/feeds/" + apitest.Decode[consolefeeds.FeedPublic](t, r).FeedID
	g.call("GET", op+"/feeds", carol, "", http.StatusNotFound, "carol, who left, lists no feed")
	g.call("GET", op+"/feeds", owner, "", http.StatusOK, "feeds")
	g.call("PATCH", feed, owner, `{"name":"A1 north"}`, http.StatusOK, "rename the feed")
	g.call("POST", feed+"/poll", owner, "", http.StatusOK, "poll it now")
	poll := func(want int) {
		events := g.groups[routetable.GroupEvents]
		if n, err := events.api.Feeds().Pass(context.Background()); err != nil || n != want {
			t.Fatalf("a poll pass: %d feeds, %v; want %d", n, err, want)
		}
		events.finish()
	}
	poll(1)
	g.call("GET", feed, owner, "", http.StatusOK, "the feed's health")
	g.call("DELETE", feed, owner, "", http.StatusOK, "delete the feed")
	poll(1)

	// console-orgs' webhook endpoints. On Lambda no producer or dispatcher runs yet, so a
	// registration is refused (docs/webhooks.md); the endpoint and its delivery are set up as
	// the process of the embedded store makes them, and the other routes work on them.
	g.call("POST", op+"/webhooks", owner, `{"url":"https://hooks.example/in","kinds":["event.ended"]}`,
		http.StatusServiceUnavailable, "register a webhook endpoint where deliveries do not run")
	endpoints := webhooks.NewEndpoints(g.db, audit.New(g.db, audit.Options{Clock: g.clk}), g.sealer, webhooks.EndpointsOptions{Clock: g.clk})
	ep, _, err := endpoints.Create(context.Background(), alpha, webhooks.Actor{}, webhooks.EndpointDraft{
		URL: ptr("https://hooks.example/in"), Kinds: []string{webhooks.KindEnded}})
	if err != nil {
		t.Fatal(err)
	}
	queue := webhooks.NewQueue(g.db, g.clk)
	dlv := webhooks.Delivery{ID: webhooks.DeliveryID(g.clk.Now(), "tour", ep.ID), Org: alpha, Endpoint: ep.ID, Kind: webhooks.KindEnded, Body: []byte(`{}`)}
	if err := queue.Enqueue(context.Background(), dlv); err != nil {
		t.Fatal(err)
	}
	// Disabled, the endpoint gets nothing: the delivery is dropped, then redelivered.
	endpoints.Disable(context.Background(), alpha, ep.ID, "the tour")
	if _, err := webhooks.NewDispatcher(queue, endpoints, webhooks.DispatcherOptions{Clock: g.clk}).Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	hook := op + "/webhooks/" + ep.ID
	g.call("GET", op+"/webhooks", owner, "", http.StatusOK, "webhook endpoints")
	g.call("GET", hook, owner, "", http.StatusOK, "a webhook endpoint")
	g.call("PATCH", hook, owner, `{"enabled":true}`, http.StatusOK, "enable the endpoint")
	g.call("POST", hook+"/rotate", owner, "", http.StatusOK, "rotate its secret")
	g.call("GET", hook+"/deliveries", owner, "", http.StatusOK, "its deliveries")
	g.call("POST", hook+"/deliveries/"+dlv.ID+"/redeliver", owner, "", http.StatusOK, "redeliver")
	g.call("DELETE", hook, owner, "", http.StatusOK, "delete the endpoint")
	// The console-orgs group's dispatcher, as the turns' queue hands it the redelivery's turn
	// on AWS: its endpoint is gone, so the delivery is dropped.
	redelivered, err := queue.Get(context.Background(), alpha, ep.ID, dlv.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, dispatcher := g.groups[routetable.GroupConsoleOrgs].api.Webhooks()
	if err := dispatcher.Turn(context.Background(), webhooks.Turn{Org: alpha, Endpoint: ep.ID, Delivery: dlv.ID, At: redelivered.NextAttemptAt}, false); err != nil {
		t.Fatal(err)
	}
	if d, _ := queue.Get(context.Background(), alpha, ep.ID, dlv.ID); d.State != webhooks.StateDropped {
		t.Fatalf("after its turn, the delivery is %s; want dropped", d.State)
	}

	// console-orgs' alert rules: made where deliveries do not run is refused too; one made as
	// the process of the embedded store makes it is read, changed and deleted.
	circle := `{"name":"A9","environment":"live","area":{"type":"Circle","lat":48.1,"lon":11.5,"radius_m":5000}}`
	g.call("POST", op+"/alert-rules", owner, circle, http.StatusServiceUnavailable, "make an alert rule where deliveries do not run")
	rule, err := alerts.NewRules(g.db, audit.New(g.db, audit.Options{Clock: g.clk}), g.clk).Create(context.Background(), alpha, alerts.Actor{},
		alerts.Draft{Name: ptr("A9"), Environment: ptr("live"), Area: &alerts.Area{Circle: &alerts.Circle{Center: geo.Point{Lat: 48.1, Lon: 11.5}, RadiusM: 5000}}})
	if err != nil {
		t.Fatal(err)
	}
	// The events group's webhook producer, as the table's stream hands it a change on AWS:
	// it reads the alert rules and makes the rule's delivery.
	alerting, _, err := endpoints.Create(context.Background(), alpha, webhooks.Actor{}, webhooks.EndpointDraft{
		URL: ptr("https://hooks.example/alerts"), Kinds: []string{webhooks.KindAlertCreated}})
	if err != nil {
		t.Fatal(err)
	}
	inside := apitest.Decode[event.EventPublic](t, g.call("POST", "/v1/events", alphaKey, `{"type":"accident","lat":48.1,"lon":11.52}`, http.StatusCreated, "an event in the rule"))
	evItem, err := g.db.Get(context.Background(), eventstore.EventKey(inside.EventID))
	if err != nil {
		t.Fatal(err)
	}
	producer, _ := g.groups[routetable.GroupEvents].api.Webhooks()
	if n, err := producer.Handle(context.Background(), store.Change{Seq: "1", Kind: store.ChangeInsert, Key: evItem.Key(), New: evItem, At: g.clk.Now()}); err != nil || n != 1 {
		t.Fatalf("the producer made %d deliveries, %v; want the rule's alert", n, err)
	}
	g.groups[routetable.GroupEvents].finish()
	endpoints.Delete(context.Background(), alpha, alerting.ID, webhooks.Actor{})
	g.call("GET", op+"/alert-rules", owner, "", http.StatusOK, "alert rules")
	g.call("GET", op+"/alert-rules/"+rule.ID, owner, "", http.StatusOK, "an alert rule")
	g.call("PATCH", op+"/alert-rules/"+rule.ID, owner, `{"min_confidence":0.7}`, http.StatusOK, "change the rule")
	g.call("DELETE", op+"/alert-rules/"+rule.ID, owner, "", http.StatusOK, "delete the rule")

	// console-orgs' panels, now that there is activity.
	for _, p := range []string{"/audit", "/usage", "/vitality", "/reputation"} {
		g.call("GET", op+p, owner, "", http.StatusOK, p)
	}
	// console-auth's export of a person's data, once there is some.
	g.call("GET", "/console/auth/me/export", owner, "", http.StatusOK, "export my data")

	// billing: plans, summary, checkout and portal, Stripe's webhook, the hourly overage job.
	g.call("GET", "/console/plans", "", "", http.StatusOK, "plans")
	g.call("GET", op+"/billing", owner, "", http.StatusOK, "billing summary")
	g.call("POST", op+"/billing/checkout", owner, `{"plan":"team"}`, http.StatusOK, "checkout")
	g.call("POST", op+"/billing/portal", owner, "", http.StatusOK, "portal")
	// The subscription starts (the event names the organisation), is reported on by the
	// overage job, and ends (the event names only the customer).
	g.webhook("customer.subscription.created", map[string]string{"org_id": alpha, "plan_id": "team"})
	billing := g.groups[routetable.GroupBilling]
	if err := billing.api.Billing().ReportOverage(context.Background()); err != nil {
		t.Fatalf("the overage job: %v", err)
	}
	billing.finish()
	g.clk.Advance(time.Minute)
	g.webhook("customer.subscription.deleted", nil)

	// docs/privacy.md §6: erin, an owner of Alpha who made a feed and an alert rule there,
	// erases her account. Her address is forgotten in Alpha's records, and her own
	// organisation, of which she is the only member, goes with its key and Stripe customer.
	erin, erinID := join("erin@example.com", "owner")
	g.call("POST", op+"/feeds", erin, apitest.JSON(map[string]string{"url": upstream.URL, "format": "cifs", "environment": "live"}),
		http.StatusCreated, "erin registers a feed")
	if _, err := alerts.NewRules(g.db, audit.New(g.db, audit.Options{Clock: g.clk}), g.clk).Create(context.Background(), alpha,
		alerts.Actor{UserID: erinID, Email: "erin@example.com"},
		alerts.Draft{Name: ptr("erin's"), Environment: ptr("live"), Area: &alerts.Area{Circle: &alerts.Circle{Center: geo.Point{Lat: 48.1, Lon: 11.5}, RadiusM: 5000}}}); err != nil {
		t.Fatal(err)
	}
	own := "/console/orgs/" + apitest.Decode[orgs.Organisation](t, g.call("POST", "/console/orgs", erin, `{"name":"Erin's"}`, http.StatusCreated, "erin's own organisation")).OrgID
	g.call("POST", own+"/keys", erin, `{"label":"e","environment":"sandbox"}`, http.StatusCreated, "erin's key")
	g.call("POST", own+"/members", erin, `{"email":"frank@example.com","role":"member"}`, http.StatusCreated, "erin invites frank")
	g.call("POST", own+"/billing/checkout", erin, `{"plan":"team"}`, http.StatusOK, "erin's checkout")
	g.call("DELETE", "/console/auth/me", erin, "", http.StatusOK, "erin erases her account")

	// Last, the session ends: TOTP off (in a new window of TOTP attempts), then logout.
	g.clk.Advance(16 * time.Minute)
	// Turning TOTP off ends every session of the account but the new one it answers.
	r = g.call("POST", "/console/auth/totp/disable", second, apitest.JSON(map[string]string{"code": g.totp(secret)}), http.StatusOK, "turn TOTP off")
	last := apitest.Decode[consoleauth.SessionOut](t, r).Token
	// docs/privacy.md §6: the owner deletes Alpha, and its Stripe customer with it.
	g.call("DELETE", op, last, "", http.StatusOK, "delete Alpha")
	g.call("POST", "/console/auth/logout", last, "", http.StatusOK, "log out")
}

// TestGroupsStayWithinTheirGrants (docs/security.md §6): each group, alone, calls on the table
// only what its grants allow, on the partition-key prefixes they name, and every grant is used
// by some route; it calls KMS, sends e-mail and reads the secrets its grants name, and no
// others.
func TestGroupsStayWithinTheirGrants(t *testing.T) {
	tour := newGrantsTour(t)
	tour.tourEveryRoute()
	for _, g := range routetable.All {
		for _, r := range g.Routes() {
			if tour.served[r.String()] == 0 {
				t.Errorf("the tour never reached %s (%s): its calls are not checked", r, g)
			}
		}
	}

	for _, g := range routetable.All {
		t.Run(string(g), func(t *testing.T) {
			grants := g.Grants()
			type grant struct {
				prefix string
				action routetable.ItemAction
			}
			used := map[grant]bool{}
			var outside []string
			for _, c := range tour.log.items[g] {
				if !grants.Allows(c.action, c.pk) {
					outside = append(outside, fmt.Sprintf("%s on %s", c.action, c.pk))
				}
				for _, ig := range grants.Items {
					for _, a := range ig.Actions {
						if a == c.action && strings.HasPrefix(c.pk, ig.Prefix) {
							used[grant{ig.Prefix, a}] = true
						}
					}
				}
			}
			slices.Sort(outside)
			for _, o := range slices.Compact(outside) {
				t.Errorf("%s calls %s, which its grants do not allow", g, o)
			}
			for _, ig := range grants.Items {
				for _, a := range ig.Actions {
					if !used[grant{ig.Prefix, a}] {
						t.Errorf("%s is granted %s on %s* but no route of it calls that", g, a, ig.Prefix)
					}
				}
			}

			var kms []routetable.KMSAction
			for a := range tour.log.kms[g] {
				kms = append(kms, a)
			}
			sort.Slice(kms, func(i, j int) bool { return kms[i] < kms[j] })
			want := slices.Clone(grants.KMS)
			sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
			if !slices.Equal(kms, want) {
				t.Errorf("%s calls KMS %v; its grants name %v", g, kms, want)
			}
			if sent := tour.log.mail[g] > 0; sent != grants.SendsMail {
				t.Errorf("%s sent e-mail: %v; its grants say %v", g, sent, grants.SendsMail)
			}
			if sent := tour.log.turns[g] > 0; sent != grants.SendsTurns {
				t.Errorf("%s sent webhook turns: %v; its grants say %v", g, sent, grants.SendsTurns)
			}
			// A group that lacks a secret it would use says so when it is built, naming it.
			logs := tour.groups[g].logs.String()
			for _, v := range grantsSecrets {
				if strings.Contains(logs, v) {
					t.Errorf("%s wants %s, which its grants do not name:\n%s", g, v, logs)
				}
			}
		})
	}
}

// grantsSecrets are the secret variables a group may be granted.
var grantsSecrets = []string{routetable.SecretEventIDKey, routetable.SecretAuthHashKey, routetable.SecretStripeKey, routetable.SecretStripeHook}

// TestGroupsNeedTheSecretsTheyAreGranted (docs/security.md §6): a group built without one of
// the secrets its grants name says, when it is built, what it cannot do without it. No secret
// is handed to a function for nothing.
func TestGroupsNeedTheSecretsTheyAreGranted(t *testing.T) {
	db, err := embedded.Open(filepath.Join(t.TempDir(), config.EmbeddedStoreFile), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, g := range routetable.All {
		secrets := g.Grants().Secrets
		for _, missing := range secrets {
			logs := &apitest.LogBuffer{}
			apptest.New(t, app.Deps{Config: grantsConfig(slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return s == missing }), "http://stripe.invalid"),
				Table: db, Logger: slog.New(slog.NewJSONHandler(logs, nil)), Mailer: consoletest.DiscardMail{}}, g)
			if !strings.Contains(logs.String(), missing) {
				t.Errorf("%s built without %s says nothing of it; want it named (or the grant dropped):\n%s", g, missing, logs)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }
