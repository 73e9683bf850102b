package stream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
)

// mint mints a ticket with key through the API.
func (r *rig) mint(t testing.TB, key string) stream.TicketOut {
	t.Helper()
	status, body, _ := r.do(t, http.MethodPost, "/v1/stream/tickets", key, nil)
	if status != http.StatusCreated {
		t.Fatalf("POST /v1/stream/tickets: %d %s", status, body)
	}
	var out stream.TicketOut
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

var utcZ = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

// docs/api.md §4.1, §2.8 and §5: POST /v1/stream/tickets answers 201 StreamTicketOut for an API key.
func TestMintTicket(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		now := tab.Clock.Now()
		got := r.mint(t, r.liveKey)
		if !ticketShape.MatchString(got.Ticket) {
			t.Errorf("ticket %q; want svc_st_ + 43 base62", got.Ticket)
		}
		if got.ExpiresIn != 300 {
			t.Errorf("expires_in %d; want 300", got.ExpiresIn)
		}
		at, err := time.Parse(time.RFC3339Nano, got.ExpiresAt)
		if err != nil || !utcZ.MatchString(got.ExpiresAt) || !at.Equal(now.Add(300*time.Second)) {
			t.Errorf("expires_at %q; want %s, UTC with Z", got.ExpiresAt, event.FormatTime(now.Add(300*time.Second)))
		}
		if other := r.mint(t, r.liveKey); other.Ticket == got.Ticket {
			t.Errorf("two mints gave the same ticket")
		}
	})
}

