package eventstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Meter counts consumption (docs/api.md §1: every read, publish and signal); *metering.Meter is one.
type Meter interface {
	Count(ctx context.Context, org, env string, c metering.Counter)
}

var _ Meter = (*metering.Meter)(nil)

// Deps is what the route group needs.
type Deps struct {
	Store *Store
	Meter Meter
	// Clock is the clock of the Store (the occurred_at slack of docs/api.md §2.2 is checked against
	// it); clock.System when nil.
	Clock clock.Clock
	// MaxRadius is max_query_radius_m (docs/api.md §8): 422 above it. DefaultMaxRadius when 0.
	MaxRadius float64
	// DefaultRadius is the radius of a query that names none (docs/api.md §4.1: 1000 m) when 0.
	DefaultRadius float64
	// Reputations gives the publisher's band in the evidence document; nil answers "unknown".
	Reputations Reputations
	// Publisher names who publishes the open-data exports (config.Export); its time is
	// each answer's.
	Publisher interop.Publisher
}

// Public sentences of the handler errors (docs/api.md §7, shape 1).
const (
	detailNotFound     = "Event not found"
	detailNotPublisher = "Only the organisation that published this event may change it"
	detailBusy         = "The event is changing too fast; retry"
)

// Routes returns the events group: publish, area query, read, revise and signal (docs/api.md §4.1,
// docs/api.md §7). Every route takes an API key (httpapi.SecurityAPIKey); the caller's organisation
// and environment come from it (apikey.Middleware), never from a payload (docs/api.md §1).
func Routes(d Deps) []httpapi.Route {
	if d.Clock == nil {
		d.Clock = clock.System
	}
	if d.MaxRadius <= 0 {
		d.MaxRadius = DefaultMaxRadius
	}
	if d.DefaultRadius <= 0 {
		d.DefaultRadius = 1000
	}
	h := &handlers{store: d.Store, meter: d.Meter, clock: d.Clock, bands: d.Reputations, publisher: d.Publisher}
	tags := []string{"events"}
	security := []httpapi.Security{httpapi.SecurityAPIKey}
	eventID := schema.Path("event_id", schema.String().Describe("ev_ followed by 26 characters of lower-case base32.")).
		Describe("The event's id; an unknown or malformed id is 404.")
	notFound := httpapi.ErrorResponse("Unknown event id, or an event not served to the credential's network.")
	notPublisher := httpapi.ErrorResponse("Another organisation's event, or the caller's own event " +
		"under a credential of the other environment.")
	busy := httpapi.ErrorResponse("The event kept changing under concurrent writes; retry with backoff.")
	public := event.EventPublicSchema
	return append([]httpapi.Route{
		{
			Method: http.MethodPost, Path: "/v1/events", OperationID: "publishEvent", Tags: tags, Security: security,
			Summary: "Publish a road event",
			Description: "The event takes the environment of the credential and its expiry from the taxonomy. " +
				"With a client_event_id, publishing the same content again returns the stored event with 200 " +
				"and creates nothing; different content, or an id already used in the other environment, is 409.",
			Body: event.EventInSchema,
			Validate: func(body any) (any, schema.Errors) {
				return event.DecodeEventIn(body, d.Clock.Now())
			},
			Responses: map[int]httpapi.Response{
				http.StatusCreated: {Description: "Created.", Schema: public, Headers: []httpapi.Header{{
					Name: "Location", Description: "Path of the new event (GET /v1/events/{event_id})."}}},
				http.StatusOK: httpapi.JSONResponse("Faithful replay of a known client_event_id: the stored event, nothing created.", public),
				http.StatusConflict: httpapi.ErrorResponse("The client_event_id was used before with different content " +
					"(the detail names the first differing field), or in the other environment."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusCreated, asCaller(h.publish)),
		},
		{
			Method: http.MethodGet, Path: "/v1/events", OperationID: "listEvents", Tags: tags, Security: security,
			Summary: "Active events around a point, nearest first",
			Description: "Distance is measured to the event's full extent, so a long segment passing the point is " +
				"returned. At most 500 events are returned, truncated silently. A live key is served live events, " +
				"a sandbox key live and sandbox events.",
			Params: []schema.Param{
				schema.Query("lat", schema.Number().Range(-90, 90)).Require().Describe("Latitude of the centre, decimal degrees."),
				schema.Query("lon", schema.Number().Range(-180, 180)).Require().Describe("Longitude of the centre, decimal degrees."),
				schema.Query("radius", schema.Number().GreaterThan(0).Max(d.MaxRadius).WithDefault(d.DefaultRadius)).
					Describe("Metres; at most max_query_radius_m (GET /v1/meta/limits)."),
				schema.Query("type", schema.Array(schema.Enum(taxonomy.IDs()...))).
					Describe("Keep these types only; repeat the parameter for several."),
				schema.Query("min_confidence", schema.Number().Range(0, 1).WithDefault(0.0)).
					Describe("Keep events whose confidence is at least this."),
			},
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Active events, nearest first; possibly empty.", schema.Array(public)),
			},
			Handler: httpapi.HandlerFunc(h.list),
		},
		{
			Method: http.MethodGet, Path: "/v1/events/{event_id}", OperationID: "getEvent", Tags: tags, Security: security,
			Summary:     "One event, in any status",
			Description: "An event the credential's network is not served (a sandbox event for a live key) is 404, never 403.",
			Params:      []schema.Param{eventID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The event, in any status.", public),
				http.StatusNotFound: notFound,
			},
			Handler: httpapi.JSON(http.StatusOK, asCaller(h.get)),
		},
		{
			Method: http.MethodGet, Path: "/v1/events/{event_id}/evidence", OperationID: "getEventEvidence", Tags: tags, Security: security,
			Summary: "Why an event has the confidence it has",
			Description: "The distinct reporters behind the tallies and how many organisations they belong to, every " +
				"signal with the reporter's distance to the event, the duplicates merged into it, each change of its " +
				"expiry and its cause, and the publisher's reputation band. It never names a reporter or another " +
				"organisation, and gives distances, not positions. Read access as GET /v1/events/{event_id}.",
			Params: []schema.Param{eventID},
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The evidence document.", event.EvidenceSchema),
				http.StatusNotFound: notFound,
			},
			Handler: httpapi.JSON(http.StatusOK, asCaller(h.evidence)),
		},
		{
			Method: http.MethodPost, Path: "/v1/events/{event_id}/revisions", OperationID: "reviseEvent", Tags: tags, Security: security,
			Summary: "Restate an event (publishing organisation only)",
			Description: "The five fields are applied, not merged: an omitted severity or subtype is cleared and an " +
				"omitted geometry collapses the event to its point. Expiry goes back to a full TTL within the " +
				"ceiling, except for wrong_way_vehicle.",
			Params: []schema.Param{eventID},
			Body:   event.RevisionInSchema,
			Validate: func(body any) (any, schema.Errors) {
				// The stored type is not known yet: Revise checks the subtype against it.
				return event.DecodeRevisionIn(body, "")
			},
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("Revised.", public),
				http.StatusForbidden:          notPublisher,
				http.StatusNotFound:           notFound,
				http.StatusConflict:           httpapi.ErrorResponse("The event is expired, invalidated or merged."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, asCaller(h.revise)),
		},
		{
			Method: http.MethodPost, Path: "/v1/events/{event_id}/close", OperationID: "closeEvent", Tags: tags, Security: security,
			Summary: "End an event early (publishing organisation only)",
			Description: "For a hazard that is gone, such as a cleared crash: the event becomes expired with expires_at " +
				"set to now, leaves area queries, and subscribers get an ended delta. No body, or an empty object. " +
				"The access rules are those of a revision.",
			Params:       []schema.Param{eventID},
			Body:         closeInSchema,
			OptionalBody: true,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("Closed: the event, now expired.", public),
				http.StatusForbidden:          notPublisher,
				http.StatusNotFound:           notFound,
				http.StatusConflict:           httpapi.ErrorResponse("The event is over already: expired, invalidated or merged."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, asCaller(h.close)),
		},
		{
			Method: http.MethodPost, Path: "/v1/events/{event_id}/signals", OperationID: "signalEvent", Tags: tags, Security: security,
			Summary: "Confirm or deny an event",
			Description: "One signal per reporter counts and the latest wins; without reporter_token the organisation " +
				"counts as one reporter. Repeating the standing action changes nothing (200).",
			Params: []schema.Param{eventID},
			Body:   event.SignalInSchema,
			Validate: func(body any) (any, schema.Errors) {
				return nil, event.ValidateSignalIn(body)
			},
			Responses: map[int]httpapi.Response{
				http.StatusOK:        httpapi.JSONResponse("Accepted, or a repeat of the standing action (no change).", public),
				http.StatusForbidden: httpapi.ErrorResponse("A sandbox credential signalling a live event."),
				http.StatusNotFound:  notFound,
				http.StatusConflict: httpapi.ErrorResponse("The event is expired, invalidated or merged " +
					"(a late denial of an event already cleared included)."),
				http.StatusTooManyRequests:    httpapi.ErrorResponse("The organisation's hourly signal ceiling.", httpapi.RetryAfter),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, asCaller(h.signal)),
		},
	}, exportRoutes(h, d.MaxRadius, d.DefaultRadius)...)
}

