package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/roadevents/roadevents/shared/schema"
)

type ctxKey int

const (
	infoKey ctxKey = iota
	routeKey
)

// requestInfo is set by the outermost middleware for the whole request.
type requestInfo struct {
	id string
	// base is the API's logger; log, made from it on first use (logger), adds request_id.
	// Most requests log nothing but their access line, and making a logger for each took 3
	// to 4 % of the CPU of a light request (docs/performance.md §2).
	base      *slog.Logger
	logOnce   sync.Once
	log       *slog.Logger
	rec       *recorder
	route     string // the matched route's path pattern, for the access log
	operation string
	// gone is set when the client went away before its answer (WriteError): the access log
	// then records StatusClientClosedRequest, and the API counts it.
	gone bool
}

// routeData is set once a route matched.
type routeData struct {
	route   *Route
	params  schema.Values
	body    any // the validated body, as decoded with UseNumber
	decoded any // the body decoded by Route.Validate, when it does
}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey).(*requestInfo)
	return info
}

func routeFrom(ctx context.Context) *routeData {
	d, _ := ctx.Value(routeKey).(*routeData)
	return d
}

// RequestID returns the id of the request (the X-Request-Id echoed to the client), or "".
func RequestID(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// Logger returns the request's logger, which tags every line with request_id; outside a
// request it is slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	if info := infoFrom(ctx); info != nil && info.base != nil {
		return info.logger()
	}
	return slog.Default()
}

// logger returns the request's logger, made on first use.
func (info *requestInfo) logger() *slog.Logger {
	info.logOnce.Do(func() { info.log = info.base.With(slog.String("request_id", info.id)) })
	return info.log
}

// CurrentRoute returns the declaration of the route serving the request, for route-aware
// middleware and handlers.
func CurrentRoute(ctx context.Context) (Route, bool) {
	if d := routeFrom(ctx); d != nil {
		return *d.route, true
	}
	return Route{}, false
}

// Params returns the request's validated query and path parameters (see schema.Values).
func Params(r *http.Request) schema.Values {
	if d := routeFrom(r.Context()); d != nil && d.params != nil {
		return d.params
	}
	return schema.Values{}
}

// body decodes the request's validated body into T, which Handle has checked against the
// route's body schema (see JSON). The body is normalised first (schema.Normalize): defaults
// filled in, integral numbers as integers, date-times in UTC. Values of interface type receive
// json.Number for numbers. When Route.Validate already decoded the body into T, that value is
// used as it is. An optional body left out is T's zero value.
func body[T any](r *http.Request) (T, error) {
	var out T
	d := routeFrom(r.Context())
	if d == nil || d.route.Body == nil || d.body == nil && !d.route.OptionalBody {
		return out, ErrNoBody
	}
	if d.body == nil {
		return out, nil // an optional body left out: T's zero value
	}
	if v, ok := d.decoded.(T); ok {
		return v, nil
	}
	raw, err := marshalBody(d.route.Body.Normalize(d.body))
	if err != nil {
		return out, fmt.Errorf("httpapi: re-encode validated body: %w", err)
	}
	if err := decodeInto(raw, &out); err != nil {
		return out, fmt.Errorf("httpapi: decode validated body into %T: %w", out, err)
	}
	return out, nil
}

func decodeInto(data []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}
