package consolewebhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/consolewebhooks"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/webhooks"
)

type rig struct {
	apitest.Client
	api   *apptest.API
	tab   tables.Table
	inbox *consoletest.Inbox
}

func newRig(t *testing.T, tab tables.Table, store config.Store) *rig {
	t.Helper()
	cfg := apptest.Config()
	cfg.Store = store
	cfg.ConsoleURL = "http://console.test/app/"
	cfg.Webhooks.AllowPrivate = true // the receiver is on loopback, over http
	inbox := &consoletest.Inbox{}
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
		Keys:  apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		Meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
	}, routetable.GroupConsoleAuth, routetable.GroupConsoleOrgs, routetable.GroupEvents)
	return &rig{Client: apitest.Client{T: t, Handler: api.Handler()}, api: api, tab: tab, inbox: inbox}
}

func (r *rig) owner(addr, name string) (string, string) {
	r.T.Helper()
	token := consoletest.SignIn(r.Client, r.inbox, addr).Token
	return token, consoletest.CreateOrg(r.Client, token, name)
}

// docs/webhooks.md, docs/api.md §4.3: an owner registers an endpoint and sees its secret once;
// a confirmation of one of the organisation's events reaches the receiver, signed with that
// secret; every member reads the endpoint and the delivery's attempts; an owner redelivers.
func TestWebhookDeliveredThroughTheConsole(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, config.StoreEmbedded)
		var mu sync.Mutex
		var got [][2]string // body, signature
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			b, _ := io.ReadAll(req.Body)
			mu.Lock()
			got = append(got, [2]string{string(b), req.Header.Get(webhooks.SignatureHeader)})
			mu.Unlock()
		}))
		defer recv.Close()

		ada, alpha := r.owner("ada@example.com", "Alpha")
		bob := consoletest.Join(r.Client, r.inbox, ada, alpha, "bob@example.com", "member")
		base := "/console/orgs/" + alpha + "/webhooks"
		res := r.Call("POST", base, ada, apitest.JSON(map[string]any{"url": recv.URL + "/in?token=s3cr3t-query", "kinds": []string{"event.confirmed"}}))
		r.Expect(res, http.StatusCreated, consolewebhooks.IssuedEndpointSchema, "register an endpoint")
		issued := apitest.Decode[consolewebhooks.IssuedEndpoint](t, res)
		if !strings.HasPrefix(issued.Secret, webhooks.SecretPrefix) {
			t.Fatalf("secret %q; want whsec_...", issued.Secret)
		}
		for _, path := range []string{base, base + "/" + issued.Endpoint.EndpointID, "/console/orgs/" + alpha + "/audit"} {
			if body := string(r.Call("GET", path, bob, "").Body); strings.Contains(body, issued.Secret) || strings.Contains(body, "s3cr3t-query") && strings.Contains(path, "audit") {
				t.Errorf("GET %s shows the secret or, in the audit log, the URL's query: %s", path, body)
			}
		}

		// A confirmation by another organisation's reporter, made into a delivery and sent.
		key := apitest.Decode[orgs.IssuedKey](t, r.Call("POST", "/console/orgs/"+alpha+"/keys", ada, `{"label":"app","environment":"live"}`)).Key
		ev := apitest.Decode[event.EventPublic](t, r.Call("POST", "/v1/events", key, `{"type":"accident","lat":48.1,"lon":11.5}`))
		_, beta := r.owner("cat@example.com", "Beta")
		catToken := consoletest.SignIn(r.Client, r.inbox, "cat@example.com").Token
		betaKey := apitest.Decode[orgs.IssuedKey](t, r.Call("POST", "/console/orgs/"+beta+"/keys", catToken, `{"label":"app","environment":"live"}`)).Key
		producer, dispatcher := r.api.Webhooks()
		cur, err := tab.Feed.Follow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer cur.Close()
		r.Expect(r.Call("POST", "/v1/events/"+ev.EventID+"/signals", betaKey, `{"action":"confirm","reporter_token":"car-7"}`), http.StatusOK, nil, "confirm")
		apitest.Eventually(t, "the confirmation's delivery", func() bool {
			ch, err := cur.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n, err := producer.Handle(context.Background(), ch)
			return err == nil && n == 1
		})
		if _, err := dispatcher.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		sent := append([][2]string(nil), got...)
		mu.Unlock()
		if len(sent) != 1 || !strings.Contains(sent[0][0], `"kind":"event.confirmed"`) || !strings.Contains(sent[0][0], ev.EventID) {
			t.Fatalf("the receiver got %v; want the confirmation of %s", sent, ev.EventID)
		}
		if err := webhooks.Verify(sent[0][1], []byte(sent[0][0]), issued.Secret, tab.Clock.Now(), webhooks.DefaultTolerance); err != nil {
			t.Errorf("the delivery does not verify with the secret shown at registration: %v", err)
		}

		hook := base + "/" + issued.Endpoint.EndpointID
		res = r.Call("GET", hook+"/deliveries", bob, "")
		r.Expect(res, http.StatusOK, nil, "a member reads the deliveries")
		list := apitest.Decode[[]consolewebhooks.DeliveryPublic](t, res)
		if len(list) != 1 || list[0].State != webhooks.StateDelivered || len(list[0].Attempts) != 1 || list[0].Attempts[0].Status != 200 {
			t.Fatalf("deliveries %+v; want the one, delivered at its first attempt", list)
		}
		r.ExpectDetail(r.Call("POST", hook+"/deliveries/"+list[0].DeliveryID+"/redeliver", bob, ""), http.StatusForbidden, "a member redelivers")
		other := apitest.Decode[consolewebhooks.IssuedEndpoint](t, r.Call("POST", base, ada, `{"url":"https://hooks.example/other","kinds":["event.ended"]}`))
		r.ExpectDetail(r.Call("POST", base+"/"+other.Endpoint.EndpointID+"/deliveries/"+list[0].DeliveryID+"/redeliver", ada, ""),
			http.StatusNotFound, "a delivery redelivered under another endpoint's path")
		res = r.Call("POST", hook+"/deliveries/"+list[0].DeliveryID+"/redeliver", ada, "")
		r.Expect(res, http.StatusOK, consolewebhooks.DeliveryPublicSchema, "redeliver")
		if d := apitest.Decode[consolewebhooks.DeliveryPublic](t, res); d.State != webhooks.StatePending || d.NextAttemptAt == nil {
			t.Errorf("after redeliver: %+v; want pending, due", d)
		}
		dispatcher.Pass(context.Background())
		mu.Lock()
		if len(got) != 2 || got[1][0] != got[0][0] {
			t.Errorf("the redelivery sent %d bodies; want the same body again", len(got))
		}
		mu.Unlock()

		// Rotation: a new secret, once; both sign for a day.
		res = r.Call("POST", hook+"/rotate", ada, "")
		r.Expect(res, http.StatusOK, consolewebhooks.IssuedEndpointSchema, "rotate")
		if rotated := apitest.Decode[consolewebhooks.IssuedEndpoint](t, res); rotated.Secret == issued.Secret || rotated.Endpoint.PreviousUntil == nil {
			t.Errorf("rotation %+v; want a new secret and the previous one's end", rotated.Endpoint)
		}
	})
}

