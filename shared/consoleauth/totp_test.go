package consoleauth_test

import (
	"encoding/base32"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

var tempToken = regexp.MustCompile(`^tmp_[0-9A-Za-z]{43}$`)

// docs/api.md §3 TOTP machine, every transition, and the sign-in machine with TOTP:
// off -> pending (setup) -> pending again (setup replaces) -> on (confirm, recovery codes once)
// -> setup refused 409 while on -> sign-in gives a challenge, never a session -> verify-totp
// gives the session -> off (disable with a valid code: every session ends, the caller gets a
// new one, the secret is discarded) -> setup allowed again.
func TestTOTPLifecycle(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		s := e.signIn("ada@example.com")

		// off: nothing to confirm, disable or regenerate.
		r := e.Call("POST", "/console/auth/totp/confirm", s.Token, `{"code":"123456"}`)
		if got := e.ExpectDetail(r, http.StatusConflict, "confirm with nothing pending"); got != consoleauth.DetailNoEnrolment {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailNoEnrolment)
		}
		e.Expect(e.Call("POST", "/console/auth/totp/disable", s.Token, `{"code":"123456"}`), http.StatusConflict, nil, "disable while off")
		e.Expect(e.Call("POST", "/console/auth/recovery-codes/regenerate", s.Token, `{"code":"123456"}`), http.StatusConflict, nil, "regenerate while off")
		r = e.Call("GET", "/console/auth/recovery-codes", s.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.RecoveryCodesStatusSchema, "recovery-codes while off")
		if got := string(r.Body); got != `{"remaining":0,"total":0}` {
			t.Errorf("recovery-codes while off = %s; want 0 of 0", got)
		}

		// off -> pending.
		r = e.Call("POST", "/console/auth/totp/setup", s.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.TotpEnrolmentSchema, "setup")
		first := apitest.Decode[consoleauth.TotpEnrolmentOut](t, r)
		if _, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(first.Secret); err != nil {
			t.Errorf("secret %q is not base32: %v", first.Secret, err)
		}
		u, err := url.Parse(first.OTPAuthURL)
		if err != nil || u.Scheme != "otpauth" || u.Host != "totp" || u.Query().Get("secret") != first.Secret || u.Query().Get("issuer") != first.Issuer {
			t.Errorf("otpauth_url %q; want otpauth://totp/... with the secret and issuer", first.OTPAuthURL)
		}
		if first.Issuer != consoleauth.DefaultIssuer || first.Account != "ada@example.com" {
			t.Errorf("issuer %q account %q; want %q and the address", first.Issuer, first.Account, consoleauth.DefaultIssuer)
		}
		// pending -> pending: a second setup replaces the secret; the first one's codes fail.
		r = e.Call("POST", "/console/auth/totp/setup", s.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.TotpEnrolmentSchema, "setup again")
		second := apitest.Decode[consoleauth.TotpEnrolmentOut](t, r)
		if second.Secret == first.Secret {
			t.Fatalf("second setup returned the same secret")
		}
		if e.code(first.Secret) != e.code(second.Secret) {
			r = e.Call("POST", "/console/auth/totp/confirm", s.Token, apitest.JSON(map[string]string{"code": e.code(first.Secret)}))
			e.Expect(r, http.StatusBadRequest, nil, "confirm with the replaced secret's code")
		}
		// Still off until confirmed: sign-in gives a session.
		e.Expect(e.verifyCode("ada@example.com", e.requestCode("ada@example.com")), http.StatusOK, consoleauth.SessionSchema, "sign-in while pending")

		// pending -> on.
		r = e.Call("POST", "/console/auth/totp/confirm", s.Token, apitest.JSON(map[string]string{"code": e.code(second.Secret)}))
		e.Expect(r, http.StatusOK, consoleauth.RecoveryCodesSchema, "confirm")
		rc := apitest.Decode[consoleauth.RecoveryCodesOut](t, r)
		if len(rc.Codes) != 10 || len(slices.Compact(slices.Sorted(slices.Values(rc.Codes)))) != 10 || !rc.GeneratedAt.Equal(e.clock.Now()) {
			t.Errorf("recovery codes %q at %v; want 10 distinct, generated now", rc.Codes, rc.GeneratedAt)
		}
		r = e.Call("GET", "/console/auth/recovery-codes", s.Token, "")
		if got := string(r.Body); got != `{"remaining":10,"total":10}` {
			t.Errorf("recovery-codes after confirm = %s; want 10 of 10", got)
		}
		me := apitest.Decode[consoleauth.SessionOut](t, e.Call("GET", "/console/auth/me", s.Token, ""))
		if !me.User.TOTPEnabled {
			t.Errorf("me.totp_enabled = false after confirm")
		}
		// on: setup and confirm are 409 (docs/api.md §10.3).
		r = e.Call("POST", "/console/auth/totp/setup", s.Token, "")
		if got := e.ExpectDetail(r, http.StatusConflict, "setup while on"); got != consoleauth.DetailTOTPEnabled {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailTOTPEnabled)
		}
		e.Expect(e.Call("POST", "/console/auth/totp/confirm", s.Token, `{"code":"123456"}`), http.StatusConflict, nil, "confirm while on")

		// Sign-in with TOTP: verify-code gives the challenge and no session (docs/api.md §4.2).
		r = e.verifyCode("ada@example.com", e.requestCode("ada@example.com"))
		e.Expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "verify-code with TOTP")
		ch := apitest.Decode[consoleauth.AuthChallengeOut](t, r)
		if ch.Method != "totp" || ch.Email != nil || ch.TempToken == nil || !tempToken.MatchString(*ch.TempToken) {
			t.Fatalf("challenge = %s; want method totp, email null, a tmp_ + 43 base62 temp_token", r.Body)
		}
		if strings.Contains(string(r.Body), `"token"`) {
			t.Errorf("the challenge holds a session token: %s", r.Body)
		}
		// The confirm consumed this step's code: it is refused at sign-in (replay).
		r = e.Call("POST", "/console/auth/verify-totp", *ch.TempToken, apitest.JSON(map[string]string{"code": e.code(second.Secret)}))
		e.Expect(r, http.StatusBadRequest, nil, "verify-totp with the code confirm consumed")
		e.nextStep()
		r = e.Call("POST", "/console/auth/verify-totp", *ch.TempToken, apitest.JSON(map[string]string{"code": e.code(second.Secret)}))
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-totp")
		signedIn := apitest.Decode[consoleauth.SessionOut](t, r)
		if signedIn.User.UserID != s.User.UserID || !signedIn.User.TOTPEnabled {
			t.Errorf("verify-totp user %+v; want %s with TOTP", signedIn.User, s.User.UserID)
		}
		// The temp token is spent.
		e.Expect(e.Call("POST", "/console/auth/verify-totp", *ch.TempToken, `{"code":"123456"}`), http.StatusUnauthorized, nil, "reused temp_token")

		// on -> off: a wrong code is 400 and changes nothing.
		e.nextStep()
		e.Expect(e.Call("POST", "/console/auth/totp/disable", s.Token, apitest.JSON(map[string]string{"code": e.wrongCode(second.Secret)})),
			http.StatusBadRequest, nil, "disable with a wrong code")
		r = e.Call("POST", "/console/auth/totp/disable", s.Token, apitest.JSON(map[string]string{"code": e.code(second.Secret)}))
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "disable")
		fresh := apitest.Decode[consoleauth.SessionOut](t, r)
		if fresh.User.TOTPEnabled || fresh.Token == s.Token || !sessionToken.MatchString(fresh.Token) {
			t.Errorf("disable answered %+v; want a new session of a user without TOTP", fresh)
		}
		// docs/api.md §10.3: every session ends, the caller's included; the new one works.
		for name, tok := range map[string]string{"caller": s.Token, "other": signedIn.Token, "renewed": me.Token} {
			e.Expect(e.Call("GET", "/console/auth/me", tok, ""), http.StatusUnauthorized, nil, "GET me with the "+name+" session after disable")
		}
		e.Expect(e.Call("GET", "/console/auth/me", fresh.Token, ""), http.StatusOK, consoleauth.SessionSchema, "GET me with the new session")
		r = e.Call("GET", "/console/auth/recovery-codes", fresh.Token, "")
		if got := string(r.Body); got != `{"remaining":0,"total":0}` {
			t.Errorf("recovery-codes after disable = %s; want 0 of 0 (discarded)", got)
		}
		// The secret is discarded: sign-in gives a session again, and setup starts afresh.
		e.Expect(e.verifyCode("ada@example.com", e.requestCode("ada@example.com")), http.StatusOK, consoleauth.SessionSchema, "sign-in after disable")
		r = e.Call("POST", "/console/auth/totp/setup", fresh.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.TotpEnrolmentSchema, "setup after disable")
		if apitest.Decode[consoleauth.TotpEnrolmentOut](t, r).Secret == second.Secret {
			t.Errorf("setup after disable returned the discarded secret")
		}
	})
}

