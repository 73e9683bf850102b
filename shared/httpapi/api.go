package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/schema"
)

// Limits applied when Config leaves them zero.
const (
	// DefaultMaxBodyBytes bounds a JSON request body: 64 KiB holds the largest payload
	// docs/api.md §2.2 and §8 allow (an EventIn with 512 LineString positions is about
	// 15 KB) with room to spare. Larger bodies get 413 {"detail": ...}.
	DefaultMaxBodyBytes int64 = 64 << 10
	// DefaultMaxDepth bounds the nesting of JSON objects and arrays; the deepest payload
	// of docs/api.md §2 nests 3 levels. Deeper bodies get 422 json_invalid.
	DefaultMaxDepth = 32
)

// The document's info block (docs/api.md §9: the interface description version is 1.0.0).
const (
	Title   = "Road Event Sharing Service"
	Version = "1.0.0"
)

// RouteMiddleware wraps the handler of one route; it knows the route's declaration, so an
// authentication middleware can read Route.Security. It runs before parameter and body
// validation (a credential failure is 401 even when the payload is also invalid, as FastAPI
// resolves security dependencies first).
type RouteMiddleware func(rt Route, next http.Handler) http.Handler

// Config is read once when the API is built.
type Config struct {
	// Logger receives the access log, handler failures and panics; nil means slog.Default().
	Logger *slog.Logger
	// Clock times requests for the access log; nil means clock.System.
	Clock clock.Clock
	// CORSOrigins lists the origins allowed to call from a browser. Empty, or containing
	// "*", allows every origin with Access-Control-Allow-Origin: * (docs/api.md §5: permissive by
	// default); otherwise a listed Origin is echoed back with Vary: Origin.
	CORSOrigins []string
	// CORSMethods defaults to GET, POST, OPTIONS (docs/api.md §5).
	CORSMethods []string
	// MaxBodyBytes defaults to DefaultMaxBodyBytes; Route.MaxBodyBytes overrides it.
	MaxBodyBytes int64
	// MaxDepth defaults to DefaultMaxDepth.
	MaxDepth int
	// Middleware wraps every route's handler, the first outermost.
	Middleware []RouteMiddleware
	// Description is written to info.description of the document.
	Description string
	// Tags describe the tags of the routes, in the order the document lists them; a tag
	// used by a route and missing here is listed after them without a description.
	Tags []Tag
}

// API is a set of routes served together and described together. Build one with New, add
// routes with Handle, serve Handler, publish OpenAPI.
type API struct {
	cfg     Config
	log     *slog.Logger
	clock   clock.Clock
	mux     *http.ServeMux
	handler http.Handler

	// clientsGone counts the requests whose client went away before its answer.
	clientsGone atomic.Uint64

	mu     sync.Mutex
	routes []*Route
	keys   map[string]bool // method + " " + path
	ops    map[string]bool // operation ids
	doc    []byte          // cached document, reset by Handle
}

// New returns an API with no routes.
func New(cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if len(cfg.CORSMethods) == 0 {
		cfg.CORSMethods = []string{http.MethodGet, http.MethodPost, http.MethodOptions}
	}
	a := &API{
		cfg:   cfg,
		log:   cfg.Logger,
		clock: cfg.Clock,
		mux:   http.NewServeMux(),
		keys:  map[string]bool{},
		ops:   map[string]bool{},
	}
	// Everything no route matches lands here, so 404 and 405 are JSON (docs/api.md §7 shape 1)
	// rather than ServeMux's plain text.
	a.mux.HandleFunc("/", a.unmatched)
	a.handler = a.observe(a.recoverer(a.cors(a.mux)))
	return a
}

// Handler serves every route added with Handle, before or after the call, behind the
// request-id, access-log, panic-recovery and CORS middleware.
func (a *API) Handler() http.Handler { return a.handler }

// Observe serves h behind the API's request id, access log and panic recovery, as the
// API's own routes are served (but without its CORS and JSON 404): for a handler mounted
// beside the API, such as the console's files, so that every request a process answers is
// logged the same way.
func (a *API) Observe(h http.Handler) http.Handler { return a.observe(a.recoverer(h)) }

// ClientsGone counts, since the start, the requests whose client went away (closed the
// connection, gave up) while a handler was still working on its answer: they are logged at info
// level and recorded with StatusClientClosedRequest, never as server errors.
func (a *API) ClientsGone() uint64 { return a.clientsGone.Load() }

// Routes returns the routes added so far, as Handle completed them (derived operation ids,
// declared path parameters, implicit 401/422 responses).
func (a *API) Routes() []Route {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Route, len(a.routes))
	for i, rt := range a.routes {
		out[i] = *rt
	}
	return out
}

