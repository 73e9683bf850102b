package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/webhooks"
)

// verify is the receivers' check as docs/webhooks.md §2 prints it; TestGoCheckOfTheGuide
// holds the two the same.
func verify(header string, body []byte, secret string, now time.Time) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// docs/webhooks.md §2: the Go check of the receivers' guide is this file's verify, word for
// word, and it accepts what the service signs and refuses a changed body, another secret and
// an old delivery.
func TestGoCheckOfTheGuide(t *testing.T) {
	t.Parallel()
	guide, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	printed := regexp.MustCompile("(?s)<!-- verify.go -->\\s*```go\\n(.*?)```").FindSubmatch(guide)
	here := regexp.MustCompile(`(?s)\nfunc verify\(.*?\n}\n`).Find(src)
	if printed == nil || here == nil || string(printed[1]) != strings.TrimPrefix(string(here), "\n") {
		t.Fatalf("the guide's Go check differs from verify in example_test.go:\n%s\nthe test's:\n%s", printed, here)
	}
	secret := webhooks.NewSecret()
	header := webhooks.Sign(sent, []byte(body), secret)
	switch {
	case !verify(header, []byte(body), secret, sent):
		t.Error("the guide's check refuses a delivery as sent")
	case verify(header, []byte(body+" "), secret, sent):
		t.Error("the guide's check accepts a changed body")
	case verify(header, []byte(body), webhooks.NewSecret(), sent):
		t.Error("the guide's check accepts another secret")
	case verify(header, []byte(body), secret, sent.Add(6*time.Minute)):
		t.Error("the guide's check accepts a delivery signed 6 minutes ago")
	}
}
