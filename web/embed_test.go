package web_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/roadevents/roadevents/web"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"index.html":           {Data: []byte("<!doctype html><title>console</title>")},
		"config.json":          {Data: []byte(`{"api_base": ""}`)},
		"assets/index-abc.js":  {Data: []byte("console.log(1)")},
		"assets/index-abc.css": {Data: []byte("body{}")},
	}
	h := web.NewHandler(files)
	tests := []struct {
		name, method, path string
		wantStatus         int
		wantBody           string
		wantCache          string
		wantType           string
		wantLocation       string
	}{
		{name: "root is the SPA", method: "GET", path: "/app/", wantStatus: 200, wantBody: "<title>console</title>", wantCache: "no-cache", wantType: "text/html"},
		{name: "deep link falls back to index", method: "GET", path: "/app/orgs/org_1/keys", wantStatus: 200, wantBody: "<title>console</title>", wantCache: "no-cache", wantType: "text/html"},
		{name: "invitation link falls back to index", method: "GET", path: "/app/accept-invite", wantStatus: 200, wantBody: "<title>console</title>", wantType: "text/html"},
		{name: "index by name", method: "GET", path: "/app/index.html", wantStatus: 200, wantBody: "<title>console</title>", wantCache: "no-cache"},
		{name: "hashed asset cached for a year", method: "GET", path: "/app/assets/index-abc.js", wantStatus: 200, wantBody: "console.log(1)", wantCache: "public, max-age=31536000, immutable", wantType: "javascript"},
		{name: "stylesheet type", method: "GET", path: "/app/assets/index-abc.css", wantStatus: 200, wantType: "text/css"},
		{name: "missing asset is 404, not HTML", method: "GET", path: "/app/assets/index-old.js", wantStatus: 404},
		{name: "missing file with an extension is 404", method: "GET", path: "/app/favicon.ico", wantStatus: 404},
		{name: "invalid UTF-8 is a missing page", method: "GET", path: "/app/%ff", wantStatus: 404},
		{name: "invalid UTF-8 in a file name is a missing file", method: "GET", path: "/app/assets/%ff%fe.js", wantStatus: 404},
		{name: "assets folder is a page", method: "GET", path: "/app/assets/", wantStatus: 200, wantBody: "<title>console</title>"},
		{name: "config revalidated", method: "GET", path: "/app/config.json", wantStatus: 200, wantBody: `"api_base"`, wantCache: "no-cache", wantType: "application/json"},
		{name: "no trailing slash redirects", method: "GET", path: "/app", wantStatus: 301, wantLocation: "/app/"},
		{name: "dot segments stay inside", method: "GET", path: "/app/../../etc/passwd", wantStatus: 200, wantBody: "<title>console</title>"},
		{name: "head", method: "HEAD", path: "/app/orgs", wantStatus: 200},
		{name: "post refused", method: "POST", path: "/app/", wantStatus: 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantStatus {
				t.Fatalf("%s %s = %d; want %d", tc.method, tc.path, rec.Code, tc.wantStatus)
			}
			if tc.wantBody != "" && !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("%s %s body = %q; want it to hold %q", tc.method, tc.path, rec.Body.String(), tc.wantBody)
			}
			if tc.wantCache != "" && rec.Header().Get("Cache-Control") != tc.wantCache {
				t.Errorf("%s %s Cache-Control = %q; want %q", tc.method, tc.path, rec.Header().Get("Cache-Control"), tc.wantCache)
			}
			if tc.wantType != "" && !strings.Contains(rec.Header().Get("Content-Type"), tc.wantType) {
				t.Errorf("%s %s Content-Type = %q; want it to hold %q", tc.method, tc.path, rec.Header().Get("Content-Type"), tc.wantType)
			}
			if tc.wantLocation != "" && rec.Header().Get("Location") != tc.wantLocation {
				t.Errorf("%s %s Location = %q; want %q", tc.method, tc.path, rec.Header().Get("Location"), tc.wantLocation)
			}
		})
	}
}

// Every answer of the console carries its Content-Security-Policy and the two headers that
// keep a browser from sniffing types and from leaking the page's address (docs/api.md §11.3):
// pages, assets, missing files and refusals alike.
func TestHandlerSecurityHeaders(t *testing.T) {
	t.Parallel()
	h := web.NewHandler(fstest.MapFS{
		"index.html":          {Data: []byte("<!doctype html><title>console</title>")},
		"assets/index-abc.js": {Data: []byte("console.log(1)")},
	})
	want := map[string]string{
		"Content-Security-Policy": web.ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	}
	for _, req := range []struct{ method, path string }{
		{"GET", "/app/"}, {"GET", "/app/orgs/org_1/keys"}, {"GET", "/app/assets/index-abc.js"},
		{"GET", "/app/assets/gone.js"}, {"GET", "/app/%ff"}, {"GET", "/app"}, {"POST", "/app/"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(req.method, req.path, nil))
		for k, v := range want {
			if got := rec.Header().Get(k); got != v {
				t.Errorf("%s %s (%d): %s = %q; want %q", req.method, req.path, rec.Code, k, got, v)
			}
		}
	}
	// The policy is strict: nothing inline, nothing from elsewhere, no framing.
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'",
		"connect-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(web.ContentSecurityPolicy, directive) {
			t.Errorf("Content-Security-Policy %q lacks %q", web.ContentSecurityPolicy, directive)
		}
	}
	if strings.Contains(web.ContentSecurityPolicy, "unsafe-") {
		t.Errorf("Content-Security-Policy %q allows something unsafe", web.ContentSecurityPolicy)
	}
}

// The committed build is what go build embeds: it must hold index.html and the scripts it names.
func TestEmbeddedBuild(t *testing.T) {
	t.Parallel()
	index, err := fs.ReadFile(web.Files(), "index.html")
	if err != nil {
		t.Fatalf("embedded index.html: %v; want the built console (npm ci && npm run build in web/)", err)
	}
	h := web.Handler()
	// The embedded files refuse a name that is not valid UTF-8: that is a missing page (404),
	// never a failure (500).
	for _, bad := range []string{"/app/%ff", "/app/assets/%ff.js"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, bad, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d; want 404", bad, rec.Code)
		}
	}
	for _, ref := range strings.Split(string(index), `"`) {
		if !strings.HasPrefix(ref, "/app/assets/") {
			continue
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ref, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s (named by index.html) = %d; want 200", ref, rec.Code)
		}
	}
}
