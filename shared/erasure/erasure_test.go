package erasure_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/erasure"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// world is the whole service on one table, driven over HTTP.
type world struct {
	apitest.Client
	tab   tables.Table
	inbox *consoletest.Inbox
}

func newWorld(t testing.TB, tab tables.Table, adjust ...func(*config.Config)) world {
	cfg := apptest.Config()
	cfg.ConsoleURL = "http://console.test/app/"
	cfg.Webhooks.AllowPrivate = true
	for _, f := range adjust {
		f(&cfg)
	}
	inbox := &consoletest.Inbox{}
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox})
	return world{Client: apitest.Client{T: t, Handler: api.Handler()}, tab: tab, inbox: inbox}
}

// must calls and fails the test unless the answer has status want.
func (w world) must(method, path, token, body string, want int) apitest.Response {
	w.T.Helper()
	r := w.Call(method, path, token, body)
	if r.Status != want {
		w.T.Fatalf("%s %s: %s; want %d", method, path, r, want)
	}
	return r
}

// code is a fresh TOTP code of secret: the clock moves to the next time step first, since a
// code is accepted once.
func (w world) code(secret string) string {
	w.tab.Clock.Advance(30 * time.Second)
	return apitest.JSON(map[string]string{"totp_code": consoletest.TOTPCode(w.T, secret, w.tab.Clock.Now())})
}

func (w world) orgNames(token string) []string {
	var names []string
	for _, o := range apitest.Decode[[]orgs.Organisation](w.T, w.must("GET", "/console/orgs", token, "", http.StatusOK)) {
		names = append(names, o.Name)
	}
	return names
}

