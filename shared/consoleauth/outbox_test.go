package consoleauth_test

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	rmail "github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/mail/mailtest"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §10.4 through the service: request-code writes <data>/outbox/<time>-<id>.eml, a
// valid RFC 5322 message (net/mail, mime/multipart) whose plain-text part holds the code that
// verify-code then accepts, and says what it is for and how long it lasts; the summary line
// logged holds no code.
func TestOutboxMessage(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "outbox")
		logs := &apitest.LogBuffer{}
		outbox, err := rmail.NewOutbox(dir, rmail.OutboxOptions{
			From: "Road Events <no-reply@roadevents.invalid>", Clock: tab.Clock,
			Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnvWith(t, tab, outbox)
		e.Expect(e.Call("POST", "/console/auth/request-code", "", `{"email":"ada@example.com"}`), http.StatusOK, nil, "request-code")

		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 1 {
			t.Fatalf("outbox holds %d files (%v); want 1", len(entries), err)
		}
		if !regexp.MustCompile(`^20400101T000000\.000000000Z-[a-z0-9]+\.eml$`).MatchString(entries[0].Name()) {
			t.Errorf("file %q; want <time>-<id>.eml", entries[0].Name())
		}
		raw, err := os.ReadFile(filepath.Join(dir, entries[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		msg, parts := mailtest.Parse(t, raw)
		if msg.Header.Get("To") != "ada@example.com" || msg.Header.Get("Subject") == "" || msg.Header.Get("From") == "" {
			t.Errorf("headers To %q Subject %q From %q", msg.Header.Get("To"), msg.Header.Get("Subject"), msg.Header.Get("From"))
		}
		if d, err := msg.Header.Date(); err != nil || !d.Equal(tab.Clock.Now()) {
			t.Errorf("Date %v (%v); want %v", d, err, tab.Clock.Now())
		}
		if len(parts) != 2 || !strings.HasPrefix(parts[0].ContentType, "text/plain") || !strings.HasPrefix(parts[1].ContentType, "text/html") {
			t.Fatalf("parts %+v; want text/plain then text/html", parts)
		}
		text := parts[0].Body
		code := sixDigits.FindString(text)
		if code == "" || !strings.Contains(text, "sign-in code") || !strings.Contains(text, "10 minutes") {
			t.Errorf("plain text %q; want the code, what it is for and how long it lasts", text)
		}
		if strings.Contains(msg.Header.Get("Subject"), code) {
			t.Errorf("subject %q holds the code", msg.Header.Get("Subject"))
		}
		if strings.Contains(logs.String(), code) || strings.Count(logs.String(), "\n") != 1 {
			t.Errorf("outbox log %q; want one line without the code", logs.String())
		}
		e.Expect(e.verifyCode("ada@example.com", code), http.StatusOK, consoleauth.SessionSchema, "verify-code with the code from the file")
	})
}

// docs/security.md §1: no credential in a log. A whole flow, with failures (which log
// their causes at debug level), leaves no code, token, recovery code or secret in the service
// log.
func TestNoCredentialInLogs(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		var creds []string
		code := e.requestCode("ada@example.com")
		creds = append(creds, code)
		e.verifyCode("ada@example.com", e.wrongEmailCode(code))
		r := e.verifyCode("ada@example.com", code)
		s := apitest.Decode[consoleauth.SessionOut](t, r)
		creds = append(creds, s.Token)
		secret, codes := e.enableTOTP(s.Token)
		creds = append(creds, secret)
		creds = append(creds, codes...)
		temp := e.challenge("ada@example.com")
		creds = append(creds, temp)
		e.Call("POST", "/console/auth/verify-totp", temp, apitest.JSON(map[string]string{"code": e.code(secret)})) // replay: 400
		e.Call("POST", "/console/auth/verify-recovery", temp, apitest.JSON(map[string]string{"code": "zzzzz-zzzzz"}))
		e.Call("POST", "/console/auth/verify-recovery", temp, apitest.JSON(map[string]string{"code": codes[0]}))
		e.Call("GET", "/console/auth/me", "ses_"+strings.Repeat("x", 43), "")
		e.Call("POST", "/console/auth/logout", s.Token, "")
		e.Call("GET", "/console/auth/me", s.Token, "")
		log := e.logs.String()
		if !strings.Contains(log, "verify-recovery") || !strings.Contains(log, `"level":"DEBUG"`) {
			t.Fatalf("the log does not show the requests at debug level; the check would prove nothing:\n%s", log)
		}
		for _, c := range creds {
			if strings.Contains(log, c) {
				t.Errorf("the log holds a credential %.8s...", c)
			}
		}
	})
}
