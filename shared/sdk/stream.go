package sdk

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// The frames of GET /v1/stream (docs/api.md §6, §10.2) and the kinds of an event frame.
const (
	FrameSnapshot  = "snapshot"
	FrameEvent     = "event"
	FrameKeepalive = "keepalive"
	FrameBye       = "bye"

	KindCreated = "created"
	KindUpdated = "updated"
	KindSignal  = "signal"
	KindEnded   = "ended"
)

// State is what a watch knows of its area: its active events, nearest first as the service
// ordered them, then newest.
type State struct {
	Events []Event
	// At is the time of the last frame that changed it.
	At time.Time
	// Dropped counts the changes the service dropped for the connection (keepalive.dropped):
	// the state may miss them until the next snapshot.
	Dropped int
}

// Watch keeps the active events of a and calls on with them after the first snapshot and after
// each change, until ctx ends (docs/api.md §6). It mints a ticket for each connection; after a
// bye or an error it reconnects with backoff, naming the last frame it had (Last-Event-ID), so
// that the service sends what it missed or a new snapshot, which it takes as the truth. It drops
// each event at its expires_at (the service sends nothing then), and skips events of types this
// package does not know and frames it does not know. It returns ctx's error, or the refusal that
// ends watching: a 401, 403 or 422, or a bye that says not to reconnect.
func (c *Client) Watch(ctx context.Context, a Area, on func(State)) error {
	w := &watch{c: c, area: a, on: on, events: map[string]Event{}}
	failures := 0
	for {
		err := w.connect(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil, w.healthy:
			failures = 0
		default:
			failures++
		}
		if status := StatusOf(err); status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusUnprocessableEntity {
			return err
		}
		if err == errStop {
			return fmt.Errorf("sdk: the service ended the stream and asked not to reconnect: %s", w.byeReason)
		}
		if err := c.retry.sleep(ctx, c.retry.backoff(min(failures+1, 8))); err != nil {
			return err
		}
	}
}

type watch struct {
	c         *Client
	area      Area
	on        func(State)
	events    map[string]Event
	lastID    string
	dropped   int
	at        time.Time
	healthy   bool // the last connection got at least one frame
	byeReason string
}

var errStop = fmt.Errorf("sdk: stream ended for good")

type frame struct {
	id, name string
	data     []byte
}

// connect opens one connection and applies its frames until it ends.
func (w *watch) connect(ctx context.Context) error {
	w.healthy = false
	t, err := w.c.MintTicket(ctx)
	if err != nil {
		return err
	}
	q := w.area.query()
	q.Set("ticket", t.Ticket)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.c.base+"/v1/stream?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", w.c.agent)
	if w.lastID != "" {
		req.Header.Set("Last-Event-ID", w.lastID)
	}
	// A stream runs for up to an hour: the client's timeout bounds calls, not streams.
	hc := *w.c.http
	hc.Timeout = 0
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return readAPIError(res)
	}
	frames := make(chan frame)
	readErr := make(chan error, 1)
	go func() { readErr <- readFrames(res.Body, frames, ctx.Done()) }()
	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		var timerC <-chan time.Time
		if next, ok := w.nextExpiry(); ok {
			if expiry != nil {
				expiry.Stop()
			}
			expiry = time.NewTimer(max(time.Until(next), 0))
			timerC = expiry.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return err
		case <-timerC:
			if w.dropExpired(time.Now()) {
				w.emit()
			}
		case f := <-frames:
			w.healthy = true
			if f.id != "" {
				w.lastID = f.id
			}
			stop, err := w.apply(f)
			if err != nil || stop {
				return err
			}
		}
	}
}