type handlers struct {
	store     *Store
	meter     Meter
	clock     clock.Clock
	bands     Reputations
	publisher interop.Publisher
}

// callerOf returns the authenticated caller; a route reached without one is a wiring mistake
// (the API lacks apikey.Middleware), answered 500 rather than served to nobody in particular.
func callerOf(r *http.Request) (Caller, error) {
	p, ok := apikey.PrincipalFrom(r.Context())
	if !ok || p.OrgID == "" {
		return Caller{}, errors.New("events: no authenticated principal: is apikey.Middleware installed?")
	}
	return Caller{Org: p.OrgID, Environment: p.Environment}, nil
}

// asCaller adapts an operation of the authenticated caller to a typed handler.
func asCaller[In, Out any](f func(r *httpapi.Request[In], c Caller) (Out, error)) func(*httpapi.Request[In]) (Out, error) {
	return func(r *httpapi.Request[In]) (Out, error) {
		c, err := callerOf(r.HTTP)
		if err != nil {
			var zero Out
			return zero, err
		}
		return f(r, c)
	}
}

func (h *handlers) publish(r *httpapi.Request[event.EventIn], c Caller) (event.EventPublic, error) {
	in := r.Body
	h.meter.Count(r.Context(), c.Org, c.Environment, metering.Publishes)
	ev, created, err := h.store.Publish(r.Context(), c, in)
	switch {
	case errors.Is(err, event.ErrReplayDiffers):
		detail := fmt.Sprintf("client_event_id '%s' was already used with different content", deref(in.ClientEventID))
		if field, differs := event.FirstDifference(ev, in); differs && ev.Org == c.Org {
			detail += fmt.Sprintf(": %s differs", field)
		}
		return event.EventPublic{}, httpapi.NewError(http.StatusConflict, detail, err)
	case errors.Is(err, event.ErrOtherEnvironment):
		return event.EventPublic{}, httpapi.NewError(http.StatusConflict, fmt.Sprintf(
			"client_event_id '%s' is already used in the %s environment", deref(in.ClientEventID), ev.Environment), err)
	case err != nil:
		return event.EventPublic{}, h.failure(err, "publish", in.Geometry)
	}
	if created {
		r.Header().Set("Location", "/v1/events/"+ev.ID)
	} else {
		r.SetStatus(http.StatusOK)
	}
	return ev.Public(h.clock.Now()), nil
}

