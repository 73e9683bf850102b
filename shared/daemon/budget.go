package daemon

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Budget caps the connections a server holds at once, so that no crowd of clients (streams,
// half-sent requests, idle keep-alives) can take the process to its descriptor limit, where
// it could no longer accept anything, not even a health check (docs/operations.md §3).
//
// A connection past the budget is answered at once by the listener itself, without net/http:
// 503 with Retry-After, which clients treat as a server condition and retry with backoff,
// and closed. Only a few such answers are written at a time (refusing); past those, the
// connection is closed unanswered, which clients also retry.
type Budget struct {
	limit    int64
	inUse    atomic.Int64
	refusing atomic.Int64
	refused  atomic.Uint64
}

// Refusals in flight at most, each holding a descriptor for up to refuseTimeout.
const (
	maxRefusing   = 64
	refuseTimeout = time.Second
	// RefusalRetryAfter is the Retry-After of a connection refused past the budget: streams
	// and requests end within seconds (docs/operations.md §3).
	RefusalRetryAfter = 2 * time.Second
)

// refusal is the whole answer to a connection past the budget, in the shape of every error
// answer (a JSON object with detail).
var refusal = func() []byte {
	body := `{"detail":"The service is at its connection capacity; retry shortly"}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: application/json\r\n" +
		"Retry-After: " + strconv.Itoa(int(RefusalRetryAfter/time.Second)) + "\r\n" +
		"Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// NewBudget returns a budget of limit connections (at least 1).
func NewBudget(limit int) *Budget { return &Budget{limit: int64(max(limit, 1))} }

// Limit is the most connections the budget lets in at once.
func (b *Budget) Limit() int { return int(b.limit) }

// InUse is the number of connections open now within the budget.
func (b *Budget) InUse() int { return int(b.inUse.Load()) }

// Refused counts the connections turned away since the start.
func (b *Budget) Refused() uint64 { return b.refused.Load() }

// Listener returns ln counting its connections against the budget: a connection counts from
// Accept until it is closed, also when a handler has taken it over from net/http (a stream).
func (b *Budget) Listener(ln net.Listener) net.Listener { return &budgetListener{Listener: ln, b: b} }

type budgetListener struct {
	net.Listener
	b *Budget
}

func (l *budgetListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.b.inUse.Add(1) <= l.b.limit {
			return &budgetConn{Conn: c, b: l.b}, nil
		}
		l.b.inUse.Add(-1)
		l.b.refused.Add(1)
		if l.b.refusing.Add(1) > maxRefusing {
			l.b.refusing.Add(-1)
			c.Close()
			continue
		}
		go func() {
			defer l.b.refusing.Add(-1)
			refuse(c)
		}()
	}
}

// refuse reads the request's head, writes the 503, and reads on briefly before closing, so
// that closing with unread bytes does not reset the connection before the client has read the
// answer; refuseTimeout bounds each of the three.
func refuse(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 1024)
	c.SetReadDeadline(time.Now().Add(refuseTimeout))
	_, _ = http.ReadRequest(br) // not HTTP, or too slow: the answer is written all the same
	c.SetWriteDeadline(time.Now().Add(refuseTimeout))
	if _, err := c.Write(refusal); err != nil {
		return
	}
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(refuseTimeout))
	io.Copy(io.Discard, io.LimitReader(br, 64<<10))
}

// budgetConn gives its place in the budget back when it is closed, once.
type budgetConn struct {
	net.Conn
	b      *Budget
	closed atomic.Bool
}

// SyscallConn gives the socket beneath, for the streams' check of closed connections.
func (c *budgetConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

func (c *budgetConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.b.inUse.Add(-1)
	}
	return c.Conn.Close()
}
