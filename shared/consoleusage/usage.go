// Package consoleusage serves what an organisation consumed, as the console shows it (docs/api.md
// §4.4): GET /console/orgs/{org_id}/usage, a dense daily series of the meter's counters over a
// window, and GET /console/orgs/{org_id}/vitality, whether and when the organisation's keys last
// called the service. Both are readable by any member (the roles of docs/api.md §10.3); a caller
// who is not a member, or an organisation that does not exist, gets 404 (docs/api.md §4.3).
//
// Days are UTC calendar days, as the meter counts them (package metering). The window ends
// today, by the injected clock, and holds exactly 7, 30 or 90 days, today included.
package consoleusage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
)

// Orgs tells whether a user may read an organisation; *orgs.Service is one. ok is false when
// the user is not a member or the organisation does not exist.
type Orgs interface {
	Access(ctx context.Context, orgID, userID string) (role, plan string, ok bool, err error)
}

// Meter reads daily counts; *metering.Meter is one.
type Meter interface {
	Read(ctx context.Context, org, env string, from, to time.Time) ([]metering.Day, error)
}

// Keys lists an organisation's API keys with their last_used_at; *apikey.Keys is one.
type Keys interface {
	List(ctx context.Context, org, env string, includeRevoked bool) ([]apikey.Key, error)
}

var (
	_ Meter = (*metering.Meter)(nil)
	_ Keys  = (*apikey.Keys)(nil)
)

// Deps is what the routes are built from.
type Deps struct {
	Orgs  Orgs
	Meter Meter
	Keys  Keys
	// Clock decides "today"; clock.System when nil.
	Clock clock.Clock
}

// Windows are the usage windows of docs/api.md §8 (7d, 30d, 90d) and their length in
// days; DefaultWindow applies when none is asked for.
var Windows = map[string]int{"7d": 7, "30d": 30, "90d": 90}

// DefaultWindow is the window of docs/api.md §4.4 when the query names none.
const DefaultWindow = "30d"

// DetailOrgNotFound answers a caller who is not a member (docs/api.md §4.3: 404, never 403).
const DetailOrgNotFound = "Organisation not found"

// Totals is the UsageTotals record of docs/api.md §10.3.
type Totals struct {
	Reads          int64 `json:"reads"`
	Publishes      int64 `json:"publishes"`
	Signals        int64 `json:"signals"`
	StreamConnects int64 `json:"stream_connects"`
	Tickets        int64 `json:"tickets"`
}

// TotalsOf converts the meter's totals.
func TotalsOf(t metering.Totals) Totals {
	return Totals{Reads: t.Reads, Publishes: t.Publishes, Signals: t.Signals, StreamConnects: t.StreamConnects, Tickets: t.Tickets}
}

// Day is the UsageDay record of docs/api.md §10.3.
type Day struct {
	Date string `json:"date"`
	Totals
}

// Series is the UsageSeries record of docs/api.md §10.3.
type Series struct {
	OrgID       string `json:"org_id"`
	Environment string `json:"environment"`
	Window      string `json:"window"`
	Start       string `json:"start"`
	End         string `json:"end"`
	Days        []Day  `json:"days"`
	Totals      Totals `json:"totals"`
}

