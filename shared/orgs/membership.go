package orgs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
)

// OrgRoutePrefix is the path of the organisation-scoped routes: every route whose path is
// this or starts with it followed by "/" belongs to one organisation, whichever package
// declares it (orgs, usage, billing).
const OrgRoutePrefix = "/console/orgs/{org_id}"

// IsOrgRoute reports whether a route path is organisation-scoped (see OrgRoutePrefix).
func IsOrgRoute(path string) bool {
	return path == OrgRoutePrefix || strings.HasPrefix(path, OrgRoutePrefix+"/")
}

type membershipKey struct{}

// MembershipFrom returns the caller's membership that MembershipMiddleware resolved for the
// request, and false outside an organisation-scoped route.
func MembershipFrom(ctx context.Context) (Membership, bool) {
	m, ok := ctx.Value(membershipKey{}).(Membership)
	return m, ok
}

// MembershipMiddleware resolves the caller's membership on every organisation-scoped route
// (IsOrgRoute) of every group, and answers 404 {"detail": DetailOrgNotFound} to a caller who
// is not a member or names no organisation. docs/api.md §4.3: "Organisation routes resolve the
// caller's membership first; a caller without one gets 404". As a route middleware it runs
// before the router validates the query and body (httpapi.RouteMiddleware), so a non-member
// learns nothing from a 422 about a route's input; put it after consoleauth.Middleware, whose
// caller it reads, so that a missing session is still 401 first (docs/api.md §5).
//
// Handlers read the membership with MembershipFrom instead of resolving it again. Declaring
// an organisation-scoped route without a session security panics at start-up: such a route
// would have no caller to resolve, so it could only ever answer 404.
func MembershipMiddleware(s *Service) httpapi.RouteMiddleware {
	return func(rt httpapi.Route, next http.Handler) http.Handler {
		if !IsOrgRoute(rt.Path) {
			return next
		}
		if !slices.Contains(rt.Security, httpapi.SecuritySession) {
			panic(fmt.Sprintf("orgs: organisation route %s %s must declare httpapi.SecuritySession", rt.Method, rt.Path))
		}
		// An organisation being deleted is gone for every route but its deletion, which
		// finishes a deletion that failed half-way (docs/privacy.md §6).
		deletion := rt.Method == http.MethodDelete && rt.Path == OrgRoutePrefix
		return httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			c, ok := consoleauth.CallerFrom(r.Context())
			if !ok {
				return errors.New("orgs: MembershipMiddleware must run after consoleauth.Middleware")
			}
			m, err := s.Resolve(r.Context(), r.PathValue("org_id"), c.User.ID)
			if err == nil && m.deleting && !deletion {
				err = fmt.Errorf("organisation %s being deleted: %w", m.Org.OrgID, ErrNotFound)
			}
			if err != nil {
				return ErrorTable.Public(err)
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), membershipKey{}, m)))
			return nil
		})
	}
}
