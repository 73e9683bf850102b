// Package e2e runs the service as a user does, `go run .` built into a binary, and talks to it
// over HTTP.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roadevents/roadevents/web"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary built for the run: each run would otherwise leave 33 MB in the
// temporary folder.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds the repository's main package once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "roadevents-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "roadevents")
		out, err := exec.Command("go", "build", "-o", binPath, "../..").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Server is one running service process.
type Server struct {
	URL     string
	DataDir string
	cmd     *exec.Cmd
	logs    *logBuffer
	exited  chan error
}

type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(s string) { b.mu.Lock(); b.lines = append(b.lines, s); b.mu.Unlock() }
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// start runs the binary on a free loopback port with its data in dataDir, and waits for the
// "listening" log line that names its address.
func start(t *testing.T, dataDir string, env ...string) *Server {
	t.Helper()
	cmd := exec.Command(binary(t), "-addr", "127.0.0.1:0", "-data", dataDir)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{DataDir: dataDir, cmd: cmd, logs: &logBuffer{}, exited: make(chan error, 1)}
	addr := make(chan string, 1)
	// cmd.Wait closes the pipe once the process has exited, and the lines not yet read with
	// it (the last ones, such as "stopped"): Wait only after the reader has seen EOF.
	go func() {
		defer func() { s.exited <- cmd.Wait() }()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.logs.add(line)
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
		}
		io.Copy(io.Discard, stderr) // past a line too long for the scanner, keep the pipe flowing
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case s.URL = <-addr:
	case err := <-s.exited:
		t.Fatalf("server exited before listening: %v\n%s", err, s.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not log its address within 60 s\n%s", s.logs)
	}
	return s
}

// stop sends SIGTERM and returns the process's exit error.
func (s *Server) stop(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not stop within 60 s of SIGTERM\n%s", s.logs)
	}
	return nil
}

func getJSON(t *testing.T, url string, into any) *http.Response {
	t.Helper()
	resp, body := get(t, url)
	if into != nil {
		if err := json.Unmarshal([]byte(body), into); err != nil {
			t.Fatalf("GET %s: body is not JSON (%v): %s", url, err, body)
		}
	}
	return resp
}

// docs/api.md §10.4: on a fresh data folder the service answers /health, /v1/meta/taxonomy
// (13 types with the TTLs of §2.1) and /openapi.json, then stops cleanly on SIGTERM.
func TestBinaryServesOpenRoutesAndStopsCleanly(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "data"))

	var health struct{ Status, Version string }
	if resp := getJSON(t, s.URL+"/health", &health); resp.StatusCode != 200 || health.Status != "ok" || health.Version == "" {
		t.Errorf("GET /health = %d %+v; want 200 {status: ok, version: <build>} (docs/api.md §10.1)", resp.StatusCode, health)
	}

	var tax struct {
		SchemaVersion int `json:"schema_version"`
		Types         []struct {
			ID         string `json:"id"`
			TTLSeconds int    `json:"ttl_seconds"`
		} `json:"types"`
	}
	if resp := getJSON(t, s.URL+"/v1/meta/taxonomy", &tax); resp.StatusCode != 200 {
		t.Fatalf("GET /v1/meta/taxonomy = %d", resp.StatusCode)
	}
	wantTTL := map[string]int{"accident": 7200, "stopped_vehicle": 3600, "object_on_road": 1800,
		"weather_hazard": 10800, "congestion": 1800, "wrong_way_vehicle": 1200, "road_damage": 43200,
		"people_on_road": 1800, "police_check": 1800, "speed_camera": 3600, "road_closure": 7200,
		"infrastructure_fault": 21600, "roadworks": 14400}
	if len(tax.Types) != 13 {
		t.Errorf("taxonomy has %d types; want 13 (docs/api.md §2.1)", len(tax.Types))
	}
	for _, typ := range tax.Types {
		if want, ok := wantTTL[typ.ID]; !ok || typ.TTLSeconds != want {
			t.Errorf("type %q ttl_seconds = %d; want %d (docs/api.md §2.1)", typ.ID, typ.TTLSeconds, want)
		}
	}

	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct{ Version string }
		Paths   map[string]any
	}
	if resp := getJSON(t, s.URL+"/openapi.json", &doc); resp.StatusCode != 200 || !strings.HasPrefix(doc.OpenAPI, "3.1") ||
		doc.Info.Version != "1.0.0" || doc.Paths["/v1/meta/taxonomy"] == nil {
		t.Errorf("GET /openapi.json = %d openapi %q version %q; want 200, 3.1.x, 1.0.0 with /v1/meta/taxonomy", resp.StatusCode, doc.OpenAPI, doc.Info.Version)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM = %v; want a clean exit\n%s", err, s.logs)
	}
	if !strings.Contains(s.logs.String(), `"msg":"stopped"`) {
		t.Errorf("no \"stopped\" log line after SIGTERM\n%s", s.logs)
	}
	// The store was closed cleanly: the same data folder opens again at once.
	s2 := start(t, s.DataDir)
	if resp := getJSON(t, s2.URL+"/health", nil); resp.StatusCode != 200 {
		t.Fatalf("restart on the same data folder: /health = %d", resp.StatusCode)
	}
	if err := s2.stop(t); err != nil {
		t.Fatal(err)
	}
}

// docs/security.md §1: the log never holds the credential a request carried.
func TestBinaryLogsCarryNoCredentials(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "data"))
	const secret = "svc_ThisIsASecretKeyThatMustNeverBeLogged0123456"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, path := range []string{"/v1/events?lat=1&lon=2", "/v1/stream?lat=1&lon=2&ticket=svc_st_" + secret[4:]} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if logs := s.logs.String(); strings.Contains(logs, secret[4:]) {
		t.Fatalf("a credential reached the log:\n%s", logs)
	}
	if !strings.Contains(s.logs.String(), "request_id") {
		t.Fatalf("no access log line with a request_id:\n%s", s.logs)
	}
}

