package schema_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/schema"
)

type embeddedBase struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

type customLine struct{ raw json.RawMessage }

func (c *customLine) UnmarshalJSON(b []byte) error { c.raw = append(c.raw[:0], b...); return nil }

func TestCheckStruct(t *testing.T) {
	t.Parallel()
	point := schema.Object(schema.Req("lat", schema.Number()), schema.Req("lon", schema.Number()))
	cases := []struct {
		name     string
		schema   *schema.Schema
		value    any
		wantErrs []string // fragments of the error; nil when they agree
	}{
		{"sample payload agrees", sampleEvent, sampleEventIn{}, nil},
		{"pointer to struct", sampleEvent, &sampleEventIn{}, nil},
		{"embedded fields are promoted", point, struct{ embeddedBase }{}, nil},
		{"validation error item agrees", schema.ValidationErrorSchema, schema.ValidationError{}, nil},
		{"validation error body agrees", schema.HTTPValidationErrorSchema, struct {
			Detail schema.Errors `json:"detail"`
		}{}, nil},
		{"time.Time for date-time", schema.Object(schema.Req("at", schema.DateTime())), struct {
			At time.Time `json:"at"`
		}{}, nil},
		{"custom unmarshaler trusted", schema.Object(schema.Prop("geometry", sampleLineString.OrNull())), struct {
			Geometry *customLine `json:"geometry"`
		}{}, nil},
		{"map for free object", schema.FreeObject(), map[string]any{}, nil},

		{"undocumented field", point, struct {
			embeddedBase
			Environment string `json:"environment"`
		}{}, []string{"environment", "not in the schema"}},
		{"property without field", point, struct {
			Lat float64 `json:"lat"`
		}{}, []string{"lon", "no json field"}},
		{"untagged field uses its Go name", point, struct {
			Lat float64 `json:"lat"`
			Lon float64
		}{}, []string{"Lon", "not in the schema"}},
		{"wrong scalar type", point, struct {
			Lat string  `json:"lat"`
			Lon float64 `json:"lon"`
		}{}, []string{".lat", "number"}},
		{"int for number", point, struct {
			Lat int     `json:"lat"`
			Lon float64 `json:"lon"`
		}{}, []string{".lat"}},
		{"nullable needs a pointer", schema.Object(schema.Prop("heading", schema.Integer().OrNull())), struct {
			Heading int `json:"heading"`
		}{}, []string{"heading", "cannot hold null"}},
		{"nested mismatch", sampleLineString, struct {
			Type        string     `json:"type"`
			Coordinates [][]string `json:"coordinates"`
		}{}, []string{"coordinates[][]"}},
		{"bytes are not an array", schema.Object(schema.Req("b", schema.Array(schema.Integer()))), struct {
			B []byte `json:"b"`
		}{}, []string{".b"}},
		{"time.Time for plain string", schema.Object(schema.Req("at", schema.String())), struct {
			At time.Time `json:"at"`
		}{}, []string{".at", "date-time"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := schema.CheckStruct(tc.schema, tc.value)
			if tc.wantErrs == nil {
				if err != nil {
					t.Errorf("CheckStruct = %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, schema.ErrMismatch) {
				t.Fatalf("CheckStruct = %v; want ErrMismatch", err)
			}
			for _, frag := range tc.wantErrs {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("CheckStruct error %q does not mention %q", err, frag)
				}
			}
		})
	}
}

type stamp struct{}

func (s stamp) MarshalJSON() ([]byte, error) { return []byte(`"2024-05-01T00:00:00Z"`), nil }

// An answer is checked as it is written: a type with its own MarshalJSON is trusted, and a
// field that is never null fits a nullable property; a payload must be able to hold null.
func TestCheckOutputTrustsMarshalersAndAllowsDefiniteFields(t *testing.T) {
	type out struct {
		At   stamp  `json:"at"`
		Name string `json:"name"`
	}
	s := schema.Object(schema.Req("at", schema.DateTime()), schema.Req("name", schema.String().OrNull()))
	if err := schema.CheckOutput(s, reflect.TypeFor[out]()); err != nil {
		t.Errorf("CheckOutput = %v; want nil", err)
	}
	if err := schema.CheckType(s, reflect.TypeFor[out]()); err == nil {
		t.Errorf("CheckType of a payload that cannot hold null = nil; want a mismatch")
	}
	type missing struct {
		At stamp `json:"at"`
	}
	if err := schema.CheckOutput(s, reflect.TypeFor[missing]()); err == nil {
		t.Errorf("CheckOutput of an answer without name = nil; want a mismatch")
	}
}
