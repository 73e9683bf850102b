// Package streamtest holds test doubles for package stream: timers that tick when a test says
// so (the keepalive and end of life of a connection, docs/api.md §6, without sleeping) and a client
// that reads a stream's frames over a real HTTP connection.
package streamtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/stream"
)

// Timers is a stream.Timers whose tickers and timers only tick when Fire is called. It is
// safe for concurrent use.
type Timers struct {
	mu    sync.Mutex
	ticks []*ticker
	now   time.Time
}

var _ stream.Timers = (*Timers)(nil)

// NewTimers returns Timers with nothing created yet.
func NewTimers() *Timers { return &Timers{now: time.Unix(0, 0)} }

type ticker struct {
	f       *Timers
	c       chan time.Time
	period  time.Duration
	once    bool
	stopped bool
}

func (t *ticker) C() <-chan time.Time { return t.c }

// Stop implements stream.Ticker: the ticker never ticks again.
func (t *ticker) Stop() {
	t.f.mu.Lock()
	t.stopped = true
	t.f.mu.Unlock()
}

// NewTicker implements stream.Timers.
func (f *Timers) NewTicker(d time.Duration) stream.Ticker { return f.add(d, false) }

// NewTimer implements stream.Timers.
func (f *Timers) NewTimer(d time.Duration) stream.Ticker { return f.add(d, true) }

func (f *Timers) add(d time.Duration, once bool) *ticker {
	t := &ticker{f: f, c: make(chan time.Time, 1), period: d, once: once}
	f.mu.Lock()
	f.ticks = append(f.ticks, t)
	f.mu.Unlock()
	return t
}

// Fire ticks, once, every ticker and timer created with period d (a timer only the first
// time), as the real ones would when d has passed, and returns how many ticked. Like
// time.Ticker, a tick that finds the previous one still unread is dropped.
func (f *Timers) Fire(d time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	n := 0
	for _, t := range f.ticks {
		if t.period != d || t.stopped {
			continue
		}
		select {
		case t.c <- f.now:
		default:
		}
		n++
		if t.once {
			t.stopped = true
		}
	}
	return n
}

// Count returns how many tickers and timers of period d were created and not stopped.
func (f *Timers) Count(d time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, t := range f.ticks {
		if t.period == d && !t.stopped {
			n++
		}
	}
	return n
}

// Stream is an open GET /v1/stream response, read frame by frame.
type Stream struct {
	Resp   *http.Response
	frames *stream.FrameReader
	cancel context.CancelFunc
}

// Open sends req (a GET /v1/stream) and returns the open stream when the answer is 200, or
// the response (body read into the returned bytes) for any other status.
func Open(t testing.TB, client *http.Client, req *http.Request) (*Stream, *http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", req.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, resp, body
	}
	s := &Stream{Resp: resp, frames: stream.NewFrameReader(resp.Body), cancel: cancel}
	t.Cleanup(s.Close)
	return s, resp, nil
}

// Close ends the connection.
func (s *Stream) Close() {
	s.cancel()
	s.Resp.Body.Close()
}

// Next returns the next frame, or fails the test when the stream ends or breaks.
func (s *Stream) Next(t testing.TB) stream.Frame {
	t.Helper()
	f, err := s.frames.Next()
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return f
}

// NextErr returns the next frame or the reader's error (io.EOF when the server ended the
// response).
func (s *Stream) NextErr() (stream.Frame, error) { return s.frames.Next() }

// Expect returns the next frame after checking that it is named name, and decodes its data
// into v (when v is not nil).
func (s *Stream) Expect(t testing.TB, name string, v any) stream.Frame {
	t.Helper()
	f := s.Next(t)
	if f.Event != name {
		t.Fatalf("frame %s %q: %s; want a %q frame", f.ID, f.Event, f.Data, name)
	}
	if v != nil {
		if err := json.Unmarshal(f.Data, v); err != nil {
			t.Fatalf("frame %s %q: data %s: %v", f.ID, f.Event, f.Data, err)
		}
	}
	return f
}

// Snapshot reads the snapshot frame, which must come first, and returns its data.
func (s *Stream) Snapshot(t testing.TB) stream.SnapshotData {
	t.Helper()
	var d stream.SnapshotData
	s.Expect(t, stream.FrameSnapshot, &d)
	return d
}

// Delta reads the next frame, which must be an event frame, and returns its data with the
// event decoded into ev (when not nil).
func (s *Stream) Delta(t testing.TB, ev any) stream.DeltaData {
	t.Helper()
	var d stream.DeltaData
	s.Expect(t, stream.FrameEvent, &d)
	if ev != nil {
		if err := json.Unmarshal(d.Event, ev); err != nil {
			t.Fatalf("delta event %s: %v", d.Event, err)
		}
	}
	return d
}

// Describe returns a frame as one line for failure messages.
func Describe(f stream.Frame) string { return fmt.Sprintf("id %s %s %s", f.ID, f.Event, f.Data) }
