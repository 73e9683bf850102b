package apitest

import (
	"net/http"
	"testing"
)

// Scenario is one request and the answer it must get: a row of a table that Run sends, one
// subtest a row, so that a matrix of callers and routes reads as a list.
type Scenario struct {
	Name string
	// Token is the caller's bearer credential (a session, a key), none when empty; Auth,
	// when set, is sent instead as the whole Authorization header.
	Token, Auth  string
	Method, Path string
	// Body is sent as JSON, when set.
	Body       string
	WantStatus int
	// WantDetail, when set, is the sentence of the error answer. Every error answer must be
	// the {"detail": <sentence>} of docs/api.md §7, or, for a 422, its list of validation errors.
	WantDetail string
	// WantHeader are headers the answer must carry, with their values.
	WantHeader map[string]string
}

// As returns the requests, each named for who sends them, sent with token and wanting
// status want: one caller's row of a matrix of callers and routes.
func As(who, token string, want int, requests []Scenario) []Scenario {
	out := make([]Scenario, len(requests))
	for i, s := range requests {
		s.Name = who + " " + s.Name
		s.Token, s.WantStatus = token, want
		out[i] = s
	}
	return out
}

// Run checks each scenario in order, each as a subtest of t.
func (c Client) Run(t *testing.T, scenarios []Scenario) {
	t.Helper()
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) {
			c := c
			c.T = t
			c.Check(s)
		})
	}
}

// Check sends the request of s and checks the answer against it.
func (c Client) Check(s Scenario) {
	c.T.Helper()
	auth := s.Auth
	if auth == "" && s.Token != "" {
		auth = "Bearer " + s.Token
	}
	r := c.CallAuth(s.Method, s.Path, auth, s.Body)
	what := s.Method + " " + s.Path
	switch {
	case s.WantStatus == http.StatusUnprocessableEntity:
		c.ExpectProblems(r, what)
	case s.WantStatus >= 400:
		if got := c.ExpectDetail(r, s.WantStatus, what); s.WantDetail != "" && got != s.WantDetail {
			c.T.Errorf("%s: detail %q; want %q", what, got, s.WantDetail)
		}
	default:
		c.Expect(r, s.WantStatus, nil, what)
	}
	for k, want := range s.WantHeader {
		if got := r.Header.Get(k); got != want {
			c.T.Errorf("%s: header %s = %q; want %q", what, k, got, want)
		}
	}
}
