package apikey

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/roadevents/roadevents/shared/httpapi"
)

// The public sentences of the 401 answers (docs/api.md §5 API key rule 5, §7).
const (
	// DetailMissing answers a request without a usable Authorization: Bearer header.
	DetailMissing = "Missing API key"
	// DetailInvalid answers an unknown, revoked or malformed key, and any other credential
	// sent as one (a stream ticket, a console session token).
	DetailInvalid = "Invalid or revoked API key"
	// DetailMissingCredential answers a request to a route that also takes a stream ticket
	// when neither an Authorization header nor a ticket came.
	DetailMissingCredential = "Missing API key or stream ticket"
	// DetailInvalidTicket answers an unknown or expired ticket (docs/api.md §5 ticket rule 6).
	DetailInvalidTicket = "Invalid or expired stream ticket"
)

// ErrInvalidTicket is what a TicketVerifier returns (wrapped) for a ticket that does not open
// the stream: unknown or expired. The middleware answers it with 401 and DetailInvalidTicket.
var ErrInvalidTicket = errors.New("apikey: invalid or expired stream ticket")

// Authenticator turns a raw API key into a Principal; *Keys is one. Errors wrapping
// ErrInvalidKey mean the key is refused; other errors are failures of the service.
type Authenticator interface {
	Authenticate(ctx context.Context, raw string) (Principal, error)
}

var _ Authenticator = (*Keys)(nil)

// TicketVerifier turns a stream ticket into the Principal it was minted for (docs/api.md §5 stream
// ticket rules). Errors wrapping ErrInvalidTicket mean the ticket is refused.
type TicketVerifier interface {
	VerifyTicket(ctx context.Context, ticket string) (Principal, error)
}

// MiddlewareOptions configure Middleware.
type MiddlewareOptions struct {
	// Tickets verifies the ticket query parameter of routes whose Security also lists
	// httpapi.SecurityStreamTicket (GET /v1/stream). When nil such routes take API keys only.
	Tickets TicketVerifier
}

// Middleware authenticates every route whose Security lists httpapi.SecurityAPIKey and puts
// the Principal in the request's context (PrincipalFrom). Other routes pass untouched.
//
//   - The key comes from Authorization: Bearer <key> only (docs/api.md §5: never in a URL). A
//     missing header, another scheme or an empty token is 401 DetailMissing; an unknown, revoked or
//     malformed key, a stream ticket or a session token in the header is 401 DetailInvalid. Every
//     401 carries WWW-Authenticate: Bearer (docs/api.md §5 API key rule 5, §7).
//   - On a route that also takes a stream ticket, the ticket query parameter is read only when
//     no Authorization header came: a header present decides, so a bad header is 401 even with
//     a valid ticket (docs/api.md §5 ticket rule 4).
//   - A failure of the table is 500, not 401: a working key must not look revoked.
//
// Neither the key nor its prefix is ever logged; the key_id of a revoked key is.
func Middleware(keys Authenticator, opts MiddlewareOptions) httpapi.RouteMiddleware {
	return func(rt httpapi.Route, next http.Handler) http.Handler {
		if !slices.Contains(rt.Security, httpapi.SecurityAPIKey) {
			return next
		}
		takesTicket := slices.Contains(rt.Security, httpapi.SecurityStreamTicket)
		return httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			ctx := r.Context()
			values, present := r.Header["Authorization"]
			var (
				p   Principal
				err error
			)
			switch {
			case present:
				p, err = authenticateHeader(ctx, keys, values)
			case takesTicket:
				p, err = verifyTicket(ctx, opts.Tickets, r)
			default:
				err = httpapi.Unauthorized(DetailMissing)
			}
			if err != nil {
				return err
			}
			next.ServeHTTP(w, r.WithContext(WithPrincipal(ctx, p)))
			return nil
		})
	}
}

func authenticateHeader(ctx context.Context, keys Authenticator, values []string) (Principal, error) {
	raw, ok := bearer(values)
	if !ok {
		return Principal{}, httpapi.Unauthorized(DetailMissing)
	}
	p, err := keys.Authenticate(ctx, raw)
	switch {
	case errors.Is(err, ErrInvalidKey):
		// The cause (unknown, revoked with its key_id, ticket) is logged at debug level by
		// httpapi.WriteError; it never holds the key.
		e := httpapi.Unauthorized(DetailInvalid)
		e.Cause = err
		return Principal{}, e
	case err != nil:
		return Principal{}, fmt.Errorf("authenticate API key: %w", err)
	}
	return p, nil
}

func verifyTicket(ctx context.Context, tickets TicketVerifier, r *http.Request) (Principal, error) {
	q := r.URL.Query()
	if tickets == nil || !q.Has("ticket") {
		return Principal{}, httpapi.Unauthorized(DetailMissingCredential)
	}
	p, err := tickets.VerifyTicket(ctx, q.Get("ticket"))
	switch {
	case errors.Is(err, ErrInvalidTicket):
		e := httpapi.Unauthorized(DetailInvalidTicket)
		e.Cause = err
		return Principal{}, e
	case err != nil:
		return Principal{}, fmt.Errorf("verify stream ticket: %w", err)
	}
	return p, nil
}

// bearer returns the token of the one Authorization header when its scheme is Bearer (in any
// case, RFC 9110 section 11.1) and the token is not empty.
func bearer(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p; the middleware uses it, and tests of handlers may too.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal the middleware authenticated, and false on a route
// without authentication.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// loggerFrom returns the request's logger (tagged with its request id) inside a request, and
// fallback outside one.
func loggerFrom(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if httpapi.RequestID(ctx) != "" {
		return httpapi.Logger(ctx)
	}
	return fallback
}
