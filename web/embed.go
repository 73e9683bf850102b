// Package web holds the console, a static single-page application, and the API reference
// page, both built into dist/ from the sources beside this file and embedded so that
// `go build` needs no Node.js (docs/console.md §4). The same files go to S3 on AWS.
//
// Rebuild with `npm ci && npm run build` in web/; scripts/test.sh fails when the committed
// dist/ differs from a fresh build.
package web

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// Prefix is where the console is served: GET / is the API's JSON document
// (docs/architecture.md §5).
const Prefix = "/app/"

// ContentSecurityPolicy is sent with every answer of Handler and ReferenceHandler: the pages
// run only their own scripts and styles, talk only to their own origin, and cannot be framed
// (docs/api.md §11.3). Neither built page holds an inline script or style, so nothing needs
// 'unsafe-inline'. The console's QR code is inline SVG, which img-src does not govern; images
// may be data: URLs, which the API reference's stylesheet uses for its icons. The reference's
// renderer needs nothing more: its own inline styles are set through the CSSOM, which
// style-src does not govern, it evaluates no strings as code, and it fetches only
// /openapi.json and, when the reader tries a route, that route on the same origin. Images may
// also come from any https origin: the Road page's map tiles, whose server is the deployment's
// choice (ROADEVENTS_BASEMAP_TILES, docs/console.md §5); an image runs no code.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Files returns the built console, rooted at its index.html.
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// fs.Sub fails only on an invalid path name; "dist" is a constant.
		panic(err)
	}
	return sub
}

// Handler serves the console under Prefix: files as they are, 404 for a missing file (a path
// whose last segment has an extension), and index.html for any other path under Prefix (the
// SPA routes itself).
//
// Hashed assets are immutable and cached for a year; index.html and config.json are
// revalidated on every load, so a new build is picked up at once. Every answer carries
// ContentSecurityPolicy, X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer.
func Handler() http.Handler {
	return NewHandler(Files())
}

// NewHandler is Handler over other files (tests, or a console built elsewhere).
func NewHandler(files fs.FS) http.Handler {
	server := http.FileServerFS(files)
	index, indexErr := fs.ReadFile(files, "index.html")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		setSecurityHeaders(h)
		if !readOnly(w, r) {
			return
		}
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		name = strings.TrimPrefix(path.Clean("/"+name), "/")
		// A name no file can have (invalid UTF-8, as in /app/%ff) is a missing page, not a
		// failure of the file system.
		if name != "" && !fs.ValidPath(name) {
			h.Set("Cache-Control", "no-cache")
			http.NotFound(w, r)
			return
		}
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(files, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					h.Set("Cache-Control", "public, max-age=31536000, immutable")
				} else {
					h.Set("Cache-Control", "no-cache")
				}
				r2 := r.Clone(r.Context())
				r2.URL.Path = "/" + name
				server.ServeHTTP(w, r2)
				return
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
			// A missing file (its last segment has an extension) is 404, as the CloudFront
			// function of the AWS stack answers it: a stale hashed URL fails plainly instead
			// of answering HTML for a script.
			if strings.Contains(path.Base(name), ".") {
				h.Set("Cache-Control", "no-cache")
				http.NotFound(w, r)
				return
			}
		}
		if indexErr != nil {
			http.Error(w, "the console is not built (run npm ci && npm run build in web/)", http.StatusNotFound)
			return
		}
		// Every console route is index.html: the SPA reads the path itself.
		writePage(w, r, index)
	})
}

// setSecurityHeaders sets what every answer of the console and of the API reference carries
// (docs/api.md §11.3).
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// readOnly answers 405 to a method other than GET and HEAD, and tells whether to go on.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// writePage sends a built HTML page, revalidated on every load so that a new build is picked
// up at once, and never framed.
func writePage(w http.ResponseWriter, r *http.Request, page []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Frame-Options", "DENY")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(page)
}