// docs/privacy.md §6, DELETE /console/orgs/{org_id}: an owner deletes an organisation with a
// TOTP step-up; a member is refused (403), a non-member finds nothing (404). After it, the
// organisation is gone for every member, its keys are refused, its invitations lead nowhere,
// its feeds, webhooks and alert rules are gone, no item holds its name (its webhook deliveries,
// which name no one, are left to their expiry), and its events stay readable on the network.
func TestDeleteOrganisation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		w := newWorld(t, tab)
		ada := consoletest.SignIn(w.Client, w.inbox, "ada@example.com").Token
		secret, _ := consoletest.EnableTOTP(w.Client, ada, tab.Clock.Now())
		alpha := consoletest.CreateOrg(w.Client, ada, "Alpha Fleet")
		op := "/console/orgs/" + alpha
		bob := consoletest.Join(w.Client, w.inbox, ada, alpha, "bob@example.com", "member")
		w.must("POST", op+"/members", ada, `{"email":"carol@example.com","role":"member"}`, http.StatusCreated)
		invitation := w.inbox.To("carol@example.com")[0].Text
		key := apitest.Decode[orgs.IssuedKey](t, w.must("POST", op+"/keys", ada,
			strings.Replace(w.code(secret), "{", `{"label":"fleet","environment":"live",`, 1), http.StatusCreated)).Key
		ev := apitest.Decode[event.EventPublic](t, w.must("POST", "/v1/events", key, `{"type":"accident","lat":48.1,"lon":11.5}`, http.StatusCreated))
		hook := apitest.Decode[struct {
			EndpointID string `json:"endpoint_id"`
		}](t, w.must("POST", op+"/webhooks", ada, `{"url":"http://127.0.0.1:9/in","kinds":["event.ended"]}`, http.StatusCreated)).EndpointID
		// A delivery, which expires on its own (30 days) and is left to it.
		delivery := webhooks.Delivery{ID: webhooks.DeliveryID(tab.Clock.Now(), "test", hook), Org: alpha, Endpoint: hook, Kind: webhooks.KindEnded, Body: []byte(`{}`)}
		if err := webhooks.NewQueue(tab.Table, tab.Clock).Enqueue(t.Context(), delivery); err != nil {
			t.Fatal(err)
		}
		w.must("POST", op+"/alert-rules", ada, `{"name":"A9","environment":"live","area":{"type":"Circle","lat":48.1,"lon":11.5,"radius_m":5000}}`, http.StatusCreated)
		w.must("POST", op+"/feeds", ada, `{"url":"http://127.0.0.1:9/feed","format":"cifs","environment":"live"}`, http.StatusCreated)
		beta := consoletest.CreateOrg(w.Client, bob, "Beta")
		betaKey := apitest.Decode[orgs.IssuedKey](t, w.must("POST", "/console/orgs/"+beta+"/keys", bob, `{"label":"b","environment":"live"}`, http.StatusCreated)).Key

		w.must("DELETE", op, bob, "", http.StatusForbidden) // a member
		carol := consoletest.SignIn(w.Client, w.inbox, "carol@example.com").Token
		w.must("DELETE", op, carol, "", http.StatusNotFound) // invited, not a member
		if r := w.must("DELETE", op, ada, "", http.StatusForbidden); !strings.Contains(string(r.Body), erasure.DetailTOTPRequired) {
			t.Errorf("without a TOTP code: %s; want the step-up's detail", r)
		}
		w.must("GET", op, ada, "", http.StatusOK) // a refusal changes nothing
		w.must("DELETE", op, ada, w.code(secret), http.StatusOK)

		for _, tok := range []string{ada, bob} {
			w.must("GET", op, tok, "", http.StatusNotFound)
			w.must("GET", op+"/audit", tok, "", http.StatusNotFound)
			if names := w.orgNames(tok); slices.Contains(names, "Alpha Fleet") {
				t.Errorf("organisations after the deletion: %v; want Alpha Fleet gone", names)
			}
		}
		w.must("DELETE", op, ada, w.code(secret), http.StatusNotFound) // gone, not half-deleted
		w.must("GET", "/v1/events?lat=48.1&lon=11.5", key, "", http.StatusUnauthorized)
		w.must("GET", "/v1/events/"+ev.EventID, betaKey, "", http.StatusOK) // network data stays
		token := invitation[strings.Index(invitation, "token=")+len("token="):]
		token = strings.Fields(token)[0]
		w.must("POST", "/console/invitations/accept", carol, apitest.JSON(map[string]string{"token": token}), http.StatusNotFound)

		dump := tab.Everything(t)
		if strings.Contains(dump, "Alpha Fleet") {
			t.Errorf("after the deletion the table holds the organisation's name")
		}
		var items []map[string]any
		if err := json.Unmarshal([]byte(dump), &items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			pk, sk := it["pk"].(string), it["sk"].(string)
			if strings.HasPrefix(sk, webhooks.DeliveryPrefix) && it["ttl"] != nil || strings.HasPrefix(pk, "webhookdue#") {
				continue // left to its expiry, and its turn, which the dispatcher drops
			}
			if pk == "org#"+alpha || it["org_id"] == alpha && !strings.HasPrefix(pk, "apikey#") && !strings.HasPrefix(pk, "useremail#") ||
				strings.HasPrefix(pk, "userorg#") && sk == "org#"+alpha || strings.Contains(sk, "#"+alpha+"#") || strings.HasSuffix(sk, "#"+alpha) && !strings.HasPrefix(pk, "useremail#") {
				t.Errorf("after the deletion the table holds %s %s", pk, sk)
			}
		}
	})
}

