package consoleauth_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

var sessionToken = regexp.MustCompile(`^ses_[0-9A-Za-z]{43}$`)

// docs/api.md §3 sign-in machine, account without TOTP: code requested -> verify-code -> session.
// docs/api.md §4.2: sign-up and sign-in are one route; an unknown address gets its account at
// verify-code. docs/api.md §10.3: the session is ses_ + 43 base62 and lasts 30 days.
func TestSignInWithoutTOTP(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		start := e.clock.Now()

		r := e.Call("POST", "/console/auth/request-code", "", `{"email":"Ada@Example.com"}`)
		e.Expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "request-code")
		if got, want := string(r.Body), `{"method":"email","email":"ada@example.com","temp_token":null,"kind":"challenge"}`; got != want {
			t.Errorf("request-code body = %s; want %s", got, want)
		}
		code := e.inbox.LastCode(t, "ada@example.com")

		r = e.verifyCode("ada@example.com", code)
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-code")
		s := apitest.Decode[consoleauth.SessionOut](t, r)
		if !sessionToken.MatchString(s.Token) {
			t.Errorf("token %q; want ses_ + 43 base62 (docs/api.md §10.3)", s.Token)
		}
		if want := start.Add(30 * 24 * time.Hour); !s.ExpiresAt.Equal(want) {
			t.Errorf("expires_at %v; want %v (docs/api.md §10.3: 30 days)", s.ExpiresAt, want)
		}
		u := s.User
		if !strings.HasPrefix(u.UserID, "usr_") || u.Email != "ada@example.com" || u.DisplayName != nil ||
			u.Locale != "en" || u.TOTPEnabled || !u.CreatedAt.Equal(start) || u.LastSeenAt == nil || !u.LastSeenAt.Equal(start) {
			t.Errorf("user = %+v; want a new account of ada@example.com, locale en, no TOTP, seen now (docs/api.md §2.9)", u)
		}

		// The session opens the console; the next sign-in of the address finds the same account.
		e.Expect(e.Call("GET", "/console/auth/me", s.Token, ""), http.StatusOK, consoleauth.SessionSchema, "GET me")
		e.clock.Advance(time.Hour)
		again := e.signIn("ADA@example.COM")
		if again.User.UserID != u.UserID || !again.User.CreatedAt.Equal(start) {
			t.Errorf("second sign-in user %q created %v; want the same account %q", again.User.UserID, again.User.CreatedAt, u.UserID)
		}
		if again.Token == s.Token {
			t.Errorf("second sign-in returned the first token; want a fresh one")
		}
		other := e.signIn("grace@example.com")
		if other.User.UserID == u.UserID {
			t.Errorf("another address got the same account")
		}
	})
}

// docs/api.md §4.2 and §7: verify-code gives one generic 400 for an unknown address and for a bad
// or expired code, byte-identical, so it never tells whether an address has an account.
func TestVerifyCodeIsGeneric(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		e.signIn("known@example.com")
		code := e.requestCode("known@example.com")
		wrong := "000000"
		if code == wrong {
			wrong = "000001"
		}
		unknown := e.verifyCode("nobody@example.com", code)
		bad := e.verifyCode("known@example.com", wrong)
		e.clock.Advance(consoleauth.CodeTTL)
		expired := e.verifyCode("known@example.com", code)
		if unknown.Status != http.StatusBadRequest {
			t.Fatalf("verify-code for an unknown address = %s; want 400", unknown)
		}
		for name, r := range map[string]apitest.Response{"wrong code": bad, "expired code": expired} {
			if r.Status != unknown.Status || !bytes.Equal(r.Body, unknown.Body) {
				t.Errorf("verify-code, %s = %d %s; unknown address = %d %s; want byte-identical", name, r.Status, r.Body, unknown.Status, unknown.Body)
			}
		}
		if got := e.ExpectDetail(unknown, http.StatusBadRequest, "verify-code for an unknown address"); got != consoleauth.DetailInvalidCode {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidCode)
		}
	})
}

// docs/api.md §4.2: request-code answers the same for an address with an account and one without
// (the body differs only by the address it echoes), and both get a code.
func TestRequestCodeAnswersAlike(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		e.signIn("known@example.com")
		known := e.Call("POST", "/console/auth/request-code", "", `{"email":"known@example.com"}`)
		unknown := e.Call("POST", "/console/auth/request-code", "", `{"email":"nobody@example.com"}`)
		if known.Status != http.StatusOK || unknown.Status != known.Status {
			t.Fatalf("request-code known = %s, unknown = %s; want 200 both", known, unknown)
		}
		if got, want := bytes.ReplaceAll(unknown.Body, []byte("nobody@"), []byte("known@")), known.Body; !bytes.Equal(got, want) {
			t.Errorf("request-code bodies differ beyond the address: %s vs %s", unknown.Body, known.Body)
		}
		for _, h := range []string{"Content-Type", "Retry-After", "WWW-Authenticate"} {
			if known.Header.Get(h) != unknown.Header.Get(h) {
				t.Errorf("header %s: %q vs %q; want equal", h, known.Header.Get(h), unknown.Header.Get(h))
			}
		}
		e.inbox.LastCode(t, "known@example.com")
		e.inbox.LastCode(t, "nobody@example.com")
	})
}

