package apikey_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// server is the real router with the middleware, serving one route per kind of security.
type server struct {
	h   http.Handler
	log *apitest.LogBuffer
}

// whoami answers the principal the middleware put in the context, or "none".
var whoami = httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
	p, ok := apikey.PrincipalFrom(r.Context())
	if !ok {
		return httpapi.WriteJSON(w, http.StatusOK, map[string]string{"principal": "none"})
	}
	return httpapi.WriteJSON(w, http.StatusOK, p)
})

// tickets accepts the one ticket "svc_st_good" for org_t live, and fails on "svc_st_down".
type tickets struct{}

func (tickets) VerifyTicket(_ context.Context, ticket string) (apikey.Principal, error) {
	switch ticket {
	case "svc_st_good":
		return apikey.Principal{OrgID: "org_t", Environment: apikey.Live, KeyID: "key_t"}, nil
	case "svc_st_down":
		return apikey.Principal{}, errors.New("table unavailable")
	}
	return apikey.Principal{}, apikey.ErrInvalidTicket
}

func newServer(t *testing.T, keys apikey.Authenticator) *server {
	t.Helper()
	buf := &apitest.LogBuffer{}
	api := httpapi.New(httpapi.Config{
		Logger:     slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Middleware: []httpapi.RouteMiddleware{apikey.Middleware(keys, apikey.MiddlewareOptions{Tickets: tickets{}})},
	})
	api.Handle(
		httpapi.Route{Method: "GET", Path: "/v1/events", Security: []httpapi.Security{httpapi.SecurityAPIKey}, Handler: whoami},
		httpapi.Route{Method: "GET", Path: "/v1/stream", Security: []httpapi.Security{httpapi.SecurityAPIKey, httpapi.SecurityStreamTicket}, Handler: whoami},
		httpapi.Route{Method: "GET", Path: "/v1/meta/limits", Handler: whoami},
		httpapi.Route{Method: "GET", Path: "/console/auth/me", Security: []httpapi.Security{httpapi.SecuritySession}, Handler: whoami},
	)
	return &server{h: api.Handler(), log: buf}
}

func (s *server) do(t *testing.T, target string, authorization ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), "GET", target, nil)
	for _, a := range authorization {
		r.Header.Add("Authorization", a)
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	return w
}

