// Package consolefeeds serves the feed registry to the console (docs/interop.md §13): an
// organisation's owners register the open-data feeds it imports, change, pause and delete
// them, and ask for a poll now; every member reads them with their health. Changes are
// written to the audit log. A caller who is not a member, or a feed of another organisation,
// gets 404 (docs/api.md §4.3).
package consolefeeds

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
)

// Public sentences of the errors (docs/api.md §7, shape 1).
const (
	DetailNotFound = "Feed not found in this organisation"
	// MsgBadURL is the validation message of a URL the fetcher would refuse.
	MsgBadURL  = "The URL must be an absolute http or https URL without credentials"
	DetailCap  = "The organisation has as many feeds as it may; delete one first"
	DetailBusy = "The feed changed while this request ran; retry"
)

var formats = func() []string {
	out := make([]string, len(interop.Formats))
	for i, f := range interop.Formats {
		out[i] = string(f)
	}
	return out
}()

// Schemas of the routes.
var (
	name    = schema.String().MaxLen(feeds.MaxNameLen).Printable().OrEmpty().Describe("A name for people; may be empty.")
	feedURL = schema.String().Len(1, feeds.MaxURLLen).Describe("The document's address: an absolute http or https URL without credentials " +
		"(a refusal does not echo it). Members of the organisation read it, query included.")
	format   = schema.Enum(formats...).Describe("cifs: Waze CIFS JSON; wzdx: WZDx work zones (roadworks); tdx: TDx incidents; datex2: DATEX II SRTI situation publication, JSON.")
	license  = schema.String().MaxLen(feeds.MaxLicenseLen).Printable().OrEmpty().Describe("The feed's licence as its publisher states it; copied into each event's license.")
	interval = schema.Integer().Range(feeds.MinInterval.Seconds(), feeds.MaxInterval.Seconds())

	CreateFeedPayloadSchema = schema.Object(
		schema.Prop("name", name),
		schema.Req("url", feedURL),
		schema.Req("format", format),
		schema.Prop("environment", schema.Enum(apikey.Live, apikey.Sandbox).WithDefault(apikey.Sandbox).Describe("The environment the feed's events are published in; fixed once registered.")),
		schema.Prop("license", license),
		schema.Prop("poll_interval_s", interval.WithDefault(int(feeds.DefaultInterval.Seconds())).Describe("Seconds between polls.")),
		schema.Prop("paused", schema.Boolean().WithDefault(false)),
	).Named("CreateFeedPayload")
	FeedUpdateSchema = schema.Object(
		schema.Prop("name", name),
		schema.Prop("url", feedURL),
		schema.Prop("format", format),
		schema.Prop("license", license),
		schema.Prop("poll_interval_s", schema.Integer().Range(feeds.MinInterval.Seconds(), feeds.MaxInterval.Seconds())),
		schema.Prop("paused", schema.Boolean()),
	).Named("FeedUpdate").Describe("Only the fields sent are written. A new URL, format, interval or pause makes the feed due at once.")
	PollCountsSchema = schema.Object(
		schema.Req("not_modified", schema.Boolean().Describe("The upstream answered that the document had not changed.")),
		schema.Req("created", schema.Integer().Min(0)),
		schema.Req("revised", schema.Integer().Min(0)),
		schema.Req("unchanged", schema.Integer().Min(0)),
		schema.Req("skipped", schema.Integer().Min(0).Describe("Records that could not be mapped to an event.")),
		schema.Req("ended", schema.Integer().Min(0).Describe("Events ended: their record left the feed or its end passed.")),
	).Named("FeedPollCounts")
	FeedHealthSchema = schema.Object(
		schema.Req("last_poll_at", schema.DateTime().OrNull()),
		schema.Req("last_success_at", schema.DateTime().OrNull().Describe("The last poll that read the document or learnt it was unchanged.")),
		schema.Req("last_error", schema.String().OrNull().Describe("Why the last poll read nothing; null once a poll succeeds again. The feed's events stay until their own expiry meanwhile.")),
		schema.Req("last_error_at", schema.DateTime().OrNull()),
		schema.Req("last_poll", PollCountsSchema.OrNull()),
		schema.Req("active_records", schema.Integer().Min(0).Describe("Records of the last document read that have an event.")),
		schema.Req("imported_total", schema.Integer().Min(0).Describe("Records that created or revised an event, since the feed was registered.")),
		schema.Req("skipped_total", schema.Integer().Min(0)),
		schema.Req("ended_total", schema.Integer().Min(0)),
	).Named("FeedHealth")
	FeedPublicSchema = schema.Object(
		schema.Req("feed_id", schema.String()),
		schema.Req("name", schema.String()),
		schema.Req("url", schema.String()),
		schema.Req("format", schema.Enum(formats...)),
		schema.Req("environment", schema.Enum(apikey.Live, apikey.Sandbox)),
		schema.Req("license", schema.String()),
		schema.Req("poll_interval_s", schema.Integer()),
		schema.Req("paused", schema.Boolean()),
		schema.Req("created_at", schema.DateTime()),
		schema.Req("created_by_email", schema.String().OrNull()),
		schema.Req("updated_at", schema.DateTime()),
		schema.Req("next_poll_at", schema.DateTime().OrNull().Describe("null while paused.")),
		schema.Req("health", FeedHealthSchema),
	).Named("FeedPublic")
)

