package schema_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/schema"
)

const validEvent = `{"type":"accident","lat":48.1,"lon":11.5}`

// with returns validEvent with extra members spliced in.
func with(members string) string {
	return strings.TrimSuffix(validEvent, "}") + "," + members + "}"
}

func coords(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "[11.5,48.1]"
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// validateCases are bodies for sampleEvent with the errors Validate must report.
var validateCases = []struct {
	name string
	body string
	want []string
}{
	{"valid minimal", validEvent, nil},
	{"valid with every optional member", with(`"subtype":"pothole","geometry":{"type":"LineString","coordinates":[[11.5,48.1],[11.6,48.2]]},"heading":90,"road_ref":"A9","severity":"low","occurred_at":"2024-05-01T10:00:00+02:00","verified":true`), nil},
	{"nullable members may be null", with(`"subtype":null,"geometry":null,"heading":null,"road_ref":null,"severity":null,"occurred_at":null`), nil},
	{"geometry type defaults", with(`"geometry":{"coordinates":[[11.5,48.1],[11.6,48.2]]}`), nil},
	{"integral float is an integer", with(`"heading":90.0`), nil},
	{"exponent integer is an integer", with(`"heading":1e2`), nil},
	{"road_ref counts characters not bytes", with(`"road_ref":"` + strings.Repeat("é", 32) + `"`), nil},

	{"body not an object", `[1,2]`, []string{`model_attributes_type@["body"]`}},
	{"body a string", `"x"`, []string{`model_attributes_type@["body"]`}},
	{"missing required", `{"type":"accident","lon":11.5}`, []string{`missing@["body","lat"]`}},
	{"every missing required", `{}`, []string{`missing@["body","type"]`, `missing@["body","lat"]`, `missing@["body","lon"]`}},
	{"unknown member", with(`"environment":"live"`), []string{`extra_forbidden@["body","environment"]`}},
	{"unknown members sorted last", with(`"zz":1,"aa":2,"lat":"x"`), []string{`float_type@["body","lat"]`, `extra_forbidden@["body","aa"]`, `extra_forbidden@["body","zz"]`}},
	{"case differs is unknown", with(`"LAT":1`), []string{`extra_forbidden@["body","LAT"]`}},
	{"string for number", `{"type":"accident","lat":"48.1","lon":11.5}`, []string{`float_type@["body","lat"]`}},
	{"bool for number", `{"type":"accident","lat":true,"lon":11.5}`, []string{`float_type@["body","lat"]`}},
	{"null for number", `{"type":"accident","lat":null,"lon":11.5}`, []string{`float_type@["body","lat"]`}},
	{"huge number", `{"type":"accident","lat":1e400,"lon":11.5}`, []string{`float_type@["body","lat"]`}},
	{"fractional integer", with(`"heading":1.5`), []string{`int_type@["body","heading"]`}},
	{"string for integer", with(`"heading":"90"`), []string{`int_type@["body","heading"]`}},
	{"integer over 64 bits", with(`"heading":123456789012345678901234567890`), []string{`int_type@["body","heading"]`}},
	{"number for string", with(`"road_ref":5`), []string{`string_type@["body","road_ref"]`}},
	{"string for boolean", with(`"verified":"true"`), []string{`bool_parsing@["body","verified"]`}},
	{"number for boolean", with(`"verified":1`), []string{`bool_parsing@["body","verified"]`}},
	{"null for non-nullable boolean", with(`"verified":null`), []string{`bool_parsing@["body","verified"]`}},
	{"string for list", with(`"geometry":{"coordinates":"x"}`), []string{`list_type@["body","geometry","coordinates"]`}},
	{"string for nested object", with(`"geometry":"x"`), []string{`model_attributes_type@["body","geometry"]`}},
	{"string too long", with(`"road_ref":"` + strings.Repeat("x", 33) + `"`), []string{`string_too_long@["body","road_ref"]`}},
	{"pattern mismatch", with(`"subtype":"has space"`), []string{`string_pattern_mismatch@["body","subtype"]`}},
	{"empty string misses pattern", with(`"subtype":""`), []string{`string_pattern_mismatch@["body","subtype"]`}},
	{"too few positions", with(`"geometry":{"coordinates":[[11.5,48.1]]}`), []string{`too_short@["body","geometry","coordinates"]`}},
	{"too many positions", with(`"geometry":{"coordinates":` + coords(513) + `}`), []string{`too_long@["body","geometry","coordinates"]`}},
	{"position too short", with(`"geometry":{"coordinates":[[11.5],[11.6,48.2]]}`), []string{`too_short@["body","geometry","coordinates",0]`}},
	{"bad number deep inside", with(`"geometry":{"coordinates":[[11.5,48.1],[11.6,48.2],[1,2],[3,"x"]]}`), []string{`float_type@["body","geometry","coordinates",3,1]`}},
	{"below minimum", `{"type":"accident","lat":-91,"lon":11.5}`, []string{`greater_than_equal@["body","lat"]`}},
	{"above maximum", `{"type":"accident","lat":91,"lon":11.5}`, []string{`less_than_equal@["body","lat"]`}},
	{"wrong literal", with(`"geometry":{"type":"Point","coordinates":[[11.5,48.1],[11.6,48.2]]}`), []string{`literal_error@["body","geometry","type"]`}},
	{"enum miss", `{"type":"meteor","lat":1,"lon":1}`, []string{`enum@["body","type"]`}},
	{"enum non-string", `{"type":7,"lat":1,"lon":1}`, []string{`enum@["body","type"]`}},
	{"nullable enum miss", with(`"severity":"extreme"`), []string{`enum@["body","severity"]`}},
	{"date-time not a string", with(`"occurred_at":1700000000`), []string{`datetime_type@["body","occurred_at"]`}},
	{"date-time unparsable", with(`"occurred_at":"yesterday"`), []string{`datetime_parsing@["body","occurred_at"]`}},
	{"date-time naive", with(`"occurred_at":"2024-05-01T10:00:00"`), []string{`timezone_aware@["body","occurred_at"]`}},
	{"several errors at once", `{"type":"meteor","lat":100,"lon":"x","heading":1.5,"road_ref":"` + strings.Repeat("x", 40) + `","extra":true}`, []string{
		`enum@["body","type"]`, `less_than_equal@["body","lat"]`, `float_type@["body","lon"]`,
		`int_type@["body","heading"]`, `string_too_long@["body","road_ref"]`, `extra_forbidden@["body","extra"]`,
	}},
}

func TestValidateReportsPydanticTypesAndLocs(t *testing.T) {
	t.Parallel()
	for _, tc := range validateCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := brief(sampleEvent.Validate(decode(t, tc.body), []any{"body"}))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Validate(%.80s) = %v; want %v", tc.body, got, tc.want)
			}
		})
	}
}

