package apitest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
)

// echo answers 200 with what the request carried, or, on /status/{code}, that status with the
// body of the query's b (a test's error body).
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	var code int
	if _, err := fmt.Sscanf(r.URL.Path, "/status/%d", &code); err == nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		w.WriteHeader(code)
		io.WriteString(w, r.URL.Query().Get("b"))
		return
	}
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, `{"method":%q,"auth":%q,"type":%q,"body":%q}`,
		r.Method, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body)
})

// at is the path on which echo answers status with body.
func at(status int, body string) string {
	return fmt.Sprintf("/status/%d?b=%s", status, url.QueryEscape(body))
}

// TestCallInProcessAndOverHTTP: a request sent in process and one sent over the network get
// the same answer; the token goes as the bearer, the body as JSON, and Seen sees each answer.
func TestCallInProcessAndOverHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(echo)
	t.Cleanup(srv.Close)
	var seen []apitest.Response
	for name, c := range map[string]apitest.Client{
		"in process": {T: t, Handler: echo, Seen: func(r apitest.Response) { seen = append(seen, r) }},
		"over HTTP":  {T: t, URL: srv.URL, Seen: func(r apitest.Response) { seen = append(seen, r) }},
	} {
		r := c.Call("POST", "/x", "ses_a", `{"a":1}`)
		want := `{"method":"POST","auth":"Bearer ses_a","type":"application/json","body":"{\"a\":1}"}`
		if r.Status != http.StatusOK || string(r.Body) != want {
			t.Errorf("%s: Call = %s; want 200 %s", name, r, want)
		}
		r = c.CallAuth("GET", "/x", "Basic abc", "")
		want = `{"method":"GET","auth":"Basic abc","type":"","body":""}`
		if string(r.Body) != want {
			t.Errorf("%s: CallAuth = %s; want 200 %s", name, r, want)
		}
	}
	if len(seen) != 4 {
		t.Errorf("Seen got %d answers; want 4", len(seen))
	}
}

// fakeT is a testing.TB whose Fatalf ends only the goroutine it is called on, so that a test
// can see that a check fails.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()                  {}
func (f *fakeT) Context() context.Context { return context.Background() }
func (f *fakeT) Errorf(string, ...any)    { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}

// fails reports whether check fails the test it is given.
func fails(check func(c apitest.Client)) bool {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(apitest.Client{T: f, Handler: echo})
	}()
	<-done
	return f.failed
}

// TestErrorShapes: ExpectDetail takes exactly {"detail": <sentence>} at the status wanted,
// ExpectProblems exactly a 422's {"detail": [validation errors]} (docs/api.md §7), and nothing
// else.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	detail := func(status int, body string) func(c apitest.Client) {
		return func(c apitest.Client) {
			c.ExpectDetail(c.Call("GET", at(status, body), "", ""), http.StatusNotFound, "detail")
		}
	}
	problems := func(status int, body string) func(c apitest.Client) {
		return func(c apitest.Client) {
			c.ExpectProblems(c.Call("GET", at(status, body), "", ""), "problems")
		}
	}
	const item = `{"type":"missing","loc":["body","name"],"msg":"Field required","input":{}}`
	for _, tc := range []struct {
		name  string
		check func(c apitest.Client)
		fails bool
	}{
		{"a sentence", detail(404, `{"detail":"Not found"}`), false},
		{"another status", detail(403, `{"detail":"Not found"}`), true},
		{"an empty sentence", detail(404, `{"detail":""}`), true},
		{"a second member", detail(404, `{"detail":"Not found","code":1}`), true},
		{"a list for a sentence", detail(404, `{"detail":[`+item+`]}`), true},
		{"not JSON", detail(404, `Not found`), true},
		{"validation errors", problems(422, `{"detail":[`+item+`]}`), false},
		{"validation errors at 400", problems(400, `{"detail":[`+item+`]}`), true},
		{"no validation error", problems(422, `{"detail":[]}`), true},
		{"an item without input", problems(422, `{"detail":[{"type":"missing","loc":["body"],"msg":"m"}]}`), true},
		{"a loc outside the request", problems(422, `{"detail":[{"type":"missing","loc":["header"],"msg":"m","input":null}]}`), true},
	} {
		if got := fails(tc.check); got != tc.fails {
			t.Errorf("%s: fails = %v; want %v", tc.name, got, tc.fails)
		}
	}
}

// TestRun: a scenario passes when the answer has its status, detail and headers, and fails
// when any of them differs.
func TestRun(t *testing.T) {
	t.Parallel()
	ok := apitest.Scenario{
		Name: "refused", Method: "GET", Path: at(401, `{"detail":"Session missing"}`),
		WantStatus: http.StatusUnauthorized, WantDetail: "Session missing", WantHeader: map[string]string{"WWW-Authenticate": "Bearer"},
	}
	apitest.Client{T: t, Handler: echo}.Run(t, []apitest.Scenario{ok,
		{Name: "read", Method: "GET", Path: "/x", WantStatus: http.StatusOK},
	})
	otherStatus, otherDetail, otherHeader := ok, ok, ok
	otherStatus.WantStatus = http.StatusForbidden
	otherDetail.WantDetail = "Session invalid"
	otherHeader.WantHeader = map[string]string{"WWW-Authenticate": "Basic"}
	for _, s := range []apitest.Scenario{otherStatus, otherDetail, otherHeader} {
		if !fails(func(c apitest.Client) { c.Check(s) }) {
			t.Errorf("scenario %+v passed; want it to fail", s)
		}
	}
}
