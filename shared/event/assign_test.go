package event

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAssignStoresWhatUnmarshalWould checks assign against the round trip it replaced
// (json.Marshal of the value, json.Unmarshal into the struct) on bodies that reach it: valid
// ones with every field, nulls, integral floats and several time zones, after normalisation.
func TestAssignStoresWhatUnmarshalWould(t *testing.T) {
	t.Parallel()
	events := []string{
		`{"type":"road_damage","subtype":"pothole","lat":48.137434,"lon":11.575491,
		  "geometry":{"type":"LineString","coordinates":[[11.575491,48.137434],[11.58,48.14],[-179.99999,-89.5]]},
		  "heading":90,"road_ref":"A9","severity":"high","description":"deep pothole \u00e9",
		  "occurred_at":"2024-05-01T09:55:00.123456789+02:00","client_event_id":"c-1","reporter_token":"veh.7"}`,
		`{"type":"accident","lat":-1e-7,"lon":180}`,
		`{"type":"accident","lat":0,"lon":0,"subtype":null,"geometry":null,"heading":null,"road_ref":null,
		  "severity":null,"description":null,"occurred_at":null,"client_event_id":null,"reporter_token":null}`,
		`{"type":"debris","lat":1.5,"lon":2.25,"heading":359.0,"occurred_at":"2024-05-01T09:55:00Z"}`,
	}
	for _, body := range events {
		compareAssign[EventIn](t, EventInSchema, body)
	}
	revisions := []string{
		`{"lat":48.1,"lon":11.5,"geometry":{"type":"LineString","coordinates":[[11.5,48.1],[11.6,48.2]]},"severity":"low","subtype":"pothole"}`,
		`{"lat":48.1,"lon":11.5}`,
	}
	for _, body := range revisions {
		compareAssign[RevisionIn](t, RevisionInSchema, body)
	}
	for _, body := range []string{`{"action":"confirm","reporter_token":"r","lat":1,"lon":2}`, `{"action":"deny"}`} {
		compareAssign[SignalIn](t, SignalInSchema, body)
	}
}

func compareAssign[T any](t *testing.T, s interface{ Normalize(any) any }, body string) {
	t.Helper()
	var got, want T
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	norm := s.Normalize(v)
	data, err := json.Marshal(norm)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%s: unmarshal: %v", body, err)
	}
	if err := assign(&got, norm); err != nil {
		t.Fatalf("%s: assign: %v", body, err)
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("%s:\nassign    %s\nunmarshal %s", body, gotJSON, wantJSON)
	}
}

// TestAssignRefusesWhatDoesNotFit: a value of the wrong JSON type is an error, not a zero.
func TestAssignRefusesWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	for _, v := range []map[string]any{
		{"lat": "1"},
		{"heading": json.Number("1.5")},
		{"geometry": map[string]any{"coordinates": []any{[]any{json.Number("1")}}}},
		{"occurred_at": "yesterday"},
		{"type": json.Number("1")},
	} {
		var in EventIn
		if err := assign(&in, v); err == nil {
			t.Errorf("assign(%v) = nil error, want one", v)
		}
	}
	if err := assign(EventIn{}, map[string]any{}); err == nil {
		t.Error("assign into a non-pointer: nil error")
	}
}