// PollCounts is what one poll did.
type PollCounts struct {
	NotModified bool `json:"not_modified"`
	Created     int  `json:"created"`
	Revised     int  `json:"revised"`
	Unchanged   int  `json:"unchanged"`
	Skipped     int  `json:"skipped"`
	Ended       int  `json:"ended"`
}

// Health is a feed's health, for the console.
type Health struct {
	LastPollAt    *time.Time  `json:"last_poll_at"`
	LastSuccessAt *time.Time  `json:"last_success_at"`
	LastError     *string     `json:"last_error"`
	LastErrorAt   *time.Time  `json:"last_error_at"`
	LastPoll      *PollCounts `json:"last_poll"`
	Active        int         `json:"active_records"`
	Imported      int64       `json:"imported_total"`
	Skipped       int64       `json:"skipped_total"`
	Ended         int64       `json:"ended_total"`
}

// FeedPublic is the console's view of a feed.
type FeedPublic struct {
	FeedID         string     `json:"feed_id"`
	Name           string     `json:"name"`
	URL            string     `json:"url"`
	Format         string     `json:"format"`
	Environment    string     `json:"environment"`
	License        string     `json:"license"`
	Interval       int64      `json:"poll_interval_s"`
	Paused         bool       `json:"paused"`
	CreatedAt      time.Time  `json:"created_at"`
	CreatedByEmail *string    `json:"created_by_email"`
	UpdatedAt      time.Time  `json:"updated_at"`
	NextPollAt     *time.Time `json:"next_poll_at"`
	Health         Health     `json:"health"`
}

// Public returns the console's view of f.
func Public(f feeds.Registered) FeedPublic {
	opt := orgs.OptionalTime
	out := FeedPublic{
		FeedID: f.ID, Name: f.Name, URL: f.URL, Format: string(f.Format), Environment: f.Environment, License: f.License,
		Interval: int64(f.Interval / time.Second), Paused: f.Paused, CreatedAt: f.CreatedAt.UTC(), UpdatedAt: f.UpdatedAt.UTC(),
		Health: Health{LastPollAt: opt(f.LastPollAt), LastSuccessAt: opt(f.LastSuccessAt), LastErrorAt: opt(f.LastErrorAt),
			Active: f.Active, Imported: f.Imported, Skipped: f.Skipped, Ended: f.Ended},
	}
	if f.CreatedByEmail != "" {
		out.CreatedByEmail = &f.CreatedByEmail
	}
	if !f.Paused {
		out.NextPollAt = opt(f.NextPollAt)
	}
	if f.LastError != "" {
		out.Health.LastError = &f.LastError
	}
	if !f.LastPollAt.IsZero() {
		l := f.Last
		out.Health.LastPoll = &PollCounts{NotModified: l.NotModified, Created: l.Created, Revised: l.Revised,
			Unchanged: l.Unchanged, Skipped: l.Skipped, Ended: l.Ended}
	}
	return out
}

type updateIn struct {
	Name     *string `json:"name"`
	URL      *string `json:"url"`
	Format   *string `json:"format"`
	License  *string `json:"license"`
	Interval *int64  `json:"poll_interval_s"`
	Paused   *bool   `json:"paused"`
}

