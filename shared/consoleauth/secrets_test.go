package consoleauth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// secrets collects every credential a flow handed out.
type secrets struct {
	long  []string // tokens, recovery codes, the TOTP secret: found as substrings
	short []string // 6-digit codes: found as whole values or key parts (a substring of a hash could match by chance)
	raw   [][]byte // the TOTP secret's key bytes
}

func (s *secrets) addCode(c string) {
	s.short = append(s.short, c)
	// A bare SHA-256 of a 6-digit code is as good as the code (10^6 tries): it must not be
	// stored either (docs/security.md §1: a keyed hash).
	sum := sha256.Sum256([]byte(c))
	s.long = append(s.long, hex.EncodeToString(sum[:]))
}

// find returns a description of where a secret is in v, or "".
func (s *secrets) find(v any) string {
	check := func(str string) string {
		for _, l := range s.long {
			if strings.Contains(str, l) {
				return l
			}
		}
		for _, part := range strings.FieldsFunc(str, func(r rune) bool { return r == '#' || r == ':' || r == '|' }) {
			for _, c := range s.short {
				if part == c {
					return c
				}
			}
		}
		return ""
	}
	switch v := v.(type) {
	case string:
		return check(v)
	case []string:
		for _, x := range v {
			if f := check(x); f != "" {
				return f
			}
		}
	case []byte:
		if f := check(string(v)); f != "" {
			return f
		}
		for _, r := range s.raw {
			if bytes.Contains(v, r) {
				return "the TOTP key bytes"
			}
		}
	}
	return ""
}

