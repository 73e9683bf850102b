package eventstore_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §7, POST /v1/events 201, and §4.1 rule 2: the event takes the credential's
// environment and the network-owned fields start where docs/api.md §10.2 says.
func TestPublishCreates(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		for _, env := range []string{live, sandbox} {
			key := h.key("org_a", env)
			r := h.do("POST", "/v1/events", key, point("accident", 48.123456, 11.654321).
				with("severity", "high").with("description", "Two cars").with("heading", 90))
			e := r.event(t, http.StatusCreated)
			if got, want := r.Header.Get("Location"), "/v1/events/"+e.EventID; got != want {
				t.Errorf("Location = %q; want %q", got, want)
			}
			if !strings.HasPrefix(e.EventID, "ev_") || len(e.EventID) != 29 {
				t.Errorf("event_id = %q; want ev_ and 26 characters (docs/api.md §10.2)", e.EventID)
			}
			if e.Environment != env {
				t.Errorf("environment = %q; want the credential's %q (docs/api.md §4.1 rule 2)", e.Environment, env)
			}
			// docs/api.md §2.2: coordinates rounded to 5 decimals on write.
			if e.Lat != 48.12346 || e.Lon != 11.65432 {
				t.Errorf("lat, lon = %v, %v; want 48.12346, 11.65432", e.Lat, e.Lon)
			}
			if e.Status != "active" || e.Verification != "unverified" || e.Confidence != 0.667 ||
				e.ConfirmCount != 0 || e.DenyCount != 0 || e.SourceKind != "publisher" || e.SchemaVersion != 1 {
				t.Errorf("network-owned fields = %+v; want active, unverified, 0.667, 0/0, publisher, 1 (docs/api.md §10.2)", e)
			}
			if !e.CreatedAt.Equal(tab.Clock.Now()) || e.ExpiresAt.Sub(e.CreatedAt) != 2*time.Hour {
				t.Errorf("created_at %v, expires_at %v; want now and now + 2 h (docs/api.md §2.1: accident)", e.CreatedAt, e.ExpiresAt)
			}
			got := h.do("GET", "/v1/events/"+e.EventID, key, nil).event(t, http.StatusOK)
			if got.EventID != e.EventID || got.ExpiresAt != e.ExpiresAt {
				t.Errorf("GET after publish = %+v; want the published event", got)
			}
		}
	})
}

// docs/api.md §4.1 rule 1 and §7: idempotency by client_event_id.
func TestPublishIdempotency(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		liveKey, sandboxKey := h.key("org_a", live), h.key("org_a", sandbox)
		otherOrg := h.key("org_b", live)
		body := point("road_damage", 50.1, 8.6).with("client_event_id", "c-1").with("subtype", "pothole").
			with("occurred_at", "2039-12-31T23:00:00+01:00").with("reporter_token", "veh-7")
		first := h.publish(liveKey, body)

		tab.Clock.Advance(time.Minute)
		// A faithful replay, with coordinates that round to the same stored values and the same
		// instant written in another zone, is 200 with the stored event and creates nothing.
		replay := h.do("POST", "/v1/events", liveKey, body.with("lat", 50.1000001).
			with("occurred_at", "2039-12-31T22:00:00Z")).event(t, http.StatusOK)
		if replay.EventID != first.EventID || !replay.CreatedAt.Equal(first.CreatedAt) {
			t.Errorf("replay = %s created %v; want %s created %v", replay.EventID, replay.CreatedAt, first.EventID, first.CreatedAt)
		}

		for _, tc := range []struct {
			name, field string
			body        eventBody
		}{
			{"other position", "lat", body.with("lat", 50.2)},
			{"other severity", "severity", body.with("severity", "low")},
			{"other reporter_token", "reporter_token", body.with("reporter_token", "veh-8")},
			{"type before lat", "type", body.with("type", "accident").with("subtype", nil).with("lat", 50.3)},
		} {
			d := h.do("POST", "/v1/events", liveKey, tc.body).detail(t, http.StatusConflict)
			if !strings.Contains(d, tc.field) {
				t.Errorf("%s: detail %q; want it to name the first differing field %q (docs/api.md §4.1 rule 1)", tc.name, d, tc.field)
			}
		}

		// The same client_event_id from the same organisation's other environment is 409.
		d := h.do("POST", "/v1/events", sandboxKey, body).detail(t, http.StatusConflict)
		if !strings.Contains(d, "environment") {
			t.Errorf("other environment: detail %q; want it to say the id is used in the other environment", d)
		}
		// Another organisation's client_event_id is its own (docs/api.md §10.2: the id is
		// derived from the pair).
		if other := h.publish(otherOrg, body); other.EventID == first.EventID {
			t.Errorf("org_b's event has org_a's id %s", other.EventID)
		}
		// Without client_event_id no replay detection applies: two events.
		plain := point("accident", 1, 1)
		if a, b := h.publish(liveKey, plain), h.publish(liveKey, plain); a.EventID == b.EventID {
			t.Errorf("two publishes without client_event_id share id %s", a.EventID)
		}
		if u := h.usage("org_a", live); u.Publishes != 8 {
			t.Errorf("publishes metered for org_a live = %d; want 8 (every valid publish, replays and conflicts included)", u.Publishes)
		}
	})
}