// apply takes one frame into the state; stop is a bye.
func (w *watch) apply(f frame) (stop bool, err error) {
	switch f.name {
	case FrameSnapshot:
		var s struct {
			Events []Event    `json:"events"`
			At     *time.Time `json:"at"`
		}
		if err := json.Unmarshal(f.data, &s); err != nil {
			return false, fmt.Errorf("sdk: a snapshot frame: %w", err)
		}
		w.events = map[string]Event{}
		for _, ev := range s.Events {
			if taxonomy.Known(ev.Type) {
				w.events[ev.EventID] = ev
			}
		}
		w.setAt(s.At)
		w.dropExpired(time.Now())
		w.emit()
	case FrameEvent:
		var d struct {
			Kind  string     `json:"kind"`
			Event Event      `json:"event"`
			At    *time.Time `json:"at"`
		}
		if err := json.Unmarshal(f.data, &d); err != nil {
			return false, fmt.Errorf("sdk: an event frame: %w", err)
		}
		if !taxonomy.Known(d.Event.Type) {
			return false, nil
		}
		switch d.Kind {
		case KindCreated, KindUpdated, KindSignal:
			if d.Event.Status == "active" {
				w.events[d.Event.EventID] = d.Event
			} else {
				delete(w.events, d.Event.EventID)
			}
		case KindEnded:
			delete(w.events, d.Event.EventID)
		default:
			return false, nil // a kind of a later version
		}
		w.setAt(d.At)
		w.dropExpired(time.Now())
		w.emit()
	case FrameKeepalive:
		var k struct {
			Dropped int `json:"dropped"`
		}
		if json.Unmarshal(f.data, &k) == nil && k.Dropped != w.dropped {
			w.dropped = k.Dropped
			w.emit()
		}
	case FrameBye:
		var b struct {
			Reason    string `json:"reason"`
			Reconnect bool   `json:"reconnect"`
		}
		json.Unmarshal(f.data, &b)
		w.byeReason = b.Reason
		if !b.Reconnect {
			return true, errStop
		}
		return true, nil
	}
	return false, nil
}

func (w *watch) setAt(at *time.Time) {
	if at != nil {
		w.at = *at
	}
}

func (w *watch) nextExpiry() (time.Time, bool) {
	var next time.Time
	for _, ev := range w.events {
		if exp, err := time.Parse(time.RFC3339Nano, ev.ExpiresAt); err == nil && (next.IsZero() || exp.Before(next)) {
			next = exp
		}
	}
	return next, !next.IsZero()
}

// dropExpired removes the events whose expiry has come; true when it removed one.
func (w *watch) dropExpired(now time.Time) bool {
	removed := false
	for id, ev := range w.events {
		if exp, err := time.Parse(time.RFC3339Nano, ev.ExpiresAt); err == nil && !now.Before(exp) {
			delete(w.events, id)
			removed = true
		}
	}
	return removed
}

func (w *watch) emit() {
	evs := make([]Event, 0, len(w.events))
	for _, ev := range w.events {
		evs = append(evs, ev)
	}
	center := geo.Point{Lat: w.area.Lat, Lon: w.area.Lon}
	slices.SortFunc(evs, func(a, b Event) int {
		if c := cmp.Compare(Distance(center, a), Distance(center, b)); c != 0 {
			return c
		}
		return strings.Compare(b.CreatedAt, a.CreatedAt)
	})
	w.on(State{Events: evs, At: w.at, Dropped: w.dropped})
}

// Distance is the distance in metres from p to the nearest point of ev's extent (its line, or
// its point), as the service measures it (docs/api.md §4.1 rule 3).
func Distance(p geo.Point, ev Event) float64 {
	extent := []geo.Point{{Lat: ev.Lat, Lon: ev.Lon}}
	if ev.Geometry != nil && len(ev.Geometry.Coordinates) > 0 {
		extent = extent[:0]
		for _, c := range ev.Geometry.Coordinates {
			extent = append(extent, geo.Point{Lat: c[1], Lon: c[0]})
		}
	}
	return geo.DistanceToExtent(p, extent)
}

// readFrames parses server-sent events from r into out until r ends or done closes.
func readFrames(r interface{ Read([]byte) (int, error) }, out chan<- frame, done <-chan struct{}) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var f frame
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if f.name != "" || len(data) > 0 {
				f.data = []byte(strings.Join(data, "\n"))
				select {
				case out <- f:
				case <-done:
					return nil
				}
			}
			f, data = frame{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.id = value
		case "event":
			f.name = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("sdk: the stream closed")
}
