package app_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/privacy.md §4: at the default log level no e-mail address, sign-in code, session,
// API key, stream ticket, webhook secret, reporter token or reporter position reaches the logs.
// A whole customer's journey runs, its refusals included, and the logs are searched for every
// such value it used. docs/privacy.md §1, §2, §6: the journey ends with the account's erasure,
// after which the table holds none of them either, nor the organisations' names: a reporter's
// token and position were never kept as sent, the address went with the account.
func TestLogsHoldNoPersonalData(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		journey(t, tab)
	})
}

func journey(t *testing.T, tab tables.Table) {
	logs := &apitest.LogBuffer{}
	cfg := apptest.Config()
	cfg.Webhooks.AllowPrivate = true
	inbox := &consoletest.Inbox{}
	api := apptest.New(t, app.Deps{Config: cfg, Table: tab.Table, Clock: tab.Clock, Mailer: inbox,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: cfg.LogLevel})),
		Keys:   apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		Meter:  metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
	})
	c := apitest.Client{T: t, Handler: api.Handler()}
	var secrets []string
	keep := func(vs ...string) { secrets = append(secrets, vs...) }

	email := "ada.lovelace@example.com"
	session := consoletest.SignIn(c, inbox, email)
	keep(email, session.Token)
	code := inbox.LastCode(t, email) // six digits: only the logs are searched for it
	org := consoletest.CreateOrg(c, session.Token, "Analytical Engines")
	issued := apitest.Decode[orgs.IssuedKey](t, c.Call("POST", "/console/orgs/"+org+"/keys", session.Token, `{"label":"app","environment":"live"}`))
	keep(issued.Key)
	c.Call("POST", "/console/orgs/"+org+"/members", session.Token, `{"email":"charles.babbage@example.com","role":"member"}`)
	keep("charles.babbage@example.com")

	reporter, lat, lon := "VIN-WDB9066331S123456", "48.137912", "11.575488"
	keep(reporter, lat, lon)
	ev := apitest.Decode[event.EventPublic](t, c.Call("POST", "/v1/events", issued.Key,
		fmt.Sprintf(`{"type":"accident","lat":48.1,"lon":11.5,"reporter_token":%q}`, reporter)))
	c.Call("POST", "/v1/events/"+ev.EventID+"/signals", issued.Key,
		fmt.Sprintf(`{"action":"confirm","reporter_token":%q,"lat":%s,"lon":%s}`, reporter, lat, lon))
	c.Call("POST", "/v1/events/"+ev.EventID+"/signals", issued.Key, `{"action":"confirm","reporter_token":"bad token with spaces"}`)
	ticket := apitest.Decode[struct {
		Ticket string `json:"ticket"`
	}](t, c.Call("POST", "/v1/stream/tickets", issued.Key, ""))
	keep(ticket.Ticket)
	// A stream opened with the ticket in its query (the access log names the path alone).
	c.Call("GET", "/v1/stream?lat=48.1&lon=11.5&ticket="+ticket.Ticket, "", "")
	hook := apitest.Decode[struct {
		Secret string `json:"secret"`
	}](t, c.Call("POST", "/console/orgs/"+org+"/webhooks", session.Token, `{"url":"http://127.0.0.1:9/in","kinds":["event.ended"]}`))
	keep(hook.Secret)
	// Refusals log too: a wrong code, a revoked key, a bad session.
	c.Call("POST", "/console/auth/verify-code", "", fmt.Sprintf(`{"email":%q,"code":"000000"}`, email))
	c.Call("DELETE", "/console/orgs/"+org+"/keys/"+issued.APIKey.KeyID, session.Token, "")
	if r := c.Call("GET", "/v1/events?lat=48.1&lon=11.5", issued.Key, ""); r.Status != http.StatusUnauthorized {
		t.Fatalf("a revoked key: %d", r.Status)
	}
	c.Call("GET", "/console/auth/me", "ses_"+strings.Repeat("x", 43), "")
	// The two acts of docs/privacy.md §6, refused first, then done.
	second := consoletest.CreateOrg(c, session.Token, "Difference Engines")
	c.Call("DELETE", "/console/orgs/"+second, "", "")
	if r := c.Call("DELETE", "/console/orgs/"+second, session.Token, ""); r.Status != http.StatusOK {
		t.Fatalf("delete an organisation: %s", r)
	}
	if r := c.Call("DELETE", "/console/auth/me", session.Token, ""); r.Status != http.StatusOK {
		t.Fatalf("erase the account: %s", r)
	}

	out := logs.String()
	if !strings.Contains(out, `"msg"`) {
		t.Fatal("nothing was logged: the test would prove nothing")
	}
	if strings.Contains(out, code) {
		t.Errorf("the logs hold the sign-in code")
	}
	rest := tab.Everything(t)
	for _, v := range append(secrets, "Analytical Engines", "Difference Engines") {
		if v == "" {
			continue
		}
		if strings.Contains(out, v) {
			t.Errorf("the logs hold %q", v)
		}
		if strings.Contains(rest, v) {
			t.Errorf("after the erasure the table holds %q", v)
		}
	}
}