type createIn struct {
	updateIn
	Environment *string `json:"environment"`
}

func (d updateIn) draft() feeds.Draft {
	out := feeds.Draft{Name: d.Name, URL: d.URL, Format: d.Format, License: d.License, Paused: d.Paused}
	if d.Interval != nil {
		iv := time.Duration(*d.Interval) * time.Second
		out.Interval = &iv
	}
	return out
}

// ErrorTable gives the registry's errors their status and public sentence.
var ErrorTable = orgs.CallerErrors.With(
	httpapi.ErrorRule{Err: feeds.ErrNotFound, Status: http.StatusNotFound, Detail: DetailNotFound},
	httpapi.ErrorRule{Err: feeds.ErrCap, Status: http.StatusConflict, Detail: DetailCap},
	httpapi.ErrorRule{Err: feeds.ErrBusy, Status: http.StatusServiceUnavailable, Detail: DetailBusy},
)

// Routes returns the feed routes, for the console-orgs group. They declare
// httpapi.SecuritySession: mount consoleauth.Middleware in the API.
func Routes(og orgs.Accessor, reg *feeds.Registry) []httpapi.Route {
	h := handlers{orgs: og, reg: reg}
	session := []httpapi.Security{httpapi.SecuritySession}
	tags := []string{"console feeds"}
	feedID := schema.Path("feed_id", schema.String()).Describe("A feed of the organisation.")
	one := httpapi.JSONResponse("The feed, with its health.", FeedPublicSchema)
	ownerOnly := orgs.OwnerOnlyResponse
	notFound := httpapi.ErrorResponse("The caller is not a member of the organisation, or the feed is not the organisation's.")
	routes := []httpapi.Route{
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/feeds", OperationID: "listFeeds", Tags: tags, Security: session,
			Summary:     "The organisation's feeds, oldest first, with their health",
			Description: "Readable by any member. Each feed's health says when it was last polled, what that poll did, and why it failed if it did.",
			Params:      []schema.Param{orgs.OrgIDParam},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("Feeds, oldest first.", schema.Array(FeedPublicSchema)),
				http.StatusNotFound: orgs.NotMemberResponse,
			},
			Handler: httpapi.JSON(http.StatusOK, h.list),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/feeds", OperationID: "createFeed", Tags: tags, Security: session,
			Summary: "Register a feed the organisation imports (owner)",
			Description: fmt.Sprintf("The feed is polled at once, then every poll_interval_s; each record becomes an event of the "+
				"organisation in the feed's environment, with source_kind feed (docs/interop.md §11). At most %d feeds per "+
				"organisation. Written to the audit log.", feeds.MaxPerOrg),
			Params: []schema.Param{orgs.OrgIDParam},
			Body:   CreateFeedPayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusCreated:   httpapi.JSONResponse("The feed, due at once.", FeedPublicSchema),
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  orgs.NotMemberResponse,
				http.StatusConflict:  httpapi.ErrorResponse("The organisation has as many feeds as it may."),
			},
			Handler: httpapi.JSON(http.StatusCreated, h.create),
		},
		{
			Method: http.MethodGet, Path: "/console/orgs/{org_id}/feeds/{feed_id}", OperationID: "getFeed", Tags: tags, Security: session,
			Summary:     "A feed, with its health",
			Description: "Readable by any member.",
			Params:      []schema.Param{orgs.OrgIDParam, feedID},
			Responses:   map[int]httpapi.Response{http.StatusOK: one, http.StatusNotFound: notFound},
			Handler:     httpapi.JSON(http.StatusOK, h.get),
		},
		{
			Method: http.MethodPatch, Path: "/console/orgs/{org_id}/feeds/{feed_id}", OperationID: "updateFeed", Tags: tags, Security: session,
			Summary:     "Change, pause or resume a feed (owner)",
			Description: "Only the fields sent are written; the environment is fixed. Written to the audit log.",
			Params:      []schema.Param{orgs.OrgIDParam, feedID},
			Body:        FeedUpdateSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 one,
				http.StatusForbidden:          ownerOnly,
				http.StatusNotFound:           notFound,
				http.StatusServiceUnavailable: httpapi.ErrorResponse("The feed kept changing under concurrent requests; retry."),
			},
			Handler: httpapi.JSON(http.StatusOK, h.update),
		},
		{
			Method: http.MethodDelete, Path: "/console/orgs/{org_id}/feeds/{feed_id}", OperationID: "deleteFeed", Tags: tags, Security: session,
			Summary: "Delete a feed (owner)",
			Description: "The feed leaves the list at once; the next poll pass ends the events of its records and forgets it. " +
				"Written to the audit log.",
			Params: []schema.Param{orgs.OrgIDParam, feedID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:        httpapi.JSONResponse("Done.", consoleauth.OkResponseSchema),
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  notFound,
			},
			Handler: httpapi.JSON(http.StatusOK, h.delete),
		},
		{
			Method: http.MethodPost, Path: "/console/orgs/{org_id}/feeds/{feed_id}/poll", OperationID: "pollFeed", Tags: tags, Security: session,
			Summary:     "Poll a feed at the next pass (owner)",
			Description: "Makes the feed due now, unless it is paused; the poller takes it within its tick (a minute on AWS).",
			Params:      []schema.Param{orgs.OrgIDParam, feedID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:        one,
				http.StatusForbidden: ownerOnly,
				http.StatusNotFound:  notFound,
			},
			Handler: httpapi.JSON(http.StatusOK, h.pollNow),
		},
	}
	return ErrorTable.Defaults(routes)
}

