package httpapi

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
)

// CompressMinBytes is the smallest JSON answer sent compressed (docs/api.md §10.1): below it the
// encoding's own overhead and the CPU are not worth the bytes saved.
const CompressMinBytes = 1024

// compressJSON wraps a route's handler so that its JSON answers of CompressMinBytes or more are
// sent compressed when the request accepts it (zstd or gzip, by Accept-Encoding), with Vary:
// Accept-Encoding on every answer. HEAD answers are never compressed: their Content-Length is
// that of the uncompressed body.
var compressJSON = func() func(http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.MinSize(CompressMinBytes),
		gzhttp.ContentTypes([]string{"application/json"}),
	)
	if err != nil {
		panic("httpapi: compression options: " + err.Error()) // fixed options: a programming error
	}
	return func(h http.Handler) http.Handler {
		compressed := wrap(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				w.Header().Add("Vary", "Accept-Encoding")
				h.ServeHTTP(w, r)
				return
			}
			compressed.ServeHTTP(w, r)
		})
	}
}()

// streams reports whether rt answers a server-sent event stream, which must reach the client
// frame by frame: a compressor would hold frames back, and could not hand the connection over.
func streams(rt *Route) bool {
	for _, resp := range rt.Responses {
		if resp.ContentType == "text/event-stream" {
			return true
		}
	}
	return false
}