// KeyActivity is one entry of Vitality.keys (docs/api.md §10.3).
type KeyActivity struct {
	KeyID      string     `json:"key_id"`
	Label      string     `json:"label"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// Vitality is the Vitality record of docs/api.md §10.3.
type Vitality struct {
	Environment   string        `json:"environment"`
	HasTraffic    bool          `json:"has_traffic"`
	LastUsedAt    *time.Time    `json:"last_used_at"`
	LastUsedKeyID *string       `json:"last_used_key_id"`
	Today         Totals        `json:"today"`
	Keys          []KeyActivity `json:"keys"`
}

// Schemas of the records, named as docs/api.md §10.3 names them. TotalsSchema is shared with the
// billing summary.
var (
	TotalsSchema = schema.Object(counters()...).Named("UsageTotals")
	DaySchema    = schema.Object(append([]schema.Property{schema.Req("date", schema.Date())}, counters()...)...).Named("UsageDay")
	SeriesSchema = schema.Object(
		schema.Req("org_id", schema.String()),
		schema.Req("environment", schema.Enum(apikey.Live, apikey.Sandbox)),
		schema.Req("window", schema.Enum("7d", "30d", "90d")),
		schema.Req("start", schema.Date().Describe("First day of the window (UTC).")),
		schema.Req("end", schema.Date().Describe("Last day of the window: today (UTC).")),
		schema.Req("days", schema.Array(DaySchema).Describe("Every UTC day of the window, zeros included, oldest first.")),
		schema.Req("totals", TotalsSchema),
	).Named("UsageSeries")
	VitalitySchema = schema.Object(
		schema.Req("environment", schema.Enum(apikey.Live, apikey.Sandbox)),
		schema.Req("has_traffic", schema.Boolean().Describe("Whether a key of the environment was ever used or anything was counted today.")),
		schema.Req("last_used_at", schema.DateTime().OrNull().Describe("Latest last_used_at of the environment's keys, revoked ones included.")),
		schema.Req("last_used_key_id", schema.String().OrNull()),
		schema.Req("today", TotalsSchema),
		schema.Req("keys", schema.Array(schema.Object(
			schema.Req("key_id", schema.String()),
			schema.Req("label", schema.String()),
			schema.Req("last_used_at", schema.DateTime().OrNull()),
		)).Describe("Unrevoked keys of the environment.")),
	).Named("Vitality")
)

// count is a fresh schema each time: schema builders change the schema they are called on.
func count() *schema.Schema { return schema.Integer().Min(0) }

// counters are the members of UsageTotals, which UsageDay has after its date as Day embeds
// Totals; fresh schemas on each call, so neither record's can change the other's.
func counters() []schema.Property {
	return []schema.Property{
		schema.Req("reads", count()),
		schema.Req("publishes", count()),
		schema.Req("signals", count().Describe("Throttled signals included.")),
		schema.Req("stream_connects", count()),
		schema.Req("tickets", count()),
	}
}

// Routes returns the usage and vitality routes (docs/api.md §4.4), for the console-orgs group. They
// declare httpapi.SecuritySession: mount consoleauth.Middleware in the API.
func Routes(d Deps) []httpapi.Route {
	if d.Clock == nil {
		d.Clock = clock.System
	}
	h := handlers{d: d}
	tags := []string{"console usage"}
	session := []httpapi.Security{httpapi.SecuritySession}
	orgID := orgs.OrgIDParam
	env := schema.Query("environment", schema.Enum(apikey.Live, apikey.Sandbox).WithDefault(apikey.Live))
	notFound := orgs.NotMemberResponse
	return []httpapi.Route{
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/usage", OperationID: "getUsage", Tags: tags, Security: session,
			Summary: "Daily usage over a window, every day present",
			Description: "The meter's counters per UTC day for one environment: 7, 30 or 90 days ending today, " +
				"oldest first, days without traffic as zeros. Readable by any member.",
			Params: []schema.Param{orgID,
				schema.Query("window", schema.Enum("7d", "30d", "90d").WithDefault(DefaultWindow)),
				env},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The usage series.", SeriesSchema),
				http.StatusNotFound: notFound,
			},
			Handler: httpapi.JSON(http.StatusOK, h.usage),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/vitality", OperationID: "getVitality", Tags: tags, Security: session,
			Summary: "Whether the integration is alive: last key use and today's counters",
			Description: "From last_used_at per key and today's counters; an organisation that never called the " +
				"service gets nulls and has_traffic false. Readable by any member.",
			Params: []schema.Param{orgID, env},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The vitality of the environment.", VitalitySchema),
				http.StatusNotFound: notFound,
			},
			Handler: httpapi.JSON(http.StatusOK, h.vitality),
		},
	}
}

type handlers struct {
	d Deps
}

// member resolves the caller's membership of the path's organisation (any role will do).
func (h handlers) member(r *http.Request) (string, error) {
	c, ok := consoleauth.CallerFrom(r.Context())
	if !ok {
		return "", errors.New("usage: route served without consoleauth.Middleware")
	}
	org := r.PathValue("org_id")
	_, _, ok, err := h.d.Orgs.Access(r.Context(), org, c.User.ID)
	if err != nil {
		return "", fmt.Errorf("usage: resolve membership of %s: %w", org, err)
	}
	if !ok {
		return "", httpapi.NotFound(DetailOrgNotFound)
	}
	return org, nil
}

func (h handlers) usage(r *httpapi.Request[httpapi.NoBody]) (Series, error) {
	org, err := h.member(r.HTTP)
	if err != nil {
		return Series{}, err
	}
	window, env := r.Params.String("window"), r.Params.String("environment")
	return Read(r.Context(), h.d.Meter, org, env, window, h.d.Clock.Now())
}

// Read returns the usage series of org in env over window (a key of Windows), ending on the
// UTC day of now.
func Read(ctx context.Context, m Meter, org, env, window string, now time.Time) (Series, error) {
	n, ok := Windows[window]
	if !ok {
		return Series{}, fmt.Errorf("usage: unknown window %q", window)
	}
	end := now.UTC()
	start := end.AddDate(0, 0, -(n - 1))
	days, err := m.Read(ctx, org, env, start, end)
	if err != nil {
		return Series{}, fmt.Errorf("usage: read %s of %s %s: %w", window, org, env, err)
	}
	out := Series{
		OrgID: org, Environment: env, Window: window,
		Start:  start.Format(metering.DateFormat),
		End:    end.Format(metering.DateFormat),
		Days:   make([]Day, 0, len(days)),
		Totals: TotalsOf(metering.Sum(days)),
	}
	for _, d := range days {
		out.Days = append(out.Days, Day{Date: d.Date, Totals: TotalsOf(d.Totals)})
	}
	return out, nil
}

func (h handlers) vitality(r *httpapi.Request[httpapi.NoBody]) (Vitality, error) {
	org, err := h.member(r.HTTP)
	if err != nil {
		return Vitality{}, err
	}
	env := r.Params.String("environment")
	ctx := r.Context()
	keys, err := h.d.Keys.List(ctx, org, env, true)
	if err != nil {
		return Vitality{}, fmt.Errorf("usage: list keys of %s: %w", org, err)
	}
	now := h.d.Clock.Now()
	today, err := h.d.Meter.Read(ctx, org, env, now, now)
	if err != nil {
		return Vitality{}, fmt.Errorf("usage: read today's usage of %s %s: %w", org, env, err)
	}
	out := Vitality{Environment: env, Today: TotalsOf(metering.Sum(today)), Keys: []KeyActivity{}}
	for _, k := range keys {
		// A revoked key's last use is still traffic of the organisation; only the listing
		// leaves it out (docs/api.md §10.3: keys are the unrevoked ones).
		if !k.LastUsedAt.IsZero() && (out.LastUsedAt == nil || k.LastUsedAt.After(*out.LastUsedAt)) {
			t, id := k.LastUsedAt.UTC(), k.KeyID
			out.LastUsedAt, out.LastUsedKeyID = &t, &id
		}
		if k.Revoked {
			continue
		}
		a := KeyActivity{KeyID: k.KeyID, Label: k.Label}
		if !k.LastUsedAt.IsZero() {
			t := k.LastUsedAt.UTC()
			a.LastUsedAt = &t
		}
		out.Keys = append(out.Keys, a)
	}
	out.HasTraffic = out.LastUsedAt != nil || out.Today != (Totals{})
	return out, nil
}
