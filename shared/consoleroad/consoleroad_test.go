package consoleroad_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
)

type rig struct {
	apitest.Client
	tab   tables.Table
	inbox *consoletest.Inbox
	meter *metering.Meter
}

func newRig(t *testing.T, tab tables.Table) *rig {
	t.Helper()
	cfg := apptest.Config()
	cfg.Store = config.StoreEmbedded
	cfg.ConsoleURL = "http://console.test/app/"
	inbox := &consoletest.Inbox{}
	meter := metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1})
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
		Keys: apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}), Meter: meter,
	}, routetable.GroupConsoleAuth, routetable.GroupConsoleOrgs, routetable.GroupEvents)
	return &rig{Client: apitest.Client{T: t, Handler: api.Handler()}, tab: tab, inbox: inbox, meter: meter}
}

// org signs addr in, makes an organisation and issues a key of env; it returns the session,
// the organisation and the key.
func (r *rig) org(addr, name, env string) (string, string, string) {
	r.T.Helper()
	token := consoletest.SignIn(r.Client, r.inbox, addr).Token
	org := consoletest.CreateOrg(r.Client, token, name)
	key := apitest.Decode[orgs.IssuedKey](r.T, r.Call("POST", "/console/orgs/"+org+"/keys", token, `{"label":"app","environment":"`+env+`"}`)).Key
	return token, org, key
}

func (r *rig) publish(key, body string) event.EventPublic {
	r.T.Helper()
	res := r.Call("POST", "/v1/events", key, body)
	r.Expect(res, http.StatusCreated, nil, "publish "+body)
	return apitest.Decode[event.EventPublic](r.T, res)
}

func ids(evs []event.EventPublic) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.EventID)
	}
	return out
}

