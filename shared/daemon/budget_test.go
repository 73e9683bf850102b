package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/daemon"
)

// serve runs daemon.Serve on a loopback listener with h and opts until the test ends, and
// returns the address.
func serve(t *testing.T, h http.Handler, opts daemon.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- daemon.Serve(ctx, ln, h, opts) }()
	t.Cleanup(func() {
		stop()
		<-served
	})
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends GET path on c and reads the answer, which must come within apitest.Within.
func get(t *testing.T, c net.Conn, path string) *http.Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(apitest.Within))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	io.WriteString(w, "ok")
})

// docs/operations.md §3: a client that sends a request's head and only part of its body
// is cut off once the read timeout passes; it does not keep its connection (and a
// descriptor) for ever.
func TestHalfSentBodyIsCutOff(t *testing.T) {
	t.Parallel()
	addr := serve(t, ok, daemon.Options{ReadTimeout: 100 * time.Millisecond})
	c := dial(t, addr)
	io.WriteString(c, "POST /v1/events HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	c.SetReadDeadline(time.Now().Add(apitest.Within))
	_, err := io.ReadAll(c) // the server closes the connection: the read ends
	if ne, isNet := err.(net.Error); isNet && ne.Timeout() {
		t.Fatalf("the connection is still open %s after a half-sent body", apitest.Within)
	}
}

// docs/operations.md §3: a handler that takes its connection over (a stream) is not cut by
// the read and write timeouts of ordinary requests.
func TestTakenOverConnectionOutlivesTheTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
		buf.Flush()
		for range 5 {
			time.Sleep(timeout) // past both deadlines, were they still set
			if _, err := nc.Write([]byte("tick\n")); err != nil {
				return
			}
		}
	})
	addr := serve(t, h, daemon.Options{ReadTimeout: timeout, WriteTimeout: timeout})
	resp := get(t, dial(t, addr), "/v1/stream")
	body, err := io.ReadAll(resp.Body)
	if strings.Count(string(body), "tick") != 5 {
		t.Fatalf("taken-over connection gave %q, %v; want 5 ticks", body, err)
	}
}

// docs/operations.md §3: past its connection budget the server answers at once with 503,
// Retry-After and the usual {"detail"} body, instead of leaving the client waiting or running
// out of descriptors; a place freed by a closing connection is taken again.
func TestBudgetRefusesPastItsLimit(t *testing.T) {
	t.Parallel()
	budget := daemon.NewBudget(2)
	addr := serve(t, ok, daemon.Options{Budget: budget})
	held := []net.Conn{dial(t, addr), dial(t, addr)}
	apitest.Eventually(t, "two connections in the budget", func() bool { return budget.InUse() == 2 })

	resp := get(t, dial(t, addr), "/health")
	var body struct {
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get("Retry-After") == "" || body.Detail == "" {
		t.Fatalf("third connection: %d Retry-After %q body %+v (%v); want 503 with Retry-After and a detail",
			resp.StatusCode, resp.Header.Get("Retry-After"), body, err)
	}
	if budget.Refused() != 1 {
		t.Errorf("Refused() = %d; want 1", budget.Refused())
	}

	held[0].Close()
	apitest.Eventually(t, "the closed connection leaves the budget", func() bool { return budget.InUse() == 1 })
	if resp := get(t, dial(t, addr), "/health"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a place was freed: %d; want 200", resp.StatusCode)
	}
}

// docs/operations.md §3: the budget is cut from the descriptor limit, keeping a tenth, and at
// least a few hundred descriptors, for what else the process opens.
func TestDefaultConnectionBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{
		{1024, 768},
		{20000, 18000},
		{1 << 20, (1 << 20) - (1<<20)/10},
		{300, 64},
		{0, 10000},
	} {
		if got := daemon.DefaultConnectionBudget(tc.nofile); got != tc.want {
			t.Errorf("DefaultConnectionBudget(%d) = %d; want %d", tc.nofile, got, tc.want)
		}
	}
}