var (
	methodRE   = regexp.MustCompile(`^[A-Z]+$`)
	wildcardRE = regexp.MustCompile(`^\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?\}$`)
)

// Handle adds routes. A malformed declaration panics, as http.ServeMux does for a bad
// pattern: routes are declared at start-up, where a mistake must stop the program rather
// than serve a wrong interface.
func (a *API) Handle(routes ...Route) {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := len(a.routes)
	for _, r := range routes {
		rt, err := a.complete(r)
		if err != nil {
			panic(fmt.Sprintf("httpapi: route %s %s: %v", r.Method, r.Path, err))
		}
		a.routes = append(a.routes, rt)
		a.keys[rt.Method+" "+rt.Path] = true
		a.ops[rt.OperationID] = true
	}
	// The document's named schemas are checked once for the whole batch: checking them after
	// each route made building an API quadratic in its routes. Only a clash is searched for
	// route by route, to name the route that brought it.
	if _, err := a.components(); err != nil {
		added := a.routes[kept:]
		for i := range added {
			a.routes = a.routes[:kept+i+1]
			if _, err := a.components(); err != nil {
				a.routes = a.routes[:kept+i]
				panic(fmt.Sprintf("httpapi: route %s %s: %v", added[i].Method, added[i].Path, err))
			}
		}
	}
	for _, rt := range a.routes[kept:] {
		a.mux.Handle(rt.Method+" "+rt.Path, a.serve(rt))
	}
	a.doc = nil
}

// complete checks a declaration and fills in what Handle derives.
func (a *API) complete(r Route) (*Route, error) {
	rt := r
	switch {
	case !methodRE.MatchString(rt.Method):
		return nil, fmt.Errorf("method must be an upper-case token")
	case !strings.HasPrefix(rt.Path, "/"):
		return nil, fmt.Errorf("path must start with /")
	case strings.HasSuffix(rt.Path, "/"):
		return nil, fmt.Errorf("path must not end with / (it would match a subtree); use /{$} for the root")
	case rt.Handler == nil:
		return nil, fmt.Errorf("no handler")
	case rt.Validate != nil && rt.Body == nil:
		return nil, fmt.Errorf("a Validate func without a Body to validate")
	case a.keys[rt.Method+" "+rt.Path]:
		return nil, fmt.Errorf("declared twice")
	}
	c, isTyped := rt.Handler.(contract)
	if rt.Body != nil && !isTyped {
		return nil, fmt.Errorf("a route with a body needs a typed handler (httpapi.JSON), so its payload type is checked against the schema")
	}
	wildcards := map[string]bool{}
	var order []string
	for _, seg := range strings.Split(rt.Path[1:], "/") {
		if !strings.Contains(seg, "{") {
			continue
		}
		if seg == "{$}" {
			continue
		}
		m := wildcardRE.FindStringSubmatch(seg)
		if m == nil {
			return nil, fmt.Errorf("path segment %q: a wildcard must fill its segment", seg)
		}
		wildcards[m[1]] = true
		order = append(order, m[1])
	}
	rt.Params = append([]schema.Param(nil), r.Params...)
	seen := map[string]bool{}
	for _, p := range rt.Params {
		switch {
		case p.In != schema.InQuery && p.In != schema.InPath:
			return nil, fmt.Errorf("parameter %q: In must be %q or %q", p.Name, schema.InQuery, schema.InPath)
		case p.Schema == nil:
			return nil, fmt.Errorf("parameter %q: no schema", p.Name)
		case seen[p.In+" "+p.Name]:
			return nil, fmt.Errorf("parameter %q declared twice", p.Name)
		case p.In == schema.InPath && !wildcards[p.Name]:
			return nil, fmt.Errorf("path parameter %q is not a wildcard of the path", p.Name)
		case p.In == schema.InPath && !p.Required:
			return nil, fmt.Errorf("path parameter %q must be required", p.Name)
		}
		seen[p.In+" "+p.Name] = true
	}
	for _, name := range order {
		if !seen[schema.InPath+" "+name] {
			rt.Params = append(rt.Params, schema.Path(name, schema.String()))
		}
	}
	if rt.OperationID == "" {
		rt.OperationID = operationID(rt.Method, rt.Path)
	}
	if a.ops[rt.OperationID] {
		return nil, fmt.Errorf("operation id %q already used", rt.OperationID)
	}
	rt.Tags = append([]string(nil), r.Tags...)
	rt.Security = append([]Security(nil), r.Security...)
	rt.Responses = map[int]Response{}
	ok := false
	for status, resp := range r.Responses {
		if status < 100 || status > 599 {
			return nil, fmt.Errorf("response status %d", status)
		}
		rt.Responses[status] = resp
		ok = ok || status/100 == 2
	}
	if !ok {
		rt.Responses[http.StatusOK] = Response{Description: "Successful Response"}
	}
	if _, declared := rt.Responses[http.StatusUnprocessableEntity]; !declared && (len(rt.Params) > 0 || rt.Body != nil) {
		rt.Responses[http.StatusUnprocessableEntity] = JSONResponse("Validation Error", schema.HTTPValidationErrorSchema)
	}
	if _, declared := rt.Responses[http.StatusUnauthorized]; !declared && len(rt.Security) > 0 {
		rt.Responses[http.StatusUnauthorized] = ErrorResponse("Missing, unknown or revoked credential", WWWAuthenticate)
	}
	if rt.Body != nil {
		if _, declared := rt.Responses[http.StatusRequestEntityTooLarge]; !declared {
			rt.Responses[http.StatusRequestEntityTooLarge] = ErrorResponse("Request body too large")
		}
		if _, declared := rt.Responses[http.StatusUnsupportedMediaType]; !declared {
			rt.Responses[http.StatusUnsupportedMediaType] = ErrorResponse("Request body is not application/json")
		}
	}
	if isTyped {
		if err := checkContract(&rt, c); err != nil {
			return nil, err
		}
	}
	return &rt, nil
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	prevUnderscore := false
	for _, c := range path {
		isWord := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if isWord {
			if !prevUnderscore {
				b.WriteByte('_')
			}
			b.WriteRune(c)
			prevUnderscore = true
			continue
		}
		if c == '$' {
			continue
		}
		prevUnderscore = false
	}
	return b.String()
}

