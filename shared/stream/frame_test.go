package stream_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/stream"
)

// The client side of the framing follows EventSource: comments and unknown fields ignored,
// data lines joined, a frame without data skipped, a missing event name read as "message".
func TestFrameReader(t *testing.T) {
	t.Parallel()
	in := ": a comment\n" +
		"id: 1\nevent: snapshot\ndata: {\"events\":[]}\n\n" +
		"retry: 1000\nid: 2\ndata: line one\ndata:line two\r\n\r\n" +
		"id: 3\nevent: nothing\n\n" +
		"id: 4\nevent: bye\nx-unknown: y\ndata: {}\n\n"
	fr := stream.NewFrameReader(strings.NewReader(in))
	want := []stream.Frame{
		{ID: "1", Event: "snapshot", Data: []byte(`{"events":[]}`)},
		{ID: "2", Event: "message", Data: []byte("line one\nline two")},
		{ID: "4", Event: "bye", Data: []byte("{}")},
	}
	for i, w := range want {
		got, err := fr.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.ID != w.ID || got.Event != w.Event || string(got.Data) != string(w.Data) {
			t.Errorf("frame %d = %q %q %q; want %q %q %q", i, got.ID, got.Event, got.Data, w.ID, w.Event, w.Data)
		}
	}
	if _, err := fr.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v; want io.EOF", err)
	}
}

func TestFrameReaderTruncated(t *testing.T) {
	t.Parallel()
	fr := stream.NewFrameReader(strings.NewReader("id: 1\nevent: event\ndata: {\"kind\""))
	if _, err := fr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v; want io.ErrUnexpectedEOF", err)
	}
}
