// Package consoleaccount serves a person's own data to them (docs/privacy.md §5):
// GET /console/auth/me/export returns, as one JSON document, their account, the sessions that
// still open the console, their memberships, and the audit entries in which they are the actor.
// It sits apart from consoleauth, which the organisations build on, because it reads both.
package consoleaccount

import (
	"fmt"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
)

// Deps are what the route is built from.
type Deps struct {
	Auth  *consoleauth.Service
	Orgs  *orgs.Service
	Clock clock.Clock
}

// Schemas of the export.
var (
	SessionInfoSchema = schema.Object(
		schema.Req("created_at", schema.DateTime()),
		schema.Req("expires_at", schema.DateTime()),
	).Named("SessionInfo").Describe("A session that still opens the console; never its token.")
	MembershipSchema = schema.Object(
		schema.Req("org_id", schema.String()),
		schema.Req("name", schema.String()),
		schema.Req("role", schema.String()),
		schema.Req("plan", schema.String()),
	).Named("AccountMembership")
	ActedSchema = schema.Object(
		schema.Req("org_id", schema.String()),
		schema.Req("audit_id", schema.String()),
		schema.Req("action", schema.String()),
		schema.Req("target", schema.String().OrNull()),
		schema.Req("detail", schema.FreeObject()),
		schema.Req("created_at", schema.DateTime()),
	).Named("AccountAuditEntry")
	ExportSchema = schema.Object(
		schema.Req("exported_at", schema.DateTime()),
		schema.Req("account", consoleauth.MePublicSchema),
		schema.Req("sessions", schema.Array(SessionInfoSchema)),
		schema.Req("memberships", schema.Array(MembershipSchema)),
		schema.Req("audit_entries", schema.Array(ActedSchema).Describe(fmt.Sprintf(
			"The entries in which the person is the actor, among the newest %d of each of their organisations.", audit.MaxLimit))),
	).Named("AccountExport")
)

// Membership is one organisation of the person.
type Membership struct {
	OrgID string `json:"org_id"`
	Name  string `json:"name"`
	Role  string `json:"role"`
	Plan  string `json:"plan"`
}

// Acted is an audit entry in which the person is the actor.
type Acted struct {
	OrgID     string         `json:"org_id"`
	AuditID   string         `json:"audit_id"`
	Action    string         `json:"action"`
	Target    *string        `json:"target"`
	Detail    map[string]any `json:"detail"`
	CreatedAt time.Time      `json:"created_at"`
}

// Export is the person's data.
type Export struct {
	ExportedAt   time.Time                 `json:"exported_at"`
	Account      consoleauth.MePublic      `json:"account"`
	Sessions     []consoleauth.SessionInfo `json:"sessions"`
	Memberships  []Membership              `json:"memberships"`
	AuditEntries []Acted                   `json:"audit_entries"`
}

// Routes returns the export's route, for the console-auth group.
func Routes(d Deps) []httpapi.Route {
	if d.Clock == nil {
		d.Clock = clock.System
	}
	return []httpapi.Route{{
		Method: http.MethodGet, Path: "/console/auth/me/export", OperationID: "exportMe", Tags: []string{"console auth"},
		Security: []httpapi.Security{httpapi.SecuritySession},
		Summary:  "Everything the service keeps about the signed-in person, as one JSON document",
		Description: "The account, the sessions that still open the console (their times, never a token), the memberships, " +
			"and the audit entries in which the person is the actor (docs/privacy.md §5). Sent as an attachment.",
		Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("The person's data.", ExportSchema)},
		Handler:   httpapi.JSON(http.StatusOK, exporter{d}.export),
	}}
}

type exporter struct{ d Deps }

func (x exporter) export(r *httpapi.Request[httpapi.NoBody]) (Export, error) {
	c, ok := consoleauth.CallerFrom(r.Context())
	if !ok {
		return Export{}, fmt.Errorf("consoleaccount: route served without consoleauth.Middleware")
	}
	ctx, id := r.Context(), c.User.ID
	out := Export{ExportedAt: x.d.Clock.Now().UTC(), Account: c.User.Public(), Memberships: []Membership{}, AuditEntries: []Acted{}}
	var err error
	if out.Sessions, err = x.d.Auth.Sessions(ctx, id); err != nil {
		return Export{}, err
	}
	list, err := x.d.Orgs.ListOrgs(ctx, id)
	if err != nil {
		return Export{}, err
	}
	for _, o := range list {
		out.Memberships = append(out.Memberships, Membership{OrgID: o.OrgID, Name: o.Name, Role: o.Role, Plan: o.Plan})
		entries, err := x.d.Orgs.Audit().List(ctx, o.OrgID, audit.MaxLimit)
		if err != nil {
			return Export{}, err
		}
		for _, e := range entries {
			if e.ActorUserID != nil && *e.ActorUserID == id {
				out.AuditEntries = append(out.AuditEntries, Acted{OrgID: o.OrgID, AuditID: e.AuditID, Action: e.Action,
					Target: e.Target, Detail: e.Detail, CreatedAt: e.CreatedAt.UTC()})
			}
		}
	}
	r.Header().Set("Content-Disposition", `attachment; filename="roadevents-my-data.json"`)
	return out, nil
}
