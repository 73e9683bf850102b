package consoleauth_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.2: PATCH /console/auth/me writes only the fields sent; display_name null clears it,
// and so does "" (what a generated client that leaves nulls out can send).
func TestProfileUpdate(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		s := e.signIn("ada@example.com")
		steps := []struct {
			name, body string
			wantName   *string
			wantLocale string
		}{
			{"Both", `{"display_name":"Ada Lovelace","locale":"en-GB"}`, ptr("Ada Lovelace"), "en-GB"},
			{"LocaleOnly", `{"locale":"fr"}`, ptr("Ada Lovelace"), "fr"},
			{"NameOnly", `{"display_name":"Ada"}`, ptr("Ada"), "fr"},
			{"Nothing", `{}`, ptr("Ada"), "fr"},
			{"ClearName", `{"display_name":null}`, nil, "fr"},
			{"NameAgain", `{"display_name":"Ada"}`, ptr("Ada"), "fr"},
			{"ClearNameWithEmptyString", `{"display_name":""}`, nil, "fr"},
		}
		for _, st := range steps {
			r := e.Call("PATCH", "/console/auth/me", s.Token, st.body)
			e.Expect(r, http.StatusOK, consoleauth.MePublicSchema, "PATCH me "+st.name)
			me := apitest.Decode[consoleauth.MePublic](t, r)
			if fmt.Sprint(deref(me.DisplayName)) != fmt.Sprint(deref(st.wantName)) || (me.DisplayName == nil) != (st.wantName == nil) || me.Locale != st.wantLocale {
				t.Errorf("%s: display_name %v locale %q; want %v %q", st.name, deref(me.DisplayName), me.Locale, deref(st.wantName), st.wantLocale)
			}
			if me.UserID != s.User.UserID || me.Email != "ada@example.com" {
				t.Errorf("%s: user %+v; want the caller", st.name, me)
			}
		}
		// The change is stored: the session view shows it.
		got := apitest.Decode[consoleauth.SessionOut](t, e.Call("GET", "/console/auth/me", s.Token, "")).User
		if got.DisplayName != nil || got.Locale != "fr" {
			t.Errorf("GET me after the updates: display_name %v locale %q; want null and fr", deref(got.DisplayName), got.Locale)
		}
	})
}

func ptr(s string) *string { return &s }

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

type validationItem struct {
	Type string `json:"type"`
	Loc  []any  `json:"loc"`
}