// docs/api.md §4.1 rule 1: 20 identical concurrent publishes create exactly one event.
func TestPublishRace(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		body := point("stopped_vehicle", 45.5, 9.2).with("client_event_id", "race")
		const n = 20
		replies := make([]reply, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { replies[i] = h.do("POST", "/v1/events", key, body) })
		}
		wg.Wait()
		created, replayed := 0, 0
		ids := map[string]bool{}
		for _, r := range replies {
			switch r.Status {
			case http.StatusCreated:
				created++
			case http.StatusOK:
				replayed++
			default:
				t.Errorf("status %d %s; want 201 or 200", r.Status, r.Body)
				continue
			}
			ids[r.event(t, r.Status).EventID] = true
		}
		if created != 1 || replayed != n-1 || len(ids) != 1 {
			t.Errorf("created %d, replayed %d, distinct ids %d; want 1, %d, 1", created, replayed, len(ids), n-1)
		}
		if got := h.area(key, q(45.5, 9.2)); len(got) != 1 {
			t.Errorf("GET /v1/events found %d events; want exactly one", len(got))
		}
	})
}

// docs/api.md §7, POST /v1/events 422: every cause of the row, each at its loc with its type
// (docs/api.md §10.1), and every error of a payload in one answer.
func TestPublishValidation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		ok := point("accident", 48, 11)
		line := func(n int) map[string]any {
			coords := make([][2]float64, n)
			for i := range coords {
				coords[i] = [2]float64{11 + float64(i)*0.0001, 48}
			}
			return map[string]any{"type": "LineString", "coordinates": coords}
		}
		for _, tc := range []struct {
			name string
			body any
			want problem
		}{
			{"unknown field", ok.with("colour", "red"), problem{"extra_forbidden", `["body","colour"]`}},
			{"environment is not an input", ok.with("environment", "sandbox"), problem{"extra_forbidden", `["body","environment"]`}},
			{"unknown type", ok.with("type", "other"), problem{"enum", `["body","type"]`}},
			{"subtype under the wrong type", ok.with("subtype", "pothole"), problem{"value_error", `["body","subtype"]`}},
			{"lat out of range", ok.with("lat", 90.5), problem{"less_than_equal", `["body","lat"]`}},
			{"lon out of range", ok.with("lon", -181), problem{"greater_than_equal", `["body","lon"]`}},
			{"lat/lon differ from geometry start", ok.with("geometry", line(3)).with("lat", 48.5), problem{"value_error", `["body","geometry"]`}},
			{"geometry position latitude out of range", ok.with("lon", 11).with("geometry",
				map[string]any{"coordinates": [][2]float64{{11, 48}, {11, 95}}}), problem{"less_than_equal", `["body","geometry","coordinates",1,1]`}},
			{"naive occurred_at", ok.with("occurred_at", "2040-01-01T00:00:00"), problem{"timezone_aware", `["body","occurred_at"]`}},
			{"future occurred_at", ok.with("occurred_at", tab.Clock.Now().Add(301*time.Second).Format(time.RFC3339)), problem{"value_error", `["body","occurred_at"]`}},
			{"description over 280", ok.with("description", strings.Repeat("x", 281)), problem{"string_too_long", `["body","description"]`}},
			{"road_ref over 32", ok.with("road_ref", strings.Repeat("A", 33)), problem{"string_too_long", `["body","road_ref"]`}},
			{"geometry of 1 point", ok.with("lon", 11).with("geometry", line(1)), problem{"too_short", `["body","geometry","coordinates"]`}},
			{"geometry of 513 points", ok.with("lon", 11).with("geometry", line(513)), problem{"too_long", `["body","geometry","coordinates"]`}},
			{"bad client_event_id", ok.with("client_event_id", "a b"), problem{"string_pattern_mismatch", `["body","client_event_id"]`}},
			{"no body", nil, problem{"missing", `["body"]`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h.do("POST", "/v1/events", key, tc.body).hasProblem(t, tc.want)
			})
		}
		t.Run("every error at once", func(t *testing.T) {
			got := h.do("POST", "/v1/events", key, ok.with("description", strings.Repeat("x", 281)).
				with("geometry", line(3)).with("lat", 48.5)).problems(t)
			want := []problem{{"value_error", `["body","geometry"]`}, {"string_too_long", `["body","description"]`}}
			if len(got) != 2 || !containsAll(got, want) {
				t.Errorf("errors = %v; want both %v (docs/api.md §10.1: every error is reported)", got, want)
			}
		})
		t.Run("a geometry too long to index", func(t *testing.T) {
			coords := [][2]float64{}
			for i := range 60 { // 60 km east, at 1 km per position
				coords = append(coords, [2]float64{11 + float64(i)*0.0134, 48})
			}
			h.do("POST", "/v1/events", key, ok.with("geometry", map[string]any{"coordinates": coords})).
				hasProblem(t, problem{"value_error", `["body","geometry"]`})
		})
		if u := h.usage("org_a", live); u.Publishes != 1 {
			t.Errorf("publishes metered = %d; want 1: only the payload that passed validation (the "+
				"extent too long to index)", u.Publishes)
		}
	})
}

