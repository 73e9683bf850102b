package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/daemon"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store"
)

// embeddedConfig is the configuration of `go run .` on a fresh data folder.
func embeddedConfig(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	return cfg
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// reopen opens cfg's store again: the embedded store's file is locked while it is open, so
// this fails (after bbolt's timeout) unless Run closed it.
func reopen(t *testing.T, cfg config.Config) {
	t.Helper()
	st, err := app.OpenStore(context.Background(), cfg, clock.System, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("reopen the store after Run: %v; want it closed", err)
	}
	st.Table.Close()
}

// Run serves until its context ends, then ends the background jobs while the store is still
// open, closes the store, and returns nil.
func TestRunServesThenTearsDownInOrder(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobRead := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, slog.New(slog.DiscardHandler), ln, func(p *daemon.Process) (http.Handler, error) {
			table := p.Deps("test").Table
			p.Go(func(ctx context.Context) {
				<-ctx.Done()
				// Still busy while the rest shuts down: Run must wait for it, whatever the time.
				time.Sleep(50 * time.Millisecond)
				_, err := table.Get(context.Background(), store.Key{PK: "job", SK: "after"})
				jobRead <- err
			})
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }), nil
		})
	}()

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "served" {
		t.Errorf("body %q; want served", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v after its context ended; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its context ending")
	}
	if err := <-jobRead; !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a job's read once serving ended: %v; want ErrNotFound from a store still open", err)
	}
	reopen(t, cfg)
}

// A handler that cannot be built ends Run with its error, without waiting for a context that
// has not ended, and leaves the listener and the store closed.
func TestRunReturnsTheHandlerError(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	ln := listen(t)
	errBuild := errors.New("cannot build")
	err := daemon.Run(context.Background(), cfg, slog.New(slog.DiscardHandler), ln, func(*daemon.Process) (http.Handler, error) {
		return nil, errBuild
	})
	if !errors.Is(err, errBuild) {
		t.Errorf("Run = %v; want the handler's error", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("the listener accepts after Run returned; want it closed")
	}
	reopen(t, cfg)
}

// runUntilCleanup runs daemon.Run with cfg and handler on a loopback listener until the test
// ends, and returns the address and the process once the handler is built.
func runUntilCleanup(t *testing.T, cfg config.Config, handler func(*daemon.Process) (http.Handler, error)) (string, *daemon.Process) {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	built := make(chan *daemon.Process, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, slog.New(slog.DiscardHandler), ln, func(p *daemon.Process) (http.Handler, error) {
			h, err := handler(p)
			if err == nil {
				built <- p
			}
			return h, err
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case p := <-built:
		return ln.Addr().String(), p
	case err := <-done:
		t.Fatalf("Run = %v before its handler was built", err)
		return "", nil
	}
}

// docs/operations.md §3: the processes of `go run .` and of the streamer serve within the
// connection budget of their configuration (ROADEVENTS_MAX_CONNECTIONS).
func TestRunServesWithinTheConfiguredBudget(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.MaxConnections = 1
	addr, _ := runUntilCleanup(t, cfg, func(*daemon.Process) (http.Handler, error) { return ok, nil })
	if resp := get(t, dial(t, addr), "/"); resp.StatusCode != http.StatusOK { // holds the only place
		t.Fatalf("first connection: %d; want 200", resp.StatusCode)
	}
	if resp := get(t, dial(t, addr), "/"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second connection: %d; want 503", resp.StatusCode)
	}
}

// docs/operations.md §3, the probe's finding scaled down: one key opening streams without end
// cannot take the process down. Its streams are refused with 503 once the budget is nearly
// spent, while GET /health and another organisation's stream are still served.
func TestOneKeysStreamsLeaveRoomForTheOthers(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.MaxConnections = 20
	addr, p := runUntilCleanup(t, cfg, func(p *daemon.Process) (http.Handler, error) {
		api, err := app.New(p.Deps("test"), routetable.GroupMeta, routetable.GroupEvents, routetable.GroupStream)
		if err != nil {
			return nil, err
		}
		return api.Handler(), nil
	})
	ctx := t.Context()
	if err := p.Hub.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	issue := func(org string) string {
		raw, _, err := p.Deps("test").Keys.Issue(ctx, apikey.IssueRequest{OrgID: org, Environment: apikey.Live, Label: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	greedy, modest := issue("org_greedy"), issue("org_modest")
	openStream := func(key string) int {
		c := dial(t, addr)
		c.SetDeadline(time.Now().Add(apitest.Within))
		io.WriteString(c, "GET /v1/stream?lat=48.137&lon=11.575 HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer "+key+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("open a stream: %v", err)
		}
		if resp.StatusCode != http.StatusOK {
			c.Close()
		}
		return resp.StatusCode
	}
	opened := 0
	for ; opened < cfg.MaxConnections; opened++ {
		if status := openStream(greedy); status == http.StatusServiceUnavailable {
			break
		} else if status != http.StatusOK {
			t.Fatalf("stream %d of one key: %d; want 200, then 503", opened+1, status)
		}
	}
	if opened == cfg.MaxConnections {
		t.Fatalf("one key opened the whole budget of %d connections", opened)
	}
	if resp := get(t, dial(t, addr), "/health"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health after %d streams of one key: %d; want 200", opened, resp.StatusCode)
	}
	if status := openStream(modest); status != http.StatusOK {
		t.Errorf("another organisation's stream after %d streams of one key: %d; want 200", opened, status)
	}
}
