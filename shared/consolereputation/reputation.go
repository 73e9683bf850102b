// Package consolereputation serves an organisation's standing as a publisher, for the
// console's quality panel (docs/network.md §2): GET /console/orgs/{org_id}/reputation, per
// environment the events the network corroborated and those it ended by deny quorum over the
// window, the score and band drawn from them, and the deployment's thresholds. Readable by
// any member (the roles of docs/api.md §10.3); a caller who is not a member, or an organisation
// that does not exist, gets 404 (docs/api.md §4.3).
package consolereputation

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/schema"
)

// Orgs tells whether a user may read an organisation; *orgs.Service is one. ok is false when
// the user is not a member or the organisation does not exist.
type Orgs interface {
	Access(ctx context.Context, orgID, userID string) (role, plan string, ok bool, err error)
}

// Standings reads publishers' standings; *reputation.Ledger is one.
type Standings interface {
	Standing(ctx context.Context, org, env string) (reputation.Standing, error)
	Rules() config.Reputation
}

var (
	_ Orgs      = (*orgs.Service)(nil)
	_ Standings = (*reputation.Ledger)(nil)
)

// Deps is what the route is built from; both are required.
type Deps struct {
	Orgs      Orgs
	Standings Standings
}

// EnvironmentStanding is the standing of the organisation in one environment.
type EnvironmentStanding struct {
	Environment string `json:"environment"`
	reputation.Standing
}

// Report is the route's answer.
type Report struct {
	OrgID string `json:"org_id"`
	// The deployment's rules (config.Reputation) and the good band's floor.
	WindowDays     int `json:"window_days"`
	MinHistory     int `json:"min_history"`
	VerdictPercent int `json:"verdict_percent"`
	GoodPercent    int `json:"good_percent"`
	// Environments holds live, then sandbox.
	Environments []EnvironmentStanding `json:"environments"`
}

// Schemas of the answer.
var (
	StandingSchema = schema.Object(
		schema.Req("environment", schema.Enum(apikey.Live, apikey.Sandbox)),
		schema.Req("for", schema.Integer().Min(0).Describe("Events of the organisation corroborated within the window: "+
			"confirmed by a reporter of another organisation, or another source's duplicate merged into them.")),
		schema.Req("against", schema.Integer().Min(0).Describe("Events of the organisation ended by deny quorum within the window.")),
		schema.Req("decided", schema.Integer().Min(0).Describe("for + against.")),
		schema.Prop("score", schema.Number().Range(0, 1).Describe("Share of decided events corroborated; absent when none was decided.")),
		schema.Req("band", schema.Enum(reputation.Bands...).Describe("new: fewer decided events than min_history; "+
			"poor: at least verdict_percent of them ended by deny quorum, the organisation's active events in the "+
			"environment are invalidated at each further deny end; good: at least good_percent corroborated; fair: between.")),
	).Named("PublisherStanding")
	ReportSchema = schema.Object(
		schema.Req("org_id", schema.String()),
		schema.Req("window_days", schema.Integer().Min(1).Describe("The UTC days counted, today included.")),
		schema.Req("min_history", schema.Integer().Min(1).Describe("Decided events needed before a band other than new.")),
		schema.Req("verdict_percent", schema.Integer().Range(0, 100).Describe("Share of decided events ended by deny quorum, "+
			"in percent, from which the band is poor.")),
		schema.Req("good_percent", schema.Integer().Range(0, 100).Describe("Score, in percent, from which the band is good.")),
		schema.Req("environments", schema.Array(StandingSchema).Describe("live, then sandbox.")),
	).Named("ReputationReport")
)

// Routes returns the reputation route, for the console-orgs group. It declares
// httpapi.SecuritySession: mount consoleauth.Middleware in the API.
func Routes(d Deps) []httpapi.Route {
	h := handlers{d: d}
	return []httpapi.Route{{
		Method: http.MethodGet, Path: "/console/orgs/{org_id}/reputation", OperationID: "getReputation",
		Tags: []string{"console quality"}, Security: []httpapi.Security{httpapi.SecuritySession},
		Summary: "The organisation's standing as a publisher, per environment",
		Description: "Over the window, the organisation's events corroborated by the network and those ended by deny " +
			"quorum, the score and band drawn from them, and the deployment's thresholds (docs/network.md §2). " +
			"Readable by any member.",
		Params: []schema.Param{orgs.OrgIDParam},
		Responses: map[int]httpapi.Response{
			http.StatusOK:       httpapi.JSONResponse("The standing in each environment.", ReportSchema),
			http.StatusNotFound: orgs.NotMemberResponse,
		},
		Handler: httpapi.JSON(http.StatusOK, h.report),
	}}
}

type handlers struct {
	d Deps
}

func (h handlers) report(r *httpapi.Request[httpapi.NoBody]) (Report, error) {
	c, ok := consoleauth.CallerFrom(r.Context())
	if !ok {
		return Report{}, errors.New("reputation: route served without consoleauth.Middleware")
	}
	org := r.HTTP.PathValue("org_id")
	_, _, ok, err := h.d.Orgs.Access(r.Context(), org, c.User.ID)
	if err != nil {
		return Report{}, fmt.Errorf("reputation: resolve membership of %s: %w", org, err)
	}
	if !ok {
		return Report{}, httpapi.NotFound(orgs.DetailOrgNotFound)
	}
	rules := h.d.Standings.Rules()
	out := Report{
		OrgID: org, WindowDays: rules.WindowDays, MinHistory: rules.MinHistory,
		VerdictPercent: rules.VerdictPercent, GoodPercent: reputation.GoodPercent,
	}
	for _, env := range []string{apikey.Live, apikey.Sandbox} {
		s, err := h.d.Standings.Standing(r.Context(), org, env)
		if err != nil {
			return Report{}, err
		}
		out.Environments = append(out.Environments, EnvironmentStanding{Environment: env, Standing: s})
	}
	return out, nil
}
