package schema_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/schema"
)

// docs/api.md §11.1: an answer lists the first MaxListed errors, then one value_error saying how
// many more were found, located at the root of the first one left out.
func TestListedKeepsTheFirstErrorsAndCountsTheRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		found     int
		wantItems int
		wantRest  string
	}{
		{found: 1, wantItems: 1},
		{found: schema.MaxListed, wantItems: schema.MaxListed},
		{found: schema.MaxListed + 1, wantItems: schema.MaxListed + 1, wantRest: "1 more error was found and not listed"},
		{found: 500, wantItems: schema.MaxListed + 1, wantRest: fmt.Sprintf("%d more errors were found and not listed", 500-schema.MaxListed)},
	} {
		var errs schema.Errors
		for i := range tc.found {
			errs = append(errs, schema.ValidationError{Type: schema.ErrEnum, Loc: schema.Loc("query", "type", i), Msg: "m", Input: fmt.Sprint(i)})
		}
		got := errs.Listed()
		if len(got) != tc.wantItems {
			t.Fatalf("%d errors listed as %d items; want %d", tc.found, len(got), tc.wantItems)
		}
		for i := range min(tc.found, schema.MaxListed) {
			if got[i].Input != fmt.Sprint(i) || fmt.Sprint(got[i].Loc) != fmt.Sprint(errs[i].Loc) {
				t.Errorf("%d errors: item %d = %+v; want error %d as found", tc.found, i, got[i], i)
			}
		}
		if tc.wantRest == "" {
			continue
		}
		rest := got[len(got)-1]
		if rest.Type != schema.ErrValue || fmt.Sprint(rest.Loc) != "[query]" || rest.Msg != "Value error, "+tc.wantRest ||
			rest.Ctx["omitted"] != tc.found-schema.MaxListed || rest.Input != nil {
			t.Errorf("%d errors: last item = %+v; want value_error at [query], %q, ctx.omitted %d, input null",
				tc.found, rest, tc.wantRest, tc.found-schema.MaxListed)
		}
	}
}

// docs/api.md §11.1: an input over MaxEchoedInput bytes of JSON is shortened, a string to its
// first EchoedChars characters, anything else to null; the errors given are not changed.
func TestListedShortensLongInputs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 300)
	bigObject := map[string]any{"description": strings.Repeat("x", schema.MaxEchoedInput)}
	bigList := make([]any, 200)
	for i := range bigList {
		bigList[i] = []any{json.Number("11.5"), json.Number("48.1")}
	}
	for _, tc := range []struct {
		name        string
		input, want any
	}{
		{"short string kept", "accident", "accident"},
		{"small object kept", map[string]any{"lat": json.Number("91")}, map[string]any{"lat": json.Number("91")}},
		{"null kept", nil, nil},
		{"long string cut by characters", long, strings.Repeat("é", schema.EchoedChars) + "…"},
		{"long number dropped", json.Number(strings.Repeat("9", 600)), nil},
		{"large object dropped", bigObject, nil},
		{"large list dropped", bigList, nil},
	} {
		errs := schema.Errors{{Type: schema.ErrMissing, Loc: schema.Loc("body", "x"), Msg: "m", Input: tc.input}}
		got := errs.Listed()[0].Input
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: echoed %.80v; want %.80v", tc.name, got, tc.want)
		}
		if fmt.Sprint(errs[0].Input) != fmt.Sprint(tc.input) {
			t.Errorf("%s: Listed changed the error it was given", tc.name)
		}
	}
}
