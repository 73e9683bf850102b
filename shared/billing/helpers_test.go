package billing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// StripeMockEnv names the variable holding stripe-mock's address; scripts/test.sh starts
// stripe-mock (scripts/stripe-mock.sh) and sets it.
const StripeMockEnv = "ROADEVENTS_STRIPE_MOCK"

// The test deployment: its console address, webhook secret and Stripe prices.
const (
	consoleURL    = "http://console.test/app/"
	webhookSecret = "whsec_test_secret"
	priceTeam     = "price_team_test"
	priceBusiness = "price_business_test"
)

// Session tokens of the test callers: an owner and a member of orgA, and an outsider.
const (
	tokenOwner    = "ses_owner"
	tokenMember   = "ses_member"
	tokenOutsider = "ses_outsider"
	orgA          = "org_a"
)

var callers = consoletest.Sessions{
	tokenOwner:    {User: consoleauth.User{ID: "usr_owner", Email: "owner@example.com"}},
	tokenMember:   {User: consoleauth.User{ID: "usr_member", Email: "member@example.com"}},
	tokenOutsider: {User: consoleauth.User{ID: "usr_outsider", Email: "out@example.com"}},
}

// fakeOrgs stands in for orgs.Service where the test is about billing's own rules: orgA
// with an owner and a member, on the free plan until SetPlan moves it.
type fakeOrgs struct {
	mu    sync.Mutex
	plan  map[string]string
	roles map[string]map[string]string
	sets  []string // every SetPlan, "org=plan"
}

func newFakeOrgs() *fakeOrgs {
	return &fakeOrgs{
		plan:  map[string]string{orgA: plans.Free},
		roles: map[string]map[string]string{orgA: {"usr_owner": "owner", "usr_member": "member"}},
	}
}

func (f *fakeOrgs) Access(_ context.Context, orgID, userID string) (string, string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	role, ok := f.roles[orgID][userID]
	return role, f.plan[orgID], ok, nil
}

func (f *fakeOrgs) SetPlan(_ context.Context, orgID, planID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.plan[orgID]; !ok {
		return fmt.Errorf("set plan of %s: %w", orgID, orgs.ErrNotFound)
	}
	f.plan[orgID] = planID
	f.sets = append(f.sets, orgID+"="+planID)
	return nil
}

func (f *fakeOrgs) planOf(org string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.plan[org]
}

// auditLog keeps what billing records.
type auditLog struct {
	mu      sync.Mutex
	entries []auditEntry
}

type auditEntry struct {
	org, action, actor, target string
	detail                     map[string]any
}

func (a *auditLog) Record(_ context.Context, orgID, action, actorUserID, _ string, target string, detail map[string]any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, auditEntry{orgID, action, actorUserID, target, detail})
	return nil
}

func (a *auditLog) actions(action string) []auditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []auditEntry
	for _, e := range a.entries {
		if e.action == action {
			out = append(out, e)
		}
	}
	return out
}

// refusingProvider is a Provider for tests whose requests must never reach Stripe: it counts
// the calls it refuses.
type refusingProvider struct {
	mu    sync.Mutex
	calls int
}

func (p *refusingProvider) refuse() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	return fmt.Errorf("refusingProvider: no call expected")
}

func (p *refusingProvider) CreateCustomer(context.Context, string, string, string) (string, error) {
	return "", p.refuse()
}

func (p *refusingProvider) CreateCheckout(context.Context, billing.CheckoutRequest) (string, error) {
	return "", p.refuse()
}

func (p *refusingProvider) CreatePortal(context.Context, string, string) (string, error) {
	return "", p.refuse()
}

func (p *refusingProvider) DeleteCustomer(context.Context, string) error { return p.refuse() }

// stripeCall is one request to stripe-mock and its answer.
type stripeCall struct {
	Method, Path string
	Header       http.Header
	Form         url.Values
	Response     map[string]any
}