type handlers struct {
	orgs orgs.Accessor
	reg  *feeds.Registry
}

// caller resolves the caller's organisation and, as an actor, the caller (orgs.CallerIn).
func (h handlers) caller(r *http.Request, owner bool) (string, feeds.Actor, error) {
	org, a, err := orgs.CallerIn(r, h.orgs, owner)
	return org, feeds.Actor{UserID: a.UserID, Email: a.Email}, err
}

func (h handlers) list(r *httpapi.Request[httpapi.NoBody]) ([]FeedPublic, error) {
	org, _, err := h.caller(r.HTTP, false)
	if err != nil {
		return nil, err
	}
	list, err := h.reg.List(r.Context(), org)
	out := make([]FeedPublic, len(list))
	for i, f := range list {
		out[i] = Public(f)
	}
	return out, err
}

func (h handlers) create(r *httpapi.Request[createIn]) (FeedPublic, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return FeedPublic{}, err
	}
	d := r.Body.draft()
	d.Environment = r.Body.Environment
	f, err := h.reg.Create(r.Context(), org, actor, d)
	return Public(f), badURL(err)
}

func (h handlers) get(r *httpapi.Request[httpapi.NoBody]) (FeedPublic, error) {
	org, _, err := h.caller(r.HTTP, false)
	if err != nil {
		return FeedPublic{}, err
	}
	f, err := h.reg.Get(r.Context(), org, r.Params.String("feed_id"))
	return Public(f), err
}

func (h handlers) update(r *httpapi.Request[updateIn]) (FeedPublic, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return FeedPublic{}, err
	}
	f, err := h.reg.Update(r.Context(), org, r.Params.String("feed_id"), actor, r.Body.draft())
	return Public(f), badURL(err)
}

func (h handlers) delete(r *httpapi.Request[httpapi.NoBody]) (consoleauth.OkResponse, error) {
	org, actor, err := h.caller(r.HTTP, true)
	if err != nil {
		return consoleauth.OkResponse{}, err
	}
	return consoleauth.OkResponse{OK: true}, h.reg.Delete(r.Context(), org, r.Params.String("feed_id"), actor)
}

func (h handlers) pollNow(r *httpapi.Request[httpapi.NoBody]) (FeedPublic, error) {
	org, _, err := h.caller(r.HTTP, true)
	if err != nil {
		return FeedPublic{}, err
	}
	f, err := h.reg.PollNow(r.Context(), org, r.Params.String("feed_id"))
	return Public(f), err
}

// badURL answers the registry's refusal of a URL as a validation error at body.url (docs/api.md
// §7 shape 2), without the URL as its input: it may hold a password. The schemas check every
// other field first, so the URL is all the registry can refuse.
func badURL(err error) error {
	if !errors.Is(err, feeds.ErrInvalid) {
		return err
	}
	return schema.Errors{{Type: schema.ErrValue, Loc: []any{"body", "url"}, Msg: MsgBadURL}}
}
