package sdk

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// docs/api.md §6 rules 2 and 4, §10.2: a snapshot is the truth; created, updated and signal
// deltas upsert and ended removes; an event past its expires_at is dropped without a frame;
// events of unknown types and frames of unknown kinds are skipped; a bye that says not to
// reconnect stops the watch.
func TestWatchAppliesFrames(t *testing.T) {
	var got []State
	w := &watch{area: Area{Lat: 48.1, Lon: 11.5}, on: func(s State) { got = append(got, s) }, events: map[string]Event{}}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	ev := func(id, typ string, lat float64, expires string) string {
		return fmt.Sprintf(`{"event_id":%q,"type":%q,"status":"active","lat":%v,"lon":11.5,"expires_at":%q,"created_at":%q}`, id, typ, lat, expires, past)
	}
	ids := func() []string {
		var out []string
		for _, e := range got[len(got)-1].Events {
			out = append(out, e.EventID)
		}
		return out
	}
	apply := func(name, data string) bool {
		t.Helper()
		stop, err := w.apply(frame{name: name, data: []byte(data)})
		if err != nil && err != errStop {
			t.Fatal(err)
		}
		return stop
	}
	apply(FrameSnapshot, `{"events":[`+ev("ev_far", "accident", 48.12, future)+`,`+ev("ev_near", "roadworks", 48.1, future)+`,`+
		ev("ev_gone", "accident", 48.1, past)+`,`+ev("ev_new_kind", "meteor_strike", 48.1, future)+`]}`)
	if !slices.Equal(ids(), []string{"ev_near", "ev_far"}) {
		t.Fatalf("after the snapshot %v; want the two known, unexpired ones, nearest first", ids())
	}
	apply(FrameEvent, `{"kind":"created","event":`+ev("ev_mid", "accident", 48.11, future)+`}`)
	apply(FrameEvent, `{"kind":"teleported","event":`+ev("ev_near", "accident", 48.11, future)+`}`)
	apply(FrameEvent, `{"kind":"ended","event":`+ev("ev_far", "accident", 48.12, future)+`}`)
	if !slices.Equal(ids(), []string{"ev_near", "ev_mid"}) {
		t.Fatalf("after the deltas %v; want near and mid (the unknown kind changed nothing)", ids())
	}
	apply(FrameSnapshot, `{"events":[`+ev("ev_only", "accident", 48.1, future)+`]}`)
	if !slices.Equal(ids(), []string{"ev_only"}) {
		t.Fatalf("after a second snapshot %v; want its events alone", ids())
	}
	w.events["ev_only"] = Event{EventID: "ev_only", Type: "accident", ExpiresAt: past}
	if !w.dropExpired(time.Now()) || len(w.events) != 0 {
		t.Errorf("an event past its expiry was kept")
	}
	apply(FrameKeepalive, `{"dropped":3}`)
	if got[len(got)-1].Dropped != 3 {
		t.Errorf("dropped %d; want the keepalive's 3", got[len(got)-1].Dropped)
	}
	if stop := apply(FrameBye, `{"reason":"max_connection_age","reconnect":true}`); !stop {
		t.Errorf("a bye did not end the connection")
	}
	if _, err := w.apply(frame{name: FrameBye, data: []byte(`{"reason":"credential_revoked","reconnect":false}`)}); err != errStop {
		t.Errorf("a bye without reconnect: %v; want the watch stopped", err)
	}
}