// docs/api.md §5 ticket rules and §7 (GET /v1/stream, POST /v1/stream/tickets): which credential
// opens what; each case is named after its route. Every 401 carries WWW-Authenticate: Bearer and a {"detail"} body.
func TestCredentials(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		ticket := r.mint(t, r.liveKey).Ticket
		revoked := r.issue(t, "org_r", apikey.Live)
		keyID := mustKeyID(t, r, revoked)
		if _, err := r.keys.Revoke(context.Background(), "org_r", keyID, nil); err != nil {
			t.Fatal(err)
		}
		expired := r.mint(t, r.sandboxKey).Ticket
		tab.Clock.Advance(300 * time.Second)
		fresh := r.mint(t, r.liveKey).Ticket // valid from here on; ticket and expired are 300 s old
		q := query(center, 1000)

		cases := []struct {
			name, method, query, auth string
			header                    bool // send Authorization: auth even when empty
			status                    int
			detail                    string
		}{
			{"stream: no credential", http.MethodGet, q, "", false, 401, apikey.DetailMissingCredential},
			{"stream: API key", http.MethodGet, q, "Bearer " + r.liveKey, true, 200, ""},
			{"stream: unknown key", http.MethodGet, q, "Bearer svc_" + strings.Repeat("x", 43), true, 401, apikey.DetailInvalid},
			{"stream: revoked key", http.MethodGet, q, "Bearer " + revoked, true, 401, apikey.DetailInvalid},
			{"stream: ticket", http.MethodGet, q + "&ticket=" + fresh, "", false, 200, ""},
			{"stream: unknown ticket", http.MethodGet, q + "&ticket=svc_st_" + strings.Repeat("x", 43), "", false, 401, apikey.DetailInvalidTicket},
			{"stream: expired ticket (rule 6)", http.MethodGet, q + "&ticket=" + expired, "", false, 401, apikey.DetailInvalidTicket},
			{"stream: ticket at 300 s", http.MethodGet, q + "&ticket=" + ticket, "", false, 401, apikey.DetailInvalidTicket},
			{"stream: bad header with a valid ticket (rule 4)", http.MethodGet, q + "&ticket=" + fresh, "Bearer svc_" + strings.Repeat("x", 43), true, 401, apikey.DetailInvalid},
			{"stream: other scheme with a valid ticket (rule 4)", http.MethodGet, q + "&ticket=" + fresh, "Basic dXNlcjpwYXNz", true, 401, apikey.DetailMissing},
			{"stream: empty header with a valid ticket (rule 4)", http.MethodGet, q + "&ticket=" + fresh, "", true, 401, apikey.DetailMissing},
			{"stream: valid header decides over a bad ticket", http.MethodGet, q + "&ticket=bad", "Bearer " + r.liveKey, true, 200, ""},
			{"stream: ticket as a bearer", http.MethodGet, q, "Bearer " + fresh, true, 401, apikey.DetailInvalid},
			{"stream: API key in the URL (rule 7)", http.MethodGet, q + "&ticket=" + url.QueryEscape(r.liveKey), "", false, 401, apikey.DetailInvalidTicket},
			{"tickets: API key", http.MethodPost, "", "Bearer " + r.sandboxKey, true, 201, ""},
			{"tickets: no credential", http.MethodPost, "", "", false, 401, apikey.DetailMissing},
			{"tickets: unknown key", http.MethodPost, "", "Bearer svc_" + strings.Repeat("y", 43), true, 401, apikey.DetailInvalid},
			{"tickets: revoked key", http.MethodPost, "", "Bearer " + revoked, true, 401, apikey.DetailInvalid},
			{"tickets: a ticket cannot mint a ticket (rule 1)", http.MethodPost, "", "Bearer " + fresh, true, 401, apikey.DetailInvalid},
			{"tickets: a ticket in the query is no credential", http.MethodPost, "ticket=" + fresh, "", false, 401, apikey.DetailMissing},
			// Rule 1: a ticket carries no scope beyond streaming (docs/api.md §5: it may not read
			// /v1/events nor publish).
			{"events: a ticket as a bearer cannot read (rule 1)", http.MethodGet, q, "Bearer " + fresh, true, 401, apikey.DetailInvalid},
			{"events: a ticket in the query cannot read (rule 1)", http.MethodGet, q + "&ticket=" + fresh, "", false, 401, apikey.DetailMissing},
			{"events: a ticket cannot publish (rule 1)", http.MethodPost, "ticket=" + fresh, "Bearer " + fresh, true, 401, apikey.DetailInvalid},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				route, _, _ := strings.Cut(tc.name, ":")
				path := map[string]string{"stream": "/v1/stream", "tickets": "/v1/stream/tickets", "events": "/v1/events"}[route]
				req, err := http.NewRequest(tc.method, r.srv.URL+path+"?"+tc.query, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.header {
					req.Header["Authorization"] = []string{tc.auth}
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				resp, err := r.client.Do(req.WithContext(ctx))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d; want %d", resp.StatusCode, tc.status)
				}
				if tc.status != http.StatusUnauthorized {
					return
				}
				if got := resp.Header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("WWW-Authenticate %q; want Bearer", got)
				}
				var body struct {
					Detail string `json:"detail"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Detail != tc.detail {
					t.Errorf("body detail %q (%v); want %q", body.Detail, err, tc.detail)
				}
			})
		}
	})
}

func mustKeyID(t testing.TB, r *rig, raw string) string {
	t.Helper()
	p, err := r.keys.Authenticate(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return p.KeyID
}

// docs/api.md §5 ticket rules 2, 3 and 5: a ticket binds organisation and environment, not the
// area; it may open several streams within 300 s; an open stream outlives it.
func TestTicketStreams(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		liveTicket := r.mint(t, r.liveKey).Ticket
		sandboxTicket := r.mint(t, r.sandboxKey).Ticket
		sandboxEvent := r.publish(t, r.sandboxKey, "accident", center)
		liveEvent := r.publish(t, r.otherKey, "accident", offset(center, 5000))

		// Two areas with one live ticket (rules 2 and 5); live events only (docs/api.md §6 rule 6).
		here, snapHere := r.mustOpen(t, query(center, 1000)+"&ticket="+liveTicket, "")
		there, snapThere := r.mustOpen(t, query(offset(center, 5000), 1000)+"&ticket="+liveTicket, "")
		if len(snapHere.Events) != 0 {
			t.Errorf("live ticket's snapshot holds %v; want no sandbox event", ids(snapHere.Events))
		}
		if got := ids(snapThere.Events); len(got) != 1 || got[0] != liveEvent.EventID {
			t.Errorf("snapshot elsewhere %v; want %s", got, liveEvent.EventID)
		}
		_, snapSandbox := r.mustOpen(t, query(center, 1000)+"&ticket="+sandboxTicket, "")
		if got := ids(snapSandbox.Events); len(got) != 1 || got[0] != sandboxEvent.EventID {
			t.Errorf("sandbox ticket's snapshot %v; want %s", got, sandboxEvent.EventID)
		}

		// Rule 3: past the ticket's expiry the open streams go on.
		tab.Clock.Advance(10 * time.Minute)
		if _, status, _ := r.open(t, query(center, 1000)+"&ticket="+liveTicket, ""); status != http.StatusUnauthorized {
			t.Errorf("reconnect with the expired ticket: %d; want 401", status)
		}
		ev := r.publish(t, r.liveKey, "accident", center)
		expectDelta(t, here, stream.KindCreated, ev.EventID)
		r.timers.Fire(stream.KeepaliveInterval)
		there.Expect(t, stream.FrameKeepalive, nil)
	})
}

// docs/api.md §7 and §6 rule 1: the stream's query follows the rules of GET /v1/events (the same
// 422 body for the same query), and the credential is checked first.
func TestQueryValidation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		for name, q := range map[string]string{
			"lat missing":              "lon=11.5",
			"lat out of range":         "lat=91&lon=11.5",
			"lon out of range":         "lat=48&lon=-181",
			"lat not a number":         "lat=north&lon=11.5",
			"radius zero":              "lat=48&lon=11.5&radius=0",
			"radius negative":          "lat=48&lon=11.5&radius=-5",
			"radius above the maximum": "lat=48&lon=11.5&radius=9781",
			"unknown type":             "lat=48&lon=11.5&type=accident&type=meteor",
			"min_confidence above 1":   "lat=48&lon=11.5&min_confidence=1.5",
			"min_confidence below 0":   "lat=48&lon=11.5&min_confidence=-0.1",
			"everything wrong":         "lat=100&lon=200&radius=0&type=x&min_confidence=2",
		} {
			t.Run(name, func(t *testing.T) {
				_, status, body := r.open(t, q, r.liveKey)
				wantStatus, wantBody, _ := r.do(t, http.MethodGet, "/v1/events?"+q, r.liveKey, nil)
				if status != http.StatusUnprocessableEntity || wantStatus != http.StatusUnprocessableEntity {
					t.Fatalf("stream %d, GET /v1/events %d; want 422 for both", status, wantStatus)
				}
				var got, want struct{ Detail []schema.ValidationError }
				if err := json.Unmarshal(body, &got); err != nil || len(got.Detail) == 0 {
					t.Fatalf("stream 422 body %s: want a validation list", body)
				}
				json.Unmarshal(wantBody, &want)
				gotJSON, _ := json.Marshal(got)
				wantJSON, _ := json.Marshal(want)
				if string(gotJSON) != string(wantJSON) {
					t.Errorf("stream 422 %s\nwant the body of GET /v1/events %s", gotJSON, wantJSON)
				}
			})
		}
		// Credential before query (docs/api.md §6 rule 1: both before the stream starts).
		if _, status, _ := r.open(t, "lat=100", ""); status != http.StatusUnauthorized {
			t.Errorf("bad query without credential: %d; want 401", status)
		}
		// Defaults: radius 1000, min_confidence 0.
		_, snap := r.mustOpen(t, query(center, 0), r.liveKey)
		if snap.Events == nil {
			t.Errorf("snapshot events null; want an array")
		}
	})
}

// The stream route declares the parameters of GET /v1/events (then its ticket and the id to
// resume from), so /openapi.json documents the same rules for both and they cannot drift apart.
func TestStreamParamsMatchTheAreaQuery(t *testing.T) {
	t.Parallel()
	var list []schema.Param
	for _, rt := range eventstore.Routes(eventstore.Deps{}) {
		if rt.Method == http.MethodGet && rt.Path == "/v1/events" {
			list = rt.Params
		}
	}
	var streamParams []schema.Param
	for _, rt := range stream.Routes(stream.Deps{}) {
		streamParams = rt.Params
	}
	if len(list) == 0 || len(streamParams) != len(list)+2 {
		t.Fatalf("GET /v1/events has %d parameters, the stream %d; want the same plus ticket and last_event_id", len(list), len(streamParams))
	}
	for i, p := range list {
		s := streamParams[i]
		if s.Name != p.Name || s.In != p.In || s.Required != p.Required ||
			string(s.Schema.JSONSchema()) != string(p.Schema.JSONSchema()) {
			t.Errorf("parameter %d: stream %s %s; GET /v1/events %s %s", i, s.Name, s.Schema.JSONSchema(), p.Name, p.Schema.JSONSchema())
		}
	}
	for i, name := range []string{"ticket", "last_event_id"} {
		if p := streamParams[len(list)+i]; p.Name != name || p.Required {
			t.Errorf("stream parameter %d %q (required %v); want an optional %s", len(list)+i, p.Name, p.Required, name)
		}
	}
}

// docs/api.md §1 and §5: stream connects and tickets are counted per organisation, environment and
// day, and never refused (no 429 however many).
func TestMetering(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		r := newRig(t, tab)
		const tickets, connects = 12, 5
		var ticket string
		for range tickets {
			ticket = r.mint(t, r.sandboxKey).Ticket
		}
		for i := range connects {
			if i%2 == 0 {
				r.mustOpen(t, query(center, 1000), r.sandboxKey)
			} else {
				r.mustOpen(t, query(center, 1000)+"&ticket="+ticket, "")
			}
		}
		r.open(t, "lat=100&lon=0", r.sandboxKey) // refused: not a connect
		ctx := context.Background()
		if err := r.meter.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		now := tab.Clock.Now()
		days, err := r.meter.Read(ctx, "org_a", apikey.Sandbox, now, now)
		if err != nil || len(days) != 1 {
			t.Fatalf("Read = %v, %v", days, err)
		}
		if got := days[0].Totals; got.Get(metering.Tickets) != tickets || got.Get(metering.StreamConnects) != connects {
			t.Errorf("usage %+v; want %d tickets, %d stream connects", got, tickets, connects)
		}
		live, err := r.meter.Read(ctx, "org_a", apikey.Live, now, now)
		if err != nil || live[0].Totals.Get(metering.StreamConnects) != 0 {
			t.Errorf("live usage %+v, %v; want nothing counted on the live side", live, err)
		}
	})
}

// docs/api.md §1 and §10.2 (usage counters): HEAD is counted as what it does. HEAD /v1/events
// runs the same query as GET (only the body is left out), so it is a read; HEAD /v1/stream
// opens no stream: it answers the stream's header after the same checks as GET, holds no
// subscription and no place in the connection budget, and counts no stream connect.
func TestHeadIsMeteredAsWhatItDoes(t *testing.T) {
	t.Parallel()
	r := newRig(t, tables.Embedded(t))
	status, body, hdr := r.do(t, http.MethodHead, "/v1/stream?"+query(center, 1000), r.liveKey, nil)
	if status != http.StatusOK || len(body) != 0 || hdr.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD /v1/stream = %d %q %q; want 200, text/event-stream, no body", status, hdr.Get("Content-Type"), body)
	}
	if n := r.hub.Stats().Subscribers; n != 0 {
		t.Errorf("%d subscribers after HEAD /v1/stream; want none", n)
	}
	if status, _, _ := r.do(t, http.MethodHead, "/v1/stream?lat=100&lon=0", r.liveKey, nil); status != http.StatusUnprocessableEntity {
		t.Errorf("HEAD /v1/stream with a bad filter = %d; want 422 as GET", status)
	}
	if status, _, _ := r.do(t, http.MethodHead, "/v1/stream?"+query(center, 1000), "", nil); status != http.StatusUnauthorized {
		t.Errorf("HEAD /v1/stream without a credential = %d; want 401 as GET", status)
	}
	if status, _, hdr := r.do(t, http.MethodHead, "/v1/events?"+query(center, 1000), r.liveKey, nil); status != http.StatusOK || hdr.Get("Content-Length") == "" {
		t.Errorf("HEAD /v1/events = %d, Content-Length %q; want 200 with the length of GET's body", status, hdr.Get("Content-Length"))
	}
	ctx := context.Background()
	if err := r.meter.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	now := r.tab.Clock.Now()
	days, err := r.meter.Read(ctx, "org_a", apikey.Live, now, now)
	if err != nil || len(days) != 1 {
		t.Fatalf("Read = %v, %v", days, err)
	}
	if got := days[0].Totals; got.Get(metering.StreamConnects) != 0 || got.Get(metering.Reads) != 1 {
		t.Errorf("usage %+v; want no stream connect and 1 read", got)
	}
}