// serve is the handler registered for rt: Cache-Control for a NoStore route, compression of large
// JSON answers (not of a stream), route middleware (authentication), then parameter and body
// validation, then rt.Handler.
func (a *API) serve(rt *Route) http.Handler {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.validate(rt, w, r)
	})
	for i := len(a.cfg.Middleware) - 1; i >= 0; i-- {
		h = a.cfg.Middleware[i](*rt, h)
	}
	if !streams(rt) {
		h = compressJSON(h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := infoFrom(r.Context()); info != nil {
			info.route = rt.Path
			info.operation = rt.OperationID
		}
		if rt.NoStore {
			w.Header().Set("Cache-Control", "no-store")
		}
		ctx := context.WithValue(r.Context(), routeKey, &routeData{route: rt})
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// validate checks parameters and body and runs the handler only when both are valid. As in
// FastAPI, errors of parameters and body are reported together; a body that is not JSON at
// all (413, 415, json_invalid) is answered on its own.
func (a *API) validate(rt *Route, w http.ResponseWriter, r *http.Request) {
	data := routeFrom(r.Context())
	if data == nil {
		data = &routeData{route: rt}
		r = r.WithContext(context.WithValue(r.Context(), routeKey, data))
	}
	vals, errs := schema.ParseParams(rt.Params, r.URL.Query(), r.PathValue)
	var body, decoded any
	if rt.Body != nil {
		limit := rt.MaxBodyBytes
		if limit <= 0 {
			limit = a.cfg.MaxBodyBytes
		}
		v, present, err := readJSON(r, limit, a.cfg.MaxDepth)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		if !present && !rt.OptionalBody {
			errs = append(errs, schema.ValidationError{Type: schema.ErrMissing, Loc: []any{"body"}, Msg: "Field required", Input: nil})
		} else if present {
			if rt.Validate != nil {
				var verrs schema.Errors
				decoded, verrs = rt.Validate(v)
				errs = append(errs, verrs...)
			} else {
				errs = append(errs, rt.Body.Validate(v, []any{"body"})...)
			}
			body = v
		}
	}
	if len(errs) > 0 {
		writeValidation(w, errs)
		return
	}
	data.params = vals
	data.body, data.decoded = body, decoded
	rt.Handler.ServeHTTP(w, r)
}

// unmatched answers requests no route matched: 405 with Allow when the path exists under
// other methods, else 404. OPTIONS, which every path answers (cors), is always in Allow.
func (a *API) unmatched(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete} {
		probe := *r
		probe.Method = m
		if _, pattern := a.mux.Handler(&probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		WriteDetail(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Allow", strings.Join(append(allowed, http.MethodOptions), ", "))
	WriteDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
}
