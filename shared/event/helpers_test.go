package event_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/schema"
)

// t0 is the publication moment of most tests.
var t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// decode parses JSON the way the HTTP layer hands a body to validation (UseNumber).
func decode(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// object decodes a JSON object and applies edits: a nil value deletes the member.
func object(t testing.TB, s string, edits map[string]any) map[string]any {
	t.Helper()
	m, ok := decode(t, s).(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", s)
	}
	for k, v := range edits {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

// brief reduces errors to "type@loc" strings, the machine-readable part (docs/api.md §7).
func brief(errs schema.Errors) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		loc, _ := json.Marshal(e.Loc)
		out = append(out, e.Type+"@"+string(loc))
	}
	return out
}

// validationErrors extracts schema.Errors from an error, failing the test if it is another
// kind of error.
func validationErrors(t *testing.T, err error) schema.Errors {
	t.Helper()
	if err == nil {
		return nil
	}
	errs, ok := err.(schema.Errors)
	if !ok {
		t.Fatalf("error %v (%T) is not schema.Errors", err, err)
	}
	return errs
}

// positions returns n GeoJSON positions starting at [lon, lat], stepping north-east.
func positions(n int, lon, lat float64) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = []any{json.Number(formatFloat(lon + float64(i)*0.0001)), json.Number(formatFloat(lat + float64(i)*0.0001))}
	}
	return out
}

func formatFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// mustJSON marshals v for comparisons.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return strings.TrimSpace(buf.String())
}

// publish builds a fresh event of type typ at t0 through New.
func publish(t *testing.T, typ string, at time.Time) event.Event {
	t.Helper()
	in := event.EventIn{Type: typ, Lat: 48.13743, Lon: 11.57549}
	if err := in.Validate(at); err != nil {
		t.Fatalf("EventIn{%s} invalid: %v", typ, err)
	}
	return event.New(in, "org-a", event.EnvironmentLive, event.NewID(), at)
}
