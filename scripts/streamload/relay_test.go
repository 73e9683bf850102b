package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/relay/relaytest"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// The stream tier as AWS runs it (docs/architecture.md §3, docs/operations.md §6.2), on
// DynamoDB Local and the test Redis: `streamer -relay` and three streamer processes (the
// container's binary) following its log, 3 000 subscribers spread over them, publishes at 200 a
// second through the events routes on the same table, and the first streamer killed (SIGKILL)
// 3 s into publishing. Every subscriber whose circle holds an event receives its delta exactly
// once (docs/api.md §10.2, Stream); the killed streamer's subscribers, and only they, come back
// to another and resume there without a snapshot. The delivery p95 is logged; the publishing
// rate reached depends on the machine (DynamoDB Local is the bottleneck on two cores).
func TestThreeStreamersBehindTheRelay(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test of a minute or two")
	}
	log := relaytest.NewLog(t, 0)
	l := tables.NewLocal(t)
	const subscribers, servers = 3000, 3
	if need := uint64(subscribers + 1024); !raiseFileLimit(need) {
		t.Fatalf("needs %d open files (ulimit -n): raise the hard limit", need)
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "streamer"), "./streamer")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./streamer: %v\n%s", err, out)
	}
	env := append(os.Environ(),
		"ROADEVENTS_STORE=dynamodb", "ROADEVENTS_TABLE="+l.Name,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB="+l.Endpoint, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS="+l.Endpoint,
		"ROADEVENTS_STREAM_POLL_INTERVAL=250ms",
		"ROADEVENTS_RELAY_REDIS=redis://"+relaytest.Addr(t), "ROADEVENTS_RELAY_KEY="+log.Key())
	start := func(name string, args ...string) (*exec.Cmd, string) {
		addr := freeAddr(t)
		cmd := exec.Command(filepath.Join(bin, "streamer"), args...)
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
				t.Logf("%s's log (last 2 000 bytes):\n%s", name, tail(b, 2000))
			}
		})
		return cmd, "http://" + addr
	}
	start("relay", "-relay")
	relaytest.WaitStarted(t, log)
	var bases []string
	var first *exec.Cmd
	for i := range servers {
		cmd, base := start(fmt.Sprintf("streamer-%d", i+1))
		waitHealthy(t, base)
		bases = append(bases, base)
		if i == 0 {
			first = cmd
		}
	}

	table := dynamodb.New(l.DB, l.Name, dynamodb.Options{})
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	keys := apikey.New(table, apikey.Options{Logger: logger})
	key, _, err := keys.Issue(context.Background(), apikey.IssueRequest{OrgID: "org_relay", Environment: apikey.Live, Label: "relay"})
	if err != nil {
		t.Fatal(err)
	}
	eventsAPI, err := app.New(app.Deps{Config: config.Default(), Table: table, Clock: clock.System, Logger: logger,
		Keys: keys, Meter: metering.New(table, metering.Options{FlushInterval: -1})}, routetable.GroupEvents)
	if err != nil {
		t.Fatal(err)
	}
	events := httptest.NewServer(eventsAPI.Handler())
	defer events.Close()

	killed := make(chan struct{})
	o := options{
		base: strings.Join(bases, ","), publish: events.URL, key: key, failover: true,
		subscribers: subscribers, rate: 200, duration: 10 * time.Second, radius: 1000,
		lat: 48.137, lon: 11.575, side: 20000, publishers: 32, opens: 128, settle: time.Minute,
		seed: 24, runID: "relay",
		publishing: func() {
			time.AfterFunc(3*time.Second, func() {
				first.Process.Signal(syscall.SIGKILL)
				close(killed)
			})
		},
	}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	<-killed
	t.Logf("%d subscribers over %d streamers, %d published at %.0f/s: %d of %d deltas, p50 %.0f ms, p95 %.0f ms, p99 %.0f ms; "+
		"%d failovers, %d deltas sent on coming back, %d snapshots, %d twice",
		subscribers, servers, res.Published, res.PublishRate, res.Received, res.Expected, res.P50Ms, res.P95Ms, res.P99Ms,
		res.Failovers, res.Replayed, res.Resnapshots, res.Duplicates)
	// How many fit in the 10 s depends on the machine; each must reach its circles.
	if res.Published == 0 || res.PublishErr != 0 || res.Expected < res.Published {
		t.Fatalf("published %d (%d failed), %d deltas expected; want some, none failed, each in some circle on average",
			res.Published, res.PublishErr, res.Expected)
	}
	if res.Received != res.Expected || res.Missing != 0 || res.Duplicates != 0 || res.Dropped != 0 {
		t.Errorf("received %d of %d deltas (%d missing, %d twice, %d dropped); want each exactly once",
			res.Received, res.Expected, res.Missing, res.Duplicates, res.Dropped)
	}
	// Subscriber i streams from server i%3: the first server held every third.
	if want := int64((subscribers + servers - 1) / servers); res.Failovers != want || res.Resnapshots != 0 || res.Replayed == 0 {
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

// waitHealthy waits until base's GET /health answers 200: the streamer follows the log.
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

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
