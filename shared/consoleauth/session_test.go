package consoleauth_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.2 and §10.3: GET /console/auth/me renews (a new token, 30 days from now) and the
// old token stays valid until its own expiry; a session ends at 30 days, a temp_token at 5
// minutes, on the injected clock.
func TestSessionRenewalAndExpiry(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		first := e.signIn("ada@example.com")
		e.clock.Advance(10 * 24 * time.Hour)
		r := e.Call("GET", "/console/auth/me", first.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "GET me")
		renewed := apitest.Decode[consoleauth.SessionOut](t, r)
		if renewed.Token == first.Token || !renewed.ExpiresAt.Equal(e.clock.Now().Add(consoleauth.SessionTTL)) {
			t.Errorf("renewed token %q expiring %v; want a new token expiring %v", renewed.Token, renewed.ExpiresAt, e.clock.Now().Add(consoleauth.SessionTTL))
		}
		if renewed.User.LastSeenAt == nil || !renewed.User.LastSeenAt.Equal(e.clock.Now()) {
			t.Errorf("last_seen_at %v; want now", renewed.User.LastSeenAt)
		}
		// The first token expires at its own time, 30 days after sign-in; the renewed one later.
		e.clock.Set(first.ExpiresAt.Add(-time.Second))
		e.Expect(e.Call("GET", "/console/auth/me", first.Token, ""), http.StatusOK, nil, "first token a second before expiry")
		e.clock.Set(first.ExpiresAt)
		r = e.Call("GET", "/console/auth/me", first.Token, "")
		if got := e.ExpectDetail(r, http.StatusUnauthorized, "first token at expiry"); got != consoleauth.DetailInvalidSession {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidSession)
		}
		e.Expect(e.Call("GET", "/console/auth/me", renewed.Token, ""), http.StatusOK, nil, "renewed token")

		// temp_token: 5 minutes.
		g := e.signIn("grace@example.com")
		secret, _ := e.enableTOTP(g.Token)
		e.nextStep()
		temp := e.challenge("grace@example.com")
		e.clock.Advance(consoleauth.TempTokenTTL - time.Second)
		e.Expect(e.Call("POST", "/console/auth/verify-totp", temp, apitest.JSON(map[string]string{"code": e.wrongCode(secret)})),
			http.StatusBadRequest, nil, "temp_token a second before expiry (wrong code)")
		e.clock.Advance(time.Second)
		r = e.Call("POST", "/console/auth/verify-totp", temp, apitest.JSON(map[string]string{"code": e.code(secret)}))
		if got := e.ExpectDetail(r, http.StatusUnauthorized, "temp_token at expiry"); got != consoleauth.DetailInvalidTemp {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidTemp)
		}
	})
}

// docs/api.md §5 console rule 5: logout ends every outstanding token of the user: all sessions (signed in
// twice, renewed) and a pending temp_token; other users' sessions stay.
func TestLogoutEndsEveryToken(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		a := e.signIn("ada@example.com")
		b := e.signIn("ada@example.com")
		renewed := apitest.Decode[consoleauth.SessionOut](t, e.Call("GET", "/console/auth/me", a.Token, ""))
		secret, _ := e.enableTOTP(a.Token)
		temp := e.challenge("ada@example.com")
		other := e.signIn("grace@example.com")

		r := e.Call("POST", "/console/auth/logout", b.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.OkResponseSchema, "logout")
		if string(r.Body) != `{"ok":true}` {
			t.Errorf("logout body %s; want {\"ok\":true}", r.Body)
		}
		for name, tok := range map[string]string{"first": a.Token, "second (caller)": b.Token, "renewed": renewed.Token} {
			e.Expect(e.Call("GET", "/console/auth/me", tok, ""), http.StatusUnauthorized, nil, "GET me with the "+name+" session after logout")
		}
		e.Expect(e.Call("POST", "/console/auth/logout", b.Token, ""), http.StatusUnauthorized, nil, "logout again")
		e.nextStep()
		e.Expect(e.Call("POST", "/console/auth/verify-totp", temp, apitest.JSON(map[string]string{"code": e.code(secret)})),
			http.StatusUnauthorized, nil, "temp_token after logout")
		e.Expect(e.Call("GET", "/console/auth/me", other.Token, ""), http.StatusOK, nil, "another user's session")
		// Signing in again works.
		e.Expect(e.Call("POST", "/console/auth/verify-totp", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": e.code(secret)})),
			http.StatusOK, consoleauth.SessionSchema, "sign-in after logout")
	})
}

// docs/api.md §4 and §5: /console takes session tokens and /v1 API keys, never the other way round;
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
		if r := e.Call("GET", "/v1/events?lat=0&lon=0", key, ""); r.Status != http.StatusOK {
			t.Fatalf("GET /v1/events with the API key = %s; want 200 (the key works where it belongs)", r)
		}
		const unauthorized = http.StatusUnauthorized
		e.Run(t, []apitest.Scenario{
			{Name: "NoToken", Method: "GET", Path: "/console/auth/me", WantStatus: unauthorized, WantDetail: consoleauth.DetailMissingSession},
			{Name: "APIKeyOnConsole", Token: key, Method: "GET", Path: "/console/auth/me", WantStatus: unauthorized, WantDetail: consoleauth.DetailInvalidSession},
			{Name: "TempTokenAsSession", Token: temp, Method: "GET", Path: "/console/auth/me", WantStatus: unauthorized, WantDetail: consoleauth.DetailInvalidSession},
			{Name: "UnknownSession", Token: "ses_" + strings.Repeat("a", 43), Method: "GET", Path: "/console/auth/me", WantStatus: unauthorized, WantDetail: consoleauth.DetailInvalidSession},
			{Name: "MalformedSession", Token: "ses_short", Method: "GET", Path: "/console/auth/me", WantStatus: unauthorized, WantDetail: consoleauth.DetailInvalidSession},
			{Name: "BasicScheme", Auth: "Basic " + s.Token, Method: "GET", Path: "/console/auth/me", WantStatus: unauthorized, WantDetail: consoleauth.DetailMissingSession},
			{Name: "SessionAsTempToken", Token: s.Token, Method: "POST", Path: "/console/auth/verify-totp", Body: `{"code":"123456"}`, WantStatus: unauthorized, WantDetail: consoleauth.DetailInvalidTemp},
			{Name: "APIKeyAsTempToken", Token: key, Method: "POST", Path: "/console/auth/verify-recovery", Body: `{"code":"aaaaa-aaaaa"}`, WantStatus: unauthorized, WantDetail: consoleauth.DetailInvalidTemp},
			{Name: "NoTempToken", Method: "POST", Path: "/console/auth/verify-totp", Body: `{"code":"123456"}`, WantStatus: unauthorized, WantDetail: consoleauth.DetailMissingTemp},
			{Name: "SessionOnV1", Token: s.Token, Method: "GET", Path: "/v1/events?lat=0&lon=0", WantStatus: unauthorized, WantDetail: apikey.DetailInvalid},
			{Name: "TempTokenOnV1", Token: temp, Method: "GET", Path: "/v1/events?lat=0&lon=0", WantStatus: unauthorized, WantDetail: apikey.DetailInvalid},
			// A credential failure comes before validation (401 even with a bad body).
			{Name: "NoTokenBadBody", Method: "PATCH", Path: "/console/auth/me", Body: `{"nope":1}`, WantStatus: unauthorized, WantDetail: consoleauth.DetailMissingSession},
		})
		// None of the refusals touched the real session.
		e.Expect(e.Call("GET", "/console/auth/me", s.Token, ""), http.StatusOK, nil, "the session itself")
	})
}