// docs/api.md §4.3, §7: only owners change endpoints; another organisation reaches none, by
// its own path either; bad input is 422 at the field without echoing the URL; a deployment
// without deliveries refuses registrations.
func TestWebhookRoutesRefuse(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t), config.StoreEmbedded)
	ada, alpha := r.owner("ada@example.com", "Alpha")
	bob := consoletest.Join(r.Client, r.inbox, ada, alpha, "bob@example.com", "member")
	cat, gamma := r.owner("cat@example.com", "Gamma")
	base := "/console/orgs/" + alpha + "/webhooks"
	good := `{"url":"https://hooks.example/in","kinds":["event.ended"]}`
	res := r.Call("POST", base, ada, good)
	r.Expect(res, http.StatusCreated, nil, "register")
	hook := base + "/" + apitest.Decode[consolewebhooks.IssuedEndpoint](t, res).Endpoint.EndpointID
	for _, c := range []struct{ method, path, body string }{
		{"POST", base, good}, {"PATCH", hook, `{"enabled":false}`}, {"DELETE", hook, ""}, {"POST", hook + "/rotate", ""},
	} {
		r.ExpectDetail(r.Call(c.method, c.path, bob, c.body), http.StatusForbidden, "member: "+c.method+" "+c.path)
		r.ExpectDetail(r.Call(c.method, c.path, cat, c.body), http.StatusNotFound, "another organisation: "+c.method+" "+c.path)
	}
	r.ExpectDetail(r.Call("GET", strings.Replace(hook, alpha, gamma, 1), cat, ""), http.StatusNotFound, "alpha's endpoint under gamma's path")
	for body, field := range map[string]string{
		`{"kinds":["event.ended"]}`:                                             "url",
		`{"url":"https://hooks.example/in","kinds":[]}`:                         "kinds",
		`{"url":"https://hooks.example/in","kinds":["created"]}`:                "kinds",
		`{"url":"https://user:pw-42@hooks.example/in","kinds":["event.ended"]}`: "url",
	} {
		res := r.Call("POST", base, ada, body)
		problems := r.ExpectProblems(res, body)
		if loc := problems[0].Loc; !slices.Contains(loc, any(field)) {
			t.Errorf("%s: problems %+v; want one at %s", body, problems, field)
		}
		if strings.Contains(string(res.Body), "pw-42") {
			t.Errorf("%s: the refusal echoes the password: %s", body, res.Body)
		}
	}

	// On Lambda, where no producer or dispatcher runs yet, a registration is refused.
	lambda := newRig(t, tables.Embedded(t), config.StoreDynamoDB)
	tok, org := lambda.owner("dan@example.com", "Delta")
	lambda.ExpectDetail(lambda.Call("POST", "/console/orgs/"+org+"/webhooks", tok, good), http.StatusServiceUnavailable, "registration where deliveries do not run")
}

