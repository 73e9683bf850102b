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
		// Every number is a double and every integer says its width, so that a generated client
		// neither rounds a coordinate to float32 nor guesses an integer's size.
		{"number bounds", schema.Number().GreaterThan(0).Max(9780),
			`{"type":"number","format":"double","exclusiveMinimum":0,"maximum":9780}`},
		{"array bounds", schema.Array(schema.Number()).Count(2, 2),
			`{"type":"array","items":{"type":"number","format":"double"},"minItems":2,"maxItems":2}`},
		{"unbounded integer is int64", schema.Integer().Min(0), `{"type":"integer","format":"int64","minimum":0}`},
		{"bounded integer is int32", schema.Integer().Range(0, 359), `{"type":"integer","format":"int32","minimum":0,"maximum":359}`},
		{"integer beyond int32 is int64", schema.Integer().Range(0, 1<<32), `{"type":"integer","format":"int64","minimum":0,"maximum":4294967296}`},
		{"empty string besides the rules", schema.String().Len(1, 80).OrEmpty(), `{"type":"string","maxLength":80}`},
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
	want := `{"title":"LineString","type":"object","properties":{"type":{"type":"string","const":"LineString","default":"LineString"},"coordinates":{"type":"array","items":{"type":"array","items":{"type":"number","format":"double"},"minItems":2,"maxItems":2},"minItems":2,"maxItems":512}},"required":["coordinates"],"additionalProperties":false}`
	if got != want {
		t.Errorf("Definition() =\n %s\nwant\n %s", got, want)
	}
	// An answer's objects accept members they do not list (docs/api.md §9 rule 2), and a
	// renamed component is titled and referred to by its new name.
	answer := schema.Rendering{Answer: true, Rename: map[string]string{"LineString": "LineStringPublic"}}
	wantAnswer := strings.Replace(strings.Replace(want, `,"additionalProperties":false`, "", 1), `"title":"LineString"`, `"title":"LineStringPublic"`, 1)
	if got := string(answer.Definition(sampleLineString)); got != wantAnswer {
		t.Errorf("answer Definition() =\n %s\nwant\n %s", got, wantAnswer)
	}
	if got := string(answer.JSONSchema(sampleLineString)); got != `{"$ref":"#/components/schemas/LineStringPublic"}` {
		t.Errorf("answer JSONSchema() = %s; want a $ref to LineStringPublic", got)
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

// OneOf writes oneOf with a discriminator mapping each constant to its component, which
// generated clients decode by (a Go client's AsSession would otherwise accept a challenge).
func TestOneOfWritesADiscriminator(t *testing.T) {
	t.Parallel()
	a := schema.Object(schema.Req("kind", schema.Const("a")), schema.Req("x", schema.String())).Named("A")
	b := schema.Object(schema.Req("kind", schema.Const("b"))).Named("B")
	got := string(schema.OneOf("kind", a, b).JSONSchema())
	want := `{"oneOf":[{"$ref":"#/components/schemas/A"},{"$ref":"#/components/schemas/B"}],` +
		`"discriminator":{"propertyName":"kind","mapping":{"a":"#/components/schemas/A","b":"#/components/schemas/B"}}}`
	if got != want {
		t.Errorf("OneOf = %s; want %s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("OneOf of two alternatives with one constant did not panic")
		}
	}()
	schema.OneOf("kind", a, a)
}

// OrEmpty accepts "" besides what the other rules accept, and nothing else more.
func TestOrEmptyAcceptsTheEmptyString(t *testing.T) {
	t.Parallel()
	s := schema.String().Len(1, 80).Printable().OrEmpty()
	if errs := s.Validate("", nil); len(errs) != 0 {
		t.Errorf(`Validate("") = %v; want no error`, errs)
	}
	for _, bad := range []string{" ", "a\u0007b", strings.Repeat("x", 81)} {
		if errs := s.Validate(bad, nil); len(errs) == 0 {
			t.Errorf("Validate(%q) accepted it; want an error", bad)
		}
	}
}
