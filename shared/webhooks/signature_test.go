package webhooks_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/webhooks"
)

var sent = time.Date(2040, 1, 1, 12, 0, 0, 0, time.UTC)

const body = `{"id":"dlv_1","kind":"event.created","created_at":"2040-01-01T12:00:00Z","data":{"event_id":"ev_x"}}`

// docs/webhooks.md §2: a receiver holding the secret accepts the delivery as sent, and
// refuses it when the body, the secret or the time is not the one signed.
func TestVerify(t *testing.T) {
	t.Parallel()
	secret := webhooks.NewSecret()
	if !strings.HasPrefix(secret, webhooks.SecretPrefix) || len(secret) != len(webhooks.SecretPrefix)+64 {
		t.Fatalf("secret %q; want whsec_ and 64 hex digits", secret)
	}
	header := webhooks.Sign(sent, []byte(body), secret)
	ts := strconv.FormatInt(sent.Unix(), 10)
	later := strconv.FormatInt(sent.Unix()+1, 10)
	if err := webhooks.Verify(header, []byte(body), secret, sent.Add(time.Minute), webhooks.DefaultTolerance); err != nil {
		t.Fatalf("Verify of the delivery as sent: %v", err)
	}
	for name, c := range map[string]struct {
		header, body, secret string
		now                  time.Time
		want                 error
	}{
		"a changed body":        {header, strings.Replace(body, "created", "ended", 1), secret, sent, webhooks.ErrMismatch},
		"another secret":        {header, body, webhooks.NewSecret(), sent, webhooks.ErrMismatch},
		"a replay an hour late": {header, body, secret, sent.Add(time.Hour), webhooks.ErrTooOld},
		"a time in the future":  {header, body, secret, sent.Add(-10 * time.Minute), webhooks.ErrTooOld},
		"another time":          {strings.Replace(header, "t="+ts, "t="+later, 1), body, secret, sent, webhooks.ErrMismatch},
		"no header":             {"", body, secret, sent, webhooks.ErrNoSignature},
		"no v1":                 {"t=" + ts, body, secret, sent, webhooks.ErrNoSignature},
	} {
		if err := webhooks.Verify(c.header, []byte(c.body), c.secret, c.now, webhooks.DefaultTolerance); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v; want %v", name, err, c.want)
		}
	}
}

// docs/webhooks.md §2: while a secret is rotated, a delivery carries a signature under each,
// and a receiver holding either accepts it.
func TestRotationSignsWithBoth(t *testing.T) {
	t.Parallel()
	old, next := webhooks.NewSecret(), webhooks.NewSecret()
	header := webhooks.Sign(sent, []byte(body), old, next)
	if strings.Count(header, "v1=") != 2 {
		t.Fatalf("header %q; want two v1 signatures", header)
	}
	for _, s := range []string{old, next} {
		if err := webhooks.Verify(header, []byte(body), s, sent, webhooks.DefaultTolerance); err != nil {
			t.Errorf("a receiver holding one of the two secrets: %v", err)
		}
	}
}

// docs/webhooks.md §2: the shell check of the receivers' guide, run as written with openssl,
// accepts a delivery as sent and refuses one whose body changed.
func TestShellCheckOfTheGuide(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed; scripts/test.sh runs on machines that have it")
	}
	guide, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- verify.sh -->\\s*```sh\\n(.*?)```").FindSubmatch(guide)
	if m == nil {
		t.Fatal("docs/webhooks.md has no shell check after <!-- verify.sh -->")
	}
	secret := webhooks.NewSecret()
	// Signed now: the shell check compares the time with the machine's clock.
	header := webhooks.Sign(time.Now(), []byte(body), secret)
	run := func(delivered string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "body.json"), []byte(delivered), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", string(m[1]))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SECRET="+secret, "SIGNATURE="+header)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Run()
		return strings.TrimSpace(out.String())
	}
	if got := run(body); got != "valid" {
		t.Errorf("the guide's check of a delivery as sent printed %q; want valid", got)
	}
	if got := run(strings.Replace(body, "created", "ended", 1)); got != "INVALID" {
		t.Errorf("the guide's check of a changed body printed %q; want INVALID", got)
	}
}
