package stream

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Defaults of Deps.
const (
	// DefaultWriteTimeout bounds one write to a subscriber (a batch of frames and its flush).
	// A client that has not read for that long, with the kernel's buffers full, is
	// disconnected; until then it costs the others nothing, since the hub never waits for it.
	DefaultWriteTimeout = 15 * time.Second
	// DefaultMaxRadius is max_query_radius_m (docs/api.md §8).
	DefaultMaxRadius = 9780.0
	// DefaultRadius is the radius of a stream that names none (docs/api.md §6 rule 1).
	DefaultRadius = 1000.0
	// CrowdedRetryAfter is the Retry-After of a stream refused to share a nearly spent
	// connection budget (ErrCrowded).
	CrowdedRetryAfter = 5 * time.Second
)

// streamErrors answers a subscription the hub refuses. docs/api.md §8 rule 1 allows no ceiling on
// streams, so a crowded budget is the server's condition, not the client's: 503 with
// Retry-After, which clients retry with backoff (docs/operations.md §3).
var streamErrors = httpapi.ErrorTable{
	{Err: ErrCrowded, Status: http.StatusServiceUnavailable,
		Detail: "The service is near its stream capacity and this organisation holds its share of it; retry later"},
	{Err: ErrRevoked, Status: http.StatusUnauthorized, Detail: apikey.DetailInvalid},
}

// Meter counts consumption (docs/api.md §1: every stream connect; docs/api.md §10.3: tickets);
// *metering.Meter is one.
type Meter interface {
	Count(ctx context.Context, org, env string, c metering.Counter)
}

var _ Meter = (*metering.Meter)(nil)

// Deps is what the stream routes need.
type Deps struct {
	// Hub routes changes to streams. GET /v1/stream answers 503 without one (a process that
	// only documents the route, such as a Lambda).
	Hub *Hub
	// Snapshots reads the first frame of each stream.
	Snapshots Snapshotter
	// Tickets mints the tickets of POST /v1/stream/tickets.
	Tickets *Tickets
	Meter   Meter
	// Clock stamps frames; clock.System when nil.
	Clock clock.Clock
	// Timers make each connection's keepalive ticker and end-of-life timer; SystemTimers when
	// nil.
	Timers Timers
	// Logger receives what a stream cannot report to its client; slog.Default() when nil.
	Logger *slog.Logger
	// MaxRadius is max_query_radius_m: 422 above it (docs/api.md §7: same rules as GET /v1/events).
	// DefaultMaxRadius when 0.
	MaxRadius float64
	// DefaultRadius is the radius when the query names none; DefaultRadius when 0.
	DefaultRadius float64
	// WriteTimeout bounds each write to a subscriber; DefaultWriteTimeout when 0.
	WriteTimeout time.Duration
}