// docs/console.md §5: a member reads the network's events around a point, one event and its
// evidence, and the organisation's own active events, without a key, as the organisation in the
// environment named (a live read sees no sandbox event); owners close and revise their own; a
// member of another organisation reaches nothing; the reads are metered as the organisation's.
func TestRoadRoutes(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		ada, alpha, alphaKey := r.owner("ada@example.com", "Alpha")
		bob := consoletest.Join(r.Client, r.inbox, ada, alpha, "bob@example.com", "member")
		cat, beta, betaKey := r.org("cat@example.com", "Beta", "live")
		sandboxKey := apitest.Decode[orgs.IssuedKey](t, r.Call("POST", "/console/orgs/"+alpha+"/keys", ada, `{"label":"test","environment":"sandbox"}`)).Key

		first := r.publish(alphaKey, `{"type":"accident","lat":48.10,"lon":11.50}`)
		tab.Clock.Advance(time.Second)
		second := r.publish(alphaKey, `{"type":"roadworks","lat":48.11,"lon":11.50}`)
		theirs := r.publish(betaKey, `{"type":"congestion","lat":48.12,"lon":11.50}`)
		sandboxed := r.publish(sandboxKey, `{"type":"accident","lat":48.105,"lon":11.52}`)
		base := "/console/orgs/" + alpha

		res := r.Call("GET", base+"/events?lat=48.1&lon=11.5&radius=5000", bob, "")
		r.Expect(res, http.StatusOK, nil, "a member reads the map")
		if got := ids(apitest.Decode[[]event.EventPublic](t, res)); !slices.Equal(got, []string{first.EventID, second.EventID, theirs.EventID}) {
			t.Errorf("live map %v; want the three live events, nearest first", got)
		}
		res = r.Call("GET", base+"/events?lat=48.1&lon=11.5&radius=5000&environment=sandbox", bob, "")
		if got := ids(apitest.Decode[[]event.EventPublic](t, res)); !slices.Contains(got, sandboxed.EventID) || len(got) != 4 {
			t.Errorf("sandbox map %v; want the live events and the sandbox one", got)
		}
		r.ExpectProblems(r.Call("GET", base+"/events?lat=48.1&lon=11.5&radius=999999", bob, ""), "a radius past the limit")

		res = r.Call("GET", base+"/own-events", bob, "")
		r.Expect(res, http.StatusOK, nil, "the own events")
		if got := ids(apitest.Decode[[]event.EventPublic](t, res)); !slices.Equal(got, []string{second.EventID, first.EventID}) {
			t.Errorf("own events %v; want Alpha's two live ones, newest first", got)
		}
		inspect := base + "/events/" + theirs.EventID
		r.Expect(r.Call("GET", inspect, bob, ""), http.StatusOK, event.EventPublicSchema, "inspect another organisation's event")
		r.Expect(r.Call("GET", inspect+"/evidence", bob, ""), http.StatusOK, nil, "its evidence")

		mine := base + "/events/" + first.EventID
		r.ExpectDetail(r.Call("POST", mine+"/close", bob, ""), http.StatusForbidden, "a member closes")
		r.ExpectDetail(r.Call("POST", inspect+"/close", ada, ""), http.StatusForbidden, "an owner closes another organisation's event")
		r.ExpectDetail(r.Call("POST", base+"/events/"+sandboxed.EventID+"/close", ada, ""), http.StatusNotFound, "a sandbox event closed as live")
		res = r.Call("POST", mine+"/revisions", ada, `{"lat":48.101,"lon":11.5,"severity":"high"}`)
		r.Expect(res, http.StatusOK, event.EventPublicSchema, "an owner revises")
		if ev := apitest.Decode[event.EventPublic](t, res); ev.Lat != 48.101 || ev.Severity == nil || *ev.Severity != "high" {
			t.Errorf("revised %+v; want the new position and severity", ev)
		}
		r.Expect(r.Call("POST", mine+"/close", ada, ""), http.StatusOK, event.EventPublicSchema, "an owner closes")
		res = r.Call("GET", base+"/own-events", bob, "")
		if got := ids(apitest.Decode[[]event.EventPublic](t, res)); !slices.Equal(got, []string{second.EventID}) {
			t.Errorf("own events after the close %v; want the other one only", got)
		}
		r.Expect(r.Call("POST", base+"/events/"+sandboxed.EventID+"/close?environment=sandbox", ada, ""), http.StatusOK, nil, "a sandbox event closed as sandbox")

		for _, path := range []string{base + "/events?lat=48.1&lon=11.5", base + "/own-events", inspect, base + "/stream/tickets"} {
			method := "GET"
			if path == base+"/stream/tickets" {
				method = "POST"
			}
			r.ExpectDetail(r.Call(method, path, cat, ""), http.StatusNotFound, "another organisation's member: "+path)
		}
		r.ExpectDetail(r.Call("GET", "/console/orgs/"+beta+"/events/"+first.EventID, ada, ""), http.StatusNotFound, "an organisation the caller is not in")

		if err := r.meter.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		days, err := r.meter.Read(context.Background(), alpha, event.EnvironmentLive, tab.Clock.Now().Add(-48*time.Hour), tab.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		var reads int64
		for _, d := range days {
			reads += d.Reads
		}
		// The live map, the own events twice, the event, its evidence (the refused radius and
		// the refused closes read nothing).
		if reads != 5 {
			t.Errorf("Alpha's live reads %d; want the console's 5", reads)
		}
	})
}

// docs/console.md §5, docs/api.md §5: a member mints a stream ticket for the organisation and
// the environment named, which opens the stream as the organisation: bound to no key, valid
// like any other ticket.
func TestRoadTicket(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	ada, alpha, _ := r.owner("ada@example.com", "Alpha")
	bob := consoletest.Join(r.Client, r.inbox, ada, alpha, "bob@example.com", "member")
	res := r.Call("POST", "/console/orgs/"+alpha+"/stream/tickets?environment=sandbox", bob, "")
	r.Expect(res, http.StatusCreated, stream.TicketOutSchema, "a member mints a ticket")
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("ticket answer Cache-Control %q; want no-store", res.Header.Get("Cache-Control"))
	}
	out := apitest.Decode[stream.TicketOut](t, res)
	p, err := stream.NewTickets(tab.Table, stream.TicketOptions{Clock: tab.Clock}).VerifyTicket(context.Background(), out.Ticket)
	if err != nil || p.OrgID != alpha || p.Environment != event.EnvironmentSandbox || p.KeyID != "" {
		t.Errorf("the ticket opens %+v, %v; want Alpha's sandbox, no key", p, err)
	}
}

// owner signs addr in and makes an organisation with a live key.
func (r *rig) owner(addr, name string) (string, string, string) { return r.org(addr, name, "live") }