// recorder is an http.RoundTripper that keeps every Stripe call, to assert what billing sent.
type recorder struct {
	mu    sync.Mutex
	calls []stripeCall
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var form url.Values
	if req.Body != nil {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, _ = url.ParseQuery(string(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var decoded map[string]any
	_ = json.Unmarshal(body, &decoded)
	r.mu.Lock()
	r.calls = append(r.calls, stripeCall{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Form: form, Response: decoded})
	r.mu.Unlock()
	return resp, nil
}

// to returns the calls to path, oldest first.
func (r *recorder) to(path string) []stripeCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []stripeCall
	for _, c := range r.calls {
		if c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// stripeMock returns a Provider on stripe-mock whose calls rec records, or skips t.
func stripeMock(t *testing.T, rec *recorder) billing.Provider {
	t.Helper()
	base := os.Getenv(StripeMockEnv)
	if base == "" {
		t.Skip("stripe-mock not running: run ./scripts/test.sh, which starts it (or scripts/stripe-mock.sh start and set " + StripeMockEnv + ")")
	}
	return billing.NewStripe("sk_test_123", base, &http.Client{Transport: rec, Timeout: 30 * time.Second})
}

// testPlans is the catalogue of the tests: team and business sold at their test prices.
func testPlans() *plans.Catalogue {
	b := config.DefaultBilling
	b.Team.PriceID, b.Business.PriceID = priceTeam, priceBusiness
	b.Team.LiveKeyCap, b.Team.SeatCap = 3, 10
	return plans.New(b)
}

// rig is the billing routes on one table, behind the console's session middleware.
type rig struct {
	tab   tables.Table
	svc   *billing.Service
	orgs  billing.Orgs
	fake  *fakeOrgs // orgs, when it is the fake
	audit *auditLog
	meter *metering.Meter
	srv   *httptest.Server
}

type rigOptions struct {
	provider billing.Provider // nil: billing unconfigured
	orgs     billing.Orgs     // nil: a fakeOrgs
	audit    billing.Auditor  // nil: the rig's auditLog
	secret   string           // webhook secret; webhookSecret when empty, "-" for none
	plans    *plans.Catalogue // nil: testPlans()
}

func newRig(t *testing.T, tab tables.Table, o rigOptions) *rig {
	t.Helper()
	r := &rig{tab: tab, audit: &auditLog{}, orgs: o.orgs}
	if r.orgs == nil {
		r.fake = newFakeOrgs()
		r.orgs = r.fake
	}
	secret := o.secret
	switch secret {
	case "":
		secret = webhookSecret
	case "-":
		secret = ""
	}
	r.meter = metering.New(tab, metering.Options{Clock: tab.Clock, FlushInterval: -1})
	var auditor billing.Auditor = r.audit
	if o.audit != nil {
		auditor = o.audit
	}
	catalogue := o.plans
	if catalogue == nil {
		catalogue = testPlans()
	}
	svc, err := billing.New(tab, billing.Options{
		Orgs: r.orgs, Audit: auditor, Meter: r.meter, Plans: catalogue,
		Provider: o.provider, WebhookSecret: secret, ConsoleURL: consoleURL,
		Clock: tab.Clock, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	api := httpapi.New(httpapi.Config{
		Logger:     slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Clock:      tab.Clock,
		Middleware: []httpapi.RouteMiddleware{consoleauth.Middleware(callers)},
	})
	api.Handle(billing.Routes(svc)...)
	r.srv = httptest.NewServer(api.Handler())
	t.Cleanup(r.srv.Close)
	return r
}

// client sends requests to the rig's server, reporting to t.
func (r *rig) client(t testing.TB) apitest.Client { return apitest.Client{T: t, URL: r.srv.URL} }

// do sends a request with token (none when empty) and a JSON body (none when empty), and
// returns the status and the body.
func (r *rig) do(t *testing.T, method, path, token, body string) (int, []byte) {
	t.Helper()
	res := r.client(t).Call(method, path, token, body)
	return res.Status, res.Body
}

// getJSON sends GET path as token, wants 200 and decodes the body into out.
func (r *rig) getJSON(t *testing.T, path, token string, out any) {
	t.Helper()
	c := r.client(t)
	res := c.Call(http.MethodGet, path, token, "")
	c.Expect(res, http.StatusOK, nil, "GET "+path)
	if err := json.Unmarshal(res.Body, out); err != nil {
		t.Fatalf("GET %s: decode %s: %v", path, res.Body, err)
	}
}

// event is a Stripe event as Stripe posts it, with the API version stripe-go expects.
func event(id, typ string, created time.Time, object map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": created.Unix(),
		"api_version": "2023-10-16", "livemode": false,
		"data": map[string]any{"object": object},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// subscription is a customer.subscription.* data.object.
func subscription(id, customer, status, price string, metadata map[string]string) map[string]any {
	return map[string]any{
		"id": id, "object": "subscription", "customer": customer, "status": status,
		"metadata": metadata,
		"items": map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "si_" + id, "price": map[string]any{"id": price, "object": "price"}},
		}},
	}
}

// post delivers payload to the webhook signed with secret at ts (stripe-go's own test
// helper, webhook.GenerateTestSignedPayload), and returns the status.
func (r *rig) post(t *testing.T, payload []byte, secret string, ts time.Time) int {
	t.Helper()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: ts})
	return r.postRaw(t, signed.Payload, signed.Header)
}

// deliver is post with the right secret, now (by the wall clock, which the signature's
// tolerance is checked against), wanting 200.
func (r *rig) deliver(t *testing.T, payload []byte) {
	t.Helper()
	if got := r.post(t, payload, webhookSecret, time.Now()); got != http.StatusOK {
		t.Fatalf("webhook %s = %d; want 200", payload, got)
	}
}

func (r *rig) postRaw(t *testing.T, payload []byte, signature string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/console/billing/webhook", bytes.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set("Stripe-Signature", signature)
	}
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		t.Errorf("webhook: %v", err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// state reads org's billing state.
func (r *rig) state(t *testing.T, org string) billing.State {
	t.Helper()
	st, err := r.svc.State(context.Background(), org)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// signedHeader is the Stripe-Signature of payload, by webhook.GenerateTestSignedPayload.
func signedHeader(payload []byte, secret string, ts time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: ts}).Header
}

// decode unmarshals body into out or fails t.
func decode(t *testing.T, body []byte, out any) {
	t.Helper()
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

func (p *refusingProvider) ReportUsage(context.Context, billing.UsageRecord) error {
	return p.refuse()
}
