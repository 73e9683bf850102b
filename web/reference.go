package web

import (
	"io/fs"
	"net/http"
)

// ReferencePath is where the API reference is served: a page that renders /openapi.json
// (docs/api.md §11.3). It lives outside Prefix, beside the API it describes.
const ReferencePath = "/docs"

// ReferenceFile is the API reference page among Files, built from reference.html. Its scripts
// and styles are console assets under Prefix.
const ReferenceFile = "reference.html"

// ReferenceHandler serves the API reference page at ReferencePath with the console's headers:
// ContentSecurityPolicy, nosniff, no-referrer, no framing, and revalidation on every load.
// Its assets are served by Handler.
func ReferenceHandler() http.Handler {
	return NewReferenceHandler(Files())
}

// NewReferenceHandler is ReferenceHandler over other files (tests, or a build made elsewhere).
func NewReferenceHandler(files fs.FS) http.Handler {
	page, pageErr := fs.ReadFile(files, ReferenceFile)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		if !readOnly(w, r) {
			return
		}
		if r.URL.Path != ReferencePath {
			http.NotFound(w, r)
			return
		}
		if pageErr != nil {
			http.Error(w, "the API reference is not built (run npm ci && npm run build in web/)", http.StatusNotFound)
			return
		}
		writePage(w, r, page)
	})
}