// bufPool holds response buffers of area queries, which run to tens of kilobytes.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	c, err := callerOf(r)
	if err != nil {
		return err
	}
	p := httpapi.Params(r)
	h.meter.Count(r.Context(), c.Org, c.Environment, metering.Reads)
	res, err := h.store.Area(r.Context(), c, AreaQuery{
		Center:        pointOf(p.Float("lat"), p.Float("lon")),
		Radius:        p.Float("radius"),
		Types:         p.Strings("type"),
		MinConfidence: p.Float("min_confidence"),
		// docs/api.md §4.1 rule 3 asks for the active events, not for the changes of the last
		// moment: the list may lag a write by about a second (docs/architecture.md §2).
		Eventual: true,
	})
	if err != nil {
		return err
	}
	defer res.Release()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	body := res.AppendJSON((*bp)[:0])
	*bp = body
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return err
}

func (h *handlers) get(r *httpapi.Request[httpapi.NoBody], c Caller) (event.EventPublic, error) {
	h.meter.Count(r.Context(), c.Org, c.Environment, metering.Reads)
	ev, err := h.store.Get(r.Context(), c, r.Params.String("event_id"))
	if err != nil {
		return event.EventPublic{}, h.failure(err, "read", nil)
	}
	return ev.Public(h.clock.Now()), nil
}

