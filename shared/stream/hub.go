package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
)

// Limits of the stream (docs/api.md §6, §8).
const (
	// QueueSize is the delta queue of one connection; when it is full the oldest delta is
	// dropped and counted (docs/api.md §6 rule 3).
	QueueSize = 256
	// KeepaliveInterval is how often every connection gets a keepalive, so that none is silent
	// for longer (docs/api.md §6, §8).
	KeepaliveInterval = 20 * time.Second
	// MaxConnectionAge is when a connection is closed with bye max_connection_age; the
	// snapshot announces it as max_seconds (docs/api.md §6 rule 2).
	MaxConnectionAge = 3300 * time.Second
)

// The hub indexes subscriptions by the H3 cells covering their circle, at one of two
// resolutions: the fine one for the small circles most clients watch (1 000 m by default:
// 1 to 6 cells), the coarse one for wide circles (9 780 m: under 10 cells instead of about
// 120 at the fine level), so that no subscription holds many index entries. A change is looked
// up at both levels under the cells of its extent (geo.IndexCells), and the candidates found
// there are matched exactly (Filter.Matches): geo.CoverCircle pads the circle so that an
// extent within the radius always shares a cell with the cover.
var hubLevels = [...]int{7, 5}

// fineMaxRadius is the widest radius indexed at the fine level: a 3 000 m circle covers about
// 10 to 16 cells of resolution 7.
const fineMaxRadius = 3000.0

// DefaultRetryInterval is how long Run waits before following the feed again after losing it.
const DefaultRetryInterval = time.Second

// HubOptions configure a Hub.
type HubOptions struct {
	// Clock stamps deltas ("at") and decides what an event looks like when it is sent
	// (event.Event.Public); clock.System when nil.
	Clock clock.Clock
	// Logger receives feed failures and undecodable records; slog.Default() when nil.
	Logger *slog.Logger
	// QueueSize is the delta queue of each subscription; QueueSize when 0.
	QueueSize int
	// RetryInterval is the pause before following the feed again after a failure;
	// DefaultRetryInterval when 0.
	RetryInterval time.Duration
	// Capacity is the process's connection budget (daemon.Budget); when it is nearly spent,
	// Subscribe refuses new streams to the organisations already holding their share. Nil: no
	// budget.
	Capacity Capacity
	// ResumeWindow is how long after a change a reconnecting stream may still be sent it
	// instead of a snapshot (Replay; docs/api.md §10.2 (Stream), resuming). 0: never, every
	// stream begins with a snapshot. Resuming needs a feed that is a store.Replayer.
	ResumeWindow time.Duration
}

// Capacity is a budget of connections, of which streams are a part.
type Capacity interface {
	Limit() int
	InUse() int
}

// Sharing a nearly spent connection budget (docs/operations.md §3): from crowdedPercent of
// the budget in use, a new stream is refused to an organisation already holding its share,
// the budget divided among the organisations holding streams, counting at least two, so that
// one tenant can never hold more than about the whole budget less what the others need.
const crowdedPercent = 80

// revokedMemory is how long the hub remembers a revoked key, to refuse the streams its
// credential was checked for just before the revocation but that subscribe just after.
const revokedMemory = 10 * time.Minute