func (d *Deps) defaults() {
	if d.Clock == nil {
		d.Clock = clock.System
	}
	if d.Timers == nil {
		d.Timers = SystemTimers
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.MaxRadius <= 0 {
		d.MaxRadius = DefaultMaxRadius
	}
	if d.DefaultRadius <= 0 {
		d.DefaultRadius = DefaultRadius
	}
	if d.WriteTimeout <= 0 {
		d.WriteTimeout = DefaultWriteTimeout
	}
	if d.Meter == nil {
		d.Meter = nopMeter{}
	}
}

// nopMeter counts nothing, for a process built without a meter.
type nopMeter struct{}

func (nopMeter) Count(context.Context, string, string, metering.Counter) {}

// TicketOutSchema declares StreamTicketOut (docs/api.md §2.8, §10.1).
var TicketOutSchema = schema.Object(
	schema.Req("ticket", schema.String().Describe("svc_st_ followed by 43 base62 characters; pass it as the ticket query parameter of GET /v1/stream.")),
	schema.Req("expires_at", schema.DateTime().Describe("When the ticket stops opening streams (UTC); an open stream is not cut then.")),
	schema.Req("expires_in", schema.Integer().Describe("Seconds from now to expires_at: 300.")),
).Named("StreamTicketOut").Describe("A stream ticket: opens GET /v1/stream from a browser, where no Authorization header can be set.")

// TicketOut is the body of a minted ticket (StreamTicketOut).
type TicketOut struct {
	Ticket    string `json:"ticket"`
	ExpiresAt string `json:"expires_at"`
	ExpiresIn int    `json:"expires_in"`
}

// TicketRoutes returns POST /v1/stream/tickets (docs/api.md §4.1, §5 ticket rules). It takes an
// API key only: a ticket in the Authorization header is refused as an invalid key and the
// route reads no ticket parameter, so a ticket cannot mint a ticket. It is unrationed and
// metered (docs/api.md §5, last rule).
func TicketRoutes(d Deps) []httpapi.Route {
	d.defaults()
	return []httpapi.Route{{
		Method: http.MethodPost, Path: "/v1/stream/tickets", OperationID: "mintStreamTicket",
		Tags: []string{"stream"}, Security: []httpapi.Security{httpapi.SecurityAPIKey},
		NoStore: true, // the answer is a credential (docs/api.md §11.3)
		Summary: "Mint a stream ticket",
		Description: "A ticket opens GET /v1/stream with ?ticket= for the key's organisation and environment, " +
			"any area, for 300 s; it may be reused to reconnect within that time. Expiry is checked at connect only.",
		Responses: map[int]httpapi.Response{
			http.StatusCreated: httpapi.JSONResponse("The ticket.", TicketOutSchema),
		},
		Handler: httpapi.JSON(http.StatusCreated, func(r *httpapi.Request[httpapi.NoBody]) (TicketOut, error) {
			p, ok := apikey.PrincipalFrom(r.Context())
			if !ok {
				return TicketOut{}, errNoPrincipal
			}
			if d.Tickets == nil {
				return TicketOut{}, httpapi.NewError(http.StatusServiceUnavailable, "This process does not mint stream tickets", nil)
			}
			t, err := d.Tickets.Mint(r.Context(), p)
			if err != nil {
				return TicketOut{}, err
			}
			d.Meter.Count(r.Context(), p.OrgID, p.Environment, metering.Tickets)
			return TicketOut{
				Ticket:    t.Raw,
				ExpiresAt: event.FormatTime(t.ExpiresAt),
				ExpiresIn: int(TicketLifetime / time.Second),
			}, nil
		}),
	}}
}

var errNoPrincipal = errors.New("stream: no authenticated principal: is apikey.Middleware installed?")

// QueryParams are the filters of GET /v1/stream: those of GET /v1/events, with the same rules
// (docs/api.md §7: "422: same rules as GET /v1/events").
func QueryParams(maxRadius, defaultRadius float64) []schema.Param {
	return []schema.Param{
		schema.Query("lat", schema.Number().Range(-90, 90)).Require().Describe("Latitude of the centre, decimal degrees."),
		schema.Query("lon", schema.Number().Range(-180, 180)).Require().Describe("Longitude of the centre, decimal degrees."),
		schema.Query("radius", schema.Number().GreaterThan(0).Max(maxRadius).WithDefault(defaultRadius)).
			Describe("Metres; at most max_query_radius_m (GET /v1/meta/limits)."),
		schema.Query("type", schema.Array(schema.Enum(taxonomy.IDs()...))).
			Describe("Keep these types only; repeat the parameter for several."),
		schema.Query("min_confidence", schema.Number().Range(0, 1).WithDefault(0.0)).
			Describe("Keep events whose confidence is at least this."),
	}
}

// streamDescription documents the frames in /openapi.json (docs/api.md §6, §10.2).
const streamDescription = "Server-sent events. Every frame has an id that increases within the connection, " +
	"an event name and one JSON data line:\n\n" +
	"- `snapshot`, first and once: `{\"events\": [EventPublic...], \"max_seconds\": 3300, \"at\": <time>}`, " +
	"the events GET /v1/events returns for the same filter; authoritative.\n" +
	"- `event`, per change: `{\"kind\": \"created\"|\"updated\"|\"signal\"|\"ended\", \"event\": EventPublic, \"at\": <time>}`. " +
	"A delta reaches a stream whose filter matches the event before or after the change. Natural expiry sends nothing: " +
	"drop an event at its expires_at.\n" +
	"- `keepalive`, every 20 s, busy or idle: `{\"dropped\": <deltas dropped for this connection>, \"at\": <time>}`; " +
	"each connection queues 256 deltas and drops the oldest when full.\n" +
	"- `bye`, before closing: `{\"reason\": \"max_connection_age\"|\"snapshot_unavailable\", \"reconnect\": true}`, " +
	"or `{\"reason\": \"credential_revoked\", \"reconnect\": false}` when the API key that opened the stream " +
	"(or minted its ticket) is revoked: do not reconnect with it. " +
	"The connection closes after 3300 s, or earlier when the server stops.\n\n" +
	"To resume, reconnect with the id of the last frame received in Last-Event-ID (or last_event_id): where the " +
	"server can, it sends the deltas missed since, in order, instead of a snapshot; otherwise a snapshot comes " +
	"first as usual, and is the new truth.\n\n" +
	"Authenticate with an API key in the Authorization header or, from a browser, with a ticket from " +
	"POST /v1/stream/tickets; when an Authorization header is present it decides. Credentials and filters are " +
	"checked before the stream starts (401, 422). A live key is streamed live events, a sandbox key both.\n\n" +
	"The data of each frame is described by a component schema: " +
	"[StreamSnapshot](#/components/schemas/StreamSnapshot), [StreamDelta](#/components/schemas/StreamDelta), " +
	"[StreamKeepalive](#/components/schemas/StreamKeepalive) and [StreamBye](#/components/schemas/StreamBye); " +
	"the operation's x-sse-frames maps each event name to its $ref."

// Routes returns GET /v1/stream (docs/api.md §4.1 rule 7, §6). Authentication is
// apikey.Middleware's (an API key, or a ticket when no Authorization header came: docs/api.md §5
// ticket rule 4), and the query is validated by the router, both before the handler, so a refusal
// is a status with the usual body (docs/api.md §6 rule 1); once the stream has begun only a bye
// frame can end it.
func Routes(d Deps) []httpapi.Route {
	d.defaults()
	params := append(QueryParams(d.MaxRadius, d.DefaultRadius),
		schema.Query("ticket", schema.String()).Describe(
			"A stream ticket from POST /v1/stream/tickets, when no Authorization header can be sent (browsers). "+
				"Never put an API key in a URL."),
		schema.Query("last_event_id", schema.Integer().Min(0)).Describe(
			"The id of the last frame received, to resume where a stream ended, as the Last-Event-ID header does "+
				"(which decides when both are sent): for a browser that opens a new EventSource."))
	return []httpapi.Route{{
		Method: http.MethodGet, Path: "/v1/stream", OperationID: "streamEvents", Tags: []string{"stream"},
		Security:    []httpapi.Security{httpapi.SecurityAPIKey, httpapi.SecurityStreamTicket},
		Summary:     "Live changes of the events around a point",
		Description: streamDescription,
		Params:      params,
		Responses: map[int]httpapi.Response{
			http.StatusOK: {Description: "The stream begins.", ContentType: "text/event-stream",
				Schema: schema.String().Describe("Server-sent events, each with an id, an event name and one data line of JSON: " +
					"snapshot (data StreamSnapshot), event (StreamDelta), keepalive (StreamKeepalive) and bye (StreamBye). " +
					"x-sse-frames maps each event name to its schema."),
				Frames: Frames},
			http.StatusServiceUnavailable: httpapi.ErrorResponse("This process does not serve streams, or it is near its " +
				"connection capacity and the organisation holds its share of it: retry after Retry-After."),
		},
		Errors:  streamErrors,
		Handler: httpapi.HandlerFunc((&handler{d: d}).serve),
	}}
}

type handler struct{ d Deps }

func (h *handler) serve(w http.ResponseWriter, r *http.Request) error {
	p, ok := apikey.PrincipalFrom(r.Context())
	if !ok {
		return errNoPrincipal
	}
	if h.d.Hub == nil || h.d.Snapshots == nil {
		return httpapi.NewError(http.StatusServiceUnavailable, "This process does not serve streams", nil)
	}
	if r.Method == http.MethodHead {
		// docs/api.md §10.2 (Stream): HEAD gets the header a stream would begin with, once the
		// credential and the filters passed, and nothing else: no subscription, no place in the
		// connection budget, and no stream connect counted, since no stream was opened.
		setStreamHeader(w.Header())
		w.WriteHeader(http.StatusOK)
		return nil
	}
	q := httpapi.Params(r)
	v := Viewer{Org: p.OrgID, Environment: p.Environment, Key: p.KeyID}
	f := Filter{
		Center:        geo.Point{Lat: q.Float("lat"), Lon: q.Float("lon")},
		Radius:        q.Float("radius"),
		Types:         q.Strings("type"),
		MinConfidence: q.Float("min_confidence"),
	}
	// Register first, then read the snapshot: a change committed meanwhile is queued, not lost
	// (docs/architecture.md §3).
	sub, err := h.d.Hub.Subscribe(v, f)
	if err != nil {
		return err // answered by streamErrors
	}
	h.d.Meter.Count(r.Context(), p.OrgID, p.Environment, metering.StreamConnects)
	c := &conn{d: &h.d, sub: sub, log: httpapi.Logger(r.Context())}
	resumeAt, resume := lastEventID(r)
	hdr := w.Header()
	setStreamHeader(hdr)
	// Over HTTP/1 the stream takes the connection over (see conn): its body is the bytes up to
	// the close, as the SSE specification recommends, which Transfer-Encoding: identity asks
	// net/http for (it then sends Connection: close and no chunking).
	if r.ProtoMajor == 1 {
		hdr.Set("Transfer-Encoding", "identity")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if r.ProtoMajor == 1 {
		// The header is sent by Hijack; what net/http buffered for the connection is dropped:
		// nothing follows a GET whose answer never ends.
		if nc, _, err := rc.Hijack(); err == nil {
			c.net = nc
			c.watched, c.gone, _ = h.d.Hub.closes.watch(nc)
		}
	}
	if c.net == nil {
		// Make sure the writer can flush at all before promising a stream: a Lambda's cannot.
		if err := rc.Flush(); err != nil {
			c.log.Error("stream: the response writer cannot flush; streams need streamer/ or main.go", "error", err.Error())
			sub.Close()
			return nil
		}
		c.w, c.rc = w, rc
	}
	if !c.begin(r.Context(), v, f, resumeAt, resume) {
		c.end()
		return nil
	}
	if c.net != nil {
		// The handler returns, and with it net/http's goroutine, buffers and request, which
		// an idle stream does not need; the stream goes on in a goroutine of its own.
		h.d.Hub.streams.add()
		go func() {
			defer h.d.Hub.streams.done()
			c.loop(context.Background())
			c.end()
		}()
		return nil
	}
	c.loop(r.Context())
	c.end()
	return nil
}

// setStreamHeader sets the header fields every stream begins with (docs/api.md §10.2, Stream).
func setStreamHeader(hdr http.Header) {
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
}

// conn is one open stream.
//
// Over HTTP/1 it holds the TCP connection itself (hijacked from net/http once the header is
// sent), so an idle stream costs one small goroutine, its subscription and two timers: not
// net/http's goroutines (one serving, one watching for the client's close) and their buffers
// (docs/performance.md §8). A client that closed its end is noticed within
// CloseCheckInterval by the hub's closeWatcher; one that vanished without a word (no FIN, no
// reset) by the next write failing: a keepalive, or the write deadline. Over HTTP/2
// (and under test recorders) it writes through the ResponseWriter and its flushes instead.
type conn struct {
	d   *Deps
	sub *Subscription
	log *slog.Logger
	// pos is the feed position of the last delta sent or passed over (0 when the feed has no
	// positions), and k counts the frames written since: they make up the frame ids (frameID).
	pos, k uint64

	net net.Conn // the hijacked connection, or nil
	// gone is closed when the client closes the hijacked connection (closeWatcher); nil
	// otherwise, where the request's context tells. watched is its handle in the watcher.
	gone    chan struct{}
	watched syscall.RawConn
	w       http.ResponseWriter
	rc      *http.ResponseController

	keepalive, endOfLife Ticker
	seen                 map[string]seenEvent
}

// bufPool holds frame buffers; a snapshot of 500 events runs to hundreds of kilobytes, which
// a connection must not keep for its whole life.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// framesPerPosition spaces the frame ids of consecutive feed positions: a delta's id is its
// position times this, the frames after it count on from there (frameID). A connection writes
// at most MaxConnectionAge/KeepaliveInterval keepalives, a snapshot and a bye between two
// deltas, well under it (the array below would not compile otherwise).
const framesPerPosition = 1000

var _ [framesPerPosition - int(MaxConnectionAge/KeepaliveInterval) - 2]struct{}

// frameID returns the id of the next frame, for a delta at feed position pos, or pos 0 for any
// other frame: a delta's id is its position times framesPerPosition, the frames after it count
// on from there, so ids increase within the connection and id/framesPerPosition is the last
// position the client was sent (docs/api.md §10.2 (Stream), resuming). Without positions the
// ids count 1, 2, 3...
func (c *conn) frameID(pos uint64) uint64 {
	if pos > 0 {
		c.pos, c.k = pos, 0
	} else {
		c.k++
	}
	return c.pos*framesPerPosition + c.k
}

// lastEventID reads where a reconnecting client left off: the Last-Event-ID header, else the
// last_event_id query parameter, as the feed position of the last frame it received. A header
// that is no frame id of ours is ignored (a snapshot follows), as browsers send back whatever
// id they were given.
func lastEventID(r *http.Request) (pos uint64, ok bool) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("last_event_id")
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return id / framesPerPosition, true
}

// begin starts the connection's timers and sends the deltas a resuming client missed (Replay),
// else the snapshot, or a bye when it cannot; it reports whether the stream goes on.
func (c *conn) begin(ctx context.Context, v Viewer, f Filter, resumeAt uint64, resume bool) bool {
	c.keepalive = c.d.Timers.NewTicker(KeepaliveInterval)
	c.endOfLife = c.d.Timers.NewTimer(MaxConnectionAge)
	if !c.d.Hub.Ready() || closed(c.sub.Lost()) {
		// Without the feed the deltas after the snapshot are not guaranteed: reconnect.
		c.bye(ReasonSnapshotUnavailable)
		return false
	}
	if resume {
		if missed, upTo, ok := c.d.Hub.Replay(ctx, c.sub, resumeAt); ok {
			c.pos = resumeAt
			if err := c.deltas(missed); err != nil {
				return false
			}
			// Every change up to upTo was replayed or did not concern this stream.
			c.pos = max(c.pos, upTo)
			return true
		}
	}
	recorded := c.d.Hub.recorded(ctx)
	snap, err := c.d.Snapshots.Snapshot(ctx, v, f)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("stream: cannot read the snapshot", "error", err.Error())
		}
		c.bye(ReasonSnapshotUnavailable)
		return false
	}
	// The snapshot shows every change up to the subscription's start, and every one the feed had
	// recorded before it was read, even those the hub has yet to dispatch: a delta at or before
	// them is not sent after it (deltas), and its id tells a client that resumes from it so.
	c.pos = max(c.sub.start, recorded)
	if err := c.snapshot(snap); err != nil {
		return false
	}
	// Deltas the snapshot already reflects are not sent after it: a change committed before
	// the snapshot was read can reach the hub after this subscription was registered, and
	// sending it would show the client an older state, or a created event it already has.
	// A delta of an event the snapshot holds is skipped when its version is not newer, or,
	// when the snapshot does not know versions, when it shows exactly what the snapshot showed;
	// the first delta of an event that is sent ends the skipping for that event, so a newer
	// state always follows an older one. Changes reach the hub within moments of their commit,
	// so this is kept until the first keepalive only.
	c.seen = seenOf(snap)
	return true
}

