package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
)

// Frame names: the SSE event: field of each frame (docs/api.md §6).
const (
	FrameSnapshot  = "snapshot"
	FrameEvent     = "event"
	FrameKeepalive = "keepalive"
	FrameBye       = "bye"
)

// Reasons of a bye frame (docs/api.md §6, §10.2). Every bye says reconnect: true but
// ReasonCredentialRevoked's.
const (
	// ReasonMaxConnectionAge: the connection's life is over: MaxConnectionAge has passed, or
	// the server ends it early (draining before it stops, or resynchronising after it lost
	// its change feed). The client reconnects and takes the new snapshot as authoritative.
	ReasonMaxConnectionAge = "max_connection_age"
	// ReasonSnapshotUnavailable: the initial state could not be read; the client reconnects
	// and must not take the missing snapshot for an empty road.
	ReasonSnapshotUnavailable = "snapshot_unavailable"
	// ReasonCredentialRevoked: the API key that opened the stream, or minted its ticket, was
	// revoked; reconnect is false, since the credential opens nothing any more (an additive
	// reason: docs/api.md §11.4).
	ReasonCredentialRevoked = "credential_revoked"
)

// The data of each frame, as JSON (docs/api.md §10.2 (Stream)). The server writes them without
// encoding the events again; clients and tests decode them with these types.
type (
	// SnapshotData is the data of the snapshot frame.
	SnapshotData struct {
		Events     []json.RawMessage `json:"events"`      // EventPublic, as GET /v1/events
		MaxSeconds int               `json:"max_seconds"` // 3300
		At         string            `json:"at"`
	}
	// DeltaData is the data of an event frame.
	DeltaData struct {
		Kind  Kind            `json:"kind"`
		Event json.RawMessage `json:"event"` // EventPublic
		At    string          `json:"at"`
	}
	// KeepaliveData is the data of a keepalive frame.
	KeepaliveData struct {
		Dropped int64  `json:"dropped"` // deltas dropped for this connection so far
		At      string `json:"at"`
	}
	// ByeData is the data of a bye frame.
	ByeData struct {
		Reason    string `json:"reason"`
		Reconnect bool   `json:"reconnect"`
	}
)

// The schemas of each frame's data, for /openapi.json (components StreamSnapshot,
// StreamDelta, StreamKeepalive and StreamBye, mapped from the event names by x-sse-frames:
// docs/api.md §10.2 (Stream)). Like EventPublic, the vocabularies that may grow (a delta's
// kind, a bye's reason) are plain strings.
var (
	SnapshotSchema = schema.Object(
		schema.Req("events", schema.Array(event.EventPublicSchema).Describe("What GET /v1/events answers for the same filter: nearest first, at most 500.")),
		schema.Req("max_seconds", schema.Integer().Describe("The connection's longest life, in seconds (3300).")),
		schema.Req("at", schema.DateTime()),
	).Named("StreamSnapshot").Describe("Data of the snapshot frame, the first of every stream.")
	DeltaSchema = schema.Object(
		schema.Req("kind", schema.String().Describe("created (published), updated (revised), signal (counts, confidence or "+
			"expiry moved) or ended (no longer active: event.status tells why).")),
		schema.Req("event", event.EventPublicSchema),
		schema.Req("at", schema.DateTime()),
	).Named("StreamDelta").Describe("Data of an event frame: one change of an event the filter matched before or after it.")
	KeepaliveSchema = schema.Object(
		schema.Req("dropped", schema.Integer().Min(0).Describe("Deltas dropped for this connection so far.")),
		schema.Req("at", schema.DateTime()),
	).Named("StreamKeepalive").Describe("Data of a keepalive frame.")
	ByeSchema = schema.Object(
		schema.Req("reason", schema.String().Describe("max_connection_age, snapshot_unavailable or credential_revoked.")),
		schema.Req("reconnect", schema.Boolean().Describe("false only for credential_revoked.")),
	).Named("StreamBye").Describe("Data of the bye frame, the last of a stream the server ends.")
)