// docs/privacy.md §6: a deletion that stopped after the organisation was marked (a crash, a
// timeout) leaves it gone for every route but its deletion, and from every list; sending the
// deletion again finishes it.
func TestDeletionStoppedHalfWayIsFinishedBySendingItAgain(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		w := newWorld(t, tab)
		ada := consoletest.SignIn(w.Client, w.inbox, "ada@example.com").Token
		org := consoletest.CreateOrg(w.Client, ada, "Halfway")
		op := "/console/orgs/" + org
		w.must("POST", op+"/members", ada, `{"email":"bob@example.com","role":"member"}`, http.StatusCreated)
		link := w.inbox.To("bob@example.com")[0].Text
		// The mark, as the deletion writes it before anything else goes.
		if _, err := tab.Table.Update(t.Context(), store.Key{PK: "org#" + org, SK: "org"},
			store.Update{Set: map[string]any{"deleting_at": store.FormatTime(tab.Clock.Now())}}, store.IfExists()); err != nil {
			t.Fatal(err)
		}
		w.must("GET", op, ada, "", http.StatusNotFound)
		w.must("POST", op+"/keys", ada, `{"label":"late","environment":"sandbox"}`, http.StatusNotFound)
		if names := w.orgNames(ada); len(names) != 0 {
			t.Errorf("organisations while being deleted: %v; want none", names)
		}
		bob := consoletest.SignIn(w.Client, w.inbox, "bob@example.com").Token
		w.must("POST", "/console/invitations/accept", bob,
			apitest.JSON(map[string]string{"token": strings.Fields(link[strings.Index(link, "token=")+6:])[0]}), http.StatusNotFound)

		w.must("DELETE", op, ada, "", http.StatusOK)
		if dump := tab.Everything(t); strings.Contains(dump, "Halfway") || strings.Contains(dump, `"pk":"org#`+org+`"`) {
			t.Errorf("after the deletion sent again the table still holds the organisation")
		}
	})
}