// loop sends deltas, keepalives and the final bye until the stream ends.
func (c *conn) loop(ctx context.Context) {
	var batch []*Queued
	for {
		select {
		case <-c.sub.Notify():
			batch = c.sub.Take(batch[:0])
			err := c.deltas(batch)
			clear(batch)
			if err != nil {
				return
			}
		case <-c.keepalive.C():
			c.seen = nil
			// docs/api.md §6: a keepalive at every tick, busy or idle, so that no more than
			// KeepaliveInterval passes after any frame without another: a proxy that cuts a
			// connection idle for 30 s never sees one idle that long. It also reports the drops
			// of a busy connection (rule 3).
			if c.keepaliveFrame(c.sub.Dropped()) != nil {
				return
			}
		case <-c.endOfLife.C():
			c.bye(ReasonMaxConnectionAge)
			return
		case <-c.sub.Lost():
			c.bye(ReasonMaxConnectionAge)
			return
		case <-c.sub.Revoked():
			c.bye(ReasonCredentialRevoked)
			return
		case <-c.gone:
			return
		case <-c.d.Hub.Draining():
			c.bye(ReasonMaxConnectionAge)
			return
		case <-ctx.Done():
			return
		}
	}
}

// end releases the stream: timers, subscription, and the connection when it holds it.
func (c *conn) end() {
	if c.keepalive != nil {
		c.keepalive.Stop()
		c.endOfLife.Stop()
	}
	c.sub.Close()
	if c.watched != nil {
		c.d.Hub.closes.unwatch(c.watched)
	}
	if c.net != nil {
		c.net.Close()
	}
}

