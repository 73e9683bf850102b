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

// The committed build is what go build embeds: it must hold index.html and the scripts it names.
func TestEmbeddedBuild(t *testing.T) {
	t.Parallel()
	index, err := fs.ReadFile(web.Files(), "index.html")
	if err != nil {
		t.Fatalf("embedded index.html: %v; want the built console (npm ci && npm run build in web/)", err)
	}
	h := web.Handler()
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