// docs/api.md §10.3: tokens, codes and recovery codes are stored only as hashes, and TOTP secrets
// only sealed. After a full sign-up, TOTP enrolment, TOTP sign-in, recovery sign-in,
// regeneration, renewal, disable and logout, no item the table ever held (every version of
// every item, read from the table's change feed, deleted ones included) holds any of them.
func TestNoSecretAtRest(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		// The table's first write comes before Follow: DynamoDB Local can answer a reader of a
		// fresh table's shard with TrimmedDataAccessException at the first insertion
		// (aws/aws-sdk-java#2923), which the feed reports as a failure.
		if err := tab.Put(ctx, store.Item{store.AttrPK: "test#start", store.AttrSK: "start"}, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		cur, err := tab.Feed.Follow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer cur.Close()

		var sec secrets
		signIn := func(addr string) consoleauth.SessionOut {
			code := e.requestCode(addr)
			sec.addCode(code)
			r := e.verifyCode(addr, code)
			e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-code")
			return apitest.Decode[consoleauth.SessionOut](t, r)
		}
		challenge := func(addr string) string {
			code := e.requestCode(addr)
			sec.addCode(code)
			r := e.verifyCode(addr, code)
			e.Expect(r, http.StatusOK, consoleauth.AuthChallengeSchema, "verify-code")
			tmp := *apitest.Decode[consoleauth.AuthChallengeOut](t, r).TempToken
			sec.long = append(sec.long, tmp)
			return tmp
		}
		totpCode := func(secret string) string {
			c := e.code(secret)
			sec.addCode(c)
			return c
		}
		s := signIn("ada@example.com")
		sec.long = append(sec.long, s.Token)

		r := e.Call("POST", "/console/auth/totp/setup", s.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.TotpEnrolmentSchema, "setup")
		secret := apitest.Decode[consoleauth.TotpEnrolmentOut](t, r).Secret
		key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
		if err != nil {
			t.Fatal(err)
		}
		sec.long = append(sec.long, secret, strings.ToLower(secret))
		sec.raw = append(sec.raw, key)
		r = e.Call("POST", "/console/auth/totp/confirm", s.Token, apitest.JSON(map[string]string{"code": totpCode(secret)}))
		e.Expect(r, http.StatusOK, consoleauth.RecoveryCodesSchema, "confirm")
		codes := apitest.Decode[consoleauth.RecoveryCodesOut](t, r).Codes
		addRecovery := func(cs []string) {
			for _, c := range cs {
				sec.long = append(sec.long, c, strings.ReplaceAll(c, "-", ""), strings.ToUpper(strings.ReplaceAll(c, "-", "")))
			}
		}
		addRecovery(codes)

		e.nextStep()
		r = e.Call("POST", "/console/auth/verify-totp", challenge("ada@example.com"), apitest.JSON(map[string]string{"code": totpCode(secret)}))
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-totp")
		sec.long = append(sec.long, apitest.Decode[consoleauth.SessionOut](t, r).Token)
		r = e.Call("POST", "/console/auth/verify-recovery", challenge("ada@example.com"), apitest.JSON(map[string]string{"code": codes[3]}))
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "verify-recovery")
		sec.long = append(sec.long, apitest.Decode[consoleauth.SessionOut](t, r).Token)
		e.nextStep()
		r = e.Call("POST", "/console/auth/recovery-codes/regenerate", s.Token, apitest.JSON(map[string]string{"code": totpCode(secret)}))
		e.Expect(r, http.StatusOK, consoleauth.RecoveryCodesSchema, "regenerate")
		addRecovery(apitest.Decode[consoleauth.RecoveryCodesOut](t, r).Codes)
		r = e.Call("GET", "/console/auth/me", s.Token, "")
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "renew")
		sec.long = append(sec.long, apitest.Decode[consoleauth.SessionOut](t, r).Token)
		e.nextStep()
		r = e.Call("POST", "/console/auth/totp/disable", s.Token, apitest.JSON(map[string]string{"code": totpCode(secret)}))
		e.Expect(r, http.StatusOK, consoleauth.SessionSchema, "disable")
		last := apitest.Decode[consoleauth.SessionOut](t, r).Token
		sec.long = append(sec.long, last)
		e.Expect(e.Call("POST", "/console/auth/logout", last, ""), http.StatusOK, nil, "logout")

		// A last write marks the end of the flow in the feed.
		end := store.Key{PK: "test#end", SK: "end"}
		if err := tab.Put(ctx, store.Item{store.AttrPK: end.PK, store.AttrSK: end.SK}, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		images, kinds := 0, map[string]int{}
		for {
			ch, err := cur.Next(ctx)
			if err != nil {
				t.Fatalf("feed Next after %d images = %v", images, err)
			}
			if ch.Key == end {
				break
			}
			kinds[strings.SplitN(ch.Key.PK, "#", 2)[0]]++
			for _, it := range []store.Item{ch.Old, ch.New} {
				if it == nil {
					continue
				}
				images++
				for _, name := range it.SortedNames() {
					if f := sec.find(it[name]); f != "" {
						t.Errorf("item %s attribute %q holds a credential in clear (%.12s...)", ch.Key, name, f)
					}
				}
			}
		}
		// The flow wrote what it should have: the check above saw the real items.
		for _, kind := range []string{"user", "useremail", "authcode", "session", "temptoken", "ratelimit"} {
			if kinds[kind] == 0 {
				t.Errorf("the feed showed no %s item; the flow did not write what was checked", kind)
			}
		}
		if len(sec.short) < 7 || len(sec.long) < 40 {
			t.Errorf("collected %d codes and %d long secrets; the flow handed out fewer than expected", len(sec.short), len(sec.long))
		}
		t.Logf("%s: %d item images checked for %d codes and %d long secrets", tab.Adapter, images, len(sec.short), len(sec.long))
	})
}

// The secrets check itself finds a credential where it is, so a pass above means something.
func TestSecretsFinder(t *testing.T) {
	t.Parallel()
	s := secrets{long: []string{"ses_abc"}, raw: [][]byte{{1, 2, 3}}}
	s.addCode("493817")
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{"x ses_abc y", true},
		{"authcode#493817", true},
		{"493817", true},
		{[]byte{0, 1, 2, 3, 4}, true},
		{[]string{"a", "493817"}, true},
		{"a1493817b", false}, // a code inside other text is a coincidence, not a stored code
		{"ses_ab", false},
		{int64(493817), false},
	} {
		if got := s.find(tc.v) != ""; got != tc.want {
			t.Errorf("find(%v) = %v; want %v", tc.v, got, tc.want)
		}
	}
	sum := sha256.Sum256([]byte("493817"))
	if s.find("hash#"+hex.EncodeToString(sum[:])) == "" {
		t.Errorf("find missed the bare SHA-256 of a code")
	}
}