// Hub routes the changes of events to the subscriptions they concern (docs/architecture.md §3):
// subscriptions are indexed by H3 cell, a change finds its candidates through the cells of its
// old and new extent and is matched exactly, and each matching subscription gets it in a bounded
// queue without ever blocking: a slow or stalled client cannot delay the others or the feed. It
// is safe for concurrent use.
type Hub struct {
	clock     clock.Clock
	logger    *slog.Logger
	queueSize int
	retry     time.Duration

	mu    sync.RWMutex
	index [len(hubLevels)]map[h3.Cell]map[*Subscription]struct{}
	count int
	// subs mirrors count for the feed's reader, which checks it without the lock before
	// decoding a record: while it is 0 nothing can match (see pump for why no change is
	// missed).
	subs atomic.Int64
	// lost is closed when the hub loses its change feed: every subscription made before
	// then may have missed changes and must be ended; Subscribe hands out the current one.
	lost      chan struct{}
	following bool
	// followed is closed while the hub follows its feed (WaitReady).
	followed chan struct{}

	drainOnce sync.Once
	draining  chan struct{}

	dmu sync.Mutex // one dispatch at a time: Subscription.mark is the dispatcher's
	gen uint64
	// recent keeps the latest deltas for resuming streams (guarded by dmu).
	recent recent

	dispatched, enqueued, dropped, skipped atomic.Uint64
	fromMemory, fromFeed, refused          atomic.Uint64

	// streams counts the streams running on connections taken over from net/http, which its
	// graceful shutdown does not wait for (Wait does); closes notices their clients leaving.
	streams tracker
	closes  closeWatcher

	capacity Capacity
	// replay is the feed being followed when it can be read again from a position (nil
	// otherwise), dec its decoder (both guarded by mu); pos is the position of the last change
	// read from it.
	replay       store.Replayer
	dec          Decoder
	pos          atomic.Uint64
	resumeWindow time.Duration
	// perOrg counts the subscriptions of each organisation, byKey indexes them by the API key
	// of their credential, and revoked holds the keys revoked lately, with when (all guarded
	// by mu).
	perOrg  map[string]int
	byKey   map[string]map[*Subscription]struct{}
	revoked map[string]time.Time
}

// NewHub returns a hub with no subscription, not following any feed yet (Ready is false until
// Run follows one).
func NewHub(opts HubOptions) *Hub {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = QueueSize
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = DefaultRetryInterval
	}
	h := &Hub{
		clock:        opts.Clock,
		logger:       opts.Logger,
		queueSize:    opts.QueueSize,
		retry:        opts.RetryInterval,
		capacity:     opts.Capacity,
		resumeWindow: opts.ResumeWindow,
		perOrg:       map[string]int{},
		byKey:        map[string]map[*Subscription]struct{}{},
		revoked:      map[string]time.Time{},
		lost:         make(chan struct{}),
		followed:     make(chan struct{}),
		draining:     make(chan struct{}),
	}
	for i := range h.index {
		h.index[i] = map[h3.Cell]map[*Subscription]struct{}{}
	}
	return h
}

// Ready reports whether the hub follows its feed and is not draining: only then can a new
// subscriber be promised every change after its snapshot. It is what a streamer's health
// check reports.
func (h *Hub) Ready() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.following && !closed(h.draining)
}

