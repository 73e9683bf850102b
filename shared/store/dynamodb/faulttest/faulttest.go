// Package faulttest makes DynamoDB fail on purpose, for the tests that show what the service
// does when its table misbehaves (docs/operations.md §1): an http.RoundTripper placed between
// the dynamodb adapter's client and DynamoDB Local that fails chosen calls the ways DynamoDB
// and the network fail: a throttle, a 5xx, a request that hangs, a connection reset before
// the request arrives or after it was carried out. It is imported by tests only.
package faulttest

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// Kind is a way for a call to fail.
type Kind int

// The kinds of fault.
const (
	// Throttle answers 400 ProvisionedThroughputExceededException, as a table over its
	// provisioned capacity does.
	Throttle Kind = iota + 1
	// RequestThrottle answers 400 ThrottlingException, as DynamoDB's control of request
	// rates does.
	RequestThrottle
	// InternalError answers 500 InternalServerError.
	InternalError
	// ServiceUnavailable answers 503.
	ServiceUnavailable
	// Hang holds the request until the client gives up on it (its context ends).
	Hang
	// ResetBefore fails the request with a connection reset before DynamoDB sees it.
	ResetBefore
	// ResetAfter lets DynamoDB carry the request out, then fails it with a connection reset
	// in place of the answer: the write happened, the client saw an error.
	ResetAfter
	// Unprocessed answers a BatchGetItem with every key unprocessed and no item, as DynamoDB
	// does when all of them were throttled (other operations pass).
	Unprocessed
)

var kindNames = map[Kind]string{
	Throttle: "throttle", RequestThrottle: "request throttle", InternalError: "500",
	ServiceUnavailable: "503", Hang: "hang", ResetBefore: "reset before", ResetAfter: "reset after",
	Unprocessed: "unprocessed",
}

// String names the kind in test names and messages.
func (k Kind) String() string { return kindNames[k] }

// Fault says which calls fail and how.
type Fault struct {
	Kind Kind
	// Ops are the DynamoDB operations that fail (PutItem, TransactWriteItems...); every
	// operation when empty.
	Ops []string
	// Rate is the share of those calls that fail, each attempt drawn on its own; every one
	// when 0 or 1 and over.
	Rate float64
	// Times, when above 0, is how many calls fail at most; then the fault is spent.
	Times int
}

// Transport is the fault injector: an http.RoundTripper that fails calls as its Fault says and
// hands every other call to Next. It is safe for concurrent use.
type Transport struct {
	next http.RoundTripper

	mu       sync.Mutex
	fault    Fault
	rng      *rand.Rand
	injected int
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport passing every call to next until Set; seed makes the drawing of
// calls under a Rate repeatable.
func New(next http.RoundTripper, seed uint64) *Transport {
	return &Transport{next: next, rng: rand.New(rand.NewPCG(seed, seed))}
}

// Set makes the calls of f fail from now on, in place of any earlier fault.
func (t *Transport) Set(f Fault) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fault = f
}

// Clear makes every call pass again.
func (t *Transport) Clear() { t.Set(Fault{}) }

// Injected returns how many attempts were failed so far.
func (t *Transport) Injected() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.injected
}

// Operation is the DynamoDB operation of a request (its X-Amz-Target without the API version).
func Operation(req *http.Request) string {
	target := req.Header.Get("X-Amz-Target")
	return target[strings.LastIndexByte(target, '.')+1:]
}

