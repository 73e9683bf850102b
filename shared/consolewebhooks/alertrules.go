package consolewebhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Public sentences of the alert rules' errors (docs/api.md §7, shape 1).
const (
	DetailRuleNotFound = "Alert rule not found in this organisation"
	DetailRuleCap      = "The organisation has as many alert rules as it may; delete one first"
	DetailRuleBusy     = "The alert rule changed while this request ran; retry"
)

// The area types of a rule (docs/webhooks.md §5).
const (
	AreaCircle  = "Circle"
	AreaPolygon = "Polygon"
)

// Schemas of the alert rules' routes.
var (
	AlertCircleSchema = schema.Object(
		schema.Req("type", schema.Const(AreaCircle)),
		schema.Req("lat", schema.Number().Range(-90, 90)),
		schema.Req("lon", schema.Number().Range(-180, 180)),
		schema.Req("radius_m", schema.Number().Range(alerts.MinRadiusM, alerts.MaxRadiusM).Describe("Measured on the sphere, to the nearest point of an event's line.")),
	).Named("AlertCircle")
	AlertPolygonSchema = schema.Object(
		schema.Req("type", schema.Const(AreaPolygon)),
		schema.Req("coordinates", schema.Array(
			schema.Array(schema.Array(schema.Number().Range(-180, 180)).Count(2, 2).Describe("[lon, lat]")).Count(4, alerts.MaxVertices+1),
		).Count(1, 1).Describe(fmt.Sprintf("One ring, as GeoJSON writes a Polygon: 4 to %d positions, the last repeating the first; "+
			"not crossing itself, spanning less than 180° of longitude; no holes.", alerts.MaxVertices+1))),
	).Named("AlertPolygon").Describe("A GeoJSON Polygon; its edges are straight in longitude and latitude.")
	AlertAreaSchema = schema.OneOf("type", AlertCircleSchema, AlertPolygonSchema)

	ruleName  = schema.String().Len(1, alerts.MaxNameLen).Printable()
	ruleEnv   = schema.Enum(event.EnvironmentLive, event.EnvironmentSandbox).Describe("live hears live events; sandbox hears live and sandbox events, as a sandbox key reads them.")
	ruleTypes = schema.Array(schema.Enum(taxonomy.IDs()...)).MaxCount(len(taxonomy.IDs())).Describe("The types heard; empty for every type.")
	ruleConf  = schema.Number().Range(0, 1).Describe("The least confidence (docs/api.md §10.2) an event needs to match.")

	CreateAlertRulePayloadSchema = schema.Object(
		schema.Req("name", ruleName),
		schema.Req("environment", ruleEnv),
		schema.Req("area", AlertAreaSchema),
		schema.Prop("types", ruleTypes.WithDefault([]any{})),
		schema.Prop("min_confidence", ruleConf.WithDefault(0)),
		schema.Prop("enabled", schema.Boolean().WithDefault(true)),
	).Named("CreateAlertRulePayload")
	AlertRuleUpdateSchema = schema.Object(
		schema.Prop("name", ruleName),
		schema.Prop("environment", ruleEnv),
		schema.Prop("area", AlertAreaSchema),
		schema.Prop("types", ruleTypes),
		schema.Prop("min_confidence", ruleConf),
		schema.Prop("enabled", schema.Boolean()),
	).Named("AlertRuleUpdate").Describe("Only the fields sent are written.")
	AlertRulePublicSchema = schema.Object(
		schema.Req("rule_id", schema.String()),
		schema.Req("name", schema.String()),
		schema.Req("environment", ruleEnv),
		schema.Req("area", AlertAreaSchema),
		schema.Req("types", schema.Array(schema.Enum(taxonomy.IDs()...))),
		schema.Req("min_confidence", schema.Number()),
		schema.Req("enabled", schema.Boolean()),
		schema.Req("created_at", schema.DateTime()),
		schema.Req("created_by_email", schema.String().OrNull()),
		schema.Req("updated_at", schema.DateTime()),
	).Named("AlertRulePublic")
)

// AreaJSON is a rule's area on the wire: a circle, or a GeoJSON Polygon of one ring.
type AreaJSON struct {
	Type        string         `json:"type"`
	Lat         *float64       `json:"lat,omitempty"`
	Lon         *float64       `json:"lon,omitempty"`
	RadiusM     *float64       `json:"radius_m,omitempty"`
	Coordinates [][][2]float64 `json:"coordinates,omitempty"`
}

