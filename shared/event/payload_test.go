package event_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/schema"
)

// TestStructsAgreeWithSchemas holds every payload struct to its declaration, so
// /openapi.json and what the handlers decode or send cannot drift apart.
func TestStructsAgreeWithSchemas(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		schema *schema.Schema
		value  any
	}{
		{"LineString", event.LineStringSchema, event.LineString{}},
		{"EventIn", event.EventInSchema, event.EventIn{}},
		{"RevisionIn", event.RevisionInSchema, event.RevisionIn{}},
		{"SignalIn", event.SignalInSchema, event.SignalIn{}},
		{"EventPublic", event.EventPublicSchema, event.EventPublic{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.schema.Name != tc.name {
				t.Errorf("schema name = %q; want %q (docs/api.md §10.1)", tc.schema.Name, tc.name)
			}
			if err := schema.CheckStruct(tc.schema, tc.value); err != nil {
				t.Errorf("CheckStruct(%s) = %v; want nil", tc.name, err)
			}
		})
	}
}

// TestEventPublicShape checks the response against docs/api.md §2.3: the fields in the documented
// order, its required ones present, nullable ones sent as null, and the whole of it valid
// under EventPublicSchema.
func TestEventPublicShape(t *testing.T) {
	t.Parallel()
	e := publish(t, "accident", t0)
	data := mustJSON(t, e.Public(t0))

	wantOrder := []string{"event_id", "schema_version", "type", "lat", "lon", "geometry", "heading",
		"road_ref", "severity", "description", "occurred_at", "created_at", "expires_at", "source_kind",
		"feed_id", "license", "upstream_updated_at", "fetched_at", "status", "verification", "confidence",
		"confirm_count", "deny_count", "updated_at", "merged_into", "environment", "subtype"}
	dec := json.NewDecoder(strings.NewReader(data))
	var gotOrder []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		gotOrder = append(gotOrder, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(gotOrder, wantOrder) {
		t.Errorf("EventPublic members = %q; want %q", gotOrder, wantOrder)
	}
	var declared []string
	for _, p := range event.EventPublicSchema.Properties {
		declared = append(declared, p.Name)
	}
	if !slices.Equal(declared, wantOrder) {
		t.Errorf("EventPublicSchema properties = %q; want %q", declared, wantOrder)
	}

	if errs := event.EventPublicSchema.Validate(decode(t, data), []any{"response"}); len(errs) > 0 {
		t.Errorf("EventPublic %s breaks its schema: %q", data, brief(errs))
	}
	for _, member := range []string{`"geometry":null`, `"subtype":null`, `"updated_at":null`, `"merged_into":null`, `"feed_id":null`} {
		if !strings.Contains(data, member) {
			t.Errorf("EventPublic %s: want %s", data, member)
		}
	}
}