// draw decides whether req fails, and how.
func (t *Transport) draw(req *http.Request) Kind {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.fault
	if f.Kind == 0 || (len(f.Ops) > 0 && !slices.Contains(f.Ops, Operation(req))) ||
		(f.Kind == Unprocessed && Operation(req) != "BatchGetItem") {
		return 0
	}
	if f.Rate > 0 && f.Rate < 1 && t.rng.Float64() >= f.Rate {
		return 0
	}
	if f.Times > 0 {
		if t.fault.Times--; t.fault.Times == 0 {
			t.fault = Fault{}
		}
	}
	t.injected++
	return f.Kind
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := t.draw(req)
	if kind == 0 || kind == ResetAfter {
		resp, err := t.next.RoundTrip(req)
		if err != nil || kind == 0 {
			return resp, err
		}
		// The answer is read to its end, so DynamoDB Local has finished the request, and lost.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, connectionReset()
	}
	if kind == Unprocessed {
		return unprocessed(req)
	}
	if req.Body != nil {
		req.Body.Close()
	}
	switch kind {
	case Throttle:
		return errorAnswer(req, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded."), nil
	case RequestThrottle:
		return errorAnswer(req, http.StatusBadRequest, "com.amazon.coral.availability#ThrottlingException",
			"Rate of requests exceeds the allowed throughput."), nil
	case InternalError:
		return errorAnswer(req, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError",
			"Internal server error"), nil
	case ServiceUnavailable:
		return errorAnswer(req, http.StatusServiceUnavailable, "com.amazonaws.dynamodb.v20120810#ServiceUnavailableException",
			"Service unavailable"), nil
	case Hang:
		<-req.Context().Done()
		return nil, req.Context().Err()
	default: // ResetBefore
		return nil, connectionReset()
	}
}

// connectionReset is the error net/http gives when the peer resets the connection.
func connectionReset() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// unprocessed answers a BatchGetItem request with all its keys unprocessed.
func unprocessed(req *http.Request) (*http.Response, error) {
	defer req.Body.Close()
	var in struct {
		RequestItems json.RawMessage
	}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		return nil, fmt.Errorf("faulttest: read BatchGetItem request: %w", err)
	}
	return answer(req, http.StatusOK, `{"Responses":{},"UnprocessedKeys":`+string(in.RequestItems)+`}`), nil
}

// errorAnswer is a DynamoDB error answer (JSON 1.0 protocol).
func errorAnswer(req *http.Request, status int, errType, message string) *http.Response {
	return answer(req, status, `{"__type":"`+errType+`","message":"`+message+`"}`)
}

// answer is a DynamoDB answer with status and a JSON body.
func answer(req *http.Request, status int, body string) *http.Response {
	return &http.Response{
		Status:        http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Table is a fresh table of its own on DynamoDB Local, deleted at the end of the test, whose
// adapter sends every call through Faults. It skips tb when DynamoDB Local is not configured
// (tables.NewLocal).
type Table struct {
	tables.Table
	Faults *Transport
	// Direct is an adapter of the same table whose calls never fail on purpose, with
	// tables.Local's options: for setting a test up and checking what the table holds.
	Direct store.Table
}

// NewTable creates the table. Both adapters share a fake clock starting at tables.Start, as
// the tables of package tables have. opts sets the faulty adapter's retries and timeouts: the
// adapter's defaults, but for the deadline of an attempt, which is tables.LocalAttemptTimeout
// when 0, as DynamoDB Local can be slow (a test of hung calls sets a short one).
func NewTable(tb testing.TB, opts dynamodb.Options) Table {
	tb.Helper()
	if opts.AttemptTimeout == 0 {
		opts.AttemptTimeout = tables.LocalAttemptTimeout
	}
	l := tables.NewLocal(tb)
	faults := New(http.DefaultTransport, 1)
	client := ddb.NewFromConfig(l.Config, func(o *ddb.Options) {
		o.BaseEndpoint = aws.String(l.Endpoint)
		o.HTTPClient = &http.Client{Transport: faults}
	})
	clk := clock.NewFake(tables.Start)
	opts.Clock = clk
	return Table{
		Table: tables.Table{
			Table:   dynamodb.New(client, l.Name, opts),
			Clock:   clk,
			Adapter: tables.AdapterDynamoDB,
		},
		Faults: faults,
		Direct: dynamodb.New(l.DB, l.Name, l.Options(clk)),
	}
}