// docs/privacy.md §6, DELETE /console/auth/me: a person with TOTP erases their account. It is
// refused while they are the last owner of an organisation with other members (409, naming
// it, before any code is asked), and without a valid code (403), changing nothing. Then every session ends; they leave their
// organisations and the one they alone are in is deleted; an invitation addressed to them
// goes; the records of the organisations they were in (keys, webhooks, rules, the audit log,
// one they left long before included) keep what was done but not their address; and no item
// holds their address or name. The address can sign up afresh, as a new account.
func TestEraseAccount(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		w := newWorld(t, tab)
		const addr, name = "bob@example.com", "Robert Tables"
		ada := consoletest.SignIn(w.Client, w.inbox, "ada@example.com").Token
		alpha := consoletest.CreateOrg(w.Client, ada, "Alpha")
		bob := consoletest.Join(w.Client, w.inbox, ada, alpha, addr, "member")
		me := apitest.Decode[consoleauth.MePublic](t, w.must("PATCH", "/console/auth/me", bob, apitest.JSON(map[string]string{"display_name": name}), http.StatusOK))
		secret, _ := consoletest.EnableTOTP(w.Client, bob, tab.Clock.Now())
		w.must("PATCH", "/console/orgs/"+alpha+"/members/"+me.UserID, ada, `{"role":"owner"}`, http.StatusOK)
		op := "/console/orgs/" + alpha
		w.must("POST", op+"/keys", bob, strings.Replace(w.code(secret), "{", `{"label":"bob's","environment":"sandbox",`, 1), http.StatusCreated)
		w.must("POST", op+"/webhooks", bob, `{"url":"http://127.0.0.1:9/in","kinds":["event.ended"]}`, http.StatusCreated)
		w.must("POST", op+"/alert-rules", bob, `{"name":"A9","environment":"live","area":{"type":"Circle","lat":48.1,"lon":11.5,"radius_m":5000}}`, http.StatusCreated)
		w.must("POST", op+"/feeds", bob, `{"url":"http://127.0.0.1:9/feed","format":"cifs","environment":"live"}`, http.StatusCreated)
		w.must("POST", op+"/members", bob, `{"email":"dan@example.com","role":"member"}`, http.StatusCreated)
		delta := consoletest.CreateOrg(w.Client, ada, "Delta")
		w.must("POST", "/console/orgs/"+delta+"/members", ada, apitest.JSON(map[string]string{"email": addr, "role": "member"}), http.StatusCreated)
		msgs := w.inbox.To(addr)
		link := msgs[len(msgs)-1].Text
		w.must("POST", "/console/invitations/accept", bob, apitest.JSON(map[string]string{"token": strings.Fields(link[strings.Index(link, "token=")+6:])[0]}), http.StatusOK)
		w.must("POST", "/console/orgs/"+delta+"/leave", bob, "", http.StatusOK)
		epsilon := consoletest.CreateOrg(w.Client, ada, "Epsilon")
		w.must("POST", "/console/orgs/"+epsilon+"/members", ada, apitest.JSON(map[string]string{"email": addr, "role": "member"}), http.StatusCreated)
		gamma := consoletest.CreateOrg(w.Client, bob, "Gamma")
		w.must("POST", "/console/orgs/"+gamma+"/members", bob, `{"email":"ada@example.com","role":"member"}`, http.StatusCreated)
		msgs = w.inbox.To("ada@example.com")
		link = msgs[len(msgs)-1].Text
		w.must("POST", "/console/invitations/accept", ada, apitest.JSON(map[string]string{"token": strings.Fields(link[strings.Index(link, "token=")+6:])[0]}), http.StatusOK)

		r := w.must("DELETE", "/console/auth/me", bob, "", http.StatusConflict) // before the step-up: no attempt spent
		if body := string(r.Body); !strings.Contains(body, "Gamma") || !strings.Contains(body, gamma) {
			t.Errorf("the last owner's refusal: %s; want it to name Gamma and its id", body)
		}
		w.must("GET", "/console/auth/me", bob, "", http.StatusOK) // nothing changed
		w.must("POST", "/console/orgs/"+gamma+"/leave", ada, "", http.StatusOK)
		w.must("DELETE", "/console/auth/me", bob, "", http.StatusForbidden)
		w.must("DELETE", "/console/auth/me", bob, `{"totp_code":"000000"}`, http.StatusForbidden)
		w.must("GET", "/console/auth/me", bob, "", http.StatusOK)
		w.must("DELETE", "/console/auth/me", bob, w.code(secret), http.StatusOK)

		w.must("GET", "/console/auth/me", bob, "", http.StatusUnauthorized)
		if names := w.orgNames(ada); !slices.Equal(names, []string{"Alpha", "Delta", "Epsilon"}) {
			t.Errorf("ada's organisations: %v; want hers, untouched", names)
		}
		members := apitest.Decode[orgs.MembersList](t, w.must("GET", op+"/members", ada, "", http.StatusOK))
		if len(members.Members) != 1 || len(members.Invitations) != 1 || members.Invitations[0].InvitedByEmail != nil {
			t.Errorf("Alpha's members %+v; want ada alone, and dan's invitation without bob's address", members)
		}
		if inv := apitest.Decode[orgs.MembersList](t, w.must("GET", "/console/orgs/"+epsilon+"/members", ada, "", http.StatusOK)).Invitations; len(inv) != 0 {
			t.Errorf("Epsilon's invitations %+v; want the one addressed to bob gone", inv)
		}
		keys := apitest.Decode[[]orgs.ApiKeyPublic](t, w.must("GET", op+"/keys", ada, "", http.StatusOK))
		if len(keys) != 1 || keys[0].CreatedByEmail != nil {
			t.Errorf("Alpha's keys %+v; want bob's key, without his address", keys)
		}
		var byBob int
		for _, e := range apitest.Decode[[]audit.Entry](t, w.must("GET", op+"/audit?limit=500", ada, "", http.StatusOK)) {
			if e.ActorUserID != nil && *e.ActorUserID == me.UserID {
				byBob++
				if e.ActorEmail != nil {
					t.Errorf("bob's act %s still names %s", e.Action, *e.ActorEmail)
				}
			}
		}
		if byBob < 5 {
			t.Errorf("%d audit entries by bob in Alpha; want his acts kept", byBob)
		}

		dump := strings.ToLower(tab.Everything(t))
		for _, v := range []string{addr, strings.ToLower(name), `"pk":"user#` + strings.ToLower(me.UserID) + `"`, `"pk":"org#` + gamma + `"`} {
			if strings.Contains(dump, v) {
				t.Errorf("after the erasure the table holds %q", v)
			}
		}

		again := consoletest.SignIn(w.Client, w.inbox, addr)
		if again.User.UserID == me.UserID || again.User.TOTPEnabled || len(w.orgNames(again.Token)) != 0 {
			t.Errorf("signing up again: %+v; want a new account without TOTP or organisations", again.User)
		}
	})
}