// docs/webhooks.md §5, docs/api.md §4.3: an owner makes, changes and deletes alert rules,
// each change in the audit log; members read them; another organisation reaches none, by its
// own path either; bad input is 422 at the field at fault (a polygon's position by its index);
// past the cap is 409.
func TestAlertRuleRoutes(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab, config.StoreEmbedded)
		ada, alpha := r.owner("ada@example.com", "Alpha")
		bob := consoletest.Join(r.Client, r.inbox, ada, alpha, "bob@example.com", "member")
		cat, gamma := r.owner("cat@example.com", "Gamma")
		base := "/console/orgs/" + alpha + "/alert-rules"
		square := `{"type":"Polygon","coordinates":[[[11.4,48.3],[11.6,48.3],[11.6,48.4],[11.4,48.4],[11.4,48.3]]]}`
		res := r.Call("POST", base, ada, `{"name":"City","environment":"live","area":`+square+`,"types":["accident","accident","wrong_way_vehicle"]}`)
		r.Expect(res, http.StatusCreated, consolewebhooks.AlertRulePublicSchema, "make a rule")
		made := apitest.Decode[consolewebhooks.AlertRulePublic](t, res)
		if made.Area.Type != "Polygon" || len(made.Area.Coordinates[0]) != 5 || !slices.Equal(made.Types, []string{"accident", "wrong_way_vehicle"}) ||
			made.MinConfidence != 0 || !made.Enabled {
			t.Fatalf("rule %+v; want the polygon, the two types once each, confidence 0, enabled", made)
		}
		rule := base + "/" + made.RuleID
		res = r.Call("PATCH", rule, ada, `{"area":{"type":"Circle","lat":48.1,"lon":11.5,"radius_m":2500},"types":[],"min_confidence":0.6}`)
		r.Expect(res, http.StatusOK, consolewebhooks.AlertRulePublicSchema, "change the rule")
		changed := apitest.Decode[consolewebhooks.AlertRulePublic](t, res)
		if changed.Area.Type != "Circle" || *changed.Area.RadiusM != 2500 || len(changed.Types) != 0 || changed.MinConfidence != 0.6 || changed.Name != "City" {
			t.Fatalf("changed rule %+v; want a 2500 m circle, every type, 0.6, its name kept", changed)
		}
		res = r.Call("GET", base, bob, "")
		r.Expect(res, http.StatusOK, nil, "a member lists the rules")
		if list := apitest.Decode[[]consolewebhooks.AlertRulePublic](t, res); len(list) != 1 || list[0].RuleID != made.RuleID {
			t.Fatalf("rules %+v; want the one", list)
		}
		for _, c := range []struct{ method, path, body string }{
			{"POST", base, `{"name":"x","environment":"live","area":` + square + `}`}, {"PATCH", rule, `{"enabled":false}`}, {"DELETE", rule, ""},
		} {
			r.ExpectDetail(r.Call(c.method, c.path, bob, c.body), http.StatusForbidden, "member: "+c.method+" "+c.path)
			r.ExpectDetail(r.Call(c.method, c.path, cat, c.body), http.StatusNotFound, "another organisation: "+c.method+" "+c.path)
		}
		r.ExpectDetail(r.Call("GET", strings.Replace(rule, alpha, gamma, 1), cat, ""), http.StatusNotFound, "alpha's rule under gamma's path")

		for body, loc := range map[string]string{
			`{"environment":"live","area":` + square + `}`:                                                                                              "body name",
			`{"name":"x","environment":"prod","area":` + square + `}`:                                                                                   "body environment",
			`{"name":"x","environment":"live","area":{"type":"Circle","lat":48.1,"lon":11.5,"radius_m":5}}`:                                             "body area radius_m",
			`{"name":"x","environment":"live","area":{"type":"Circle","lat":48.1,"lon":11.5}}`:                                                          "body area radius_m",
			`{"name":"x","environment":"live","area":{"type":"Square","lat":48.1}}`:                                                                     "body area",
			`{"name":"x","environment":"live","area":` + square + `,"types":["tornado"]}`:                                                               "body types 0",
			`{"name":"x","environment":"live","area":` + square + `,"min_confidence":1.5}`:                                                              "body min_confidence",
			`{"name":"   ","environment":"live","area":` + square + `}`:                                                                                 "body name",
			`{"name":"x","environment":"live","area":{"type":"Polygon","coordinates":[[[11.4,48.3],[11.6,48.3],[11.6,98],[11.4,48.4],[11.4,48.3]]]}}`:   "body area coordinates 0 2",
			`{"name":"x","environment":"live","area":{"type":"Polygon","coordinates":[[[11.4,48.3],[11.6,48.4],[11.6,48.3],[11.4,48.4],[11.4,48.3]]]}}`: "body area coordinates 0 2",
		} {
			problems := r.ExpectProblems(r.Call("POST", base, ada, body), body)
			if got := strings.Trim(fmt.Sprint(problems[0].Loc), "[]"); !strings.HasPrefix(got, loc) {
				t.Errorf("%s: problems %+v; want the first at %s", body, problems, loc)
			}
		}

		for i := 1; i < alerts.MaxPerOrg; i++ {
			r.Expect(r.Call("POST", base, ada, fmt.Sprintf(`{"name":"r%d","environment":"sandbox","area":%s}`, i, square)), http.StatusCreated, nil, "make rules up to the cap")
		}
		r.ExpectDetail(r.Call("POST", base, ada, `{"name":"one more","environment":"live","area":`+square+`}`), http.StatusConflict, "past the cap")
		r.Expect(r.Call("DELETE", rule, ada, ""), http.StatusOK, nil, "delete the rule")
		r.ExpectDetail(r.Call("GET", rule, ada, ""), http.StatusNotFound, "the deleted rule")
		r.Expect(r.Call("POST", base, ada, `{"name":"again","environment":"live","area":`+square+`}`), http.StatusCreated, nil, "a rule in the place freed")

		var audit []struct {
			Action string         `json:"action"`
			Target string         `json:"target"`
			Detail map[string]any `json:"detail"`
		}
		res = r.Call("GET", "/console/orgs/"+alpha+"/audit?limit=200", ada, "")
		if err := json.Unmarshal(res.Body, &audit); err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range audit {
			if e.Target == made.RuleID {
				actions = append(actions, e.Action+fmt.Sprint(e.Detail["changed"]))
			}
		}
		if want := []string{"alert_rule.deleted<nil>", "alert_rule.updated[area types min_confidence]", "alert_rule.created<nil>"}; !slices.Equal(actions, want) {
			t.Errorf("the rule's audit entries %v; want %v", actions, want)
		}
	})
}
