package schema_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/roadevents/roadevents/shared/schema"
)

// A test-only payload shaped like EventIn (docs/api.md §2.2): nested object, array of
// number pairs, patterned strings, a date-time, an enum. The real declarations live in the
// domain packages.
const tokenPattern = `^[A-Za-z0-9_.:-]{1,64}$`

var (
	samplePosition = schema.Array(schema.Number()).Count(2, 2)

	sampleLineString = schema.Object(
		schema.Prop("type", schema.Const("LineString").WithDefault("LineString")),
		schema.Req("coordinates", schema.Array(samplePosition).Count(2, 512)),
	).Named("LineString")

	sampleEvent = schema.Object(
		schema.Req("type", schema.Enum("accident", "congestion", "road_damage")),
		schema.Prop("subtype", schema.String().Match(tokenPattern).OrNull()),
		schema.Req("lat", schema.Number().Range(-90, 90)),
		schema.Req("lon", schema.Number().Range(-180, 180)),
		schema.Prop("geometry", sampleLineString.OrNull()),
		schema.Prop("heading", schema.Integer().Range(0, 359).OrNull()),
		schema.Prop("road_ref", schema.String().MaxLen(32).OrNull()),
		schema.Prop("severity", schema.Enum("low", "medium", "high").OrNull()),
		schema.Prop("occurred_at", schema.DateTime().OrNull()),
		schema.Prop("verified", schema.Boolean()),
	).Named("EventIn")
)

type sampleLine struct {
	Type        string       `json:"type"`
	Coordinates [][2]float64 `json:"coordinates"`
}

type sampleEventIn struct {
	Type       string      `json:"type"`
	Subtype    *string     `json:"subtype"`
	Lat        float64     `json:"lat"`
	Lon        float64     `json:"lon"`
	Geometry   *sampleLine `json:"geometry"`
	Heading    *int        `json:"heading"`
	RoadRef    *string     `json:"road_ref"`
	Severity   *string     `json:"severity"`
	OccurredAt *string     `json:"occurred_at"`
	Verified   bool        `json:"verified"`
}

// decode parses JSON the way the HTTP layer hands it to Validate.
func decode(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// brief reduces errors to "type@loc" strings for comparison.
func brief(errs schema.Errors) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		loc, _ := json.Marshal(e.Loc)
		out[i] = e.Type + "@" + string(loc)
	}
	return out
}