// fakeStripe answers a customer, a checkout session and a customer's deletion, failing the
// deletion while down is set.
type fakeStripe struct {
	mu      sync.Mutex
	down    bool
	deleted []string
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodDelete && f.down:
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"type":"api_error","message":"down"}}`)
	case r.Method == http.MethodDelete:
		f.deleted = append(f.deleted, r.URL.Path)
		io.WriteString(w, `{"id":"cus_erasure","object":"customer","deleted":true}`)
	default:
		io.WriteString(w, `{"id":"cus_erasure","object":"customer","url":"https://stripe.test/session"}`)
	}
}

// docs/privacy.md §6: deleting an organisation with billing deletes its Stripe customer
// first, which cancels its subscription; when Stripe fails, the deletion is refused with 503
// and nothing of the organisation changes.
func TestDeleteOrganisationClosesItsBilling(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		stripe := &fakeStripe{down: true}
		srv := httptest.NewServer(stripe)
		t.Cleanup(srv.Close)
		w := newWorld(t, tab, func(cfg *config.Config) {
			cfg.Billing.StripeSecretKey, cfg.Billing.StripeAPIBase = "sk_test_erasure", srv.URL
			cfg.Billing.Team.PriceID = "price_team"
		})
		ada := consoletest.SignIn(w.Client, w.inbox, "ada@example.com").Token
		org := consoletest.CreateOrg(w.Client, ada, "Billed")
		w.must("POST", "/console/orgs/"+org+"/billing/checkout", ada, `{"plan":"team"}`, http.StatusOK)

		r := w.must("DELETE", "/console/orgs/"+org, ada, "", http.StatusServiceUnavailable)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("the 503 has no Retry-After")
		}
		w.must("GET", "/console/orgs/"+org+"/members", ada, "", http.StatusOK) // nothing changed

		stripe.mu.Lock()
		stripe.down = false
		stripe.mu.Unlock()
		w.must("DELETE", "/console/orgs/"+org, ada, "", http.StatusOK)
		if !slices.Equal(stripe.deleted, []string{"/v1/customers/cus_erasure"}) {
			t.Errorf("Stripe deletions %v; want the organisation's customer", stripe.deleted)
		}
		if dump := tab.Everything(t); strings.Contains(dump, "cus_erasure") || strings.Contains(dump, "Billed") {
			t.Errorf("after the deletion the table still leads to the customer or names the organisation")
		}
	})
}

// BenchmarkDeleteOrganisation measures DELETE /console/orgs/{org_id} of an organisation whose
// audit log holds 2 000 entries (about a year of a busy organisation's console changes) and
// which has 2 000 webhook deliveries, left to their expiry, on each store; the figures are in
// docs/performance.md §16.
func BenchmarkDeleteOrganisation(b *testing.B) {
	for _, open := range []func(testing.TB) tables.Table{tables.Embedded, tables.DynamoDB} {
		tab := open(b)
		b.Run(tab.Adapter, func(b *testing.B) {
			w := newWorld(b, tab)
			ada := consoletest.SignIn(w.Client, w.inbox, "ada@example.com").Token
			log := audit.New(tab.Table, audit.Options{Clock: tab.Clock})
			queue := webhooks.NewQueue(tab.Table, tab.Clock)
			var orgs []string
			for range b.N {
				org := consoletest.CreateOrg(w.Client, ada, "Bench")
				for i := range 2000 {
					if err := log.Record(b.Context(), org, "org.updated", "usr_x", "x@example.com", org, map[string]any{"n": i}); err != nil {
						b.Fatal(err)
					}
					d := webhooks.Delivery{ID: webhooks.DeliveryID(tab.Clock.Now(), strconv.Itoa(i), "wh_x"), Org: org, Endpoint: "wh_x", Kind: webhooks.KindEnded, Body: []byte(`{}`)}
					if err := queue.Enqueue(b.Context(), d); err != nil {
						b.Fatal(err)
					}
				}
				orgs = append(orgs, org)
				tab.Clock.Advance(3 * time.Hour) // at most 8 a day, within the cap of 10
			}
			b.ResetTimer()
			for _, org := range orgs {
				w.must("DELETE", "/console/orgs/"+org, ada, "", http.StatusOK)
			}
		})
	}
}