// TestValidateErrorBodies pins the full error items clients see, Pydantic's wording included.
func TestValidateErrorBodies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want string // JSON of the error list
	}{
		{"missing echoes the enclosing object", `{"type":"accident","lon":11.5}`,
			`[{"type":"missing","loc":["body","lat"],"msg":"Field required","input":{"lon":11.5,"type":"accident"}}]`},
		{"extra echoes the value", with(`"environment":"live"`),
			`[{"type":"extra_forbidden","loc":["body","environment"],"msg":"Extra inputs are not permitted","input":"live"}]`},
		{"enum lists the members", with(`"severity":"extreme"`),
			`[{"type":"enum","loc":["body","severity"],"msg":"Input should be 'low', 'medium' or 'high'","input":"extreme","ctx":{"expected":"'low', 'medium' or 'high'"}}]`},
		{"literal", with(`"geometry":{"type":"Point","coordinates":[[1,2],[3,4]]}`),
			`[{"type":"literal_error","loc":["body","geometry","type"],"msg":"Input should be 'LineString'","input":"Point","ctx":{"expected":"'LineString'"}}]`},
		{"le", `{"type":"accident","lat":91,"lon":11.5}`,
			`[{"type":"less_than_equal","loc":["body","lat"],"msg":"Input should be less than or equal to 90","input":91,"ctx":{"le":90}}]`},
		{"ge", `{"type":"accident","lat":48,"lon":-180.5}`,
			`[{"type":"greater_than_equal","loc":["body","lon"],"msg":"Input should be greater than or equal to -180","input":-180.5,"ctx":{"ge":-180}}]`},
		{"too long string", with(`"road_ref":"` + strings.Repeat("x", 33) + `"`),
			`[{"type":"string_too_long","loc":["body","road_ref"],"msg":"String should have at most 32 characters","input":"` + strings.Repeat("x", 33) + `","ctx":{"max_length":32}}]`},
		{"pattern", with(`"subtype":"a b"`),
			`[{"type":"string_pattern_mismatch","loc":["body","subtype"],"msg":"String should match pattern '^[A-Za-z0-9_.:-]{1,64}$'","input":"a b","ctx":{"pattern":"^[A-Za-z0-9_.:-]{1,64}$"}}]`},
		{"too short list", with(`"geometry":{"coordinates":[[1,2]]}`),
			`[{"type":"too_short","loc":["body","geometry","coordinates"],"msg":"List should have at least 2 items after validation, not 1","input":[[1,2]],"ctx":{"actual_length":1,"field_type":"List","min_length":2}}]`},
		{"fractional int", with(`"heading":1.5`),
			`[{"type":"int_type","loc":["body","heading"],"msg":"Input should be a valid integer, got a number with a fractional part","input":1.5}]`},
		{"naive date-time", with(`"occurred_at":"2024-05-01T10:00:00"`),
			`[{"type":"timezone_aware","loc":["body","occurred_at"],"msg":"Input should have timezone info","input":"2024-05-01T10:00:00"}]`},
		{"unparsable date-time", with(`"occurred_at":"2024-13-01T10:00:00Z"`),
			`[{"type":"datetime_parsing","loc":["body","occurred_at"],"msg":"Input should be a valid datetime, month value is outside expected range of 1-12","input":"2024-13-01T10:00:00Z","ctx":{"error":"month value is outside expected range of 1-12"}}]`},
		{"not an object", `[1]`,
			`[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary or object to extract fields from","input":[1]}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(sampleEvent.Validate(decode(t, tc.body), []any{"body"}))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("errors =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestValidateDoesNotShareLocs(t *testing.T) {
	t.Parallel()
	// Many errors under one parent: each must keep its own path.
	errs := sampleEvent.Validate(decode(t, with(`"geometry":{"coordinates":[[1,"a"],[2,"b"],[3,"c"]]}`)), []any{"body"})
	want := []string{
		`float_type@["body","geometry","coordinates",0,1]`,
		`float_type@["body","geometry","coordinates",1,1]`,
		`float_type@["body","geometry","coordinates",2,1]`,
	}
	if got := brief(errs); !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %v; want %v", got, want)
	}
}

func TestValueError(t *testing.T) {
	t.Parallel()
	e := schema.ValueError(schema.Loc("body", "lat"), "lat/lon must equal the first point of geometry", 48.1)
	got, _ := json.Marshal(e)
	want := `{"type":"value_error","loc":["body","lat"],"msg":"Value error, lat/lon must equal the first point of geometry","input":48.1,"ctx":{"error":"lat/lon must equal the first point of geometry"}}`
	if string(got) != want {
		t.Errorf("ValueError = %s; want %s", got, want)
	}
	var err error = schema.Errors{e}
	if !strings.Contains(err.Error(), "value_error") {
		t.Errorf("Errors.Error() = %q; want it to name the type", err.Error())
	}
}

func TestFormats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		schema *schema.Schema
		value  any
		want   string // error type, "" for valid
	}{
		{schema.Email(), "a@example.com", ""},
		{schema.Email(), "a.b+c@mail.example.org", ""},
		{schema.Email(), "Someone <a@example.com>", "value_error"},
		{schema.Email(), "no-at-sign", "value_error"},
		{schema.Email(), "a@localhost", "value_error"},
		{schema.Date(), "2024-02-29", ""},
		{schema.Date(), "2023-02-29", "value_error"},
		{schema.Date(), "2024-2-1", "value_error"},
		{schema.String().Len(2, 3), "é", "string_too_short"},
		{schema.String().Len(2, 3), "éé", ""},
		{schema.Number().GreaterThan(0), json.Number("0"), "greater_than"},
		{schema.Number().GreaterThan(0), json.Number("0.001"), ""},
		{schema.Const(true), true, ""},
		{schema.Const(true), false, "literal_error"},
		{schema.Const(1), json.Number("1.0"), ""},
		{schema.Any(), nil, ""},
		{schema.FreeObject(), map[string]any{"anything": 1}, ""},
		{schema.AnyOf(schema.String(), schema.Integer()), json.Number("3"), ""},
		{schema.AnyOf(schema.String(), schema.Integer()), true, "string_type"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %v", tc.schema.JSONSchema(), tc.value), func(t *testing.T) {
			t.Parallel()
			errs := tc.schema.Validate(tc.value, []any{"body", "x"})
			got := ""
			if len(errs) > 0 {
				got = errs[0].Type
			}
			if got != tc.want {
				t.Errorf("Validate(%v) = %v; want type %q", tc.value, errs, tc.want)
			}
		})
	}
}

// docs/api.md §11.2: a Printable string refuses control characters, line and paragraph
// separators, bidirectional formatting marks, and text with nothing visible in it; every
// script, accents and emoji pass. Length rules still come first.
func TestPrintable(t *testing.T) {
	t.Parallel()
	name := func() *schema.Schema { return schema.String().Len(1, 80).Printable() }
	cases := []struct {
		name  string
		value string
		want  string // error type, "" for valid
	}{
		{"ASCII", "Northwind Fleet", ""},
		{"accents", "Société Générale d'Entreprises", ""},
		{"CJK", "東京交通株式会社", ""},
		{"Arabic", "شركة النقل", ""},
		{"emoji with joiners", "Fleet 👩\u200d👩\u200d👧 🚚", ""},
		{"inner and outer spaces", "  Ada  Lovelace ", ""},
		{"Persian with a non-joiner", "می\u200cخواهم", ""},
		{"empty", "", "string_too_short"},
		{"too long and a newline", strings.Repeat("a", 80) + "\n", "string_too_long"},
		{"NUL", "a\x00b", "value_error"},
		{"BEL", "a\ab", "value_error"},
		{"tab", "a\tb", "value_error"},
		{"CR LF", "Fleet\r\nBcc: x@example.com", "value_error"},
		{"LF", "Fleet\nB", "value_error"},
		{"ESC", "\x1b[31mred", "value_error"},
		{"DEL", "a\x7fb", "value_error"},
		{"C1 NEL", "a\u0085b", "value_error"},
		{"C1 CSI", "a\u009bb", "value_error"},
		{"line separator", "a\u2028b", "value_error"},
		{"paragraph separator", "a\u2029b", "value_error"},
		{"LRM", "a\u200eb", "value_error"},
		{"RLM", "a\u200fb", "value_error"},
		{"LRE", "a\u202ab", "value_error"},
		{"RLO", "evil\u202egnp.exe", "value_error"},
		{"PDF", "a\u202cb", "value_error"},
		{"LRI", "a\u2066b", "value_error"},
		{"PDI", "a\u2069b", "value_error"},
		{"Arabic letter mark", "a\u061cb", "value_error"},
		{"spaces only", "   ", "value_error"},
		{"ideographic and no-break spaces only", "\u3000\u00a0", "value_error"},
		{"zero-width space only", "\u200b", "value_error"},
	}
	for _, tc := range cases {
		errs := name().Validate(tc.value, []any{"body", "name"})
		got := ""
		if len(errs) > 0 {
			got = errs[0].Type
			if fmt.Sprint(errs[0].Loc) != "[body name]" || len(errs) != 1 {
				t.Errorf("%s: errors %v; want one at [body name]", tc.name, errs)
			}
		}
		if got != tc.want {
			t.Errorf("%s: Validate(%q) = %v; want type %q", tc.name, tc.value, errs, tc.want)
		}
	}
	// The document says the rule where the field is, before the field's own description.
	doc := string(schema.String().Printable().Describe("null clears the name.").JSONSchema())
	if !strings.Contains(doc, `"format":"printable"`) || !strings.Contains(doc, "bidirectional") || !strings.Contains(doc, "null clears the name.") {
		t.Errorf("JSONSchema = %s; want format printable and a description with the rule and the field's own words", doc)
	}
}

// A value of a OneOf is checked against the alternative its discriminator names, so that its
// errors are that alternative's, however many they are.
func TestOneOfValidatesTheNamedAlternative(t *testing.T) {
	t.Parallel()
	circle := schema.Object(schema.Req("type", schema.Const("Circle")), schema.Req("radius", schema.Number())).Named("C")
	polygon := schema.Object(schema.Req("type", schema.Const("Polygon")), schema.Req("ring", schema.Array(schema.Number()))).Named("P")
	area := schema.OneOf("type", circle, polygon)
	errs := area.Validate(decode(t, `{"type":"Polygon","radius":3,"other":1}`), []any{"body"})
	want := []string{`missing@["body","ring"]`, `extra_forbidden@["body","other"]`, `extra_forbidden@["body","radius"]`}
	if got := brief(errs); !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %v; want the polygon's %v", got, want)
	}
	if errs := area.Validate(decode(t, `{"type":"Circle","radius":3}`), nil); len(errs) != 0 {
		t.Errorf("a good circle: %v", errs)
	}
}