// WaitReady waits until the hub follows its feed, or ctx ends: a process may start serving
// before, since a stream opened too early says bye snapshot_unavailable and its client comes
// back, but tests and health checks want to know.
func (h *Hub) WaitReady(ctx context.Context) error {
	h.mu.RLock()
	c := h.followed
	h.mu.RUnlock()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Drain ends every stream, open or opened from now on, with bye reconnect: true, so that
// clients reconnect to another process; call it when shutdown begins (daemon.Options
// OnShutdown), before the server waits for in-flight requests.
func (h *Hub) Drain() {
	h.drainOnce.Do(func() { close(h.draining) })
}

// Wait waits until every stream running on a connection taken over from net/http has ended,
// or ctx ends. Call it after Drain, once the server has stopped: http.Server.Shutdown waits
// for the requests it still owns, not for these.
func (h *Hub) Wait(ctx context.Context) error { return h.streams.wait(ctx) }

// Draining is closed once Drain has been called.
func (h *Hub) Draining() <-chan struct{} { return h.draining }

// HubStats are running totals of a hub.
type HubStats struct {
	Subscribers int    // open subscriptions
	Dispatched  uint64 // changes dispatched
	Enqueued    uint64 // deltas put in a subscription's queue
	Dropped     uint64 // deltas dropped from a full queue, over every subscription
	// Skipped counts feed records Run left undecoded because no subscription existed.
	Skipped uint64
	// Streams that resumed (Replay) from the recent deltas, from the feed read again, and
	// that were refused (they began with a snapshot).
	ResumedFromMemory, ResumedFromFeed, ResumeRefused uint64
}

// Stats returns the hub's running totals.
func (h *Hub) Stats() HubStats {
	h.mu.RLock()
	n := h.count
	h.mu.RUnlock()
	return HubStats{Subscribers: n, Dispatched: h.dispatched.Load(), Enqueued: h.enqueued.Load(), Dropped: h.dropped.Load(),
		Skipped: h.skipped.Load(), ResumedFromMemory: h.fromMemory.Load(), ResumedFromFeed: h.fromFeed.Load(), ResumeRefused: h.refused.Load()}
}

// Run follows feed and dispatches every change dec turns into an event change, until ctx
// ends. When the feed fails (a DynamoDB Streams error, records trimmed before they were read),
// changes may have been lost, so every open subscription is ended (its stream says bye and the
// client reconnects to a fresh snapshot), and the feed is followed again after RetryInterval.
// A record dec cannot decode is logged and skipped. Run returns nil when ctx ends.
func (h *Hub) Run(ctx context.Context, feed store.Feed, dec Decoder) error {
	for {
		cur, err := feed.Follow(ctx)
		if err == nil {
			rp, _ := feed.(store.Replayer)
			h.mu.Lock()
			h.replay, h.dec = rp, dec
			h.mu.Unlock()
			if pc, ok := cur.(store.PositionedCursor); ok && rp != nil {
				// A subscription made before the first change is read starts where the feed
				// was followed, a position a stream can resume from, not at 0; what came
				// before is not among the recent deltas.
				h.pos.Store(pc.After())
				h.forgetRecent(pc.After())
			}
			h.setFollowing()
			err = h.pump(ctx, cur, dec, rp != nil)
			cur.Close()
			h.loseFeed()
		}
		if ctx.Err() != nil {
			return nil
		}
		h.logger.Error("stream hub lost its change feed: open streams end, following again",
			"error", err.Error(), "retry_in", h.retry.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(h.retry):
		}
	}
}

// pump dispatches the changes of cur. Its cost per record follows what can match: a record
// the decoder says it ignores by key (KeyFilter: the area-index and vote items of a publish)
// is dropped before decoding (and a cursor that can, store.ImageFilter, does not decode its
// images either), and while no subscription exists no record is decoded at all.
//
// Skipping on an empty hub never loses a change a subscriber is owed (docs/architecture.md §3:
// register, then snapshot, then deltas). The count is read after Next has returned the record, so
// the write was committed before the read. A subscription the read does not see is counted after
// it, that is after the commit, and Subscribe returns only once it is counted; its stream reads the
// snapshot after Subscribe returns, so the snapshot already holds the write. A subscription the
// read does see gets the delta as before. The check must never move before Next (a count read while
// waiting for the next record would let a subscriber register between it and a later commit):
// TestEmptyHubSkipsWithoutLosingChanges. positioned says that cur reads a store.Replayer, whose
// positions the hub notes for resuming streams.
func (h *Hub) pump(ctx context.Context, cur store.Cursor, dec Decoder, positioned bool) error {
	kf, _ := dec.(KeyFilter)
	if f, ok := cur.(store.ImageFilter); ok && kf != nil {
		f.FilterImages(kf.Wants)
	}
	rd, _ := dec.(RevocationDecoder)
	keepRecent := positioned && h.resumeWindow > 0
	for {
		ch, err := cur.Next(ctx)
		if err != nil {
			return fmt.Errorf("stream hub: read change feed: %w", err)
		}
		var pos uint64
		if positioned {
			// Stored before the subscription count is read below, as Subscribe counts itself
			// before it reads the position: a subscription that this record's skipping could
			// miss reads a position at or past it (see Subscription.start).
			if pos, err = strconv.ParseUint(ch.Seq, 10, 64); err != nil {
				return fmt.Errorf("stream hub: change feed position %q: %w", ch.Seq, err)
			}
			h.pos.Store(pos)
		}
		if kf != nil && !kf.Wants(ch.Key) {
			continue
		}
		// Revocations are read even with no subscription: the hub remembers them for the
		// streams about to subscribe (Revoke).
		if rd != nil {
			if keyID, ok := rd.Revoked(ch); ok {
				h.Revoke(keyID)
				continue
			}
		}
		if h.subs.Load() == 0 {
			h.skipped.Add(1)
			if keepRecent {
				h.forgetRecent(pos)
			}
			continue
		}
		c, ok, err := dec.Decode(ch)
		if err != nil {
			h.logger.Error("stream hub: skipping a change it cannot decode", "key", ch.Key.String(), "error", err.Error())
			continue
		}
		if ok {
			c.Position = pos
			h.Dispatch(c)
		}
	}
}

func (h *Hub) setFollowing() {
	h.mu.Lock()
	h.following = true
	close(h.followed)
	h.mu.Unlock()
}

// loseFeed ends every subscription made while the feed was followed.
func (h *Hub) loseFeed() {
	h.mu.Lock()
	h.following = false
	h.followed = make(chan struct{})
	close(h.lost)
	h.lost = make(chan struct{})
	h.mu.Unlock()
}

// side is one side of a change, as filters see it.
type side struct {
	env, typ string
	conf     float64
	ext      []geo.Point
}

// Dispatch routes one change of an event to every subscription that wants it: whose viewer is
// served the event's environment and whose filter matches the event before or after the change
// (docs/api.md §10.2: a subscriber sees an event move out of its area). Run calls it for each
// change of the feed; it never blocks on a subscriber.
func (h *Hub) Dispatch(c EventChange) {
	now := h.clock.Now()
	q, sides, err := render(c, now)
	if err != nil {
		h.logger.Error("stream hub: cannot encode an event", "event_id", c.After.ID, "error", err.Error())
		return
	}

	var cells [len(hubLevels)][]h3.Cell
	for i, res := range hubLevels {
		for _, s := range sides {
			cs, err := geo.IndexCells(s.ext, res)
			if err != nil {
				h.logger.Error("stream hub: cannot index an event's extent", "event_id", c.After.ID, "error", err.Error())
				continue
			}
			cells[i] = append(cells[i], cs...)
		}
	}

	h.dmu.Lock()
	defer h.dmu.Unlock()
	if q.Position > 0 && h.resumeWindow > 0 {
		h.recent.add(q, sides, now, h.resumeWindow)
	}
	h.dispatched.Add(1)
	h.gen++
	gen := h.gen
	h.mu.RLock()
	defer h.mu.RUnlock()
	for i := range hubLevels {
		for _, cell := range cells[i] {
			for sub := range h.index[i][cell] {
				if sub.mark == gen {
					continue
				}
				sub.mark = gen
				if sub.wants(sides) {
					sub.push(q)
				}
			}
		}
	}
}

// render is the delta of c as sent at now, and the sides of the change that filters match.
func render(c EventChange, now time.Time) (*Queued, []side, error) {
	pub := c.After.Public(now)
	js, err := json.Marshal(pub)
	if err != nil {
		return nil, nil, err
	}
	q := &Queued{EventID: c.After.ID, Version: c.After.Version, Hash: contentHash(js), Position: c.Position,
		Data: deltaData(c.Kind, js, event.FormatTime(now))}
	sides := []side{{env: c.After.Environment, typ: c.After.Type, conf: pub.Confidence, ext: c.After.Extent()}}
	if c.Before != nil && c.Kind != KindCreated {
		b := c.Before
		sides = append(sides, side{env: b.Environment, typ: b.Type, conf: event.Confidence(b.ConfirmCount, b.DenyCount), ext: b.Extent()})
	}
	return q, sides, nil
}

// replayTimeout bounds how long Replay may read the feed for one reconnecting stream.
const replayTimeout = 10 * time.Second

// recorded returns the position of the last change the feed has recorded, 0 when the feed has no
// positions or cannot tell: a snapshot read afterwards shows every change up to it.
func (h *Hub) recorded(ctx context.Context) uint64 {
	h.mu.RLock()
	rp := h.replay
	h.mu.RUnlock()
	if rp == nil {
		return 0
	}
	pos, err := rp.Last(ctx)
	if err != nil {
		return 0
	}
	return pos
}

// forgetRecent empties the recent deltas: the changes up to pos were not dispatched.
func (h *Hub) forgetRecent(pos uint64) {
	h.dmu.Lock()
	h.recent.reset(pos)
	h.dmu.Unlock()
}

// Replay returns the deltas that s's filter and viewer would have been sent for the changes
// after feed position after, up to the position s started at (Subscription.start), in order:
// what a client that saw every frame up to position after missed while it was away, for
// the deltas from then on to follow (docs/api.md §10.2 (Stream), resuming). upTo is the
// position up to which missed is complete: the deltas queued for s at or before it are not to
// be sent again. ok is false when it cannot tell: no resume window or a feed that cannot be
// read again, a position it never gave out or that is no longer kept, a first missed change
// older than the resume window, or more missed deltas than the queue holds. The stream then
// begins with a snapshot.
//
// The deltas come from those the hub dispatched lately (recent) when they reach back far
// enough, else from the feed, read again from after on.
func (h *Hub) Replay(ctx context.Context, s *Subscription, after uint64) (missed []*Queued, upTo uint64, ok bool) {
	defer func() {
		if !ok {
			h.refused.Add(1)
		}
	}()
	h.mu.RLock()
	rp, dec := h.replay, h.dec
	h.mu.RUnlock()
	if rp == nil || h.resumeWindow <= 0 {
		return nil, 0, false
	}
	if after >= s.start {
		// A client ahead of this hub was served by another one further along the same log
		// (another streamer behind the relay): it has every change up to after, which this hub
		// has yet to read, and its deltas here begin after it. A position past the log's end
		// is no id of ours.
		if after > s.start {
			if last, err := rp.Last(ctx); err != nil || after > last {
				return nil, 0, false
			}
		}
		return nil, after, true
	}
	if missed, upTo, ok, served := h.replayRecent(s, after); served {
		if ok {
			h.fromMemory.Add(1)
		}
		return missed, upTo, ok
	}
	if missed, ok = h.replayFeed(ctx, rp, dec, s, after); ok {
		h.fromFeed.Add(1)
	}
	return missed, s.start, ok
}

// replayRecent is Replay from the recent deltas; served is false when they do not reach back
// to after. A change at or before s.start that is not among them yet is still to be dispatched,
// and then to s too, so missed is complete up to the last delta it holds, not up to s.start.
func (h *Hub) replayRecent(s *Subscription, after uint64) (missed []*Queued, upTo uint64, ok, served bool) {
	h.dmu.Lock()
	defer h.dmu.Unlock()
	if !h.recent.covers(after) {
		return nil, 0, false, false
	}
	upTo = after
	for i, d := range h.recent.since(after, s.start) {
		if i == 0 && d.at.Before(h.clock.Now().Add(-h.resumeWindow)) {
			return nil, 0, false, true
		}
		upTo = d.q.Position
		if !s.wants(d.sides) {
			continue
		}
		if len(missed) == s.size {
			return nil, 0, false, true
		}
		missed = append(missed, d.q)
	}
	return missed, upTo, true, true
}

// replayFeed is Replay from the feed, read again from after on up to s.start.
func (h *Hub) replayFeed(ctx context.Context, rp store.Replayer, dec Decoder, s *Subscription, after uint64) (missed []*Queued, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	cur, err := rp.FollowAfter(ctx, after)
	if err != nil {
		return nil, false
	}
	defer cur.Close()
	kf, _ := dec.(KeyFilter)
	if f, ok := cur.(store.ImageFilter); ok && kf != nil {
		f.FilterImages(kf.Wants)
	}
	oldest := h.clock.Now().Add(-h.resumeWindow)
	for pos := after; pos < s.start; {
		ch, err := cur.Next(ctx)
		if err != nil {
			return nil, false
		}
		if pos, err = strconv.ParseUint(ch.Seq, 10, 64); err != nil {
			return nil, false
		}
		if pos == after+1 && ch.At.Before(oldest) {
			return nil, false
		}
		if kf != nil && !kf.Wants(ch.Key) {
			continue
		}
		c, ok, err := dec.Decode(ch)
		if err != nil || !ok {
			continue
		}
		c.Position = pos
		q, sides, err := render(c, ch.At)
		if err != nil || !s.wants(sides) {
			continue
		}
		if len(missed) == s.size {
			return nil, false
		}
		missed = append(missed, q)
	}
	return missed, true
}

// Errors of Subscribe.
var (
	// ErrSubscribe: a filter the hub cannot index (an invalid centre or radius, which
	// validation should have refused).
	ErrSubscribe = errors.New("stream: cannot subscribe")
	// ErrCrowded: the connection budget is nearly spent and the viewer's organisation holds
	// its share of it (HubOptions.Capacity): 503, retry after CrowdedRetryAfter.
	ErrCrowded error = crowded{}
	// ErrRevoked: the viewer's key was revoked lately (Revoke): 401.
	ErrRevoked = errors.New("stream: the credential was revoked")
)

// crowded is ErrCrowded, which says when to retry (httpapi.Retrier).
type crowded struct{}

func (crowded) Error() string {
	return "stream: connection budget nearly spent; the organisation holds its share"
}

func (crowded) RetryIn() time.Duration { return CrowdedRetryAfter }

// Revoke ends the subscriptions opened with API key keyID, or with tickets it minted: each
// is told through Subscription.Revoked. The key is remembered for revokedMemory, and
// Subscribe refuses it meanwhile: a stream whose credential was checked before the revocation
// committed may subscribe after the hub saw it.
func (h *Hub) Revoke(keyID string) {
	if keyID == "" {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, at := range h.revoked {
		if now.Sub(at) > revokedMemory {
			delete(h.revoked, k)
		}
	}
	h.revoked[keyID] = now
	for s := range h.byKey[keyID] {
		s.revoke()
	}
}

// crowdedLocked reports whether a new stream of org must be refused to share a nearly spent
// connection budget (crowdedPercent).
func (h *Hub) crowdedLocked(org string) bool {
	if h.capacity == nil {
		return false
	}
	limit := h.capacity.Limit()
	if h.capacity.InUse()*100 < limit*crowdedPercent {
		return false
	}
	holders := len(h.perOrg)
	if h.perOrg[org] == 0 {
		holders++
	}
	return h.perOrg[org] >= limit/max(holders, 2)
}

// Subscribe registers a subscription: from the moment it returns, every change dispatched
// that the filter matches is queued for it. A stream subscribes before it reads its snapshot,
// so that no change falls between the two (docs/architecture.md §3). Close it when done.
func (h *Hub) Subscribe(v Viewer, f Filter) (*Subscription, error) {
	lvl := 0
	if f.Radius > fineMaxRadius {
		lvl = 1
	}
	cells, err := geo.CoverCircle(f.Center, f.Radius, hubLevels[lvl])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSubscribe, err)
	}
	s := &Subscription{
		hub:     h,
		viewer:  v,
		filter:  f,
		level:   lvl,
		cells:   cells,
		size:    h.queueSize,
		notify:  make(chan struct{}, 1),
		revoked: make(chan struct{}),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.revoked[v.Key]; ok && v.Key != "" {
		return nil, ErrRevoked
	}
	if h.crowdedLocked(v.Org) {
		return nil, ErrCrowded
	}
	h.perOrg[v.Org]++
	if v.Key != "" {
		m := h.byKey[v.Key]
		if m == nil {
			m = map[*Subscription]struct{}{}
			h.byKey[v.Key] = m
		}
		m[s] = struct{}{}
	}
	for _, c := range cells {
		m := h.index[lvl][c]
		if m == nil {
			m = map[*Subscription]struct{}{}
			h.index[lvl][c] = m
		}
		m[s] = struct{}{}
	}
	h.count++
	// Counted before Subscribe returns, hence before the caller reads its snapshot (pump).
	h.subs.Add(1)
	s.start = h.pos.Load()
	s.lost = h.lost
	return s, nil
}

// Queued is a delta waiting in a subscription's queue; one is shared by every subscription
// it goes to.
type Queued struct {
	EventID string
	Version int64  // the event's version after the change
	Hash    uint64 // contentHash of the event's EventPublic JSON
	// Position is the change's position in the feed when the feed is a store.Replayer, else 0.
	Position uint64
	Data     []byte // the data of its event frame (DeltaData as JSON)
}

// hashSeed is the process's seed of contentHash.
var hashSeed = maphash.MakeSeed()

// contentHash identifies an event's EventPublic JSON, to tell a delta that shows exactly what
// a snapshot already showed.
func contentHash(b []byte) uint64 { return maphash.Bytes(hashSeed, b) }

// Subscription is one subscriber's place in the hub: its filter and its bounded delta queue.
type Subscription struct {
	hub    *Hub
	viewer Viewer
	filter Filter
	level  int
	cells  []h3.Cell
	size   int
	// start is the feed position of the last change read when the subscription was made (0
	// when the feed has no positions): every change up to it was committed before, so a
	// snapshot read afterwards shows it, and every later one is dispatched to it.
	start  uint64
	lost   chan struct{}
	notify chan struct{}
	mark   uint64 // the last dispatch that considered it (guarded by hub.dmu)
	// revoked is closed when the viewer's key is revoked (guarded by hub.mu).
	revoked     chan struct{}
	revokedOnce bool

	mu      sync.Mutex
	queue   []*Queued
	dropped int64
	closed  bool
}

// revoke closes Revoked once; the caller holds hub.mu.
func (s *Subscription) revoke() {
	if !s.revokedOnce {
		s.revokedOnce = true
		close(s.revoked)
	}
}

// Revoked is closed when the API key of the subscription's credential is revoked: the stream
// ends with bye credential_revoked, reconnect false.
func (s *Subscription) Revoked() <-chan struct{} { return s.revoked }

func (s *Subscription) wants(sides []side) bool {
	for _, sd := range sides {
		if s.viewer.Sees(sd.env) && s.filter.Matches(sd.typ, sd.conf, sd.ext) {
			return true
		}
	}
	return false
}

// push queues q, dropping the oldest delta when the queue is full (docs/api.md §6 rule 3), and
// wakes the subscriber without waiting for it.
func (s *Subscription) push(q *Queued) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if len(s.queue) == s.size {
		copy(s.queue, s.queue[1:])
		s.queue[len(s.queue)-1] = q
		s.dropped++
		s.hub.dropped.Add(1)
	} else {
		s.queue = append(s.queue, q)
	}
	s.mu.Unlock()
	s.hub.enqueued.Add(1)
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Notify receives a value when deltas may be waiting; Take them.
func (s *Subscription) Notify() <-chan struct{} { return s.notify }

// Lost is closed when the hub lost its feed after this subscription was made: changes may
// have been missed, and the stream must end so that its client takes a new snapshot.
func (s *Subscription) Lost() <-chan struct{} { return s.lost }

// Take appends the waiting deltas to dst, oldest first, and empties the queue.
func (s *Subscription) Take(dst []*Queued) []*Queued {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst = append(dst, s.queue...)
	clear(s.queue)
	s.queue = s.queue[:0]
	return dst
}

// Dropped returns how many deltas were dropped from this subscription's full queue so far.
func (s *Subscription) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close removes the subscription from the hub; no delta is queued for it afterwards. Closing
// twice is harmless.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.queue = nil
	s.mu.Unlock()
	if already {
		return
	}
	for _, c := range s.cells {
		m := h.index[s.level][c]
		delete(m, s)
		if len(m) == 0 {
			delete(h.index[s.level], c)
		}
	}
	if h.perOrg[s.viewer.Org]--; h.perOrg[s.viewer.Org] <= 0 {
		delete(h.perOrg, s.viewer.Org)
	}
	if m := h.byKey[s.viewer.Key]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.byKey, s.viewer.Key)
		}
	}
	h.count--
	h.subs.Add(-1)
}

// tracker counts running things and lets callers wait for none; unlike sync.WaitGroup it may
// count up again while someone waits, and the wait can be abandoned.
type tracker struct {
	mu      sync.Mutex
	n       int
	waiters []chan struct{}
}

func (t *tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		for _, w := range t.waiters {
			close(w)
		}
		t.waiters = nil
	}
}

func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	t.waiters = append(t.waiters, w)
	t.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