// AlertRulePublic is the console's view of a rule.
type AlertRulePublic struct {
	RuleID         string    `json:"rule_id"`
	Name           string    `json:"name"`
	Environment    string    `json:"environment"`
	Area           AreaJSON  `json:"area"`
	Types          []string  `json:"types"`
	MinConfidence  float64   `json:"min_confidence"`
	Enabled        bool      `json:"enabled"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedByEmail *string   `json:"created_by_email"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// PublicRule returns the console's view of r.
func PublicRule(r alerts.Rule) AlertRulePublic {
	out := AlertRulePublic{RuleID: r.ID, Name: r.Name, Environment: r.Environment, Types: r.Types, MinConfidence: r.MinConfidence,
		Enabled: r.Enabled, CreatedAt: r.CreatedAt.UTC(), CreatedByEmail: nullable(r.CreatedByEmail), UpdatedAt: r.UpdatedAt.UTC()}
	if c := r.Area.Circle; c != nil {
		out.Area = AreaJSON{Type: AreaCircle, Lat: &c.Center.Lat, Lon: &c.Center.Lon, RadiusM: &c.RadiusM}
	} else {
		ring := make([][2]float64, len(r.Area.Polygon))
		for i, p := range r.Area.Polygon {
			ring[i] = [2]float64{p.Lon, p.Lat}
		}
		out.Area = AreaJSON{Type: AreaPolygon, Coordinates: [][][2]float64{ring}}
	}
	if out.Types == nil {
		out.Types = []string{}
	}
	return out
}

// plainArea is AreaJSON without its methods.
type plainArea AreaJSON

// UnmarshalJSON reads either shape into the one struct; the schema has told them apart.
func (a *AreaJSON) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, (*plainArea)(a)) }

// MarshalJSON writes the fields of a's shape only, which PublicRule sets.
func (a AreaJSON) MarshalJSON() ([]byte, error) { return json.Marshal(plainArea(a)) }

func (a AreaJSON) area() alerts.Area {
	if a.Type == AreaCircle {
		return alerts.Area{Circle: &alerts.Circle{Center: geo.Point{Lat: *a.Lat, Lon: *a.Lon}, RadiusM: *a.RadiusM}}
	}
	var out alerts.Area
	for _, p := range a.Coordinates[0] {
		out.Polygon = append(out.Polygon, geo.Point{Lat: p[1], Lon: p[0]})
	}
	return out
}

type ruleIn struct {
	Name          *string   `json:"name"`
	Environment   *string   `json:"environment"`
	Area          *AreaJSON `json:"area"`
	Types         *[]string `json:"types"`
	MinConfidence *float64  `json:"min_confidence"`
	Enabled       *bool     `json:"enabled"`
}

func (in ruleIn) draft() alerts.Draft {
	d := alerts.Draft{Name: in.Name, Environment: in.Environment, Types: in.Types, MinConfidence: in.MinConfidence, Enabled: in.Enabled}
	if in.Area != nil {
		a := in.Area.area()
		d.Area = &a
	}
	return d
}

// RuleErrorTable gives the rules' errors their status and public sentence.
var RuleErrorTable = notDelivering.With(
	httpapi.ErrorRule{Err: alerts.ErrNotFound, Status: http.StatusNotFound, Detail: DetailRuleNotFound},
	httpapi.ErrorRule{Err: alerts.ErrCap, Status: http.StatusConflict, Detail: DetailRuleCap},
	httpapi.ErrorRule{Err: alerts.ErrBusy, Status: http.StatusServiceUnavailable, Detail: DetailRuleBusy},
)

