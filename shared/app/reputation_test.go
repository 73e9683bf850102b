package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consolereputation"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/verdict"
)

// docs/network.md §2, through the whole service on both adapters: a publisher whose events
// other organisations' reporters keep denying falls into poor once it has the history (here 2
// decided events, the threshold 80 %); that deny end invalidates its remaining active events,
// writes the audit entry and e-mails its owner; a later deny end while it stays poor
// invalidates again without a second e-mail. The quality panel and the evidence document show
// the band.
func TestReputationRuleThroughTheService(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		cfg := apptest.Config()
		cfg.ConsoleURL = "http://console.test/app/"
		cfg.Reputation = config.Reputation{MinHistory: 2, VerdictPercent: 80, WindowDays: 30}
		inbox := &consoletest.Inbox{}
		api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
			Keys:  apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
			Meter: metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
		}, routetable.GroupConsoleAuth, routetable.GroupConsoleOrgs, routetable.GroupEvents)
		c := apitest.Client{T: t, Handler: api.Handler()}

		// org creates an organisation owned by addr and a live key of it.
		org := func(addr, name string) (session, orgID, key string) {
			session = consoletest.SignIn(c, inbox, addr).Token
			r := c.Call("POST", "/console/orgs", session, apitest.JSON(map[string]string{"name": name}))
			c.Expect(r, http.StatusCreated, orgs.OrganisationSchema, "create "+name)
			orgID = apitest.Decode[orgs.Organisation](t, r).OrgID
			r = c.Call("POST", "/console/orgs/"+orgID+"/keys", session, `{"label":"app","environment":"live"}`)
			c.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue a live key of "+name)
			return session, orgID, apitest.Decode[orgs.IssuedKey](t, r).Key
		}
		ada, alpha, alphaKey := org("ada@example.com", "Alpha")
		_, _, bravoKey := org("bob@example.com", "Bravo")
		mailsBefore := len(inbox.To("ada@example.com"))

		n := 0
		publish := func() string {
			n++
			// Spots a kilometre apart: never one hazard.
			r := c.Call("POST", "/v1/events", alphaKey, fmt.Sprintf(`{"type":"object_on_road","lat":48.%02d,"lon":2.35}`, 10+n))
			c.Expect(r, http.StatusCreated, nil, "alpha publishes")
			return apitest.Decode[event.Event](t, r).ID
		}
		// deny has three of Bravo's reporters deny id: a deny quorum (docs/api.md §3). The verdict
		// runs within the third signal's request; a verdict waiting for that signal's own event
		// would never answer, so the wait is bounded.
		deny := func(id string) {
			answers := make(chan apitest.Response, 3)
			go func() {
				for i := range 3 {
					answers <- c.Call("POST", "/v1/events/"+id+"/signals", bravoKey, fmt.Sprintf(`{"action":"deny","reporter_token":"d%d"}`, i))
				}
			}()
			for range 3 {
				select {
				case r := <-answers:
					c.Expect(r, http.StatusOK, nil, "bravo denies "+id)
				case <-time.After(apitest.Within):
					t.Fatalf("a denial of %s did not answer within %s", id, apitest.Within)
				}
			}
		}
		status := func(id string) string {
			r := c.Call("GET", "/v1/events/"+id, bravoKey, "")
			c.Expect(r, http.StatusOK, nil, "get "+id)
			return apitest.Decode[event.Event](t, r).Status
		}
		verdicts := func() []audit.Entry {
			r := c.Call("GET", "/console/orgs/"+alpha+"/audit", ada, "")
			c.Expect(r, http.StatusOK, nil, "alpha's audit log")
			var out []audit.Entry
			for _, e := range apitest.Decode[[]audit.Entry](t, r) {
				if e.Action == verdict.ActionEventsInvalidated {
					out = append(out, e)
				}
			}
			return out
		}

		first, second, standing := publish(), publish(), publish()
		deny(first) // 1 decided: too little history
		if got := status(standing); got != event.StatusActive {
			t.Fatalf("after one deny end: the other event is %s; want active (1 decided event < 2)", got)
		}
		deny(second) // 2 of 2 ended by deny quorum: poor
		if got := status(standing); got != event.StatusInvalidated {
			t.Errorf("after the fall: the remaining event is %s; want invalidated", got)
		}
		if got := status(second); got != event.StatusExpired {
			t.Errorf("the denied event is %s; want expired (the deny quorum's, docs/api.md §3)", got)
		}
		mails := inbox.To("ada@example.com")[mailsBefore:]
		if len(mails) != 1 || !strings.Contains(mails[0].Text, cfg.ConsoleURL+"orgs/"+alpha+"/quality") {
			t.Fatalf("e-mails to alpha's owner after the fall = %+v; want one linking to the quality panel", mails)
		}
		if es := verdicts(); len(es) != 1 || es[0].Detail["count"] != 1.0 || es[0].ActorUserID == nil || *es[0].ActorUserID != verdict.ActorSystem {
			t.Errorf("verdicts in alpha's audit log = %+v; want one by system, count 1", es)
		}

		// Still poor: the next deny end invalidates the events published since, silently.
		third, fourth := publish(), publish()
		deny(third)
		if got := status(fourth); got != event.StatusInvalidated {
			t.Errorf("a later event after the next deny end is %s; want invalidated", got)
		}
		if got := len(inbox.To("ada@example.com")) - mailsBefore; got != 1 {
			t.Errorf("%d e-mails to alpha's owner; want still 1", got)
		}
		if n := len(verdicts()); n != 2 {
			t.Errorf("%d verdicts in the audit log; want 2", n)
		}

		r := c.Call("GET", "/console/orgs/"+alpha+"/reputation", ada, "")
		c.Expect(r, http.StatusOK, consolereputation.ReportSchema, "alpha's quality panel")
		if live := apitest.Decode[consolereputation.Report](t, r).Environments[0]; live.Against != 3 || live.Band != reputation.BandPoor {
			t.Errorf("alpha's live standing = %+v; want 3 against, poor", live)
		}
		r = c.Call("GET", "/v1/events/"+fourth+"/evidence", bravoKey, "")
		c.Expect(r, http.StatusOK, nil, "evidence of an invalidated event")
		if ev := apitest.Decode[event.Evidence](t, r); ev.Publisher.Reputation != reputation.BandPoor {
			t.Errorf("evidence publisher = %+v; want band poor", ev.Publisher)
		}
	})
}