// TestMiddleware: docs/api.md §5 API key rule 5 and §7: every credential failure on /v1 is 401
// with WWW-Authenticate: Bearer and {"detail": <sentence>}; the detail says the key is
// missing, or invalid or revoked. docs/api.md §5 ticket rule 4: a header present decides.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		srv := newServer(t, e.keys)
		raw, key := e.issue("org_m", apikey.Sandbox, "mw")
		rawRevoked, revoked := e.issue("org_m", apikey.Live, "to revoke")

		// The key to revoke works until it is revoked, then fails on the very next request.
		if w := srv.do(t, "/v1/events", "Bearer "+rawRevoked); w.Code != http.StatusOK {
			t.Fatalf("GET /v1/events with the key before revocation = %d %s; want 200", w.Code, w.Body)
		}
		if _, err := e.keys.Revoke(t.Context(), "org_m", revoked.KeyID, nil); err != nil {
			t.Fatalf("Revoke = %v", err)
		}

		refused := []struct {
			name   string
			target string
			auth   []string
			detail string
		}{
			{"NoHeader", "/v1/events", nil, apikey.DetailMissing},
			{"EmptyHeader", "/v1/events", []string{""}, apikey.DetailMissing},
			{"Basic", "/v1/events", []string{"Basic dXNlcjpwYXNz"}, apikey.DetailMissing},
			{"BearerWithoutToken", "/v1/events", []string{"Bearer"}, apikey.DetailMissing},
			{"EmptyBearer", "/v1/events", []string{"Bearer "}, apikey.DetailMissing},
			{"KeyWithoutScheme", "/v1/events", []string{raw}, apikey.DetailMissing},
			{"TwoHeaders", "/v1/events", []string{"Bearer " + raw, "Bearer " + raw}, apikey.DetailMissing},
			{"UnknownKey", "/v1/events", []string{"Bearer svc_" + strings.Repeat("Z", 43)}, apikey.DetailInvalid},
			{"MalformedKey", "/v1/events", []string{"Bearer svc_short"}, apikey.DetailInvalid},
			{"RevokedKey", "/v1/events", []string{"Bearer " + rawRevoked}, apikey.DetailInvalid},
			{"StreamTicketAsKey", "/v1/events", []string{"Bearer svc_st_" + strings.Repeat("a", 43)}, apikey.DetailInvalid},
			{"SessionToken", "/v1/events", []string{"Bearer ses_" + strings.Repeat("a", 43)}, apikey.DetailInvalid},
			{"TicketQueryOnKeyOnlyRoute", "/v1/events?ticket=svc_st_good", nil, apikey.DetailMissing},
			{"StreamWithoutCredential", "/v1/stream", nil, apikey.DetailMissingCredential},
			{"StreamUnknownTicket", "/v1/stream?ticket=svc_st_unknown", nil, apikey.DetailInvalidTicket},
			{"StreamEmptyTicket", "/v1/stream?ticket=", nil, apikey.DetailInvalidTicket},
			{"StreamBadHeaderWithGoodTicket", "/v1/stream?ticket=svc_st_good", []string{"Bearer svc_" + strings.Repeat("Z", 43)}, apikey.DetailInvalid},
			{"StreamEmptyHeaderWithGoodTicket", "/v1/stream?ticket=svc_st_good", []string{""}, apikey.DetailMissing},
		}
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				w := srv.do(t, tc.target, tc.auth...)
				if w.Code != http.StatusUnauthorized {
					t.Fatalf("GET %s = %d %s; want 401", tc.target, w.Code, w.Body)
				}
				if got := w.Header().Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("WWW-Authenticate = %q; want %q", got, "Bearer")
				}
				var body map[string]any
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body) != 1 || body["detail"] != tc.detail {
					t.Errorf("body = %s; want {\"detail\": %q}", w.Body, tc.detail)
				}
			})
		}

		accepted := []struct {
			name   string
			target string
			auth   []string
			want   apikey.Principal
		}{
			{"Key", "/v1/events", []string{"Bearer " + raw}, apikey.Principal{OrgID: "org_m", Environment: apikey.Sandbox, KeyID: key.KeyID}},
			{"LowerCaseScheme", "/v1/events", []string{"bearer " + raw}, apikey.Principal{OrgID: "org_m", Environment: apikey.Sandbox, KeyID: key.KeyID}},
			{"KeyOnStream", "/v1/stream", []string{"Bearer " + raw}, apikey.Principal{OrgID: "org_m", Environment: apikey.Sandbox, KeyID: key.KeyID}},
			{"KeyBeatsTicket", "/v1/stream?ticket=svc_st_good", []string{"Bearer " + raw}, apikey.Principal{OrgID: "org_m", Environment: apikey.Sandbox, KeyID: key.KeyID}},
			{"Ticket", "/v1/stream?ticket=svc_st_good", nil, apikey.Principal{OrgID: "org_t", Environment: apikey.Live, KeyID: "key_t"}},
		}
		for _, tc := range accepted {
			t.Run(tc.name, func(t *testing.T) {
				w := srv.do(t, tc.target, tc.auth...)
				var got apikey.Principal
				if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || got != tc.want {
					t.Errorf("GET %s = %d %s; want 200 with principal %+v", tc.target, w.Code, w.Body, tc.want)
				}
			})
		}

		// Open routes and console routes are not this middleware's: no principal, no 401.
		for _, target := range []string{"/v1/meta/limits", "/console/auth/me"} {
			w := srv.do(t, target, "Bearer svc_"+strings.Repeat("Z", 43))
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"none"`) {
				t.Errorf("GET %s = %d %s; want 200 without a principal", target, w.Code, w.Body)
			}
		}

		// The key never reaches the log, not even its listed prefix; the key_id may.
		if err := e.keys.Wait(t.Context()); err != nil {
			t.Fatalf("Wait = %v", err)
		}
		logged := srv.log.String()
		for _, secret := range []string{raw[4:12], rawRevoked[4:12]} {
			if strings.Contains(logged, secret) {
				t.Errorf("log holds a key: %s", logged)
			}
		}
		if !strings.Contains(logged, revoked.KeyID) {
			t.Errorf("log does not name the revoked key %s: %s", revoked.KeyID, logged)
		}
	})
}

// failingAuth is a key store whose table is down.
type failingAuth struct{}

func (failingAuth) Authenticate(context.Context, string) (apikey.Principal, error) {
	return apikey.Principal{}, errors.New("table unavailable")
}

// TestMiddlewareServiceFailure: a failing table is a 500, never a 401 that would tell a
// client its working key is revoked (so it stops retrying, docs/api.md §7 client retry rules).
func TestMiddlewareServiceFailure(t *testing.T) {
	t.Parallel()
	srv := newServer(t, failingAuth{})
	cases := []struct {
		name, target string
		auth         []string
	}{
		{"Key", "/v1/events", []string{"Bearer svc_" + strings.Repeat("Z", 43)}},
		{"Ticket", "/v1/stream?ticket=svc_st_down", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := srv.do(t, tc.target, tc.auth...)
			if w.Code != http.StatusInternalServerError || w.Header().Get("WWW-Authenticate") != "" {
				t.Errorf("GET %s with the table down = %d (WWW-Authenticate %q); want 500 without it", tc.target, w.Code, w.Header().Get("WWW-Authenticate"))
			}
		})
	}
}