// docs/api.md §7 shape 2 and §10.1: 422 {detail: [{type, loc, msg, input}]} with Pydantic's
// types and locations, every error reported, on every console-auth route with a body.
func TestValidationErrors(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		s := e.signIn("ada@example.com")
		e.enableTOTP(s.Token)
		temp := e.challenge("ada@example.com")
		// 268 characters, each part within its own RFC 5321 limit: over the 254 of
		// docs/api.md §10.3, which the e-mail format itself refuses (value_error, as
		// Pydantic's EmailStr does).
		long := strings.Repeat("a", 60) + "@" + strings.Repeat(strings.Repeat("b", 50)+".", 4) + "com"
		cases := []struct {
			name, path, method, token, body string
			want                            []string // "type loc"
		}{
			{"RequestCodeNoBody", "/console/auth/request-code", "POST", "", "", []string{"missing [body]"}},
			{"RequestCodeMissingEmail", "/console/auth/request-code", "POST", "", `{}`, []string{"missing [body email]"}},
			{"RequestCodeNotAnEmail", "/console/auth/request-code", "POST", "", `{"email":"ada"}`, []string{"value_error [body email]"}},
			{"RequestCodeTooLong", "/console/auth/request-code", "POST", "", `{"email":"` + long + `"}`, []string{"value_error [body email]"}},
			{"RequestCodeExtra", "/console/auth/request-code", "POST", "", `{"email":"a@example.com","org":"x"}`, []string{"extra_forbidden [body org]"}},
			{"RequestCodeNotJSON", "/console/auth/request-code", "POST", "", `{"email":`, []string{"json_invalid [body 9]"}},
			{"VerifyCodeShortCodeAndNumber", "/console/auth/verify-code", "POST", "", `{"email":"a@example.com","code":12345}`, []string{"string_type [body code]"}},
			{"VerifyCodeFiveDigits", "/console/auth/verify-code", "POST", "", `{"email":"a@example.com","code":"12345"}`, []string{"string_pattern_mismatch [body code]"}},
			{"VerifyCodeEveryError", "/console/auth/verify-code", "POST", "", `{"code":"abcdef","x":1}`, []string{"missing [body email]", "string_pattern_mismatch [body code]", "extra_forbidden [body x]"}},
			{"VerifyTOTPEmpty", "/console/auth/verify-totp", "POST", temp, `{"code":""}`, []string{"string_too_short [body code]"}},
			{"VerifyTOTPTooLong", "/console/auth/verify-totp", "POST", temp, `{"code":"12345678901234567"}`, []string{"string_too_long [body code]"}},
			{"VerifyRecoveryTooLong", "/console/auth/verify-recovery", "POST", temp, `{"code":"` + strings.Repeat("a", 65) + `"}`, []string{"string_too_long [body code]"}},
			{"ConfirmMissing", "/console/auth/totp/confirm", "POST", s.Token, `{}`, []string{"missing [body code]"}},
			{"DisableNotObject", "/console/auth/totp/disable", "POST", s.Token, `["123456"]`, []string{"model_attributes_type [body]"}},
			{"RegenerateEmpty", "/console/auth/recovery-codes/regenerate", "POST", s.Token, `{"code":""}`, []string{"string_too_short [body code]"}},
			{"ProfileBlankName", "/console/auth/me", "PATCH", s.Token, `{"display_name":" "}`, []string{"value_error [body display_name]"}},
			{"ProfileLongNameShortLocale", "/console/auth/me", "PATCH", s.Token, `{"display_name":"` + strings.Repeat("n", 81) + `","locale":"e"}`,
				[]string{"string_too_long [body display_name]", "string_too_short [body locale]"}},
			{"ProfileNullLocale", "/console/auth/me", "PATCH", s.Token, `{"locale":null}`, []string{"string_type [body locale]"}},
			{"ProfileUnknownField", "/console/auth/me", "PATCH", s.Token, `{"email":"b@example.com"}`, []string{"extra_forbidden [body email]"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				r := e.Call(tc.method, tc.path, tc.token, tc.body)
				e.Expect(r, http.StatusUnprocessableEntity, schema.HTTPValidationErrorSchema, tc.name)
				var body struct {
					Detail []validationItem `json:"detail"`
				}
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, d := range body.Detail {
					got = append(got, fmt.Sprintf("%s %v", d.Type, d.Loc))
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("422 items %q; want %q", got, tc.want)
				}
			})
		}
		// The refused profile updates wrote nothing.
		me := apitest.Decode[consoleauth.SessionOut](t, e.Call("GET", "/console/auth/me", s.Token, "")).User
		if me.DisplayName != nil || me.Locale != "en" || me.Email != "ada@example.com" {
			t.Errorf("user after refused updates = %+v; want unchanged", me)
		}
	})
}

// docs/api.md §11.2: a display name refuses control characters, bidirectional marks and text
// with nothing visible (it reaches invitation e-mails and other members' lists), with a 422
// value_error at ["body","display_name"], and writes nothing; other scripts, accents and emoji
// are kept as sent.
func TestProfileDisplayNameIsPrintable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tables.Embedded(t))
	s := e.signIn("ada@example.com")
	for what, bad := range apitest.UnprintableNames {
		items := e.ExpectProblems(e.Call("PATCH", "/console/auth/me", s.Token, apitest.JSON(map[string]string{"display_name": bad})), what)
		if len(items) != 1 || items[0].Type != "value_error" || apitest.JSON(items[0].Loc) != `["body","display_name"]` {
			t.Errorf("display name %s (%q): 422 items %+v; want one value_error at [\"body\",\"display_name\"]", what, bad, items)
		}
	}
	if me := apitest.Decode[consoleauth.SessionOut](t, e.Call("GET", "/console/auth/me", s.Token, "")).User; me.DisplayName != nil {
		t.Errorf("display name after refused updates = %q; want none", *me.DisplayName)
	}
	for _, good := range apitest.PrintableNames {
		r := e.Call("PATCH", "/console/auth/me", s.Token, apitest.JSON(map[string]string{"display_name": good}))
		e.Expect(r, http.StatusOK, consoleauth.MePublicSchema, "display name "+good)
		if me := apitest.Decode[consoleauth.MePublic](t, r); me.DisplayName == nil || *me.DisplayName != good {
			t.Errorf("display name = %v; want %q as sent", deref(me.DisplayName), good)
		}
	}
}
