// Package sdk is the Go client of the service's /v1 interface (docs/sdk.md): a typed method per
// route, the retry rules of docs/api.md §7 applied once for every caller, typed errors that
// carry the status and the validation items, a stream client that keeps the events around a
// point (stream.go), and a webhook receiver (webhook.go).
//
//	c := sdk.New("https://api.example", os.Getenv("ROADEVENTS_API_KEY"))
//	ev, err := c.Publish(ctx, sdk.EventIn{Type: "accident", Lat: 48.1372, Lon: 11.5755})
//
// A Client is safe for concurrent use.
package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/event"
)

// The payloads and answers of the routes: the service's own types, so that they cannot drift.
type (
	// EventIn is a publication (docs/api.md §2.2).
	EventIn = event.EventIn
	// Event is an event as the service serves it (docs/api.md §2.3).
	Event = event.EventPublic
	// SignalIn is a confirmation or a denial (docs/api.md §2.5).
	SignalIn = event.SignalIn
	// RevisionIn restates an event's position, line, severity and subtype (docs/api.md §2.4).
	RevisionIn = event.RevisionIn
	// Evidence is why an event has the confidence it has.
	Evidence = event.Evidence
	// LineString is an event's geometry.
	LineString = event.LineString
)

// Client calls the service with one API key.
type Client struct {
	base  string
	key   string
	http  *http.Client
	retry Retry
	agent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with hc (its Transport, Timeout and so on).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRetry replaces the retry policy (DefaultRetry).
func WithRetry(r Retry) Option { return func(c *Client) { c.retry = r } }

// WithUserAgent names the application in the User-Agent header, before the SDK's own name.
func WithUserAgent(app string) Option {
	return func(c *Client) { c.agent = app + " " + userAgent }
}

const userAgent = "roadevents-go-sdk/1"

// New returns a client of the service at base (for example https://api.example or
// http://127.0.0.1:8080) with the API key key.
func New(base, key string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(base, "/"), key: key, http: &http.Client{Timeout: 30 * time.Second},
		retry: DefaultRetry, agent: userAgent}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Call sends method path (with query) and the JSON of in (nil: no body) with the client's
// credential under its retry policy, and decodes a 2xx answer into out (nil: discard; a
// *[]byte: the raw body); it returns the status. It serves the routes without a method of
// their own, such as the console's (a session token is the credential there). A call that is
// not a read is retried after a timeout only when ctx says it is safe (WithSafeRetry).
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	return c.call(ctx, method, path, query, in, out)
}

// WithSafeRetry marks ctx's calls as safe to send twice, so that Call retries them after a
// timeout or a reset too.
func WithSafeRetry(ctx context.Context) context.Context { return withIdempotence(ctx, true) }

func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("sdk: encode the request: %w", err)
		}
	}
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	res, err := c.retry.do(ctx, method, func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, target, bytesOrNil(body))
		if err != nil {
			return nil, err
		}
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", c.agent)
		return c.http.Do(req)
	})
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if out == nil {
		io.Copy(io.Discard, res.Body)
		return res.StatusCode, nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw, err = io.ReadAll(res.Body)
		return res.StatusCode, err
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return res.StatusCode, fmt.Errorf("sdk: decode the answer of %s %s: %w", method, path, err)
	}
	return res.StatusCode, nil
}

func bytesOrNil(b []byte) io.Reader {
	if b == nil {
		return nil
	}
	return bytes.NewReader(b)
}

// Publish publishes in as the key's organisation (docs/api.md §4.1 rule 1). created is false
// when the service answered 200: in carried a client_event_id already used with the same
// content, so the event is the one published then (a retry after a lost answer lands here).
// Give in a ClientEventID to make a publish safe to retry: without one a retried publish that
// the service had already taken publishes a second event, so it is not retried on a timeout.
func (c *Client) Publish(ctx context.Context, in EventIn) (ev Event, created bool, err error) {
	ctx = withIdempotence(ctx, in.ClientEventID != nil)
	status, err := c.call(ctx, http.MethodPost, "/v1/events", nil, in, &ev)
	return ev, status == http.StatusCreated, err
}

// Area is a circle of the network and the filters of a query or a stream (docs/api.md §4.1).
type Area struct {
	Lat, Lon float64
	// RadiusM is the radius in metres; the service's default (1000) when 0.
	RadiusM float64
	// Types keeps these types only; every type when empty.
	Types []string
	// MinConfidence keeps events at least this trusted.
	MinConfidence float64
}

func (a Area) query() url.Values {
	q := url.Values{"lat": {formatFloat(a.Lat)}, "lon": {formatFloat(a.Lon)}}
	if a.RadiusM > 0 {
		q.Set("radius", formatFloat(a.RadiusM))
	}
	for _, t := range a.Types {
		q.Add("type", t)
	}
	if a.MinConfidence > 0 {
		q.Set("min_confidence", formatFloat(a.MinConfidence))
	}
	return q
}

// Query returns the active events of a, nearest first, at most 500.
func (c *Client) Query(ctx context.Context, a Area) ([]Event, error) {
	var out []Event
	_, err := c.call(ctx, http.MethodGet, "/v1/events", a.query(), nil, &out)
	return out, err
}

