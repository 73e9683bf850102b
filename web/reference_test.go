package web_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/roadevents/roadevents/web"
)

// The API reference page answers at /docs alone, revalidated on every load, never framed, and
// with the console's security headers on every answer, refusals included (docs/api.md §11.3).
func TestReferenceHandler(t *testing.T) {
	t.Parallel()
	built := web.NewReferenceHandler(fstest.MapFS{
		web.ReferenceFile: {Data: []byte("<!doctype html><title>reference</title>")},
	})
	tests := []struct {
		name, method, path string
		handler            http.Handler
		wantStatus         int
		wantBody           string
		wantAllow          string
	}{
		{name: "the page", method: "GET", path: "/docs", handler: built, wantStatus: 200, wantBody: "<title>reference</title>"},
		{name: "head", method: "HEAD", path: "/docs", handler: built, wantStatus: 200},
		{name: "post refused", method: "POST", path: "/docs", handler: built, wantStatus: 405, wantAllow: "GET, HEAD"},
		{name: "no page below it", method: "GET", path: "/docs/x", handler: built, wantStatus: 404},
		{name: "not built", method: "GET", path: "/docs", handler: web.NewReferenceHandler(fstest.MapFS{}), wantStatus: 404, wantBody: "npm run build"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			tc.handler.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantStatus {
				t.Fatalf("%s %s = %d; want %d", tc.method, tc.path, rec.Code, tc.wantStatus)
			}
			if tc.wantBody != "" && !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("%s %s body = %q; want it to hold %q", tc.method, tc.path, rec.Body.String(), tc.wantBody)
			}
			if got := rec.Header().Get("Allow"); got != tc.wantAllow {
				t.Errorf("%s %s Allow = %q; want %q", tc.method, tc.path, got, tc.wantAllow)
			}
			want := map[string]string{
				"Content-Security-Policy": web.ContentSecurityPolicy,
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "no-referrer",
			}
			if rec.Code == http.StatusOK {
				want["Content-Type"] = "text/html; charset=utf-8"
				want["Cache-Control"] = "no-cache"
				want["X-Frame-Options"] = "DENY"
			}
			for k, v := range want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s %s: %s = %q; want %q", tc.method, tc.path, k, got, v)
				}
			}
		})
	}
}

// assetRef matches the asset URLs a built page names in src and href attributes.
var assetRef = regexp.MustCompile(`(?:src|href)="(/app/[^"]+)"`)

// The committed build holds the API reference: /docs answers it under the console's policy,
// and every script, stylesheet and link under /app/ it names (its licences included) is served.
func TestEmbeddedReference(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	web.ReferenceHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, web.ReferencePath, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s = %d; want 200 (npm ci && npm run build in web/)", web.ReferencePath, rec.Code)
	}
	if got := rec.Header().Get("Content-Security-Policy"); got != web.ContentSecurityPolicy {
		t.Errorf("GET %s Content-Security-Policy = %q; want %q", web.ReferencePath, got, web.ContentSecurityPolicy)
	}
	page := rec.Body.String()
	refs := assetRef.FindAllStringSubmatch(page, -1)
	var scripts, styles int
	console := web.Handler()
	for _, m := range refs {
		ref := m[1]
		rec := httptest.NewRecorder()
		console.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ref, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s (named by the reference page) = %d; want 200", ref, rec.Code)
		}
		switch {
		case strings.HasSuffix(ref, ".js"):
			scripts++
		case strings.HasSuffix(ref, ".css"):
			styles++
		}
	}
	if scripts == 0 || styles == 0 {
		t.Errorf("the reference page names %d scripts and %d stylesheets under /app/; want its renderer's:\n%s", scripts, styles, page)
	}
	if !strings.Contains(page, `href="/app/reference-licences.txt"`) {
		t.Errorf("the reference page does not link its licences:\n%s", page)
	}
}
