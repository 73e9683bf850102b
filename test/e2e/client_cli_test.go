package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// cliRun runs a client command of the binary against s with the config file cfg, and returns
// its output and exit code.
func cliRun(t *testing.T, s *Server, cfg string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), append([]string{"ROADEVENTS_URL=" + s.URL, "ROADEVENTS_CLI_CONFIG=" + cfg}, env...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// waitForMail waits until the outbox holds a message to addr.
func waitForMail(t *testing.T, dataDir, addr string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(filepath.Join(dataDir, "outbox"))
		for _, e := range entries {
			raw, _ := os.ReadFile(filepath.Join(dataDir, "outbox", e.Name()))
			if bytes.Contains(raw, []byte("To: "+addr)) {
				return outboxText(t, dataDir, addr)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no mail to %s", addr)
	return ""
}

var eventID = regexp.MustCompile(`ev_[a-z2-7]{26}`)

// docs/cli.md: a person signs in from the terminal with the e-mailed code, lists their
// organisations, issues a sandbox key kept in a config file only they may read, publishes,
// queries, confirms, revises, reads and closes an event, plays a bundled scenario, and watches
// an area live in a terminal; a refusal is worded from the service's answer; a config file
// others may read is refused; a live key plays no scenario.
func TestCommandLine(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "data"))
	cfg := filepath.Join(t.TempDir(), "cli.json")

	// login reads the address and then the code from the terminal.
	login := exec.Command(binary(t), "login")
	login.Env = append(os.Environ(), "ROADEVENTS_URL="+s.URL, "ROADEVENTS_CLI_CONFIG="+cfg)
	stdin, err := login.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var loginOut bytes.Buffer
	login.Stdout, login.Stderr = &loginOut, &loginOut
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "ada@example.com\n")
	code := signInCode.FindString(waitForMail(t, s.DataDir, "ada@example.com"))
	io.WriteString(stdin, code+"\n")
	stdin.Close()
	if err := login.Wait(); err != nil || !strings.Contains(loginOut.String(), "Signed in as ada@example.com") {
		t.Fatalf("login: %v\n%s", err, loginOut.String())
	}
	info, err := os.Stat(cfg)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("config file %v, %v; want mode 0600", info, err)
	}
	var conf struct{ Session string }
	raw, _ := os.ReadFile(cfg)
	json.Unmarshal(raw, &conf)
	c := client{t: t, base: s.URL}
	var org struct {
		OrgID string `json:"org_id"`
	}
	c.must(201, "POST", "/console/orgs", conf.Session, map[string]string{"name": "Terminal Fleet"}, &org)

	run := func(want int, stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := cliRun(t, s, cfg, nil, stdin, args...)
		if code != want {
			t.Fatalf("roadevents %s: exit %d; want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out + errOut
	}
	if out := run(0, "", "orgs"); !strings.Contains(out, org.OrgID) || !strings.Contains(out, "Terminal Fleet") || !strings.Contains(out, "owner") {
		t.Errorf("orgs:\n%s", out)
	}
	if out := run(0, "", "keys", "issue", "-org", org.OrgID, "-env", "sandbox", "-save"); !strings.Contains(out, "the key is kept in "+cfg) || strings.Contains(out, "svc_") {
		t.Errorf("keys issue -save printed:\n%s\nwant where it is kept, not the key", out)
	}
	if out := run(0, "", "keys", "list", "-org", org.OrgID); !strings.Contains(out, "sandbox") || !strings.Contains(out, "active") {
		t.Errorf("keys list:\n%s", out)
	}

	published := run(0, "", "publish", "-type", "accident", "-lat", "48.1", "-lon", "11.5", "-severity", "high", "-road-ref", "A9")
	id := eventID.FindString(published)
	if id == "" || !strings.Contains(published, `"environment": "sandbox"`) {
		t.Fatalf("publish printed:\n%s", published)
	}
	if out := run(0, "", "query", "-lat", "48.1", "-lon", "11.5", "-radius", "2000"); !strings.Contains(out, id) || !strings.Contains(out, "accident") || !strings.Contains(out, "A9") {
		t.Errorf("query:\n%s", out)
	}
	if out := run(0, "", "signal", "-action", "confirm", "-reporter", "car-1", id); !strings.Contains(out, `"confirm_count": 1`) {
		t.Errorf("signal:\n%s", out)
	}
	// A revision of the position keeps the severity: the command sends what it does not change.
	if out := run(0, "", "revise", "-lat", "48.1005", "-lon", "11.5", id); !strings.Contains(out, `"lat": 48.1005`) || !strings.Contains(out, `"severity": "high"`) {
		t.Errorf("revise:\n%s", out)
	}
	if out := run(1, "", "publish", "-type", "tornado", "-lat", "48.1", "-lon", "11.5"); !strings.Contains(out, "422: body.type:") {
		t.Errorf("a refused publish says:\n%s", out)
	}
	if out := run(0, "", "close", id); !strings.Contains(out, "Closed "+id) {
		t.Errorf("close:\n%s", out)
	}
	if out := run(0, "", "get", id); !strings.Contains(out, `"status": "expired"`) && !strings.Contains(out, `"status": "invalidated"`) {
		t.Errorf("get after close:\n%s", out)
	}

	// The bundled scenarios, one played a hundred times faster: denied off the map.
	if out := run(0, "", "simulate", "-list"); strings.Count(out, "\n") != 3 || !strings.Contains(out, "false-report") {
		t.Errorf("simulate -list:\n%s", out)
	}
	played := run(0, "", "simulate", "-speed", "100", "-at", "48.3,11.7", "false-report")
	lines := strings.Split(strings.TrimSpace(played), "\n")
	if last := lines[len(lines)-1]; len(lines) != 5 || !strings.Contains(last, "deny") || strings.HasSuffix(last, "active") {
		t.Errorf("the false report played:\n%s\nwant a publication and three denials, the last ending it", played)
	}

	// A config file others may read is refused.
	os.Chmod(cfg, 0o644)
	if out := run(1, "", "query", "-lat", "1", "-lon", "1"); !strings.Contains(out, "chmod 600") {
		t.Errorf("a loose config file:\n%s", out)
	}
	os.Chmod(cfg, 0o600)

	// watch, in a terminal: the table follows the stream.
	watch := exec.Command(binary(t), "watch", "-lat", "48.2", "-lon", "11.6", "-radius", "3000")
	watch.Env = append(os.Environ(), "ROADEVENTS_URL="+s.URL, "ROADEVENTS_CLI_CONFIG="+cfg)
	tty, err := pty.StartWithSize(watch, &pty.Winsize{Rows: 30, Cols: 140})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { watch.Process.Kill(); watch.Wait(); tty.Close() }()
	var mu sync.Mutex
	var screen strings.Builder
	go func() {
		r := bufio.NewReader(tty)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	shows := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			s := screen.String()
			mu.Unlock()
			// The last drawing: what follows the last clear.
			if i := strings.LastIndex(s, "\x1b[2J"); i >= 0 && ok(s[i:]) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("watch never showed %s:\n%q", what, screen.String())
	}
	shows("an empty area", func(s string) bool { return strings.Contains(s, "0 events within 3.0 km") })
	near := eventID.FindString(run(0, "", "publish", "-type", "roadworks", "-lat", "48.2", "-lon", "11.6"))
	far := eventID.FindString(run(0, "", "publish", "-type", "object_on_road", "-lat", "48.21", "-lon", "11.6"))
	shows("both events, nearest first", func(s string) bool {
		return strings.Contains(s, "2 events") && strings.Contains(s, near) && strings.Index(s, near) < strings.Index(s, far)
	})
	run(0, "", "close", near)
	shows("the close", func(s string) bool {
		return strings.Contains(s, "1 events") && !strings.Contains(s, near) && strings.Contains(s, far)
	})

	// A live key plays no scenario: its first event is taken off the network at once.
	liveKey := regexp.MustCompile(`svc_[A-Za-z0-9]{43}`).FindString(run(0, "", "keys", "issue", "-org", org.OrgID, "-env", "live"))
	out, errOut, exit := cliRun(t, s, cfg, []string{"ROADEVENTS_API_KEY=" + liveKey}, "", "simulate", "-speed", "100", "false-report")
	if exit != 1 || !strings.Contains(errOut, "live key") {
		t.Errorf("simulate with a live key: exit %d\n%s%s", exit, out, errOut)
	}
}
