package feeds

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// docs/interop.md §10: the fetcher reaches public addresses only, unless the deployment allows
// private ones: loopback, private ranges, link-local (the metadata service), shared address
// space and the like are refused after resolution, so a name or a redirect cannot lead there.
func TestFetchRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	defer srv.Close()
	guarded := NewFetcher(Options{})
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		if _, err := guarded.Fetch(context.Background(), u, Validators{}); !errors.Is(err, ErrAddress) {
			t.Errorf("Fetch(%s) = %v; want ErrAddress", u, err)
		}
	}
	if doc, err := NewFetcher(Options{AllowPrivate: true}).Fetch(context.Background(), srv.URL, Validators{}); err != nil || string(doc.Body) != "{}" {
		t.Errorf("with private addresses allowed: %q, %v; want the document", doc.Body, err)
	}
}

// docs/interop.md §10: ETag and Last-Modified are sent back, and an unchanged document costs
// a 304, not a download.
func TestFetchIsConditional(t *testing.T) {
	t.Parallel()
	const etag, modified = `"v1"`, "Fri, 27 Nov 2026 10:00:00 GMT"
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Header.Get("If-None-Match")+"|"+r.Header.Get("If-Modified-Since"))
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", modified)
		w.Write([]byte(`{"incidents":[]}`))
	}))
	defer srv.Close()
	f := NewFetcher(Options{AllowPrivate: true})
	first, err := f.Fetch(context.Background(), srv.URL, Validators{})
	if err != nil || first.NotModified || first.Validators != (Validators{etag, modified}) {
		t.Fatalf("first fetch = %+v, %v; want the document and its validators", first, err)
	}
	second, err := f.Fetch(context.Background(), srv.URL, first.Validators)
	if err != nil || !second.NotModified || second.Body != nil || second.Validators != first.Validators {
		t.Errorf("second fetch = %+v, %v; want not modified, no body, the same validators", second, err)
	}
	if want := []string{"|", etag + "|" + modified}; len(asked) != 2 || asked[0] != want[0] || asked[1] != want[1] {
		t.Errorf("the server was asked %q; want %q", asked, want)
	}
}

// docs/interop.md §10: a document past the size limit, announced or not, an answer other
// than 200, a fetch past its time and a URL that is not http(s) without credentials fail
// with an error the feed's health shows; nothing is read from them.
func TestFetchFailures(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Write(make([]byte, 2048))
		case "/streamed":
			w.(http.Flusher).Flush() // no Content-Length: the limit is found while reading
			for range 4 {
				w.Write(make([]byte, 512))
				w.(http.Flusher).Flush()
			}
		case "/gone":
			http.Error(w, "gone", http.StatusGone)
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	f := NewFetcher(Options{AllowPrivate: true, MaxBytes: 1024, Timeout: 200 * time.Millisecond})
	for path, want := range map[string]error{"/big": ErrTooLarge, "/streamed": ErrTooLarge} {
		if _, err := f.Fetch(context.Background(), srv.URL+path, Validators{}); !errors.Is(err, want) {
			t.Errorf("Fetch(%s) = %v; want %v", path, err, want)
		}
	}
	for _, u := range []string{srv.URL + "/gone", srv.URL + "/slow", "file:///etc/passwd", "ftp://example.com/feed",
		"https://user:secret@example.com/feed", "not a url"} {
		_, err := f.Fetch(context.Background(), u, Validators{})
		if err == nil {
			t.Errorf("Fetch(%s) succeeded; want an error", u)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("Fetch(%s) = %v: the error repeats the password", u, err)
		}
	}
}
