package schema_test

import (
	"encoding/json"
	"testing"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want string
	}{
		{"default filled in nested object",
			`{"type":"accident","lat":1,"lon":2,"geometry":{"coordinates":[[2,1],[3,4]]}}`,
			`{"geometry":{"coordinates":[[2,1],[3,4]],"type":"LineString"},"lat":1,"lon":2,"type":"accident"}`},
		{"integral float becomes an integer",
			`{"type":"accident","lat":1,"lon":2,"heading":90.0}`,
			`{"heading":90,"lat":1,"lon":2,"type":"accident"}`},
		{"date-time in UTC with Z",
			`{"type":"accident","lat":1,"lon":2,"occurred_at":"2024-05-01T10:00:00.500+02:00"}`,
			`{"lat":1,"lon":2,"occurred_at":"2024-05-01T08:00:00.5Z","type":"accident"}`},
		{"nulls stay null",
			`{"type":"accident","lat":1.5,"lon":2,"geometry":null,"severity":null}`,
			`{"geometry":null,"lat":1.5,"lon":2,"severity":null,"type":"accident"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := decode(t, tc.body)
			if errs := sampleEvent.Validate(in, nil); len(errs) > 0 {
				t.Fatalf("test body invalid: %v", errs)
			}
			got, err := json.Marshal(sampleEvent.Normalize(in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Normalize = %s; want %s", got, tc.want)
			}
			var out sampleEventIn
			if err := json.Unmarshal(got, &out); err != nil {
				t.Errorf("normalised body does not decode into the payload struct: %v", err)
			}
			// The input is not modified.
			if again, _ := json.Marshal(in); string(again) != string(mustCompact(t, tc.body)) {
				t.Errorf("Normalize modified its input: %s", again)
			}
		})
	}
}

// mustCompact re-encodes a JSON text the way json.Marshal writes a decoded value.
func mustCompact(t *testing.T, s string) []byte {
	t.Helper()
	b, err := json.Marshal(decode(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