func containsAll(got, want []problem) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			return false
		}
	}
	return true
}

// docs/api.md §5 API key rule 5 and §7: 401 with WWW-Authenticate: Bearer on every route of the
// group, and a revoked key is refused from the next request on (docs/api.md §3).
func TestCredentials(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		key := h.key("org_a", live)
		e := h.publish(key, point("accident", 10, 10))
		routes := []apitest.Scenario{
			{Name: "publish", Method: "POST", Path: "/v1/events", Body: `{"type":"accident","lat":1,"lon":1}`},
			{Name: "list", Method: "GET", Path: "/v1/events?lat=1&lon=1"},
			{Name: "get", Method: "GET", Path: "/v1/events/" + e.EventID},
			{Name: "revise", Method: "POST", Path: "/v1/events/" + e.EventID + "/revisions", Body: `{"lat":1,"lon":1}`},
			{Name: "signal", Method: "POST", Path: "/v1/events/" + e.EventID + "/signals", Body: `{"action":"confirm"}`},
		}
		refused := func(who, credential, wantDetail string) []apitest.Scenario {
			out := apitest.As(who, credential, http.StatusUnauthorized, routes)
			for i := range out {
				out[i].WantDetail, out[i].WantHeader = wantDetail, map[string]string{"WWW-Authenticate": "Bearer"}
			}
			return out
		}
		h.client(t).Run(t, append(refused("missing key:", "", apikey.DetailMissing),
			refused("unknown key:", "svc_"+strings.Repeat("a", 43), apikey.DetailInvalid)...))

		h.do("GET", "/v1/events/"+e.EventID, key, nil).expect(t, http.StatusOK)
		p, err := h.keys.Authenticate(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.keys.Revoke(t.Context(), "org_a", p.KeyID, nil); err != nil {
			t.Fatal(err)
		}
		h.client(t).Run(t, refused("revoked key:", key, apikey.DetailInvalid))
	})
}