// ruleRoutes returns the alert rules' routes (docs/webhooks.md §5).
func ruleRoutes(h handlers) []httpapi.Route {
	session := []httpapi.Security{httpapi.SecuritySession}
	tags := []string{"console webhooks"}
	ruleID := schema.Path("rule_id", schema.String()).Describe("An alert rule of the organisation.")
	one := httpapi.JSONResponse("The rule.", AlertRulePublicSchema)
	notFound := httpapi.ErrorResponse("The caller is not a member of the organisation, or the rule is not the organisation's.")
	busy := httpapi.ErrorResponse("The rule kept changing under concurrent requests; retry.")
	base := "/console/orgs/{org_id}/alert-rules"
	routes := []httpapi.Route{
		{
			Method: http.MethodGet, Path: base, OperationID: "listAlertRules", Tags: tags, Security: session,
			Summary: "The organisation's alert rules, oldest first", Description: "Readable by any member.",
			Params:    []schema.Param{orgs.OrgIDParam},
			Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("Rules.", schema.Array(AlertRulePublicSchema)), http.StatusNotFound: orgs.NotMemberResponse},
			Handler:   httpapi.JSON(http.StatusOK, h.listRules),
		},
		{
			Method: http.MethodPost, Path: base, OperationID: "createAlertRule", Tags: tags, Security: session,
			Summary: "Make an alert rule (owner)",
			Description: fmt.Sprintf("Network events that come to match the rule, change while they match and stop matching are delivered as "+
				"alert.created, alert.updated and alert.ended to the organisation's endpoints subscribed to them (docs/webhooks.md §5). "+
				"At most %d rules per organisation. Written to the audit log.", alerts.MaxPerOrg),
			Params: []schema.Param{orgs.OrgIDParam}, Body: CreateAlertRulePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusCreated: one, http.StatusForbidden: orgs.OwnerOnlyResponse, http.StatusNotFound: orgs.NotMemberResponse,
				http.StatusConflict:           httpapi.ErrorResponse("The organisation has as many rules as it may."),
				http.StatusServiceUnavailable: httpapi.ErrorResponse("Deliveries do not run on this deployment yet, or a rule made at the same moment; retry."),
			},
			Handler: httpapi.JSON(http.StatusCreated, h.createRule),
		},
		{
			Method: http.MethodGet, Path: base + "/{rule_id}", OperationID: "getAlertRule", Tags: tags, Security: session,
			Summary: "An alert rule", Description: "Readable by any member.",
			Params:    []schema.Param{orgs.OrgIDParam, ruleID},
			Responses: map[int]httpapi.Response{http.StatusOK: one, http.StatusNotFound: notFound},
			Handler:   httpapi.JSON(http.StatusOK, h.getRule),
		},
		{
			Method: http.MethodPatch, Path: base + "/{rule_id}", OperationID: "updateAlertRule", Tags: tags, Security: session,
			Summary:     "Change, disable or enable an alert rule (owner)",
			Description: "Only the fields sent are written; the rule as changed applies to changes of events from then on. Written to the audit log.",
			Params:      []schema.Param{orgs.OrgIDParam, ruleID}, Body: AlertRuleUpdateSchema,
			Responses: map[int]httpapi.Response{http.StatusOK: one, http.StatusForbidden: orgs.OwnerOnlyResponse, http.StatusNotFound: notFound, http.StatusServiceUnavailable: busy},
			Handler:   httpapi.JSON(http.StatusOK, h.updateRule),
		},
		{
			Method: http.MethodDelete, Path: base + "/{rule_id}", OperationID: "deleteAlertRule", Tags: tags, Security: session,
			Summary: "Delete an alert rule (owner)", Description: "Written to the audit log.",
			Params: []schema.Param{orgs.OrgIDParam, ruleID},
			Responses: map[int]httpapi.Response{http.StatusOK: httpapi.JSONResponse("Done.", consoleauth.OkResponseSchema),
				http.StatusForbidden: orgs.OwnerOnlyResponse, http.StatusNotFound: notFound},
			Handler: httpapi.JSON(http.StatusOK, h.deleteRule),
		},
	}
	return RuleErrorTable.Defaults(routes)
}

// badRule answers a refused rule as a validation error at the field at fault.
func badRule(err error) error {
	var ie *alerts.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	loc := append([]any{"body"}, ie.Field...)
	return schema.Errors{schema.ValueError(loc, ie.Msg, nil)}
}

func (h handlers) listRules(r *httpapi.Request[httpapi.NoBody]) ([]AlertRulePublic, error) {
	org, _, err := h.caller(r.HTTP, false)
	if err != nil {
		return nil, err
	}
	list, err := h.d.Rules.List(r.Context(), org)
	out := make([]AlertRulePublic, len(list))
	for i, rule := range list {
		out[i] = PublicRule(rule)
	}
	return out, err
}

func (h handlers) createRule(r *httpapi.Request[ruleIn]) (AlertRulePublic, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return AlertRulePublic{}, err
	}
	if !h.d.Delivering {
		return AlertRulePublic{}, errNotDelivering
	}
	rule, err := h.d.Rules.Create(r.Context(), org, alerts.Actor(actor), r.Body.draft())
	return PublicRule(rule), badRule(err)
}

func (h handlers) getRule(r *httpapi.Request[httpapi.NoBody]) (AlertRulePublic, error) {
	org, _, err := h.caller(r.HTTP, false)
	if err != nil {
		return AlertRulePublic{}, err
	}
	rule, err := h.d.Rules.Get(r.Context(), org, r.Params.String("rule_id"))
	return PublicRule(rule), err
}

func (h handlers) updateRule(r *httpapi.Request[ruleIn]) (AlertRulePublic, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return AlertRulePublic{}, err
	}
	rule, err := h.d.Rules.Update(r.Context(), org, r.Params.String("rule_id"), alerts.Actor(actor), r.Body.draft())
	return PublicRule(rule), badRule(err)
}

func (h handlers) deleteRule(r *httpapi.Request[httpapi.NoBody]) (consoleauth.OkResponse, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return consoleauth.OkResponse{}, err
	}
	return consoleauth.OkResponse{OK: true}, h.d.Rules.Delete(r.Context(), org, r.Params.String("rule_id"), alerts.Actor(actor))
}
