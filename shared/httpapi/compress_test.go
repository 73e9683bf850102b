package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/httpapi"
)

// docs/api.md §10.1 (compression): a JSON answer of 1 KB or more is compressed when the request
// accepts it (gzip, or zstd), and every answer of a route says Vary: Accept-Encoding; a smaller
// answer, a client that accepts nothing, and HEAD get the body as it is, with its Content-Length.
func TestLargeJSONAnswersAreCompressed(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{})
	large := make([]string, 100)
	for i := range large {
		large[i] = fmt.Sprintf("ev_%026d", i)
	}
	api.Handle(
		httpapi.Route{Method: "GET", Path: "/v1/large", Hidden: true,
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				return httpapi.WriteJSON(w, http.StatusOK, large)
			})},
		httpapi.Route{Method: "GET", Path: "/v1/small", Hidden: true,
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				return httpapi.WriteJSON(w, http.StatusOK, large[:3])
			})},
	)
	h := api.Handler()
	plain := call(t, h, "GET", "/v1/large", nil, nil)
	if plain.Code != 200 || plain.Body.Len() < httpapi.CompressMinBytes {
		t.Fatalf("GET /v1/large = %d, %d bytes; want 200 and a body of at least %d bytes", plain.Code, plain.Body.Len(), httpapi.CompressMinBytes)
	}
	identity := plain.Body.Bytes()

	cases := []struct {
		name, method, path, accept string
		wantEncoding               string
	}{
		{"gzip accepted", "GET", "/v1/large", "gzip", "gzip"},
		{"zstd accepted", "GET", "/v1/large", "zstd", "zstd"},
		{"both accepted, as browsers send it", "GET", "/v1/large", "gzip, deflate, br, zstd", "zstd"},
		{"nothing accepted", "GET", "/v1/large", "", ""},
		{"only an encoding the service lacks", "GET", "/v1/large", "br", ""},
		{"small answer", "GET", "/v1/small", "gzip", ""},
		{"HEAD", "HEAD", "/v1/large", "gzip", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := call(t, h, tc.method, tc.path, nil, map[string]string{"Accept-Encoding": tc.accept})
			if rec.Code != 200 {
				t.Fatalf("%s %s = %d; want 200", tc.method, tc.path, rec.Code)
			}
			if got := rec.Header().Get("Content-Encoding"); got != tc.wantEncoding {
				t.Errorf("Content-Encoding = %q; want %q", got, tc.wantEncoding)
			}
			if vary := strings.Join(rec.Header().Values("Vary"), ","); !strings.Contains(vary, "Accept-Encoding") {
				t.Errorf("Vary = %q; want Accept-Encoding in it", vary)
			}
			if rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type = %q; want application/json", rec.Header().Get("Content-Type"))
			}
			body, err := apitest.Decompressed(rec.Header().Get("Content-Encoding"), rec.Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantEncoding != "" {
				if rec.Body.Len() >= len(identity) {
					t.Errorf("compressed body of %d bytes; want fewer than the %d of the JSON", rec.Body.Len(), len(identity))
				}
				if rec.Header().Get("Content-Length") != "" {
					t.Errorf("Content-Length %q on a compressed answer; want none (it was the JSON's)", rec.Header().Get("Content-Length"))
				}
			}
			if tc.method == "HEAD" {
				if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(identity)) {
					t.Errorf("HEAD Content-Length = %q; want %d, the length of GET's uncompressed body", got, len(identity))
				}
				return
			}
			want := identity
			if tc.path == "/v1/small" {
				want = call(t, h, "GET", "/v1/small", nil, nil).Body.Bytes()
			}
			if !bytes.Equal(body, want) {
				t.Errorf("body decodes to %.80s...; want the JSON %.80s...", body, want)
			}
		})
	}
}

// docs/api.md §10.1 (compression): a stream is never compressed, even when the client accepts
// gzip: its frames must reach the client one by one.
func TestStreamsAreNotCompressed(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{})
	rec := call(t, api.Handler(), "GET", "/v1/stream?lat=1&lon=2", nil, map[string]string{"Accept-Encoding": "gzip, zstd"})
	if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "" || !rec.Flushed {
		t.Errorf("GET /v1/stream = %d, Content-Encoding %q, flushed %v; want 200, none, flushed", rec.Code, rec.Header().Get("Content-Encoding"), rec.Flushed)
	}
	if !strings.HasPrefix(rec.Body.String(), "event: bye") {
		t.Errorf("stream body %q; want the frame as written", rec.Body)
	}
}
