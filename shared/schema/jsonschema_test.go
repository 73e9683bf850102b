package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/roadevents/roadevents/shared/schema"
)

func TestJSONSchemaRendering(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		schema *schema.Schema
		want   string
	}{
		{"nullable scalar uses a type array", schema.String().MaxLen(32).OrNull(),
			`{"type":["string","null"],"maxLength":32}`},
		{"named schema is a ref", sampleLineString,
			`{"$ref":"#/components/schemas/LineString"}`},
		{"nullable named schema is anyOf with null", sampleLineString.OrNull(),
			`{"anyOf":[{"$ref":"#/components/schemas/LineString"},{"type":"null"}]}`},
		{"nullable enum lists null", schema.Enum("low", "high").OrNull(),
			`{"type":["string","null"],"enum":["low","high",null]}`},
		{"const keeps its type", schema.Const("LineString").WithDefault("LineString"),
			`{"type":"string","const":"LineString","default":"LineString"}`},
		{"number bounds", schema.Number().GreaterThan(0).Max(9780),
			`{"type":"number","exclusiveMinimum":0,"maximum":9780}`},
		{"array bounds", schema.Array(schema.Number()).Count(2, 2),
			`{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}`},
		{"free object allows members", schema.FreeObject(), `{"type":"object"}`},
		{"date-time", schema.DateTime().OrNull(), `{"type":["string","null"],"format":"date-time"}`},
		{"any", schema.Any().Describe("x"), `{"description":"x"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(tc.schema.JSONSchema()); got != tc.want {
				t.Errorf("JSONSchema() = %s; want %s", got, tc.want)
			}
		})
	}
}

func TestDefinitionListsPropertiesInOrderAndForbidsOthers(t *testing.T) {
	t.Parallel()
	got := string(sampleLineString.Definition())
	want := `{"title":"LineString","type":"object","properties":{"type":{"type":"string","const":"LineString","default":"LineString"},"coordinates":{"type":"array","items":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2},"minItems":2,"maxItems":512}},"required":["coordinates"],"additionalProperties":false}`
	if got != want {
		t.Errorf("Definition() =\n %s\nwant\n %s", got, want)
	}
	// The component never carries the null of a place that refers to it.
	if d := string(sampleLineString.OrNull().Definition()); d != want {
		t.Errorf("OrNull().Definition() = %s; want the plain definition", d)
	}
}

func TestComponents(t *testing.T) {
	t.Parallel()
	comps, err := schema.Components(sampleEvent)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(schema.SortedNames(comps), ","); got != "EventIn,LineString" {
		t.Errorf("Components names = %s; want EventIn,LineString", got)
	}

	clash := schema.Object(schema.Req("x", schema.String())).Named("LineString")
	if _, err := schema.Components(sampleEvent, clash); err == nil {
		t.Errorf("Components with two different LineString schemas succeeded; want an error")
	}
}

// TestRenderedSchemaAgreesWithValidate holds the two outputs of one declaration together:
// an independent JSON Schema 2020-12 validator, given what /openapi.json publishes, must
// accept exactly the bodies Validate accepts. Compiling also checks every rendered schema
// against the 2020-12 meta-schema.
func TestRenderedSchemaAgreesWithValidate(t *testing.T) {
	t.Parallel()
	comps, err := schema.Components(sampleEvent)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]json.RawMessage{}
	for name, s := range comps {
		defs[name] = s.Definition()
	}
	doc, err := json.Marshal(map[string]any{
		"$schema":    "https://json-schema.org/draft/2020-12/schema",
		"$ref":       "#/components/schemas/EventIn",
		"components": map[string]any{"schemas": defs},
	})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := jsonschema.UnmarshalJSON(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("mem://roadevents/event.json", parsed); err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile("mem://roadevents/event.json")
	if err != nil {
		t.Fatalf("compile rendered schema: %v", err)
	}

	// Where the service is deliberately stricter than plain JSON Schema.
	stricter := map[string]bool{
		"integer over 64 bits": true, // the Go structs hold int64
	}
	for _, tc := range validateCases {
		if stricter[tc.name] {
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		jsErr := compiled.Validate(inst)
		ours := sampleEvent.Validate(decode(t, tc.body), []any{"body"})
		if (jsErr == nil) != (len(ours) == 0) {
			t.Errorf("%s: JSON Schema valid = %v, Validate valid = %v (%v)", tc.name, jsErr == nil, len(ours) == 0, brief(ours))
		}
	}
}
