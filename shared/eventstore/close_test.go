package eventstore_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/network.md §3: the publisher ends its own event early with POST .../close, with no body or
// an empty object: the event becomes expired with expires_at at that moment, leaves the area query
// (docs/api.md §4.1 rule 3) and stays readable (docs/api.md §4.1 rule 4); then it is over
// (docs/api.md §3: signals and revisions 409).
func TestClose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body any // nil: no body
	}{
		{"no body", nil},
		{"empty object", "{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tables.Each(t, func(t *testing.T, tab tables.Table) {
				t.Parallel()
				h := newHarness(t, tab)
				key := h.key("org_a", live)
				e := h.publish(key, point("accident", 51.5, -0.12))
				tab.Clock.Advance(10 * time.Minute)

				got := h.do("POST", "/v1/events/"+e.EventID+"/close", key, tc.body).event(t, http.StatusOK)
				if got.EventID != e.EventID || got.Status != "expired" || !got.ExpiresAt.Equal(tab.Clock.Now()) {
					t.Errorf("closed = %s, status %s, expires_at %v; want %s, expired, now %v", got.EventID, got.Status,
						got.ExpiresAt, e.EventID, tab.Clock.Now())
				}
				if listed := h.area(key, q(51.5, -0.12)); len(listed) != 0 {
					t.Errorf("area query after the close = %v; want nothing", ids(listed))
				}
				read := h.do("GET", "/v1/events/"+e.EventID, key, nil).event(t, http.StatusOK)
				if read.Status != "expired" || !read.ExpiresAt.Equal(got.ExpiresAt) {
					t.Errorf("GET after the close: status %s, expires_at %v; want expired, %v", read.Status, read.ExpiresAt, got.ExpiresAt)
				}
				h.do("POST", "/v1/events/"+e.EventID+"/signals", key, map[string]any{"action": "confirm"}).detail(t, http.StatusConflict)
				h.do("POST", "/v1/events/"+e.EventID+"/revisions", key, map[string]any{"lat": 51.5, "lon": -0.12}).detail(t, http.StatusConflict)
			})
		})
	}
}

// docs/network.md §3 and docs/api.md §7 (the revision's rows): who may close which event, events
// over already, and bodies other than nothing or an empty object. The bodies are empty objects, so
// that the access rules are checked apart from the absent body (TestClose).
func TestCloseRefusals(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		liveKey, sandboxKey := h.key("org_a", live), h.key("org_a", sandbox)
		otherLive, otherSandbox := h.key("org_b", live), h.key("org_b", sandbox)
		spot := geo.Point{Lat: 53.35, Lon: -6.26}
		own := h.publish(liveKey, point("accident", 0, 0).at(spot))
		sandboxEvent := h.publish(sandboxKey, point("accident", 0, 0).at(spot))

		closedTwice := h.publish(liveKey, point("accident", 0, 0).at(north(spot, 5000)))
		h.do("POST", "/v1/events/"+closedTwice.EventID+"/close", liveKey, "{}").expect(t, http.StatusOK)
		// org_b's report of own's hazard is merged into it (docs/network.md §1).
		merged := h.do("POST", "/v1/events", otherLive, point("accident", 0, 0).at(spot)).event(t, http.StatusCreated)
		checkMergedInto(t, merged, own.EventID)
		denied := h.publish(liveKey, point("accident", 0, 0).at(north(spot, 10000)))
		for i := range 3 {
			h.do("POST", "/v1/events/"+denied.EventID+"/signals", otherLive, map[string]any{
				"action": "deny", "reporter_token": "d" + strconv.Itoa(i)}).expect(t, http.StatusOK)
		}
		expired := h.publish(liveKey, point("wrong_way_vehicle", 0, 0).at(north(spot, 15000)))
		tab.Clock.Set(expired.ExpiresAt)

		for _, tc := range []struct {
			name, key, id string
			body          any
			want          int
			problem       *problem
		}{
			{"another organisation's event", otherLive, own.EventID, "{}", http.StatusForbidden, nil},
			{"another organisation's sandbox key on a live event", otherSandbox, own.EventID, "{}", http.StatusForbidden, nil},
			{"own live event from a sandbox key", sandboxKey, own.EventID, "{}", http.StatusForbidden, nil},
			{"own sandbox event from a live key (not served)", liveKey, sandboxEvent.EventID, "{}", http.StatusNotFound, nil},
			{"unknown id", liveKey, "ev_" + strings.Repeat("d", 26), "{}", http.StatusNotFound, nil},
			{"malformed id", liveKey, "x", "{}", http.StatusNotFound, nil},
			{"closed already", liveKey, closedTwice.EventID, "{}", http.StatusConflict, nil},
			{"merged", otherLive, merged.EventID, "{}", http.StatusConflict, nil},
			{"ended by the deny quorum", liveKey, denied.EventID, "{}", http.StatusConflict, nil},
			{"expired by time", liveKey, expired.EventID, "{}", http.StatusConflict, nil},
			{"a reason (unknown field)", liveKey, own.EventID, map[string]any{"reason": "x"}, 0, &problem{"extra_forbidden", `["body","reason"]`}},
			{"not an object", liveKey, own.EventID, "[1]", 0, &problem{"model_attributes_type", `["body"]`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := h.do("POST", "/v1/events/"+tc.id+"/close", tc.key, tc.body)
				if tc.problem != nil {
					r.hasProblem(t, *tc.problem)
					return
				}
				r.detail(t, tc.want)
			})
		}
		if got := h.do("GET", "/v1/events/"+own.EventID, liveKey, nil).event(t, http.StatusOK); got.Status != "active" {
			t.Errorf("after the refused closes: status %s; want active", got.Status)
		}
		if got := h.do("GET", "/v1/events/"+sandboxEvent.EventID, sandboxKey, nil).event(t, http.StatusOK); got.Status != "active" {
			t.Errorf("sandbox event after the refused close: status %s; want active", got.Status)
		}
	})
}

// docs/network.md §3: the close route is documented in /openapi.json (operation closeEvent)
// with a body that may be left out, and the answers of a revision.
func TestCloseDocumented(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	api := apptest.New(t, app.Deps{Config: config.Default(), Table: tab, Clock: tab.Clock}, routetable.GroupMeta)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	r := apitest.Client{T: t, URL: srv.URL}.Call("GET", "/openapi.json", "", "")
	if r.Status != http.StatusOK {
		t.Fatalf("GET /openapi.json = %s", r)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			RequestBody *struct {
				Required bool `json:"required"`
			} `json:"requestBody"`
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	op, ok := doc.Paths["/v1/events/{event_id}/close"]["post"]
	if !ok || op.OperationID != "closeEvent" {
		t.Fatalf("POST /v1/events/{event_id}/close = %+v; want operation closeEvent", op)
	}
	if op.RequestBody == nil || op.RequestBody.Required {
		t.Errorf("requestBody = %+v; want one that is not required", op.RequestBody)
	}
	for _, status := range []string{"200", "403", "404", "409", "422"} {
		if op.Responses[status] == nil {
			t.Errorf("closeEvent documents no %s response", status)
		}
	}
}
