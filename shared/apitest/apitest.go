// Package apitest is what the tests of the service's HTTP routes share: sending one request,
// in process or over the network, reading the answer against its status, its documented body
// (docs/api.md §10.1) and the error shapes of docs/api.md §7, and running tables of such requests
// as named scenarios. It imports nothing of the service but schema, so that the tests of any
// package can use it, its own internal tests included; it is imported by tests only.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/schema"
)

// Response is one answer as a test reads it.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// String is the status and the body, for failure messages.
func (r Response) String() string { return strconv.Itoa(r.Status) + " " + string(r.Body) }

// Client sends a test's requests and checks the answers, reporting to T. It serves each
// request with Handler in process, or, when URL is set, sends it over HTTP to the server
// there (a test that wants what a client on the network meets). One with only T set checks
// answers got another way.
type Client struct {
	T       testing.TB
	Handler http.Handler
	URL     string
	// Seen, when set, is given every answer, for a test that later looks through all of
	// them (that no secret ever appears in one).
	Seen func(Response)
}

// Call sends one request: token, when set, as the bearer credential; body, when set, as JSON.
func (c Client) Call(method, path, token, body string) Response {
	c.T.Helper()
	if token != "" {
		token = "Bearer " + token
	}
	return c.CallAuth(method, path, token, body)
}

// CallAuth sends one request with the Authorization header auth, when set, as it is: for
// the tests of the header itself (another scheme, a temp token).
func (c Client) CallAuth(method, path, auth, body string) Response {
	c.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	var req *http.Request
	if c.URL == "" {
		req = httptest.NewRequestWithContext(c.T.Context(), method, path, rd)
	} else {
		var err error
		if req, err = http.NewRequestWithContext(c.T.Context(), method, c.URL+path, rd); err != nil {
			c.T.Fatalf("%s %s: %v", method, path, err)
		}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	r := c.do(req)
	if c.Seen != nil {
		c.Seen(r)
	}
	return r
}

func (c Client) do(req *http.Request) Response {
	c.T.Helper()
	if c.URL == "" {
		w := httptest.NewRecorder()
		c.Handler.ServeHTTP(w, req)
		return Response{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatalf("%s %s: read the body: %v", req.Method, req.URL.Path, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// Expect fails the test unless r has status want; with a schema, the body must also be
// valid against it (the documented response, docs/api.md §10.1).
func (c Client) Expect(r Response, want int, s *schema.Schema, what string) {
	c.T.Helper()
	if r.Status != want {
		c.T.Fatalf("%s = %s; want %d", what, r, want)
	}
	if s != nil {
		CheckBody(c.T, r.Body, s, what)
	}
}

// ExpectDetail fails the test unless r has status want and the body of a handler error,
// exactly {"detail": <sentence>} (docs/api.md §7 shape 1); it returns the sentence.
func (c Client) ExpectDetail(r Response, want int, what string) string {
	c.T.Helper()
	if r.Status != want {
		c.T.Fatalf("%s = %s; want %d", what, r, want)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		c.T.Fatalf("%s: body %s is not JSON: %v", what, r.Body, err)
	}
	d, ok := body["detail"].(string)
	if !ok || d == "" || len(body) != 1 {
		c.T.Fatalf("%s: body %s; want {\"detail\": <sentence>} (docs/api.md §7 shape 1)", what, r.Body)
	}
	return d
}

// ExpectProblems fails the test unless r is a validation error: 422 with exactly
// {"detail": [{type, loc, msg, input}, ...]} (docs/api.md §7 shape 2), each with a type and a msg
// and a loc from body, query or path. It returns the items.
func (c Client) ExpectProblems(r Response, what string) []schema.ValidationError {
	c.T.Helper()
	if r.Status != http.StatusUnprocessableEntity {
		c.T.Fatalf("%s = %s; want 422", what, r)
	}
	var body map[string]json.RawMessage
	var members []map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &body); err != nil || len(body) != 1 ||
		json.Unmarshal(body["detail"], &members) != nil || len(members) == 0 {
		c.T.Fatalf("%s: body %s; want {\"detail\": [validation errors]} (docs/api.md §7 shape 2)", what, r.Body)
	}
	for _, m := range members {
		for _, k := range []string{"type", "loc", "msg", "input"} {
			if _, ok := m[k]; !ok {
				c.T.Fatalf("%s: validation error %v lacks %q (docs/api.md §7 shape 2)", what, m, k)
			}
		}
	}
	var items []schema.ValidationError
	dec := json.NewDecoder(bytes.NewReader(body["detail"]))
	dec.UseNumber() // an input is echoed as it came, 1e400 included
	if err := dec.Decode(&items); err != nil {
		c.T.Fatalf("%s: body %s: %v", what, r.Body, err)
	}
	for _, it := range items {
		var root string
		if len(it.Loc) > 0 {
			root, _ = it.Loc[0].(string)
		}
		if it.Type == "" || it.Msg == "" || (root != "body" && root != "query" && root != "path") {
			c.T.Fatalf("%s: validation error %+v; want a type, a msg and a loc from body, query or path", what, it)
		}
	}
	return items
}

// Decode decodes the body of r as a T, or fails t.
func Decode[T any](t testing.TB, r Response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %s as %T: %v", r.Body, v, err)
	}
	return v
}

// CheckBody fails t unless body is JSON valid against s (the documented response, docs/api.md
// §10.1).
func CheckBody(t testing.TB, body []byte, s *schema.Schema, what string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: body %s is not JSON: %v", what, body, err)
	}
	if errs := s.Validate(v, []any{"response"}); len(errs) > 0 {
		t.Fatalf("%s: body %s does not match %s: %v", what, body, s.Name, errs)
	}
}

// JSON encodes v as a request body.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// LogBuffer is a log destination that concurrent writers (handlers, their background work, a
// feed's goroutines) and the test share.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