// The console at /app/ is logged as the API is (request id, method, path, status,
// duration), and a path that is not valid UTF-8 is a missing page, not a 500.
func TestBinaryServesAndLogsTheConsole(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "data"))
	for path, want := range map[string]int{"/app/": 200, "/app/%ff": 404} {
		if resp := getJSON(t, s.URL+path, nil); resp.StatusCode != want || resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s = %d, X-Request-Id %q; want %d with a request id", path, resp.StatusCode, resp.Header.Get("X-Request-Id"), want)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	logged := map[string]bool{}
	for _, line := range strings.Split(s.logs.String(), "\n") {
		var rec struct {
			Msg       string   `json:"msg"`
			RequestID string   `json:"request_id"`
			Method    string   `json:"method"`
			Path      string   `json:"path"`
			Status    int      `json:"status"`
			Duration  *float64 `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "request" && strings.HasPrefix(rec.Path, "/app/") &&
			rec.RequestID != "" && rec.Method == "GET" && rec.Duration != nil {
			logged[fmt.Sprint(rec.Path, " ", rec.Status)] = true
		}
	}
	// slog writes the invalid byte as U+FFFD.
	for _, want := range []string{"/app/ 200", "/app/\ufffd 404"} {
		if !logged[want] {
			t.Errorf("no access-log line for GET %s with a request id and a duration:\n%s", want, s.logs)
		}
	}
}

// A new user's first stop: GET / links the API reference, which go run . serves as an HTML
// page under the console's Content-Security-Policy, with every script and stylesheet it names
// (docs/api.md §11.3).
func TestBinaryServesTheAPIReference(t *testing.T) {
	s := start(t, filepath.Join(t.TempDir(), "data"))
	var root struct{ Docs string }
	if resp := getJSON(t, s.URL+"/", &root); resp.StatusCode != 200 || root.Docs == "" {
		t.Fatalf("GET / = %d docs %q; want 200 with the reference's path", resp.StatusCode, root.Docs)
	}
	resp, page := get(t, s.URL+root.Docs)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s = %d %q; want 200 text/html", root.Docs, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if got := resp.Header.Get("Content-Security-Policy"); got != web.ContentSecurityPolicy {
		t.Errorf("GET %s Content-Security-Policy = %q; want the console's %q", root.Docs, got, web.ContentSecurityPolicy)
	}
	assets := regexp.MustCompile(`(?:src|href)="(/app/assets/[^"]+\.(?:js|css))"`).FindAllStringSubmatch(page, -1)
	if len(assets) == 0 {
		t.Fatalf("GET %s names no script or stylesheet under /app/assets/:\n%s", root.Docs, page)
	}
	for _, m := range assets {
		if resp, body := get(t, s.URL+m[1]); resp.StatusCode != 200 || len(body) == 0 {
			t.Errorf("GET %s (named by the reference) = %d, %d bytes; want 200 with the file", m[1], resp.StatusCode, len(body))
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
}

// get fetches url and returns the answer with its body read.
func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// docs/operations.md §1 (a 2xx means the write is kept): a server killed with SIGKILL
// while 16 clients publish keeps every publish it answered 201, readable by id after a
// restart on the same data folder. The embedded store acknowledges a write once its commit
// is in the write-ahead log, before the table file has it, so the restart replays the log.
func TestBinaryKeepsAcknowledgedPublishesAfterSIGKILL(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	issue := exec.Command(binary(t), "apikey", "issue", "-org", "org_crash", "-env", "live", "-label", "crash test")
	issue.Env = append(os.Environ(), "ROADEVENTS_STORE=embedded", "ROADEVENTS_DATA="+dataDir)
	out, err := issue.Output()
	if err != nil {
		t.Fatalf("apikey issue: %v", err)
	}
	key := strings.TrimSpace(string(out))
	s := start(t, dataDir, "ROADEVENTS_STORE=embedded")

	const clients, killAfter = 16, 400
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	killed := make(chan struct{})
	for c := range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				body := fmt.Sprintf(`{"type":"accident","lat":%.6f,"lon":%.6f}`, 48.80+float64(c)*0.01, 2.30+float64(i%1000)*0.0001)
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/events", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the server is gone
				}
				var ev struct {
					EventID string `json:"event_id"`
				}
				decodeErr := json.NewDecoder(resp.Body).Decode(&ev)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated || decodeErr != nil {
					select {
					case <-killed: // a reply cut short by the kill
					default:
						t.Errorf("POST /v1/events = %d (%v); want 201", resp.StatusCode, decodeErr)
					}
					return
				}
				mu.Lock()
				acked = append(acked, ev.EventID)
				n := len(acked)
				mu.Unlock()
				if n == killAfter {
					close(killed)
					if err := s.cmd.Process.Kill(); err != nil {
						t.Errorf("kill: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("the clients stopped after %d acknowledged publishes, before the kill", len(acked))
	}
	<-s.exited

	s2 := start(t, dataDir, "ROADEVENTS_STORE=embedded")
	defer s2.stop(t)
	for _, id := range acked { // the clients are done: wg.Wait
		req, _ := http.NewRequest(http.MethodGet, s2.URL+"/v1/events/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET /v1/events/%s after the restart: %v", id, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /v1/events/%s after the restart = %d; want 200 (acknowledged before the kill, %d acknowledged in all)", id, resp.StatusCode, len(acked))
		}
	}
}
