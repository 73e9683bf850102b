package consoleauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/roadevents/roadevents/shared/httpapi"
)

// The public sentences of the console's 401 answers (docs/api.md §7: {"detail": <sentence>}).
const (
	DetailMissingSession = "Missing session token"
	DetailInvalidSession = "Invalid or expired session token"
	DetailMissingTemp    = "Missing temp_token"
	DetailInvalidTemp    = "Invalid or expired temp_token"
)

// Authenticator authenticates console credentials; *Service is one.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Caller, error)
	AuthenticateTemp(ctx context.Context, token string) (Caller, error)
}

var _ Authenticator = (*Service)(nil)

// Middleware authenticates every route whose Security lists httpapi.SecuritySession (a
// session token) or httpapi.SecurityTempToken (a temp_token, verify-totp and verify-recovery
// only) and puts the Caller in the request's context (CallerFrom). Other routes pass.
//
// The token comes from Authorization: Bearer only. A missing header is 401 with the "missing"
// detail; anything else that does not open the route is 401 with the "invalid" detail: a
// malformed, unknown, expired or logged-out token, a temp_token where a session is needed or
// the reverse, and an API key (docs/api.md §4: /console takes session tokens, /v1 API keys; package
// apikey refuses a session token on /v1 the same way). The 401 carries WWW-Authenticate:
// Bearer, as every 401 of httpapi does. A failure of the table is 500, not 401. Tokens are
// never logged.
func Middleware(auth Authenticator) httpapi.RouteMiddleware {
	return func(rt httpapi.Route, next http.Handler) http.Handler {
		var (
			check            func(context.Context, string) (Caller, error)
			missing, invalid string
		)
		switch {
		case slices.Contains(rt.Security, httpapi.SecuritySession):
			check, missing, invalid = auth.Authenticate, DetailMissingSession, DetailInvalidSession
		case slices.Contains(rt.Security, httpapi.SecurityTempToken):
			check, missing, invalid = auth.AuthenticateTemp, DetailMissingTemp, DetailInvalidTemp
		default:
			return next
		}
		return httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			token, ok := bearer(r.Header.Values("Authorization"))
			if !ok {
				return httpapi.Unauthorized(missing)
			}
			c, err := check(r.Context(), token)
			switch {
			case errors.Is(err, ErrUnauthenticated):
				e := httpapi.Unauthorized(invalid)
				e.Cause = err
				return e
			case err != nil:
				return fmt.Errorf("authenticate console token: %w", err)
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
			return nil
		})
	}
}

// bearer returns the token of the one Authorization header when its scheme is Bearer (any
// case, RFC 9110 11.1) and the token is not empty.
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

type callerKey struct{}

// CallerFrom returns the caller Middleware authenticated, and false on a route without
// console authentication. The console's other route groups read the signed-in user from it.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// WithCaller returns ctx carrying c, for tests of handlers that sit behind Middleware.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}