// seenEvent is what a snapshot showed of one event.
type seenEvent struct {
	version int64
	hash    uint64
}

func seenOf(snap []SnapshotEvent) map[string]seenEvent {
	if len(snap) == 0 {
		return nil
	}
	m := make(map[string]seenEvent, len(snap))
	for _, e := range snap {
		m[e.ID] = seenEvent{version: e.Version, hash: contentHash(e.JSON)}
	}
	return m
}

func (c *conn) now() string { return event.FormatTime(c.d.Clock.Now()) }

func (c *conn) snapshot(events []SnapshotEvent) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b := appendFrameHead((*bp)[:0], c.frameID(0), FrameSnapshot)
	b = appendSnapshot(b, events, int(MaxConnectionAge/time.Second), c.now())
	b = appendFrameEnd(b)
	*bp = b
	return c.send(b)
}

// deltas writes the event frames of batch, skipping those the client already has: at or
// before the feed position it was last sent (a snapshot or a replay covered them), or shown
// by the snapshot.
func (c *conn) deltas(batch []*Queued) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b := (*bp)[:0]
	for _, q := range batch {
		if q.Position > 0 && q.Position <= c.pos {
			continue
		}
		if e, ok := c.seen[q.EventID]; ok {
			if e.version > 0 && q.Version <= e.version || e.version == 0 && q.Hash == e.hash {
				if q.Position > 0 {
					c.pos, c.k = q.Position, 0 // passed over: a resume from the next id skips it too
				}
				continue
			}
			delete(c.seen, q.EventID)
		}
		b = appendFrame(b, c.frameID(q.Position), FrameEvent, q.Data)
	}
	*bp = b
	if len(b) == 0 {
		return nil
	}
	return c.send(b)
}

