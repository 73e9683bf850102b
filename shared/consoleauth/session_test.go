package consoleauth_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// Spec 4.2 and contract 3: GET /console/auth/me renews (a new token, 30 days from now) and the
// old token stays valid until its own expiry; a session ends at 30 days, a temp_token at 5
// minutes, on the injected clock.
func TestSessionRenewalAndExpiry(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		first := e.signIn("ada@example.com")
		e.clock.Advance(10 * 24 * time.Hour)
		r := e.call("GET", "/console/auth/me", first.Token, "")
		e.expect(r, http.StatusOK, consoleauth.SessionSchema, "GET me")
		renewed := decode[consoleauth.SessionOut](t, r)
		if renewed.Token == first.Token || !renewed.ExpiresAt.Equal(e.clock.Now().Add(consoleauth.SessionTTL)) {
			t.Errorf("renewed token %q expiring %v; want a new token expiring %v", renewed.Token, renewed.ExpiresAt, e.clock.Now().Add(consoleauth.SessionTTL))
		}
		if renewed.User.LastSeenAt == nil || !renewed.User.LastSeenAt.Equal(e.clock.Now()) {
			t.Errorf("last_seen_at %v; want now", renewed.User.LastSeenAt)
		}
		// The first token expires at its own time, 30 days after sign-in; the renewed one later.
		e.clock.Set(first.ExpiresAt.Add(-time.Second))
		e.expect(e.call("GET", "/console/auth/me", first.Token, ""), http.StatusOK, nil, "first token a second before expiry")
		e.clock.Set(first.ExpiresAt)
		r = e.call("GET", "/console/auth/me", first.Token, "")
		e.expect(r, http.StatusUnauthorized, nil, "first token at expiry")
		if got := detail(t, r); got != consoleauth.DetailInvalidSession {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidSession)
		}
		e.expect(e.call("GET", "/console/auth/me", renewed.Token, ""), http.StatusOK, nil, "renewed token")

		// temp_token: 5 minutes.
		g := e.signIn("grace@example.com")
		secret, _ := e.enableTOTP(g.Token)
		e.nextStep()
		temp := e.challenge("grace@example.com")
		e.clock.Advance(consoleauth.TempTokenTTL - time.Second)
		e.expect(e.call("POST", "/console/auth/verify-totp", temp, jsonBody(map[string]string{"code": e.wrongCode(secret)})),
			http.StatusBadRequest, nil, "temp_token a second before expiry (wrong code)")
		e.clock.Advance(time.Second)
		r = e.call("POST", "/console/auth/verify-totp", temp, jsonBody(map[string]string{"code": e.code(secret)}))
		e.expect(r, http.StatusUnauthorized, nil, "temp_token at expiry")
		if got := detail(t, r); got != consoleauth.DetailInvalidTemp {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidTemp)
		}
	})
}

// Spec 5 rule 5: logout ends every outstanding token of the user: all sessions (signed in
// twice, renewed) and a pending temp_token; other users' sessions stay.
func TestLogoutEndsEveryToken(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		a := e.signIn("ada@example.com")
		b := e.signIn("ada@example.com")
		renewed := decode[consoleauth.SessionOut](t, e.call("GET", "/console/auth/me", a.Token, ""))
		secret, _ := e.enableTOTP(a.Token)
		temp := e.challenge("ada@example.com")
		other := e.signIn("grace@example.com")

		r := e.call("POST", "/console/auth/logout", b.Token, "")
		e.expect(r, http.StatusOK, consoleauth.OkResponseSchema, "logout")
		if string(r.body) != `{"ok":true}` {
			t.Errorf("logout body %s; want {\"ok\":true}", r.body)
		}
		for name, tok := range map[string]string{"first": a.Token, "second (caller)": b.Token, "renewed": renewed.Token} {
			e.expect(e.call("GET", "/console/auth/me", tok, ""), http.StatusUnauthorized, nil, "GET me with the "+name+" session after logout")
		}
		e.expect(e.call("POST", "/console/auth/logout", b.Token, ""), http.StatusUnauthorized, nil, "logout again")
		e.nextStep()
		e.expect(e.call("POST", "/console/auth/verify-totp", temp, jsonBody(map[string]string{"code": e.code(secret)})),
			http.StatusUnauthorized, nil, "temp_token after logout")
		e.expect(e.call("GET", "/console/auth/me", other.Token, ""), http.StatusOK, nil, "another user's session")
		// Signing in again works.
		e.expect(e.call("POST", "/console/auth/verify-totp", e.challenge("ada@example.com"), jsonBody(map[string]string{"code": e.code(secret)})),
			http.StatusOK, consoleauth.SessionSchema, "sign-in after logout")
	})
}

