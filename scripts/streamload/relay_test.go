package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/relay/relaytest"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// The stream tier as AWS runs it (docs/architecture.md §3, docs/operations.md §6.2), on
// DynamoDB Local and the test Redis: `streamer -relay` and three streamer processes (the
// container's binary) following its log, 3 000 subscribers spread over them by streamload,
// publishes at 200 a second through a server of its own on the same table, and the first
// streamer killed (SIGKILL) 3 s into publishing. Every subscriber whose circle holds an event
// receives its delta exactly once (docs/api.md §10.2, Stream); the killed streamer's
// subscribers, and only they, come back to another and resume there without a snapshot. The
// delivery p95 is logged; the publishing rate reached depends on the machine (DynamoDB Local is
// the bottleneck on two cores). Every part is a process of its own, built without the race
// detector, whose limit on live goroutines 3 000 streams in one process would pass.
func TestThreeStreamersBehindTheRelay(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test of a minute or two")
	}
	log := relaytest.NewLog(t, 0)
	l := tables.NewLocal(t)
	const subscribers, servers = 3000, 3

	bin := t.TempDir()
	for name, pkg := range map[string]string{"streamer": "./streamer", "roadevents": ".", "streamload": "./scripts/streamload"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg)
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	env := append(os.Environ(),
		"ROADEVENTS_STORE=dynamodb", "ROADEVENTS_TABLE="+l.Name, "ROADEVENTS_DATA="+filepath.Join(bin, "data"),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB="+l.Endpoint, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS="+l.Endpoint,
		"ROADEVENTS_STREAM_POLL_INTERVAL=250ms",
		"ROADEVENTS_RELAY_REDIS=redis://"+relaytest.Addr(t), "ROADEVENTS_RELAY_KEY="+log.Key())
	issue := exec.Command(filepath.Join(bin, "roadevents"), "apikey", "issue", "-org", "org_relay", "-env", "live", "-label", "relay")
	issue.Env = env
	key, err := issue.Output()
	if err != nil {
		t.Fatalf("roadevents apikey issue: %v", err)
	}
	// start runs a server on a free loopback port until the test ends, and returns it with
	// its base URL once GET /health answers 200 (a streamer: once it follows the log).
	start := func(name string, args ...string) (*exec.Cmd, string) {
		addr := freeAddr(t)
		cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
		cmd.Env = append(env, "ROADEVENTS_ADDR="+addr)
		logFile, err := os.Create(filepath.Join(bin, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			logFile.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logFile.Name())
				t.Logf("%s's log (last 2 000 bytes):\n%s", name, b[max(0, len(b)-2000):])
			}
		})
		base := "http://" + addr
		if name != "relay" {
			waitHealthy(t, base)
		}
		return cmd, base
	}
	start("relay", "streamer", "-relay")
	relaytest.WaitStarted(t, log)
	_, publishTo := start("publisher", "roadevents")
	var bases []string
	var first *exec.Cmd
	for i := range servers {
		cmd, base := start(fmt.Sprintf("streamer-%d", i+1), "streamer")
		bases = append(bases, base)
		if i == 0 {
			first = cmd
		}
	}

	load := exec.Command(filepath.Join(bin, "streamload"), "run", "-base", strings.Join(bases, ","), "-publish", publishTo,
		"-failover", "-subscribers", fmt.Sprint(subscribers), "-rate", "200", "-duration", "10s", "-radius", "1000",
		"-side", "20000", "-settle", "1m", "-seed", "24", "-run-id", "relay")
	load.Env = append(os.Environ(), "STREAMLOAD_API_KEY="+strings.TrimSpace(string(key)))
	var out bytes.Buffer
	load.Stdout = &out
	stderr, err := load.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		t.Log(lines.Text())
		if !killed && strings.HasPrefix(lines.Text(), "streamload: publishing") {
			killed = true
			time.AfterFunc(3*time.Second, func() { first.Process.Signal(syscall.SIGKILL) })
		}
	}
	if err := load.Wait(); err != nil {
		t.Fatalf("streamload: %v\n%s", err, out.Bytes())
	}
	var res result
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, `{"phase"`) {
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d subscribers over %d streamers, %d published at %.0f/s: %d of %d deltas, p50 %.0f ms, p95 %.0f ms, p99 %.0f ms; "+
		"%d failovers, %d deltas sent on coming back, %d snapshots, %d twice",
		subscribers, servers, res.Published, res.PublishRate, res.Received, res.Expected, res.P50Ms, res.P95Ms, res.P99Ms,
		res.Failovers, res.Replayed, res.Resnapshots, res.Duplicates)
	// How many fit in the 10 s depends on the machine; each must reach its circles.
	if !killed || res.Published == 0 || res.PublishErr != 0 || res.Expected < res.Published {
		t.Fatalf("killed: %v; published %d (%d failed), %d deltas expected; want a kill, some published, none failed, each in some circle on average",
			killed, res.Published, res.PublishErr, res.Expected)
	}
	if res.Received != res.Expected || res.Missing != 0 || res.Duplicates != 0 || res.Dropped != 0 {
		t.Errorf("received %d of %d deltas (%d missing, %d twice, %d dropped); want each exactly once",
			res.Received, res.Expected, res.Missing, res.Duplicates, res.Dropped)
	}
	// Exactly the streams of the first server come back elsewhere.
	if want := res.Opened[0]; len(res.Opened) != servers || res.Failovers != want || res.Resnapshots != 0 || res.Replayed == 0 {
		t.Errorf("%d streams came back elsewhere, %d with a snapshot, %d deltas sent on coming back; want the killed streamer's %d, "+
			"none with a snapshot, the deltas they missed", res.Failovers, res.Resnapshots, res.Replayed, want)
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHealthy waits until base's GET /health answers 200.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/health not 200 within a minute (last: %v)", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
