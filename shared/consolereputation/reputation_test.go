package consolereputation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consolereputation"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

const consoleURL = "http://console.test/app/"

// rig is the console groups of the service on one table, with an inbox.
type rig struct {
	apitest.Client
	tab   tables.Table
	inbox *consoletest.Inbox
	doc   []byte
}

func newRig(t *testing.T, tab tables.Table) *rig {
	t.Helper()
	cfg := apptest.Config()
	cfg.ConsoleURL = consoleURL
	cfg.Reputation = config.Reputation{MinHistory: 10, VerdictPercent: 90, WindowDays: 14}
	inbox := &consoletest.Inbox{}
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
		Keys:  apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		Meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
	}, routetable.GroupConsoleAuth, routetable.GroupConsoleOrgs)
	return &rig{Client: apitest.Client{T: t, Handler: api.Handler()}, tab: tab, inbox: inbox, doc: api.OpenAPI()}
}

// owner signs addr in and creates an organisation; it returns the session token and the
// organisation's id.
func (r *rig) owner(addr, name string) (string, string) {
	r.T.Helper()
	token := consoletest.SignIn(r.Client, r.inbox, addr).Token
	return token, consoletest.CreateOrg(r.Client, token, name)
}

// member invites addr into org as a member, signs them in and accepts; it returns their token.
func (r *rig) member(ownerToken, org, addr string) string {
	r.T.Helper()
	return consoletest.Join(r.Client, r.inbox, ownerToken, org, addr, "member")
}

// docs/network.md §2 (quality panel), docs/api.md §4.3: any member of an organisation reads its
// standing in both environments with the deployment's thresholds; a member of another
// organisation gets 404, and reads only its own. Both adapters.
func TestReputationRoute(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		ada, alpha := r.owner("ada@example.com", "Alpha")
		bob := r.member(ada, alpha, "bob@example.com")
		cat, gamma := r.owner("cat@example.com", "Gamma")
		// Alpha's live events: 1 corroborated, 9 ended by deny quorum (90 %: poor).
		now := tab.Clock.Now()
		if err := tab.TransactWrite(context.Background(), []store.Op{
			reputation.CountOp(alpha, apikey.Live, reputation.Tally{For: 1, Against: 9}, now),
		}); err != nil {
			t.Fatal(err)
		}

		path := "/console/orgs/" + alpha + "/reputation"
		for _, token := range []string{ada, bob} {
			res := r.Call("GET", path, token, "")
			r.Expect(res, http.StatusOK, consolereputation.ReportSchema, "a member reads alpha's reputation")
			got := apitest.Decode[consolereputation.Report](t, res)
			if got.OrgID != alpha || got.WindowDays != 14 || got.MinHistory != 10 || got.VerdictPercent != 90 || got.GoodPercent != reputation.GoodPercent {
				t.Errorf("report = %+v; want alpha with the configured rules", got)
			}
			if len(got.Environments) != 2 {
				t.Fatalf("environments = %+v; want live and sandbox", got.Environments)
			}
			live, sandbox := got.Environments[0], got.Environments[1]
			if live.Environment != "live" || live.For != 1 || live.Against != 9 || live.Decided != 10 || live.Band != reputation.BandPoor ||
				live.Score == nil || *live.Score != 0.1 {
				t.Errorf("live = %+v; want 1 for, 9 against, poor, score 0.1", live)
			}
			if sandbox.Environment != "sandbox" || sandbox.Decided != 0 || sandbox.Band != reputation.BandNew || sandbox.Score != nil {
				t.Errorf("sandbox = %+v; want nothing decided, new, no score", sandbox)
			}
		}
		// The score is absent, not null, when nothing was decided.
		var raw struct{ Environments []map[string]any }
		if err := json.Unmarshal(r.Call("GET", path, ada, "").Body, &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw.Environments[1]["score"]; ok {
			t.Errorf("sandbox standing %v has a score; want none", raw.Environments[1])
		}

		// From the other side: Gamma's owner cannot read Alpha's, and reads Gamma's own.
		r.ExpectDetail(r.Call("GET", path, cat, ""), http.StatusNotFound, "gamma's owner reads alpha's reputation")
		res := r.Call("GET", "/console/orgs/"+gamma+"/reputation", cat, "")
		r.Expect(res, http.StatusOK, consolereputation.ReportSchema, "gamma's own reputation")
		if strings.Contains(string(res.Body), alpha) || strings.Contains(string(res.Body), `"against":9`) {
			t.Errorf("gamma's reputation %s holds alpha's", res.Body)
		}
		r.ExpectDetail(r.Call("GET", "/console/orgs/org_unknown/reputation", ada, ""), http.StatusNotFound, "an unknown organisation")
		r.ExpectDetail(r.Call("GET", path, "", ""), http.StatusUnauthorized, "no session")
	})
}

// The route and its named schemas are in /openapi.json.
func TestReputationRouteIsDocumented(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t))
	var doc struct {
		Paths      map[string]map[string]any
		Components struct{ Schemas map[string]any }
	}
	if err := json.Unmarshal(r.doc, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Paths["/console/orgs/{org_id}/reputation"]["get"] == nil {
		t.Errorf("/openapi.json lacks GET /console/orgs/{org_id}/reputation")
	}
	for _, name := range []string{"ReputationReport", "PublisherStanding"} {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("components.schemas lacks %s", name)
		}
	}
}
