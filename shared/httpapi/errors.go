package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store"
)

// Errors of the package itself. Check them with errors.Is.
var (
	// ErrNoBody is returned when a handler reads a body its request's route does not have: a
	// wiring mistake (a typed handler served outside its API), answered with 500.
	ErrNoBody = errors.New("httpapi: route declares no body")
)

// Error is a handler failure with the status and the public sentence to send, and the
// internal cause to log. It is the one place where an error becomes a response, so
// that the cause is never sent to the client.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Detail is the public sentence sent as {"detail": Detail} (docs/api.md §7, shape 1).
	Detail string
	// Header holds extra response headers (WWW-Authenticate, Retry-After).
	Header http.Header
	// Cause is logged with the request id, never sent.
	Cause error
}

// NewError returns an Error; cause may be nil.
func NewError(status int, detail string, cause error) *Error {
	return &Error{Status: status, Detail: detail, Cause: cause}
}

// Error describes the failure for logs.
func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("httpapi: %d %s: %v", e.Status, e.Detail, e.Cause)
	}
	return fmt.Sprintf("httpapi: %d %s", e.Status, e.Detail)
}

// Unwrap returns the cause, so errors.Is sees through an Error.
func (e *Error) Unwrap() error { return e.Cause }

// WithHeader adds a response header and returns e.
func (e *Error) WithHeader(key, value string) *Error {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Add(key, value)
	return e
}

// Unauthorized is the credential failure of docs/api.md §5 (API key rule 5): 401 with
// WWW-Authenticate: Bearer, which every /v1 401 carries (docs/api.md §7). Auth middleware returns
// it with a detail saying the key is missing, or invalid or revoked.
func Unauthorized(detail string) *Error {
	return NewError(http.StatusUnauthorized, detail, nil).WithHeader("WWW-Authenticate", "Bearer")
}

// TooManyRequests is a capped request (docs/api.md §8, §10.2 and §10.3): 429 with Retry-After in
// whole seconds, at least 1.
func TooManyRequests(detail string, retryAfter time.Duration) *Error {
	return NewError(http.StatusTooManyRequests, detail, nil).WithHeader("Retry-After", retryAfterSeconds(retryAfter))
}

// retryAfterSeconds is d as Retry-After's whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Second-1)/time.Second), 1), 10)
}

// NotFound is 404 with the given sentence.
func NotFound(detail string) *Error { return NewError(http.StatusNotFound, detail, nil) }

// Forbidden is 403 with the given sentence.
func Forbidden(detail string) *Error { return NewError(http.StatusForbidden, detail, nil) }

// Conflict is 409 with the given sentence.
func Conflict(detail string) *Error { return NewError(http.StatusConflict, detail, nil) }

// BadRequest is 400 with the given sentence.
func BadRequest(detail string) *Error { return NewError(http.StatusBadRequest, detail, nil) }

// errorBody is shape 1 of docs/api.md §7.
type errorBody struct {
	Detail string `json:"detail"`
}

// validationBody is shape 2 of docs/api.md §7 (HTTPValidationError).
type validationBody struct {
	Detail schema.Errors `json:"detail"`
}

// ErrorSchema documents {"detail": "<sentence>"}, the body of every handler error.
var ErrorSchema = schema.Object(
	schema.Req("detail", schema.String().Describe("What went wrong, as a sentence.")),
).Named("HTTPError")

// HandlerFunc is a handler that returns its failure instead of writing it; ServeHTTP hands
// the error to WriteError. Return before writing anything, or not at all.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP calls f and writes its error.
func (f HandlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		WriteError(w, r, err)
	}
}

// DetailUnavailable is the sentence of the 503 that answers store.ErrUnavailable.
const DetailUnavailable = "The service's storage is briefly unavailable; retry after the time the Retry-After header gives"

// unavailableRetryAfter is the Retry-After of that 503: the SDK's retries and the store's own
// recovery have already been tried, so the outage is not a matter of milliseconds, and a
// client retrying sooner would only add load (docs/operations.md §1).
const unavailableRetryAfter = 2 * time.Second

// Unavailable documents the 503 of store.ErrUnavailable, which every route that reads or
// writes the table can answer (docs/operations.md §1).
var Unavailable = ErrorResponse("The service's storage is briefly unavailable (its table throttled, timed out or "+
	"failed, or its disk is full). A change was made whole or not at all, and which is unknown: retry after "+
	"Retry-After seconds, with the same client_event_id when publishing.", RetryAfter)

