package orgs_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// oddIDs are path ids no organisation, member, invitation or key has: each is sent as the
// raw path segment shown (already escaped where a URL needs it).
var oddIDs = []struct{ name, segment string }{
	{"very long", strings.Repeat("a", 4000)},
	{"very long multibyte", url.PathEscape(strings.Repeat("é", 1500))},
	{"unicode", url.PathEscape("组织🚗")},
	{"encoded slash", "org_a%2Fmembers"},
	{"encoded dot-dot", "%2E%2E"},
	{"encoded NUL", "%00"},
	{"encoded newline", "a%0Ab"},
	{"space", "a%20b"},
	{"percent sign", "%25"},
	{"hash-like separator", "org%23x"},
	{"prefix only", "org_"},
}

// validBodies are bodies each route accepts, so that the id, not the input, decides.
var validBodies = map[string]string{
	"updateOrg":             `{"name":"Renamed"}`,
	"inviteMember":          `{"email":"odd@example.com"}`,
	"updateMember":          `{"role":"member"}`,
	"issueKey":              `{"label":"odd","environment":"sandbox"}`,
	"startCheckout":         `{"plan":"team"}`,
	"createOrg":             `{"name":"x"}`,
	"acceptInvitation":      `{"token":"x"}`,
	"createFeed":            `{"url":"https://feeds.example/x.json","format":"cifs"}`,
	"updateFeed":            `{"name":"odd"}`,
	"createWebhookEndpoint": `{"url":"https://hooks.example/in","kinds":["event.ended"]}`,
	"updateWebhookEndpoint": `{"description":"odd"}`,
	"createAlertRule":       `{"name":"odd","environment":"live","area":{"type":"Circle","lat":48.1,"lon":11.5,"radius_m":500}}`,
	"updateAlertRule":       `{"name":"odd"}`,
}

// docs/api.md §7 and §4.3: an id that names nothing is a 404 {detail} (or a 422 when the router
// refuses the segment), never a 5xx. Every organisation-scoped route the service serves, of
// every group, gets every odd id in each of its path parameters, on both adapters: DynamoDB
// refuses keys over 2048/1024 bytes, so an id must not reach it unchecked. An empty segment
// is not a route at all (the mux answers 404 or redirects), also covered.
func TestOddPathIDsAreNotFound(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnvGroups(t, tab, nil) // every group
		f := e.fixture("a")
		feed := e.Call("POST", "/console/orgs/"+f.org.OrgID+"/feeds", f.owner.token, validBodies["createFeed"])
		var fd struct {
			FeedID string `json:"feed_id"`
		}
		if err := json.Unmarshal(feed.Body, &fd); err != nil || fd.FeedID == "" {
			t.Fatalf("register a feed: %s", feed)
		}
		hook := e.Call("POST", "/console/orgs/"+f.org.OrgID+"/webhooks", f.owner.token, validBodies["createWebhookEndpoint"])
		var wh struct {
			Endpoint struct {
				EndpointID string `json:"endpoint_id"`
			} `json:"endpoint"`
		}
		if err := json.Unmarshal(hook.Body, &wh); err != nil || wh.Endpoint.EndpointID == "" {
			t.Fatalf("register a webhook endpoint: %s", hook)
		}
		dlv := webhooks.Delivery{ID: webhooks.DeliveryID(tab.Clock.Now(), "odd", wh.Endpoint.EndpointID), Org: f.org.OrgID,
			Endpoint: wh.Endpoint.EndpointID, Kind: webhooks.KindEnded, Body: []byte(`{}`)}
		if err := webhooks.NewQueue(tab, tab.Clock).Enqueue(context.Background(), dlv); err != nil {
			t.Fatal(err)
		}
		rule := e.Call("POST", "/console/orgs/"+f.org.OrgID+"/alert-rules", f.owner.token, validBodies["createAlertRule"])
		var ar struct {
			RuleID string `json:"rule_id"`
		}
		if err := json.Unmarshal(rule.Body, &ar); err != nil || ar.RuleID == "" {
			t.Fatalf("make an alert rule: %s", rule)
		}
		real := map[string]string{
			"org_id": f.org.OrgID, "user_id": f.member.id, "invite_id": f.invite.InviteID, "key_id": f.keyID, "feed_id": fd.FeedID,
			"endpoint_id": wh.Endpoint.EndpointID, "delivery_id": dlv.ID, "rule_id": ar.RuleID,
			"event_id": "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", // well formed, and no event
		}
		ids := oddIDs
		if tab.Adapter == tables.AdapterDynamoDB {
			// DynamoDB Local answers slowly: there, the ids that test its own key rules. The
			// capacity is cut too, so that appending below copies instead of writing into
			// oddIDs, which the embedded run reads at the same time.
			ids = oddIDs[:4:4]
		}
		cases := 0
		for _, rt := range e.routes {
			if !orgs.IsOrgRoute(rt.Path) {
				continue
			}
			params := pathWildcard.FindAllStringSubmatch(rt.Path, -1)
			for _, p := range params {
				name := p[1]
				for _, odd := range append(ids, struct{ name, segment string }{"empty", ""}) {
					path := pathWildcard.ReplaceAllStringFunc(rt.Path, func(w string) string {
						if w == "{"+name+"}" {
							return odd.segment
						}
						return real[strings.Trim(w, "{}")]
					})
					cases++
					r := e.Call(rt.Method, path, f.owner.token, validBodies[rt.OperationID])
					what := rt.OperationID + " with " + odd.name + " " + name
					if odd.segment == "" {
						// Not a route: the mux's 404, or its redirect to the cleaned path.
						if r.Status >= 500 {
							t.Errorf("%s: %s %.80s = %.200s; want no 5xx", what, rt.Method, path, r)
						}
						continue
					}
					if r.Status != http.StatusNotFound && r.Status != http.StatusUnprocessableEntity {
						t.Errorf("%s: %s %.80s = %.200s; want 404 or 422", what, rt.Method, path, r)
						continue
					}
					if _, ok := rt.Responses[r.Status]; !ok && r.Status == http.StatusNotFound {
						t.Errorf("%s: %d is not among the route's documented responses", what, r.Status)
					}
					var d struct {
						Detail json.RawMessage `json:"detail"`
					}
					if err := json.Unmarshal(r.Body, &d); err != nil || len(d.Detail) == 0 {
						t.Errorf("%s: body %.200s is not {detail} (docs/api.md §7)", what, r.Body)
					}
				}
			}
		}
		if cases < 18*len(ids) {
			t.Fatalf("%d cases; want every organisation route covered", cases)
		}
		// The fixture is untouched by all of it.
		got := e.members(f.owner, f.org.OrgID)
		if len(got.Members) != 2 || len(got.Invitations) != 1 {
			t.Errorf("members after odd ids = %+v; want 2 members and 1 invitation", got)
		}
	})
}
