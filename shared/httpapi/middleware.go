package httpapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// RequestIDHeader carries the request id both ways.
const RequestIDHeader = "X-Request-Id"

// saneRequestID accepts an incoming id only if it is short and made of characters that are
// safe in logs and headers; anything else is replaced, so a client cannot forge log lines.
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)

// observe gives the request its id and logger, and writes one access-log line when it ends.
// The line never holds a credential: headers are not logged, and query values that are or
// look like credentials (the stream ticket above all, docs/api.md §5) are redacted.
func (a *API) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := a.clock.Now()
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID.MatchString(id) {
			id = rand.Text()
		}
		w.Header().Set(RequestIDHeader, id)
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		info := &requestInfo{id: id, base: a.log, rec: rec}
		ctx := context.WithValue(r.Context(), infoKey, info)
		defer func() {
			attrs := []slog.Attr{
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
			}
			if r.URL.RawQuery != "" {
				attrs = append(attrs, slog.String("query", redactQuery(r.URL.RawQuery)))
			}
			if info.route != "" {
				attrs = append(attrs, slog.String("route", info.route), slog.String("operation_id", info.operation))
			}
			if info.gone {
				rec.status = StatusClientClosedRequest
				a.clientsGone.Add(1)
			}
			elapsed := a.clock.Now().Sub(start)
			attrs = append(attrs,
				slog.Int("status", rec.status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				slog.Int64("bytes", rec.bytes),
			)
			a.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		}()
		next.ServeHTTP(rec, r.WithContext(ctx))
	})
}

// credentialParams are query parameters whose values are never logged.
var credentialParams = []string{"ticket", "token", "key", "api_key", "apikey", "access_token", "code", "secret", "password"}

// credentialPrefixes mark values that are credentials wherever they appear (docs/api.md §10.3).
var credentialPrefixes = []string{"svc_", "ses_", "tmp_"}

func redactQuery(raw string) string {
	// ParseQuery drops pairs it cannot decode, which is the safe direction.
	vals, _ := url.ParseQuery(raw)
	for k, vs := range vals {
		secret := slices.Contains(credentialParams, strings.ToLower(k))
		for i, v := range vs {
			if secret || hasCredentialPrefix(v) {
				vs[i] = "[redacted]"
			}
		}
	}
	return vals.Encode()
}

func hasCredentialPrefix(v string) bool {
	for _, p := range credentialPrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// recoverer turns a panic into 500 {"detail": "Internal Server Error"} and logs the panic
// value with its stack. If the response had already begun, the connection is aborted
// instead, so the client sees a broken response rather than a truncated one that looks whole.
func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			ctx := r.Context()
			Logger(ctx).LogAttrs(ctx, slog.LevelError, "panic",
				slog.String("panic", fmt.Sprint(v)),
				slog.String("stack", string(debug.Stack())))
			if started(ctx) {
				panic(http.ErrAbortHandler)
			}
			writeInternal(w)
		}()
		next.ServeHTTP(w, r)
	})
}

// The CORS headers of docs/api.md §5.
const (
	// corsAllowHeaders are the request headers a browser may send cross-origin: Last-Event-ID
	// lets a fetch-based event-stream client resume from another origin.
	corsAllowHeaders = "Authorization, Content-Type, Last-Event-ID, X-Request-Id"
	// corsExposeHeaders are the answer's headers a browser script may read: Location (the
	// new event's address on 201), Retry-After of 429 and 503, WWW-Authenticate of 401 and
	// the request id for support.
	corsExposeHeaders = "Location, Retry-After, WWW-Authenticate, X-Request-Id"
)

// cors applies docs/api.md §5: permissive by default (*), methods GET, POST, OPTIONS, configurable
// origins. Every OPTIONS request is answered here with 204, before routing and whatever its path:
// a preflight with its allowances, a plain OPTIONS (no Origin) with nothing more. So OPTIONS
// answers alike in every process, including a Lambda that does not know the other groups' routes.
func (a *API) cors(next http.Handler) http.Handler {
	anyOrigin := len(a.cfg.CORSOrigins) == 0 || slices.Contains(a.cfg.CORSOrigins, "*")
	methods := strings.Join(a.cfg.CORSMethods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		allow := ""
		switch {
		case anyOrigin:
			allow = "*"
		default:
			// The answer depends on Origin, so caches must key on it.
			w.Header().Add("Vary", "Origin")
			if origin != "" && slices.Contains(a.cfg.CORSOrigins, origin) {
				allow = origin
			}
		}
		h := w.Header()
		if allow != "" {
			h.Set("Access-Control-Allow-Origin", allow)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		if r.Method == http.MethodOptions {
			if allow != "" && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", methods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Max-Age", strconv.Itoa(600))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recorder notes the status and size of a response for the access log, and whether it has
// begun (after which no error status can be sent).
type recorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
}

// WriteHeader records the status.
func (rec *recorder) WriteHeader(code int) {
	if !rec.wroteHeader && code >= 200 {
		rec.status = code
		rec.wroteHeader = true
	}
	rec.ResponseWriter.WriteHeader(code)
}

// Write records the size.
func (rec *recorder) Write(b []byte) (int, error) {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

// Flush lets streaming handlers (SSE) flush through the recorder.
func (rec *recorder) Flush() {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(rec.ResponseWriter).Flush()
}

// Unwrap exposes the underlying writer to http.NewResponseController (deadlines, flushing).
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

var _ http.Flusher = (*recorder)(nil)
