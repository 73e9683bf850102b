package consoleaccount_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/consoleaccount"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/privacy.md §5: a person downloads what the service keeps about them: their account,
// the sessions that still open the console (times, never a token; a sign-out ends them), their
// memberships with their roles, and the audit entries in which they are the actor, not
// another member's.
func TestExport(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		cfg := apptest.Config()
		cfg.ConsoleURL = "http://console.test/app/"
		inbox := &consoletest.Inbox{}
		api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
			Keys:  apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
			Meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
		}, routetable.GroupConsoleAuth, routetable.GroupConsoleOrgs)
		c := apitest.Client{T: t, Handler: api.Handler()}

		ada := consoletest.SignIn(c, inbox, "ada@example.com").Token
		alpha := consoletest.CreateOrg(c, ada, "Alpha")
		c.Call("POST", "/console/orgs/"+alpha+"/keys", ada, `{"label":"app","environment":"sandbox"}`)
		bob := consoletest.Join(c, inbox, ada, alpha, "bob@example.com", "member")
		c.Call("PATCH", "/console/orgs/"+alpha, ada, `{"name":"Alpha Fleet"}`)
		tab.Clock.Advance(time.Minute)
		consoletest.CreateOrg(c, bob, "Beta")

		export := func(token string) consoleaccount.Export {
			t.Helper()
			res := c.Call("GET", "/console/auth/me/export", token, "")
			c.Expect(res, http.StatusOK, consoleaccount.ExportSchema, "export")
			if !strings.Contains(res.Header.Get("Content-Disposition"), "attachment") || res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("export headers %v; want an attachment, not stored", res.Header)
			}
			if strings.Contains(string(res.Body), token) {
				t.Errorf("the export holds the session token")
			}
			return apitest.Decode[consoleaccount.Export](t, res)
		}
		got := export(bob)
		if got.Account.Email != "bob@example.com" || len(got.Sessions) != 1 {
			t.Errorf("account %+v with %d sessions; want bob's, with the one session", got.Account, len(got.Sessions))
		}
		var orgs []string
		for _, m := range got.Memberships {
			orgs = append(orgs, m.Name+"/"+m.Role)
		}
		slices.Sort(orgs)
		if !slices.Equal(orgs, []string{"Alpha Fleet/member", "Beta/owner"}) {
			t.Errorf("memberships %v; want Alpha Fleet as a member and Beta as the owner", orgs)
		}
		var actions []string
		for _, e := range got.AuditEntries {
			actions = append(actions, e.Action)
		}
		slices.Sort(actions)
		if !slices.Contains(actions, "invitation.accepted") || slices.Contains(actions, "key.issued") || slices.Contains(actions, "org.updated") {
			t.Errorf("bob's audit entries %v; want his own acts only, none of ada's", actions)
		}

		adaAgain := consoletest.SignIn(c, inbox, "ada@example.com").Token
		if got := export(adaAgain); len(got.Sessions) != 2 || !slices.ContainsFunc(got.AuditEntries, func(e consoleaccount.Acted) bool { return e.Action == "key.issued" }) {
			t.Errorf("ada's export: %d sessions, entries %+v; want two sessions and her issued key", len(got.Sessions), got.AuditEntries)
		}
		c.Expect(c.Call("POST", "/console/auth/logout", adaAgain, ""), http.StatusOK, nil, "sign out")
		fresh := consoletest.SignIn(c, inbox, "ada@example.com").Token
		if got := export(fresh); len(got.Sessions) != 1 {
			t.Errorf("after a sign-out everywhere and a new sign-in: %d sessions; want the new one", len(got.Sessions))
		}
		if r := c.Call("GET", "/console/auth/me/export", "", ""); r.Status != http.StatusUnauthorized {
			t.Errorf("without a session: %d; want 401", r.Status)
		}
	})
}
