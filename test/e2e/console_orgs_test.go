package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/mail/mailtest"
)

// client is a customer's HTTP client against one running server.
type client struct {
	t    *testing.T
	base string
}

// do sends a JSON request (body may be nil) with a bearer token (may be empty), and returns
// the status and the body.
func (c client) do(method, path, token string, body any) (int, []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, out
}

// must sends the request, fails unless the status is want, and decodes the body into into.
func (c client) must(want int, method, path, token string, body, into any) {
	c.t.Helper()
	status, out := c.do(method, path, token, body)
	if status != want {
		c.t.Fatalf("%s %s = %d %s; want %d", method, path, status, out, want)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			c.t.Fatalf("%s %s: body %s: %v", method, path, out, err)
		}
	}
}

// outboxText returns the plain-text part of the newest message to addr in the server's outbox
// (docs/api.md §10.4: <data>/outbox/<time>-<id>.eml, RFC 5322), as a person reading the file would.
func outboxText(t *testing.T, dataDir, addr string) string {
	t.Helper()
	dir := filepath.Join(dataDir, "outbox")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read the outbox: %v", err)
	}
	names := []string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".eml") {
			names = append(names, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names))) // the names start with the time
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		msg, parts := mailtest.Parse(t, raw)
		if msg.Header.Get("To") != addr {
			continue
		}
		if len(parts) == 0 {
			t.Fatalf("%s has no parts", name)
		}
		return parts[0].Body
	}
	t.Fatalf("no message to %s in %s", addr, dir)
	return ""
}

var (
	signInCode = regexp.MustCompile(`\b[0-9]{6}\b`)
	inviteLink = regexp.MustCompile(`(\S+)accept-invite#token=(\S+)`)
)

// signUp signs addr up by e-mailed code (docs/api.md §4.2: sign-up and sign-in are one route) and
// returns the session token.
func signUp(c client, dataDir, addr string) string {
	c.t.Helper()
	c.must(200, "POST", "/console/auth/request-code", "", map[string]string{"email": addr}, nil)
	code := signInCode.FindString(outboxText(c.t, dataDir, addr))
	if code == "" {
		c.t.Fatalf("the sign-in e-mail to %s holds no 6-digit code", addr)
	}
	var sess struct {
		Token string `json:"token"`
	}
	c.must(200, "POST", "/console/auth/verify-code", "", map[string]string{"email": addr, "code": code}, &sess)
	return sess.Token
}

// From nothing to a working integration, as a new customer does it on
// `go run .`: sign up by e-mail code, create an organisation, invite a colleague who accepts
// through the e-mailed link, issue a sandbox key, publish and query an event with it, revoke
// it, and see the 401.
func TestNewCustomerIntegration(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "data"))
	c := client{t: t, base: s.URL}

	ada := signUp(c, s.DataDir, "ada@example.com")
	var org struct {
		OrgID string `json:"org_id"`
		Role  string `json:"role"`
		Plan  string `json:"plan"`
	}
	c.must(201, "POST", "/console/orgs", ada, map[string]string{"name": "Ada Fleet"}, &org)
	if org.Role != "owner" || org.Plan != "free" {
		t.Fatalf("new organisation = %+v; want role owner on plan free", org)
	}
	orgPath := "/console/orgs/" + org.OrgID

	var inv struct {
		InviteID string `json:"invite_id"`
	}
	c.must(201, "POST", orgPath+"/members", ada, map[string]string{"email": "bob@example.com"}, &inv)
	m := inviteLink.FindStringSubmatch(outboxText(t, s.DataDir, "bob@example.com"))
	if m == nil {
		t.Fatalf("the invitation e-mail holds no accept-invite link")
	}
	if want := s.URL + "/app/"; m[1] != want {
		t.Errorf("the invitation links to %saccept-invite; want %saccept-invite (the console SPA)", m[1], want)
	}
	bob := signUp(c, s.DataDir, "bob@example.com")
	var joined struct {
		OrgID string `json:"org_id"`
		Role  string `json:"role"`
	}
	c.must(200, "POST", "/console/invitations/accept", bob, map[string]string{"token": m[2]}, &joined)
	if joined.OrgID != org.OrgID || joined.Role != "member" {
		t.Fatalf("accept = %+v; want %s as member", joined, org.OrgID)
	}
	var members struct {
		Members []struct {
			Email string `json:"email"`
			Role  string `json:"role"`
		} `json:"members"`
		Invitations []any `json:"invitations"`
	}
	c.must(200, "GET", orgPath+"/members", bob, nil, &members)
	if len(members.Members) != 2 || len(members.Invitations) != 0 {
		t.Errorf("members seen by bob = %+v; want ada and bob, no pending invitation", members)
	}

	var issued struct {
		Key    string `json:"key"`
		APIKey struct {
			KeyID  string `json:"key_id"`
			Prefix string `json:"prefix"`
		} `json:"api_key"`
	}
	c.must(201, "POST", orgPath+"/keys", ada, map[string]string{"label": "integration test", "environment": "sandbox"}, &issued)
	if !strings.HasPrefix(issued.Key, "svc_") || !strings.HasPrefix(issued.Key, issued.APIKey.Prefix) {
		t.Fatalf("issued key %q with prefix %q; want svc_... starting with its prefix", issued.Key, issued.APIKey.Prefix)
	}

	var ev struct {
		EventID     string `json:"event_id"`
		Environment string `json:"environment"`
	}
	c.must(201, "POST", "/v1/events", issued.Key, map[string]any{"type": "accident", "lat": 48.8566, "lon": 2.3522}, &ev)
	if ev.Environment != "sandbox" {
		t.Errorf("published event environment %q; want sandbox (the key's)", ev.Environment)
	}
	var found []struct {
		EventID string `json:"event_id"`
	}
	c.must(200, "GET", "/v1/events?lat=48.8566&lon=2.3522&radius=500", issued.Key, nil, &found)
	if len(found) != 1 || found[0].EventID != ev.EventID {
		t.Fatalf("query around the event = %+v; want %s", found, ev.EventID)
	}

	c.must(200, "DELETE", orgPath+"/keys/"+issued.APIKey.KeyID, ada, nil, nil)
	status, body := c.do("GET", "/v1/events?lat=48.8566&lon=2.3522", issued.Key, nil)
	if status != 401 || !strings.Contains(string(body), "detail") {
		t.Fatalf("query with the revoked key = %d %s; want 401 {detail}", status, body)
	}

	var log []struct {
		Action string `json:"action"`
	}
	c.must(200, "GET", orgPath+"/audit", bob, nil, &log)
	got := []string{}
	for _, e := range log {
		got = append(got, e.Action)
	}
	if want := "key.revoked key.issued invitation.accepted member.invited org.created"; strings.Join(got, " ") != want {
		t.Errorf("audit log = %v; want %s", got, want)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(fmt.Errorf("stop: %w\n%s", err, s.logs))
	}
	// The invitation token travels in the link's fragment only: never in a log line.
	if strings.Contains(s.logs.String(), m[2]) {
		t.Errorf("the invitation token reached the log")
	}
}