// Get returns the event id, in any status.
func (c *Client) Get(ctx context.Context, id string) (Event, error) {
	var ev Event
	_, err := c.call(ctx, http.MethodGet, "/v1/events/"+url.PathEscape(id), nil, nil, &ev)
	return ev, err
}

// Evidence returns why the event id has the confidence it has.
func (c *Client) Evidence(ctx context.Context, id string) (Evidence, error) {
	var ev Evidence
	_, err := c.call(ctx, http.MethodGet, "/v1/events/"+url.PathEscape(id)+"/evidence", nil, nil, &ev)
	return ev, err
}

// Revise restates the organisation's event id: the fields of in are applied, not merged
// (docs/api.md §4.1 rule 5). A revision states the whole new content, so it is safe to retry.
func (c *Client) Revise(ctx context.Context, id string, in RevisionIn) (Event, error) {
	var ev Event
	_, err := c.call(withIdempotence(ctx, true), http.MethodPost, "/v1/events/"+url.PathEscape(id)+"/revisions", nil, in, &ev)
	return ev, err
}

// Close ends the organisation's event id. When a close is sent again after a timeout and the
// service answers 409 (the first one had closed it), Close returns the event as it now is.
func (c *Client) Close(ctx context.Context, id string) (Event, error) {
	var ev Event
	_, err := c.call(withIdempotence(ctx, true), http.MethodPost, "/v1/events/"+url.PathEscape(id)+"/close", nil, nil, &ev)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict && apiErr.Attempts > 1 {
		if now, getErr := c.Get(ctx, id); getErr == nil && now.Status != event.StatusActive {
			return now, nil
		}
	}
	return ev, err
}

// Signal confirms or denies the event id for a reporter; the latest signal of a reporter wins,
// so it is safe to retry (docs/api.md §4.1 rule 6).
func (c *Client) Signal(ctx context.Context, id string, in SignalIn) (Event, error) {
	var ev Event
	_, err := c.call(withIdempotence(ctx, true), http.MethodPost, "/v1/events/"+url.PathEscape(id)+"/signals", nil, in, &ev)
	return ev, err
}

// Ticket is a stream ticket (docs/api.md §5).
type Ticket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
	ExpiresIn int       `json:"expires_in"`
}

// MintTicket mints a stream ticket for the key's organisation and environment.
func (c *Client) MintTicket(ctx context.Context) (Ticket, error) {
	var t Ticket
	_, err := c.call(withIdempotence(ctx, true), http.MethodPost, "/v1/stream/tickets", nil, nil, &t)
	return t, err
}

// EventTypes returns the type ids the service knows, in its order.
func (c *Client) EventTypes(ctx context.Context) ([]string, error) {
	var out []string
	_, err := c.call(ctx, http.MethodGet, "/v1/meta/event-types", nil, nil, &out)
	return out, err
}

// Taxonomy is the taxonomy document (docs/api.md §2.6). It is the SDK's own type, so that the
// SDK links none of the service's serving code; a test holds it to what the service serves.
type Taxonomy struct {
	SchemaVersion int        `json:"schema_version"`
	Types         []TypeSpec `json:"types"`
}

// TypeSpec is one type's subtypes, lifetimes and merge distance.
type TypeSpec struct {
	ID               string   `json:"id"`
	Subtypes         []string `json:"subtypes"`
	TTLSeconds       int64    `json:"ttl_seconds"`
	MaxTTLSeconds    int64    `json:"max_ttl_seconds"`
	ExtensionSeconds int64    `json:"extension_seconds"`
	Description      string   `json:"description"`
	MergeDistanceM   float64  `json:"merge_distance_m"`
}

// Taxonomy returns the types the service knows with their rules (docs/api.md §2.6).
func (c *Client) Taxonomy(ctx context.Context) (Taxonomy, error) {
	var t Taxonomy
	_, err := c.call(ctx, http.MethodGet, "/v1/meta/taxonomy", nil, nil, &t)
	return t, err
}

// Limits are the limits a client reads at run time.
type Limits struct {
	MaxQueryRadiusM float64 `json:"max_query_radius_m"`
	QueryLevel      int     `json:"query_level"`
}

// Limits returns the deployment's limits.
func (c *Client) Limits(ctx context.Context) (Limits, error) {
	var l Limits
	_, err := c.call(ctx, http.MethodGet, "/v1/meta/limits", nil, nil, &l)
	return l, err
}

// Export formats (docs/interop.md).
const (
	ExportCIFS   = "cifs"
	ExportWZDx   = "wzdx"
	ExportTDx    = "tdx"
	ExportDATEX2 = "datex2"
)

// Export returns the active events of the box (west, south, east, north) as a document of
// format, as the service renders it.
func (c *Client) Export(ctx context.Context, format string, west, south, east, north float64) ([]byte, error) {
	var out []byte
	q := url.Values{"bbox": {strings.Join([]string{formatFloat(west), formatFloat(south), formatFloat(east), formatFloat(north)}, ",")}}
	_, err := c.call(ctx, http.MethodGet, "/v1/exports/"+url.PathEscape(format), q, nil, &out)
	return out, err
}

func formatFloat(f float64) string { return fmt.Sprint(f) }
