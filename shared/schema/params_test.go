package schema_test

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/roadevents/roadevents/shared/schema"
)

// Parameters shaped like GET /v1/events (docs/api.md §4.1) plus the console's boolean and integer
// parameters.
var sampleParams = []schema.Param{
	schema.Query("lat", schema.Number().Range(-90, 90)).Require(),
	schema.Query("lon", schema.Number().Range(-180, 180)).Require(),
	schema.Query("radius", schema.Number().GreaterThan(0).WithDefault(1000)),
	schema.Query("type", schema.Array(schema.Enum("accident", "congestion"))),
	schema.Query("min_confidence", schema.Number().Range(0, 1).WithDefault(0)),
	schema.Query("include_revoked", schema.Boolean().WithDefault(true)),
	schema.Query("limit", schema.Integer().Min(1).WithDefault(50)),
	schema.Path("event_id", schema.String().Match(`^ev_[a-z2-7]{26}$`)),
}

func TestParseParams(t *testing.T) {
	t.Parallel()
	const id = "ev_abcdefghijklmnopqrstuvwxyz"
	cases := []struct {
		name     string
		query    string
		path     string
		wantErrs []string
		check    func(t *testing.T, v schema.Values)
	}{
		{name: "defaults fill in", query: "lat=48.1&lon=11.5", path: id, check: func(t *testing.T, v schema.Values) {
			if v.Float("lat") != 48.1 || v.Float("radius") != 1000 || v.Float("min_confidence") != 0 ||
				!v.Bool("include_revoked") || v.Int("limit") != 50 || v.String("event_id") != id {
				t.Errorf("values = %v", v)
			}
			if v.Has("type") {
				t.Errorf("absent repeatable parameter is present: %v", v["type"])
			}
		}},
		{name: "repeatable parameter", query: "lat=1&lon=2&type=accident&type=congestion", path: id, check: func(t *testing.T, v schema.Values) {
			if got := v.Strings("type"); !reflect.DeepEqual(got, []string{"accident", "congestion"}) {
				t.Errorf("Strings(type) = %v", got)
			}
		}},
		{name: "parsed forms", query: "lat=-4.5e1&lon=+2&include_revoked=no&limit=3.0", path: id, check: func(t *testing.T, v schema.Values) {
			if v.Float("lat") != -45 || v.Float("lon") != 2 || v.Bool("include_revoked") || v.Int("limit") != 3 {
				t.Errorf("values = %v", v)
			}
		}},
		{name: "last value wins", query: "lat=1&lat=2&lon=2", path: id, check: func(t *testing.T, v schema.Values) {
			if v.Float("lat") != 2 {
				t.Errorf("lat = %v; want 2", v.Float("lat"))
			}
		}},
		{name: "unknown parameters ignored", query: "lat=1&lon=2&foo=bar", path: id},
		{name: "missing required", query: "", path: id, wantErrs: []string{`missing@["query","lat"]`, `missing@["query","lon"]`}},
		{name: "unparsable number", query: "lat=north&lon=2", path: id, wantErrs: []string{`float_parsing@["query","lat"]`}},
		{name: "empty number", query: "lat=&lon=2", path: id, wantErrs: []string{`float_parsing@["query","lat"]`}},
		{name: "infinite number", query: "lat=1e999&lon=2", path: id, wantErrs: []string{`float_parsing@["query","lat"]`}},
		{name: "nan", query: "lat=NaN&lon=2", path: id, wantErrs: []string{`float_parsing@["query","lat"]`}},
		{name: "out of range", query: "lat=91&lon=-181", path: id, wantErrs: []string{`less_than_equal@["query","lat"]`, `greater_than_equal@["query","lon"]`}},
		{name: "radius zero", query: "lat=1&lon=2&radius=0", path: id, wantErrs: []string{`greater_than@["query","radius"]`}},
		{name: "bad enum in repeatable", query: "lat=1&lon=2&type=accident&type=meteor", path: id, wantErrs: []string{`enum@["query","type",1]`}},
		{name: "bad bool", query: "lat=1&lon=2&include_revoked=maybe", path: id, wantErrs: []string{`bool_parsing@["query","include_revoked"]`}},
		{name: "fractional int", query: "lat=1&lon=2&limit=1.5", path: id, wantErrs: []string{`int_parsing@["query","limit"]`}},
		{name: "int below minimum", query: "lat=1&lon=2&limit=0", path: id, wantErrs: []string{`greater_than_equal@["query","limit"]`}},
		{name: "bad path parameter", query: "lat=1&lon=2", path: "nope", wantErrs: []string{`string_pattern_mismatch@["path","event_id"]`}},
		{name: "every error at once", query: "lat=x&radius=-1&min_confidence=2", path: "nope", wantErrs: []string{
			`float_parsing@["query","lat"]`, `missing@["query","lon"]`, `greater_than@["query","radius"]`,
			`less_than_equal@["query","min_confidence"]`, `string_pattern_mismatch@["path","event_id"]`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			vals, errs := schema.ParseParams(sampleParams, q, func(string) string { return tc.path })
			got := brief(errs)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.wantErrs) {
				t.Fatalf("ParseParams(%q) errors = %v; want %v", tc.query, got, tc.wantErrs)
			}
			if tc.check != nil {
				tc.check(t, vals)
			}
		})
	}
}

func TestParseParamsMissingInputIsNull(t *testing.T) {
	t.Parallel()
	_, errs := schema.ParseParams(sampleParams[:1], url.Values{}, nil)
	if len(errs) != 1 || errs[0].Input != nil || errs[0].Msg != "Field required" {
		t.Errorf("errors = %+v; want one missing with input null", errs)
	}
}