// The code's own rules: it expires after 10 minutes on the injected clock, dies after 5 wrong
// tries, works once, and a new request replaces the previous code.
func TestCodeRules(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		wrongFor := func(code string) string {
			n, _ := strconv.Atoi(code)
			return strconv.Itoa(100000 + (n+1)%900000)
		}
		cases := []struct {
			name string
			// run returns the last verify-code answer and whether it should be a session.
			run func(e *env, addr string) (apitest.Response, bool)
		}{
			{"JustBeforeExpiry", func(e *env, addr string) (apitest.Response, bool) {
				code := e.requestCode(addr)
				e.clock.Advance(consoleauth.CodeTTL - time.Second)
				return e.verifyCode(addr, code), true
			}},
			{"AtExpiry", func(e *env, addr string) (apitest.Response, bool) {
				code := e.requestCode(addr)
				e.clock.Advance(consoleauth.CodeTTL)
				return e.verifyCode(addr, code), false
			}},
			{"RightOnFifthTry", func(e *env, addr string) (apitest.Response, bool) {
				code := e.requestCode(addr)
				for range 4 {
					e.Expect(e.verifyCode(addr, wrongFor(code)), http.StatusBadRequest, nil, "wrong code")
				}
				return e.verifyCode(addr, code), true
			}},
			{"DeadAfterFiveWrongTries", func(e *env, addr string) (apitest.Response, bool) {
				code := e.requestCode(addr)
				for range consoleauth.MaxCodeAttempts {
					e.Expect(e.verifyCode(addr, wrongFor(code)), http.StatusBadRequest, nil, "wrong code")
				}
				return e.verifyCode(addr, code), false
			}},
			{"SingleUse", func(e *env, addr string) (apitest.Response, bool) {
				code := e.requestCode(addr)
				e.Expect(e.verifyCode(addr, code), http.StatusOK, consoleauth.SessionSchema, "first use")
				return e.verifyCode(addr, code), false
			}},
			{"ReplacedByANewRequest", func(e *env, addr string) (apitest.Response, bool) {
				old := e.requestCode(addr)
				fresh := e.requestCode(addr)
				if fresh != old { // equal once in a million draws: then there is nothing to tell apart
					e.Expect(e.verifyCode(addr, old), http.StatusBadRequest, nil, "the replaced code")
				}
				return e.verifyCode(addr, fresh), true
			}},
			{"NewCodeAfterDeadOne", func(e *env, addr string) (apitest.Response, bool) {
				code := e.requestCode(addr)
				for range consoleauth.MaxCodeAttempts {
					e.verifyCode(addr, wrongFor(code))
				}
				return e.verifyCode(addr, e.requestCode(addr)), true
			}},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				addr := "rule" + strconv.Itoa(i) + "@example.com"
				r, session := tc.run(e, addr)
				if session {
					e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-code")
				} else {
					if got := e.ExpectDetail(r, http.StatusBadRequest, "verify-code"); got != consoleauth.DetailInvalidCode {
						t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidCode)
					}
				}
			})
		}
	})
}

// docs/api.md §10.3: code requests are capped at 5 per address per 15 minutes, for every address,
// existing or not; the 6th is 429 with Retry-After (the whole seconds left in the window) and
// sends nothing. Other addresses are not affected; the next window allows again.
func TestCodeRequestCap(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		e.signIn("known@example.com") // one request in this window
		e.clock.Advance(90 * time.Second)
		for _, addr := range []string{"known@example.com", "nobody@example.com"} {
			t.Run(addr, func(t *testing.T) {
				e := e.with(t)
				n := 5
				if addr == "known@example.com" {
					n = 4
				}
				for i := range n {
					r := e.Call("POST", "/console/auth/request-code", "", apitest.JSON(map[string]string{"email": addr}))
					e.Expect(r, http.StatusOK, nil, "request-code "+strconv.Itoa(i+1))
				}
				sent := e.inbox.Count()
				// Case does not open a second budget.
				r := e.Call("POST", "/console/auth/request-code", "", apitest.JSON(map[string]string{"email": strings.ToUpper(addr)}))
				if got := e.ExpectDetail(r, http.StatusTooManyRequests, "request-code past the cap"); got != consoleauth.DetailCodeRequests {
					t.Errorf("detail %q; want %q", got, consoleauth.DetailCodeRequests)
				}
				if got, want := r.Header.Get("Retry-After"), "810"; got != want {
					t.Errorf("Retry-After = %q; want %q (15 min window minus 90 s)", got, want)
				}
				if e.inbox.Count() != sent {
					t.Errorf("a capped request sent mail")
				}
			})
		}
		e.Call("POST", "/console/auth/request-code", "", `{"email":"other@example.com"}`)
		e.Expect(e.Call("POST", "/console/auth/request-code", "", `{"email":"other@example.com"}`), http.StatusOK, nil, "another address")
		e.nextWindow()
		e.Expect(e.Call("POST", "/console/auth/request-code", "", `{"email":"nobody@example.com"}`), http.StatusOK, nil, "next window")
	})
}