// Frames documents the frames of GET /v1/stream by event name (httpapi.Response.Frames).
var Frames = []httpapi.Frame{
	{Event: FrameSnapshot, Schema: SnapshotSchema},
	{Event: FrameEvent, Schema: DeltaSchema},
	{Event: FrameKeepalive, Schema: KeepaliveSchema},
	{Event: FrameBye, Schema: ByeSchema},
}

// appendFrame appends one SSE frame: id, event name and one data line (JSON never holds a
// raw newline, so one line always suffices).
func appendFrame(b []byte, id uint64, name string, data []byte) []byte {
	b = appendFrameHead(b, id, name)
	b = append(b, data...)
	return appendFrameEnd(b)
}

// appendFrameHead appends a frame up to its data, which the caller appends before
// appendFrameEnd.
func appendFrameHead(b []byte, id uint64, name string) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, "\nevent: "...)
	b = append(b, name...)
	return append(b, "\ndata: "...)
}

func appendFrameEnd(b []byte) []byte { return append(b, "\n\n"...) }

// appendSnapshot appends the data of a snapshot frame.
func appendSnapshot(b []byte, events []SnapshotEvent, maxSeconds int, at string) []byte {
	b = append(b, `{"events":[`...)
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.JSON...)
	}
	b = append(b, `],"max_seconds":`...)
	b = strconv.AppendInt(b, int64(maxSeconds), 10)
	b = append(b, `,"at":"`...)
	b = append(b, at...)
	return append(b, `"}`...)
}

// deltaData returns the data of an event frame.
func deltaData(kind Kind, eventJSON []byte, at string) []byte {
	b := make([]byte, 0, len(eventJSON)+len(kind)+len(at)+32)
	b = append(b, `{"kind":"`...)
	b = append(b, kind...)
	b = append(b, `","event":`...)
	b = append(b, eventJSON...)
	b = append(b, `,"at":"`...)
	b = append(b, at...)
	return append(b, `"}`...)
}

func appendKeepalive(b []byte, dropped int64, at string) []byte {
	b = append(b, `{"dropped":`...)
	b = strconv.AppendInt(b, dropped, 10)
	b = append(b, `,"at":"`...)
	b = append(b, at...)
	return append(b, `"}`...)
}

func appendBye(b []byte, reason string) []byte {
	b = append(b, `{"reason":"`...)
	b = append(b, reason...)
	if reason == ReasonCredentialRevoked {
		return append(b, `","reconnect":false}`...)
	}
	return append(b, `","reconnect":true}`...)
}

// Frame is one server-sent event as a client reads it.
type Frame struct {
	ID    string
	Event string // the event: field; "message" when absent, as EventSource says
	Data  []byte // the data: lines joined with "\n"
}

// FrameReader reads server-sent events (the client side of the framing, per the HTML
// EventSource processing model: fields, comments, multi-line data), for tests, the load
// generator and any Go client.
type FrameReader struct {
	r *bufio.Reader
}

// NewFrameReader reads frames from r, typically an HTTP response body.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReader(r)}
}

// Next returns the next frame that carries data, or the reader's error (io.EOF at a clean end
// between frames, io.ErrUnexpectedEOF inside one).
func (fr *FrameReader) Next() (Frame, error) {
	var (
		f       Frame
		data    bytes.Buffer
		hasData bool
		started bool
	)
	for {
		line, err := fr.r.ReadBytes('\n')
		if err != nil {
			if started && errors.Is(err, io.EOF) {
				return Frame{}, io.ErrUnexpectedEOF
			}
			return Frame{}, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if !hasData {
				started = false
				f = Frame{}
				continue
			}
			if f.Event == "" {
				f.Event = "message"
			}
			f.Data = data.Bytes()
			return f, nil
		}
		started = true
		if line[0] == ':' {
			continue // a comment
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "id":
			f.ID = string(value)
		case "event":
			f.Event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		}
		// Other fields (retry, unknown names) are ignored, as EventSource ignores them.
	}
}
