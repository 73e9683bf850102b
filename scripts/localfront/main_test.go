package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/routetable"
)

var param = regexp.MustCompile(`\{[A-Za-z_]+(\.\.\.)?\}`)

// TestFrontRoutesEveryRoute: every route of the table reaches its group's upstream, with the
// upstream's own host name; an unknown path reaches meta; the console is served here
// (docs/operations.md §5, the LocalStack target).
func TestFrontRoutesEveryRoute(t *testing.T) {
	upstreams := map[routetable.Group]string{}
	for _, g := range routetable.All {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, string(g)+" "+r.Host)
		}))
		t.Cleanup(srv.Close)
		upstreams[g] = srv.URL
	}
	front, err := newFront(upstreams)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path string) (int, string) {
		w := httptest.NewRecorder()
		front.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w.Code, w.Body.String()
	}
	for _, g := range routetable.All {
		for _, r := range g.Routes() {
			path := param.ReplaceAllString(strings.Replace(r.Path, "/{$}", "/", 1), "x1")
			_, body := call(r.Method, path)
			if want := string(g) + " " + strings.TrimPrefix(upstreams[g], "http://"); body != want {
				t.Errorf("%s (as %s) reached %q; want %q", r, path, body, want)
			}
		}
	}
	if _, body := call("GET", "/no/such/path"); !strings.HasPrefix(body, string(routetable.GroupMeta)+" ") {
		t.Errorf("an unknown path reached %q; want meta", body)
	}
	if code, body := call("GET", "/app/"); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("GET /app/ = %d; want the console", code)
	}
}

// TestReadOutputs: the function URLs come from the deploy's outputs, the stream's from the
// flag; a missing one is named.
func TestReadOutputs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "outputs.json")
	os.WriteFile(path, []byte(`{"roadevents-localstack":{"MetaUrl":"http://m/","EventsUrl":"http://e/","ConsoleAuthUrl":"http://a/",
		"ConsoleOrgsUrl":"http://o/","BillingUrl":"http://b/","TableName":"t"}}`), 0o644)
	got, err := readOutputs(path, "http://127.0.0.1:8081")
	if err != nil {
		t.Fatal(err)
	}
	if got[routetable.GroupConsoleOrgs] != "http://o/" || got[routetable.GroupStream] != "http://127.0.0.1:8081" {
		t.Errorf("readOutputs = %v", got)
	}
	os.WriteFile(path, []byte(`{"roadevents-localstack":{"MetaUrl":"http://m/"}}`), 0o644)
	if _, err := readOutputs(path, "http://s"); err == nil || !strings.Contains(err.Error(), "EventsUrl") {
		t.Errorf("readOutputs without EventsUrl = %v; want it named", err)
	}
}