func (c *conn) keepaliveFrame(dropped int64) error {
	var buf [160]byte
	return c.send(appendFrame(buf[:0], c.frameID(0), FrameKeepalive, appendKeepalive(nil, dropped, c.now())))
}

func (c *conn) bye(reason string) {
	var buf [128]byte
	_ = c.send(appendFrame(buf[:0], c.frameID(0), FrameBye, appendBye(nil, reason)))
}

// send writes b, and flushes it, under a write deadline, so that a client that stopped
// reading costs this connection at most WriteTimeout and nobody else anything. The deadline is
// spread by up to a quarter, so that clients stalled together (a network blip) are not all
// cut, and do not all reconnect, at the same instant.
func (c *conn) send(b []byte) error {
	wt := c.d.WriteTimeout
	deadline := time.Now().Add(wt + rand.N(wt/4+1))
	var err error
	if c.net != nil {
		c.net.SetWriteDeadline(deadline)
		_, err = c.net.Write(b)
	} else {
		// A writer without deadlines (httptest.ResponseRecorder) still streams. HTTP/2 resets
		// a stream whose deadline passes even while it writes nothing, so it is lifted again.
		_ = c.rc.SetWriteDeadline(deadline)
		if _, err = c.w.Write(b); err == nil {
			err = c.rc.Flush()
		}
		_ = c.rc.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		c.log.Debug("stream: write failed; closing", "error", err.Error())
	}
	return err
}

// HealthHandler answers the load balancer's health check of a streamer: 200
// {"status":"ok","version":build} while the hub follows its feed, 503 with status
// "unavailable" while it does not (starting, feed lost, draining), so that no new client is
// sent to a process that cannot promise it every change.
func HealthHandler(h *Hub, build string) http.Handler {
	return httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if !h.Ready() {
			return httpapi.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "version": build})
		}
		return httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": build})
	})
}