func (h *handlers) evidence(r *httpapi.Request[httpapi.NoBody], c Caller) (event.Evidence, error) {
	h.meter.Count(r.Context(), c.Org, c.Environment, metering.Reads)
	ev, err := h.store.Evidence(r.Context(), c, r.Params.String("event_id"), h.bands)
	if err != nil {
		return event.Evidence{}, h.failure(err, "read", nil)
	}
	return ev, nil
}

func (h *handlers) revise(r *httpapi.Request[event.RevisionIn], c Caller) (event.EventPublic, error) {
	ev, err := h.store.Revise(r.Context(), c, r.Params.String("event_id"), r.Body)
	if err != nil {
		return event.EventPublic{}, h.failure(err, "revise", r.Body.Geometry)
	}
	return ev.Public(h.clock.Now()), nil
}

func (h *handlers) close(r *httpapi.Request[CloseIn], c Caller) (event.EventPublic, error) {
	ev, err := h.store.Close(r.Context(), c, r.Params.String("event_id"))
	if err != nil {
		return event.EventPublic{}, h.failure(err, "close", nil)
	}
	return ev.Public(h.clock.Now()), nil
}

func (h *handlers) signal(r *httpapi.Request[event.SignalIn], c Caller) (event.EventPublic, error) {
	// Every signal is metered, a throttled one too (docs/api.md §8 rule 3).
	h.meter.Count(r.Context(), c.Org, c.Environment, metering.Signals)
	ev, _, err := h.store.Signal(r.Context(), c, r.Params.String("event_id"), r.Body)
	if err != nil {
		return event.EventPublic{}, h.failure(err, "signal", nil)
	}
	return ev.Public(h.clock.Now()), nil
}

// failure maps the store's errors to responses (docs/api.md §7). what names the act for the 409
// sentence; geometry is the payload's, echoed as the input of a 422 on its size.
func (h *handlers) failure(err error, what string, geometry *event.LineString) error {
	var (
		throttled *ThrottledError
		extent    *ExtentError
		over      *OverError
	)
	switch {
	case errors.Is(err, ErrNotFound):
		return httpapi.NewError(http.StatusNotFound, detailNotFound, err)
	case errors.Is(err, ErrNotPublisher):
		return httpapi.NewError(http.StatusForbidden, detailNotPublisher, err)
	case errors.Is(err, ErrOtherNetwork) && what == "signal":
		return httpapi.NewError(http.StatusForbidden, "A sandbox key may read live events but not signal them", err)
	case errors.Is(err, ErrOtherNetwork):
		return httpapi.NewError(http.StatusForbidden, "This event belongs to the other environment: "+
			"revise it with a key of the environment it was published in", err)
	case errors.As(err, &over):
		return httpapi.NewError(http.StatusConflict, fmt.Sprintf("The event is %s: it takes no more %s", over.Status, acts[what]), err)
	case errors.As(err, &throttled):
		e := httpapi.TooManyRequests("The organisation's hourly signal ceiling is reached; retry after the time "+
			"the Retry-After header gives", throttled.RetryAfter)
		e.Cause = err
		return e
	case errors.As(err, &extent):
		return schema.Errors{schema.ValueError(schema.Loc("body", "geometry"), fmt.Sprintf(
			"geometry is too long to index: its %.0f m cross more than %d area index cells; "+
				"publish a segment of at most about 20 km, or several events", extent.Length, MaxIndexCells), geometry)}
	case errors.Is(err, ErrBusy):
		return httpapi.NewError(http.StatusServiceUnavailable, detailBusy, err).WithHeader("Retry-After", "1")
	}
	return err
}

// acts names what a 409 refuses, by the what of failure.
var acts = map[string]string{"signal": "signals", "revise": "revisions", "close": "closing"}

// CloseIn is the body of a close: nothing, or an empty object (docs/network.md §3); a member
// is 422, room left for reasons to come.
type CloseIn struct{}

var closeInSchema = schema.Object().Named("CloseIn")

func pointOf(lat, lon float64) geo.Point { return geo.Point{Lat: lat, Lon: lon} }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