// Spec 4 and 5: /console takes session tokens and /v1 API keys, never the other way round;
// temp_token only on verify-totp and verify-recovery. Every refusal is 401 {detail}.
func TestCredentialsDoNotCross(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		s := e.signIn("ada@example.com")
		e.enableTOTP(s.Token)
		temp := e.challenge("ada@example.com")
		key, _, err := apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}).Issue(t.Context(), apikey.IssueRequest{
			OrgID: "org_1", Environment: apikey.Live, Label: "test",
		})
		if err != nil {
			t.Fatal(err)
		}
		if r := e.call("GET", "/v1/events?lat=0&lon=0", key, ""); r.status != http.StatusOK {
			t.Fatalf("GET /v1/events with the API key = %s; want 200 (the key works where it belongs)", r)
		}
		cases := []struct {
			name, method, path, auth, body, detail string
		}{
			{"NoToken", "GET", "/console/auth/me", "", "", consoleauth.DetailMissingSession},
			{"APIKeyOnConsole", "GET", "/console/auth/me", "Bearer " + key, "", consoleauth.DetailInvalidSession},
			{"TempTokenAsSession", "GET", "/console/auth/me", "Bearer " + temp, "", consoleauth.DetailInvalidSession},
			{"UnknownSession", "GET", "/console/auth/me", "Bearer ses_" + strings.Repeat("a", 43), "", consoleauth.DetailInvalidSession},
			{"MalformedSession", "GET", "/console/auth/me", "Bearer ses_short", "", consoleauth.DetailInvalidSession},
			{"BasicScheme", "GET", "/console/auth/me", "Basic " + s.Token, "", consoleauth.DetailMissingSession},
			{"SessionAsTempToken", "POST", "/console/auth/verify-totp", "Bearer " + s.Token, `{"code":"123456"}`, consoleauth.DetailInvalidTemp},
			{"APIKeyAsTempToken", "POST", "/console/auth/verify-recovery", "Bearer " + key, `{"code":"aaaaa-aaaaa"}`, consoleauth.DetailInvalidTemp},
			{"NoTempToken", "POST", "/console/auth/verify-totp", "", `{"code":"123456"}`, consoleauth.DetailMissingTemp},
			{"SessionOnV1", "GET", "/v1/events?lat=0&lon=0", "Bearer " + s.Token, "", apikey.DetailInvalid},
			{"TempTokenOnV1", "GET", "/v1/events?lat=0&lon=0", "Bearer " + temp, "", apikey.DetailInvalid},
			// A credential failure comes before validation (401 even with a bad body).
			{"NoTokenBadBody", "PATCH", "/console/auth/me", "", `{"nope":1}`, consoleauth.DetailMissingSession},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				r := e.callAuth(tc.method, tc.path, tc.auth, tc.body)
				e.expect(r, http.StatusUnauthorized, nil, tc.name)
				if got := detail(t, r); got != tc.detail {
					t.Errorf("detail %q; want %q", got, tc.detail)
				}
			})
		}
		// None of the refusals touched the real session.
		e.expect(e.call("GET", "/console/auth/me", s.Token, ""), http.StatusOK, nil, "the session itself")
	})
}