// docs/api.md §5 console rule 2: a TOTP code is consumed when accepted and refused if replayed, at
// verify-totp and at key issuance (VerifyTOTP, which the key-issuance route calls), whichever
// came first; a code of the next step is accepted.
func TestTOTPReplay(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		s := e.signIn("ada@example.com")
		secret, _ := e.enableTOTP(s.Token)
		other := e.service() // another process of the deployment
		ctx := t.Context()

		// verify-totp first, then key issuance with the same code.
		e.nextStep()
		code := e.code(secret)
		e.Expect(e.Call("POST", "/console/auth/verify-totp", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": code})),
			http.StatusOK, consoleauth.SessionSchema, "verify-totp")
		if err := other.VerifyTOTP(ctx, s.User.UserID, code); !errors.Is(err, consoleauth.ErrInvalidTOTP) {
			t.Errorf("VerifyTOTP with the code verify-totp accepted = %v; want ErrInvalidTOTP (replay)", err)
		}
		r := e.Call("POST", "/console/auth/verify-totp", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": code}))
		if got := e.ExpectDetail(r, http.StatusBadRequest, "verify-totp replay"); got != consoleauth.DetailInvalidTOTP {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidTOTP)
		}

		// Key issuance first, then verify-totp with the same code.
		e.nextWindow() // a fresh attempt bucket
		code = e.code(secret)
		if err := other.VerifyTOTP(ctx, s.User.UserID, code); err != nil {
			t.Fatalf("VerifyTOTP with a fresh code = %v; want nil", err)
		}
		if err := other.VerifyTOTP(ctx, s.User.UserID, code); !errors.Is(err, consoleauth.ErrInvalidTOTP) {
			t.Errorf("VerifyTOTP replay = %v; want ErrInvalidTOTP", err)
		}
		e.Expect(e.Call("POST", "/console/auth/verify-totp", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": code})),
			http.StatusBadRequest, nil, "verify-totp with the code key issuance consumed")
		// A code of an earlier step, still inside the skew, is refused once a later one was used.
		earlier, err := totpAt(secret, e.clock.Now().Add(-30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := other.VerifyTOTP(ctx, s.User.UserID, earlier); !errors.Is(err, consoleauth.ErrInvalidTOTP) {
			t.Errorf("VerifyTOTP with the previous step's code after this step's = %v; want ErrInvalidTOTP", err)
		}
		e.nextWindow()
		if err := other.VerifyTOTP(ctx, s.User.UserID, e.code(secret)); err != nil {
			t.Errorf("VerifyTOTP with the next step's code = %v; want nil", err)
		}
		if err := other.VerifyTOTP(ctx, "usr_nobody", "123456"); !errors.Is(err, consoleauth.ErrUserNotFound) {
			t.Errorf("VerifyTOTP of an unknown user = %v; want ErrUserNotFound", err)
		}
		plain := e.signIn("grace@example.com")
		if err := other.VerifyTOTP(ctx, plain.User.UserID, "123456"); !errors.Is(err, consoleauth.ErrTOTPNotEnabled) {
			t.Errorf("VerifyTOTP of a user without TOTP = %v; want ErrTOTPNotEnabled", err)
		}
	})
}

// docs/api.md §4.2 and §5 console rules 2 and 4: verify-recovery signs in with a recovery code, burned on
// use (a reuse is refused); regenerate needs a live TOTP code and invalidates the old set.
func TestRecoveryCodes(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		s := e.signIn("ada@example.com")
		secret, codes := e.enableTOTP(s.Token)

		// Case and dash do not matter.
		typed := strings.ToUpper(strings.ReplaceAll(codes[0], "-", ""))
		r := e.Call("POST", "/console/auth/verify-recovery", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": typed}))
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-recovery")
		if got := apitest.Decode[consoleauth.SessionOut](t, r).User.UserID; got != s.User.UserID {
			t.Errorf("verify-recovery user %q; want %q", got, s.User.UserID)
		}
		r = e.Call("POST", "/console/auth/verify-recovery", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": codes[0]}))
		if got := e.ExpectDetail(r, http.StatusBadRequest, "reused recovery code"); got != consoleauth.DetailInvalidRecovery {
			t.Errorf("detail %q; want %q", got, consoleauth.DetailInvalidRecovery)
		}
		r = e.Call("GET", "/console/auth/recovery-codes", s.Token, "")
		if got := string(r.Body); got != `{"remaining":9,"total":10}` {
			t.Errorf("recovery-codes after one use = %s; want 9 of 10", got)
		}

		// Regenerate: a wrong code is refused, a live one replaces the set.
		e.nextWindow()
		e.Expect(e.Call("POST", "/console/auth/recovery-codes/regenerate", s.Token, `{"code":"abc"}`), http.StatusBadRequest, nil, "regenerate with a wrong code")
		r = e.Call("POST", "/console/auth/recovery-codes/regenerate", s.Token, apitest.JSON(map[string]string{"code": e.code(secret)}))
		e.Expect(r, http.StatusOK, consoleauth.RecoveryCodesSchema, "regenerate")
		fresh := apitest.Decode[consoleauth.RecoveryCodesOut](t, r).Codes
		for _, c := range fresh {
			if slices.Contains(codes, c) {
				t.Errorf("regenerated set repeats old code %q", c)
			}
		}
		r = e.Call("GET", "/console/auth/recovery-codes", s.Token, "")
		if got := string(r.Body); got != `{"remaining":10,"total":10}` {
			t.Errorf("recovery-codes after regenerate = %s; want 10 of 10", got)
		}
		e.Expect(e.Call("POST", "/console/auth/verify-recovery", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": codes[1]})),
			http.StatusBadRequest, nil, "an old-set code after regenerate")
		e.Expect(e.Call("POST", "/console/auth/verify-recovery", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": fresh[9]})),
			http.StatusOK, consoleauth.SessionSchema, "a new-set code")
	})
}

// docs/api.md §10.3 and §5 console rule 3: TOTP and recovery attempts are capped at 5 per account per
// 15 minutes in one bucket shared by verify-totp and verify-recovery (and the other TOTP
// checks); past it, even a right code is 429 with Retry-After. Another account is not
// affected; the next window allows again.
func TestTOTPAttemptCap(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		s := e.signIn("ada@example.com")
		secret, codes := e.enableTOTP(s.Token)
		g := e.signIn("grace@example.com")
		gSecret, _ := e.enableTOTP(g.Token)
		e.nextWindow()
		e.clock.Advance(5 * time.Minute)

		temp := e.challenge("ada@example.com")
		attempts := []struct{ path, code string }{
			{"/console/auth/verify-totp", e.wrongCode(secret)},
			{"/console/auth/verify-recovery", "aaaaa-aaaaa"},
			{"/console/auth/verify-totp", e.wrongCode(secret)},
			{"/console/auth/verify-recovery", "bbbbb-bbbbb"},
		}
		for _, a := range attempts {
			e.Expect(e.Call("POST", a.path, temp, apitest.JSON(map[string]string{"code": a.code})), http.StatusBadRequest, nil, a.path+" wrong")
		}
		// The fifth attempt of the window is a right one, through the session side.
		e.Expect(e.Call("POST", "/console/auth/recovery-codes/regenerate", s.Token, apitest.JSON(map[string]string{"code": e.code(secret)})),
			http.StatusOK, consoleauth.RecoveryCodesSchema, "regenerate (fifth attempt)")
		e.nextStep()
		for _, path := range []string{"/console/auth/verify-totp", "/console/auth/verify-recovery"} {
			code := e.code(secret)
			if path == "/console/auth/verify-recovery" {
				code = codes[0] // regenerated: but a 429 is answered before the code is looked at
			}
			r := e.Call("POST", path, temp, apitest.JSON(map[string]string{"code": code}))
			if got := e.ExpectDetail(r, http.StatusTooManyRequests, path+" past the cap"); got != consoleauth.DetailTOTPAttempts {
				t.Errorf("detail %q; want %q", got, consoleauth.DetailTOTPAttempts)
			}
			if got, want := r.Header.Get("Retry-After"), "570"; got != want {
				t.Errorf("%s Retry-After = %q; want %q (15 min window minus 5 min 30 s)", path, got, want)
			}
		}
		e.Expect(e.Call("POST", "/console/auth/totp/disable", s.Token, apitest.JSON(map[string]string{"code": e.code(secret)})),
			http.StatusTooManyRequests, nil, "disable past the cap")
		// Grace's bucket is her own.
		e.Expect(e.Call("POST", "/console/auth/verify-totp", e.challenge("grace@example.com"), apitest.JSON(map[string]string{"code": e.code(gSecret)})),
			http.StatusOK, consoleauth.SessionSchema, "verify-totp of another account")
		// Next window: the right code works (the temp token is 5 minutes old by now, so a new one).
		e.nextWindow()
		e.Expect(e.Call("POST", "/console/auth/verify-totp", temp, apitest.JSON(map[string]string{"code": e.code(secret)})),
			http.StatusUnauthorized, nil, "the expired temp_token")
		e.Expect(e.Call("POST", "/console/auth/verify-totp", e.challenge("ada@example.com"), apitest.JSON(map[string]string{"code": e.code(secret)})),
			http.StatusOK, consoleauth.SessionSchema, "verify-totp in the next window")
	})
}
