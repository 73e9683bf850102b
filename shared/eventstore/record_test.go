package eventstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
)

// A record names its event's source, by which the merge search passes over the searching
// source's own reports (docs/network.md §1); a record of format 2, written before it did, is
// still read, its source unknown, so an upgraded data folder keeps serving its events.
func TestRecordSourceAndFormat2(t *testing.T) {
	ev := event.New(event.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5}, "org_a", event.EnvironmentLive, "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", time.Unix(0, 0))
	body := []byte(`{"event_id":"ev_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`)
	b, err := encodeRecord(ev, body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseRecord(b)
	if err != nil || string(r.source) != "org:org_a" || string(r.typ) != "accident" || !bytes.Equal(r.body, body) || r.point(0).Lat != 48.1 {
		t.Fatalf("parse = %+v, %v; want source org:org_a, type accident, the body", r, err)
	}
	// Format 2: the same without the source.
	at := recordHeader + len("accident")
	old := append(append([]byte{2}, b[1:at]...), b[at+1+len("org:org_a"):]...)
	r, err = parseRecord(old)
	if err != nil || r.source != nil || string(r.typ) != "accident" || !bytes.Equal(r.body, body) || r.point(0).Lon != 11.5 {
		t.Fatalf("parse format 2 = %+v, %v; want no source, type accident, the body", r, err)
	}
}
