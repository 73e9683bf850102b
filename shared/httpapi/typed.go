package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"reflect"

	"github.com/roadevents/roadevents/shared/schema"
)

// NoBody is the input type of a route that reads no request body.
type NoBody struct{}

// Request is what a typed handler receives: the request, its validated parameters and its
// validated body decoded into In.
type Request[In any] struct {
	// HTTP is the request itself, for its context and what middleware put there.
	HTTP *http.Request
	// Params are the validated query and path parameters.
	Params schema.Values
	// Body is the validated, normalised body; the zero NoBody on a route without one.
	Body In

	header http.Header
	status int
}

// Context returns the request's context.
func (r *Request[In]) Context() context.Context { return r.HTTP.Context() }

// Header is the response's header, for the handler to add to before it returns.
func (r *Request[In]) Header() http.Header { return r.header }

// SetStatus answers with status instead of the route's declared one; status must be another
// 2xx that the route documents with the same schema (checked when the route is added).
func (r *Request[In]) SetStatus(status int) { r.status = status }

// JSON returns the handler of a route whose body is In (NoBody for none) and whose answer is
// Out, written as JSON with status. The router validates the request against the route's
// declaration before f runs; an error of f is written by WriteError through the route's
// ErrorTable. When the route is added, In is checked against Route.Body and Out against the
// response documented for status (schema.CheckType, schema.CheckOutput): a payload struct that
// drifts from /openapi.json stops the program at start, not a request in production.
func JSON[In, Out any](status int, f func(r *Request[In]) (Out, error)) http.Handler {
	return &typed[In, Out]{status: status, f: f, readsBody: reflect.TypeFor[In]() != noBodyType}
}

type typed[In, Out any] struct {
	status    int
	f         func(r *Request[In]) (Out, error)
	readsBody bool
}

// contract is what Handle checks of a typed handler against its route.
type contract interface {
	types() (in, out reflect.Type, status int)
}

func (t *typed[In, Out]) types() (reflect.Type, reflect.Type, int) {
	return reflect.TypeFor[In](), reflect.TypeFor[Out](), t.status
}

func (t *typed[In, Out]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := &Request[In]{HTTP: r, Params: Params(r), header: w.Header(), status: t.status}
	if t.readsBody {
		in, err := body[In](r)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		req.Body = in
	}
	out, err := t.f(req)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if err := WriteJSON(w, req.status, out); err != nil {
		Logger(r.Context()).ErrorContext(r.Context(), "write response", "error", err.Error())
	}
}

var noBodyType = reflect.TypeFor[NoBody]()

// checkContract checks a typed handler's types against the route's declaration.
func checkContract(rt *Route, c contract) error {
	in, out, status := c.types()
	switch {
	case in == noBodyType && rt.Body != nil:
		return fmt.Errorf("the route declares a body and its handler reads none (httpapi.NoBody)")
	case in != noBodyType && rt.Body == nil:
		return fmt.Errorf("the handler reads a %s body and the route declares none", in)
	case in != noBodyType:
		if err := schema.CheckType(rt.Body, in); err != nil {
			return fmt.Errorf("body: %w", err)
		}
	}
	resp, ok := rt.Responses[status]
	switch {
	case status/100 != 2:
		return fmt.Errorf("the handler answers %d, which is no success status", status)
	case !ok || resp.Schema == nil:
		return fmt.Errorf("the handler answers %d with a %s and the route documents no body for it", status, out)
	}
	if err := schema.CheckOutput(resp.Schema, out); err != nil {
		return fmt.Errorf("response %d: %w", status, err)
	}
	return nil
}

// Before returns h preceded by f, which refuses the request (its error is written through the
// route's ErrorTable) or hands h the request to serve, with a richer context. A typed h stays
// typed, so that the route's body and answer are still checked against it.
func Before(h http.Handler, f func(r *http.Request) (*http.Request, error)) http.Handler {
	b := &before{h: h, f: f}
	if c, ok := h.(contract); ok {
		return &typedBefore{before: b, c: c}
	}
	return b
}

type before struct {
	h http.Handler
	f func(r *http.Request) (*http.Request, error)
}

func (b *before) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	next, err := b.f(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	b.h.ServeHTTP(w, next)
}

type typedBefore struct {
	*before
	c contract
}

func (t *typedBefore) types() (reflect.Type, reflect.Type, int) { return t.c.types() }
