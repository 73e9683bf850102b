package stream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
)

// docs/api.md §10.2 (Stream): the data of every frame (snapshot, event of each kind,
// keepalive, bye) matches the component schema that the document's x-sse-frames maps its
// event name to, so a client generated from the document decodes what the stream sends.
func TestFramesMatchTheirDocumentedSchemas(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	schemas := frameSchemas(t, r.openapi())

	r.publish(t, r.liveKey, "accident", offset(center, 100)) // in the snapshot
	s, status, body := r.open(t, query(center, 1000), r.liveKey)
	if s == nil {
		t.Fatalf("GET /v1/stream: %d %s", status, body)
	}
	seen := map[string]bool{}
	check := func(f stream.Frame) {
		t.Helper()
		name := f.Event
		if f.Event == stream.FrameEvent {
			var d stream.DeltaData
			if err := json.Unmarshal(f.Data, &d); err != nil {
				t.Fatal(err)
			}
			name += " " + string(d.Kind)
		}
		seen[name] = true
		sch := schemas[f.Event]
		if sch == nil {
			t.Fatalf("x-sse-frames maps no schema to the %s frame", f.Event)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(f.Data))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s frame %s does not match its schema: %v", name, f.Data, err)
		}
	}
	check(s.Next(t))
	// A keepalive goes out at every tick (docs/api.md §6).
	tab.Clock.Advance(stream.KeepaliveInterval)
	r.timers.Fire(stream.KeepaliveInterval)
	check(s.Next(t))
	fresh := r.publish(t, r.liveKey, "stopped_vehicle", offset(center, 50))
	check(s.Next(t))
	r.revise(t, r.liveKey, fresh.EventID, offset(center, -300))
	check(s.Next(t))
	for i := 1; i <= event.DenyQuorum; i++ { // signal deltas, the last one ends the event
		r.signal(t, r.otherKey, fresh.EventID, event.ActionDeny, fmt.Sprintf("v%d", i))
		check(s.Next(t))
	}
	r.timers.Fire(stream.MaxConnectionAge)
	check(s.Next(t))
	for _, want := range []string{"snapshot", "event created", "event updated", "event signal", "event ended", "keepalive", "bye"} {
		if !seen[want] {
			t.Errorf("no %s frame was recorded; recorded %v", want, seen)
		}
	}
}

// frameSchemas compiles the schema x-sse-frames gives each frame of GET /v1/stream in doc.
func frameSchemas(t *testing.T, doc []byte) map[string]*jsonschema.Schema {
	t.Helper()
	var d struct {
		Paths map[string]map[string]struct {
			Frames map[string]struct {
				Ref string `json:"$ref"`
			} `json:"x-sse-frames"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://openapi.json", inst); err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Schema{}
	for name, ref := range d.Paths["/v1/stream"]["get"].Frames {
		if out[name], err = c.Compile("mem://openapi.json" + ref.Ref); err != nil {
			t.Fatalf("frame %s: %v", name, err)
		}
	}
	if len(out) != 4 {
		t.Fatalf("x-sse-frames maps %d frames; want snapshot, event, keepalive and bye", len(out))
	}
	return out
}