// WriteError maps err to a response, logging what must not be sent:
//   - store.ErrUnavailable anywhere in the chain is 503 {"detail": DetailUnavailable} with
//     Retry-After, whatever else the chain holds: a failure of the table says nothing about
//     the request, which the client should send again (docs/operations.md §1);
//   - an error the route's ErrorTable (Route.Errors) matches becomes that row's response;
//   - an *Error (anywhere in the chain) gives its status, headers and detail; its cause is
//     logged (at error level for 5xx, debug otherwise);
//   - schema.Errors gives 422 with the validation list (domain value_error rules);
//   - anything else is 500 {"detail": "Internal Server Error"} with err logged.
//
// If the response has already begun, only the log is written. If the client went away (the
// request's context was cancelled) and err is that cancellation, as a store call stopped midway
// returns it, nothing is written: nobody would receive it. It is logged at info level as a
// client disconnect, and the access log records StatusClientClosedRequest, not a server error.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	log := Logger(ctx)
	if clientGone(ctx, err) {
		log.LogAttrs(ctx, slog.LevelInfo, "client went away before its answer", slog.String("error", err.Error()))
		if info := infoFrom(ctx); info != nil {
			info.gone = true
		}
		return
	}
	if started(ctx) {
		log.LogAttrs(ctx, slog.LevelError, "error after the response began", slog.String("error", err.Error()))
		return
	}
	if errors.Is(err, store.ErrUnavailable) {
		log.LogAttrs(ctx, slog.LevelError, "request failed", slog.Int("status", http.StatusServiceUnavailable), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", retryAfterSeconds(unavailableRetryAfter))
		WriteDetail(w, http.StatusServiceUnavailable, DetailUnavailable)
		return
	}
	if d := routeFrom(ctx); d != nil {
		err = d.route.Errors.Public(err)
	}
	var he *Error
	var verrs schema.Errors
	switch {
	case errors.As(err, &he):
		level := slog.LevelDebug
		if he.Status >= 500 {
			level = slog.LevelError
		}
		if he.Cause != nil || he.Status >= 500 {
			log.LogAttrs(ctx, level, "request failed", slog.Int("status", he.Status), slog.String("error", err.Error()))
		}
		for k, vs := range he.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		detail := he.Detail
		if detail == "" {
			detail = http.StatusText(he.Status)
		}
		_ = WriteJSON(w, he.Status, errorBody{Detail: detail})
	case errors.As(err, &verrs):
		writeValidation(w, verrs)
	default:
		log.LogAttrs(ctx, slog.LevelError, "request failed", slog.Int("status", http.StatusInternalServerError), slog.String("error", err.Error()))
		writeInternal(w)
	}
}

// StatusClientClosedRequest is the status the access log records for a request whose client
// went away before its answer (nginx's 499): no answer was sent, and no server error happened.
const StatusClientClosedRequest = 499

// clientGone reports whether err comes from the request's own cancellation: net/http cancels a
// request's context when its client closes the connection or gives up.
func clientGone(ctx context.Context, err error) bool {
	return errors.Is(ctx.Err(), context.Canceled) && errors.Is(err, context.Canceled)
}

// WriteDetail writes {"detail": detail} with status: for responses that are not failures of
// a handler (the router's 404 and 405, 413, 415).
func WriteDetail(w http.ResponseWriter, status int, detail string) {
	_ = WriteJSON(w, status, errorBody{Detail: detail})
}

// writeValidation answers errs with 422, listed within the bounds of docs/api.md §11.1.
func writeValidation(w http.ResponseWriter, errs schema.Errors) {
	errs = errs.Listed()
	if err := WriteJSON(w, http.StatusUnprocessableEntity, validationBody{Detail: errs}); err != nil {
		// An input that cannot be re-encoded cannot come from JSON; keep the answer a 422.
		for i := range errs {
			errs[i].Input = nil
			errs[i].Ctx = nil
		}
		_ = WriteJSON(w, http.StatusUnprocessableEntity, validationBody{Detail: errs})
	}
}

func writeInternal(w http.ResponseWriter) {
	WriteDetail(w, http.StatusInternalServerError, "Internal Server Error")
}

// WriteJSON writes v as JSON with status. If v cannot be encoded nothing of it is sent: the
// answer is 500 {"detail": "Internal Server Error"} and the error is returned for the caller
// to log (HandlerFunc callers can simply return it).
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"detail":"Internal Server Error"}`))
		return fmt.Errorf("httpapi: encode %T response: %w", v, err)
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// started reports whether the response of the request in ctx has begun.
func started(ctx context.Context) bool {
	if info := infoFrom(ctx); info != nil && info.rec != nil {
		return info.rec.wroteHeader
	}
	return false
}

// ErrorRule is one row of an ErrorTable: the error it matches (with errors.Is) and the public
// response that error becomes.
type ErrorRule struct {
	Err    error
	Status int
	Detail string
}

// ErrorTable maps a domain package's sentinel errors to statuses and public sentences: one table
// per package, declared beside its routes, instead of a switch in every handler, so the status of
// every error is read in one place. The first matching row wins. A 401 carries WWW-Authenticate:
// Bearer; an error that says when to retry (Retrier) sends Retry-After, and a 503 row always does.
type ErrorTable []ErrorRule

// Retrier is an error that knows how long the caller should wait before trying again, such
// as a rate limit's refusal.
type Retrier interface {
	error
	RetryIn() time.Duration
}

// Defaults gives t to every route of routes that names no ErrorTable of its own.
func (t ErrorTable) Defaults(routes []Route) []Route {
	for i := range routes {
		if routes[i].Errors == nil {
			routes[i].Errors = t
		}
	}
	return routes
}

// With returns a table whose rows are rules, then t's: a route's own sentences for errors the
// package table also names.
func (t ErrorTable) With(rules ...ErrorRule) ErrorTable {
	return append(append(ErrorTable{}, rules...), t...)
}

// Public returns err as the *Error of the first row matching it, with err as its cause, or err
// unchanged when no row matches or err already carries a response (*Error, schema.Errors).
func (t ErrorTable) Public(err error) error {
	var he *Error
	var verrs schema.Errors
	if len(t) == 0 || err == nil || errors.As(err, &he) || errors.As(err, &verrs) {
		return err
	}
	for _, rule := range t {
		if !errors.Is(err, rule.Err) {
			continue
		}
		e := NewError(rule.Status, rule.Detail, err)
		if rule.Status == http.StatusUnauthorized {
			e.WithHeader("WWW-Authenticate", "Bearer")
		}
		if retry, ok := errors.AsType[Retrier](err); ok {
			e.WithHeader("Retry-After", retryAfterSeconds(retry.RetryIn()))
		} else if rule.Status == http.StatusServiceUnavailable {
			// A 503 always says when to retry (docs/operations.md §1); a conflict that
			// made a request give up is over within moments.
			e.WithHeader("Retry-After", retryAfterSeconds(time.Second))
		}
		return e
	}
	return err
}
