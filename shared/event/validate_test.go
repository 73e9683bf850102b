package event_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/schema"
)

// fullEvent is a valid EventIn using every field; its geometry starts at its lat/lon.
const fullEvent = `{"type":"road_damage","subtype":"pothole","lat":48.13743,"lon":11.57549,
	"geometry":{"type":"LineString","coordinates":[[11.57549,48.13743],[11.58,48.14]]},
	"heading":90,"road_ref":"A9","severity":"high","description":"deep pothole in lane 1",
	"occurred_at":"2024-05-01T09:55:00Z","client_event_id":"c-1","reporter_token":"veh.7"}`

// TestValidateEventIn covers every 422 cause of POST /v1/events in docs/api.md §7, with the
// Pydantic type and loc clients match on (docs/api.md §10.1).
func TestValidateEventIn(t *testing.T) {
	t.Parallel()
	now := t0
	geometry := func(coords []any) map[string]any {
		return map[string]any{"type": "LineString", "coordinates": coords}
	}
	cases := []struct {
		name  string
		edits map[string]any // applied to fullEvent; nil deletes
		body  any            // used instead of fullEvent when set
		want  []string
	}{
		{name: "every field valid", want: nil},
		{name: "only the required fields", body: map[string]any{"type": "accident", "lat": json.Number("1"), "lon": json.Number("2")}},
		{name: "all optional fields null",
			body: decode(t, `{"type":"accident","lat":1,"lon":2,"subtype":null,"geometry":null,"heading":null,"road_ref":null,
				"severity":null,"description":null,"occurred_at":null,"client_event_id":null,"reporter_token":null}`)},

		// docs/api.md §2.2: unknown fields are rejected; there is no environment field on input.
		{name: "unknown field", edits: map[string]any{"colour": "red"}, want: []string{`extra_forbidden@["body","colour"]`}},
		{name: "environment is not an input", edits: map[string]any{"environment": "sandbox"}, want: []string{`extra_forbidden@["body","environment"]`}},
		{name: "network-owned field", edits: map[string]any{"confirm_count": json.Number("9")}, want: []string{`extra_forbidden@["body","confirm_count"]`}},
		{name: "body not an object", body: []any{}, want: []string{`model_attributes_type@["body"]`}},

		// docs/api.md §2.2: type is one of the 13 (an Enum: Pydantic type enum).
		{name: "unknown type", edits: map[string]any{"type": "rockfall", "subtype": nil}, want: []string{`enum@["body","type"]`}},
		{name: "missing type", edits: map[string]any{"type": nil, "subtype": nil}, want: []string{`missing@["body","type"]`}},

		// docs/api.md §2.2: subtype pattern, and it must belong to the event's type.
		{name: "subtype under the wrong type", edits: map[string]any{"type": "accident"}, want: []string{`value_error@["body","subtype"]`}},
		{name: "subtype unknown everywhere", edits: map[string]any{"subtype": "crater"}, want: []string{`value_error@["body","subtype"]`}},
		{name: "subtype on a type without subtypes", edits: map[string]any{"type": "wrong_way_vehicle"}, want: []string{`value_error@["body","subtype"]`}},
		{name: "subtype pattern", edits: map[string]any{"subtype": "pot hole"}, want: []string{`string_pattern_mismatch@["body","subtype"]`}},
		{name: "subtype 65 characters", edits: map[string]any{"subtype": strings.Repeat("a", 65)}, want: []string{`string_pattern_mismatch@["body","subtype"]`}},
		{name: "subtype rule skipped when type is invalid", edits: map[string]any{"type": "rockfall"}, want: []string{`enum@["body","type"]`}},

		// docs/api.md §2.2: coordinate ranges.
		{name: "lat above 90", edits: map[string]any{"lat": json.Number("90.5"), "geometry": nil}, want: []string{`less_than_equal@["body","lat"]`}},
		{name: "lat below -90", edits: map[string]any{"lat": json.Number("-91"), "geometry": nil}, want: []string{`greater_than_equal@["body","lat"]`}},
		{name: "lon above 180", edits: map[string]any{"lon": json.Number("180.00001"), "geometry": nil}, want: []string{`less_than_equal@["body","lon"]`}},
		{name: "lon below -180", edits: map[string]any{"lon": json.Number("-181"), "geometry": nil}, want: []string{`greater_than_equal@["body","lon"]`}},
		{name: "bounds are inclusive", edits: map[string]any{"lat": json.Number("-90"), "lon": json.Number("180"), "geometry": nil}},
		{name: "lat as a string", edits: map[string]any{"lat": "48.1", "geometry": nil}, want: []string{`float_type@["body","lat"]`}},
		{name: "missing lon", edits: map[string]any{"lon": nil, "geometry": nil}, want: []string{`missing@["body","lon"]`}},
		{name: "geometry longitude out of range", edits: map[string]any{"geometry": geometry(append(positions(3, 11.57549, 48.13743), []any{json.Number("181"), json.Number("48.2")}))},
			want: []string{`less_than_equal@["body","geometry","coordinates",3,0]`}},
		{name: "geometry latitude out of range", edits: map[string]any{"geometry": geometry(append(positions(3, 11.57549, 48.13743), []any{json.Number("11.6"), json.Number("90.1")}))},
			want: []string{`less_than_equal@["body","geometry","coordinates",3,1]`}},
		{name: "geometry latitude below range", edits: map[string]any{"geometry": geometry(append(positions(1, 11.57549, 48.13743), []any{json.Number("11.6"), json.Number("-95")}))},
			want: []string{`greater_than_equal@["body","geometry","coordinates",1,1]`}},
		{name: "latitude 100 is a valid longitude but not a valid latitude", edits: map[string]any{
			"geometry": geometry([]any{[]any{json.Number("11.57549"), json.Number("48.13743")}, []any{json.Number("100"), json.Number("100")}})},
			want: []string{`less_than_equal@["body","geometry","coordinates",1,1]`}},
		{name: "latitude error not doubled with the schema's", edits: map[string]any{
			"geometry": geometry([]any{[]any{json.Number("11.57549"), json.Number("48.13743")}, []any{json.Number("10"), json.Number("200")}})},
			want: []string{`less_than_equal@["body","geometry","coordinates",1,1]`}},

		// docs/api.md §2.2: when present, lat/lon must equal the geometry's first point.
		{name: "lat/lon differing from geometry start", edits: map[string]any{"lat": json.Number("48.2")}, want: []string{`value_error@["body","geometry"]`}},
		{name: "geometry given in lat/lon order", edits: map[string]any{
			"geometry": geometry([]any{[]any{json.Number("48.13743"), json.Number("11.57549")}, []any{json.Number("48.14"), json.Number("11.58")}})},
			want: []string{`value_error@["body","geometry"]`}},
		{name: "start equal after rounding to 5 decimals", edits: map[string]any{"lat": json.Number("48.137431"), "lon": json.Number("11.575489")}},
		{name: "start rule skipped when lat is invalid", edits: map[string]any{"lat": json.Number("95")}, want: []string{`less_than_equal@["body","lat"]`}},
		{name: "start rule skipped when geometry is invalid", edits: map[string]any{"lat": json.Number("48"),
			"geometry": geometry(positions(1, 11.57549, 48.13743))}, want: []string{`too_short@["body","geometry","coordinates"]`}},

		// docs/api.md §2.2 and §8: 2 to 512 points, each exactly two numbers.
		{name: "geometry with 1 point", edits: map[string]any{"geometry": geometry(positions(1, 11.57549, 48.13743))},
			want: []string{`too_short@["body","geometry","coordinates"]`}},
		{name: "geometry with 2 points", edits: map[string]any{"geometry": geometry(positions(2, 11.57549, 48.13743))}},
		{name: "geometry with 512 points", edits: map[string]any{"geometry": geometry(positions(512, 11.57549, 48.13743))}},
		{name: "geometry with 513 points", edits: map[string]any{"geometry": geometry(positions(513, 11.57549, 48.13743))},
			want: []string{`too_long@["body","geometry","coordinates"]`}},
		{name: "position with three numbers", edits: map[string]any{"geometry": geometry([]any{
			[]any{json.Number("11.57549"), json.Number("48.13743")}, []any{json.Number("11.6"), json.Number("48.2"), json.Number("5")}})},
			want: []string{`too_long@["body","geometry","coordinates",1]`}},
		{name: "position with one number", edits: map[string]any{"geometry": geometry([]any{
			[]any{json.Number("11.57549"), json.Number("48.13743")}, []any{json.Number("11.6")}})},
			want: []string{`too_short@["body","geometry","coordinates",1]`}},
		{name: "geometry type defaults to LineString", edits: map[string]any{"geometry": map[string]any{"coordinates": positions(2, 11.57549, 48.13743)}}},
		{name: "geometry type other than LineString", edits: map[string]any{"geometry": map[string]any{"type": "Point", "coordinates": positions(2, 11.57549, 48.13743)}},
			want: []string{`literal_error@["body","geometry","type"]`}},
		{name: "unknown member in geometry", edits: map[string]any{"geometry": map[string]any{"coordinates": positions(2, 11.57549, 48.13743), "crs": "x"}},
			want: []string{`extra_forbidden@["body","geometry","crs"]`}},

		// docs/api.md §2.2: heading is an integer 0..359.
		{name: "heading 359", edits: map[string]any{"heading": json.Number("359")}},
		{name: "heading 360", edits: map[string]any{"heading": json.Number("360")}, want: []string{`less_than_equal@["body","heading"]`}},
		{name: "heading -1", edits: map[string]any{"heading": json.Number("-1")}, want: []string{`greater_than_equal@["body","heading"]`}},
		{name: "heading with a fraction", edits: map[string]any{"heading": json.Number("90.5")}, want: []string{`int_type@["body","heading"]`}},

		// docs/api.md §2.2 and §8: lengths and the severity vocabulary.
		{name: "road_ref 32 characters", edits: map[string]any{"road_ref": strings.Repeat("r", 32)}},
		{name: "road_ref 33 characters", edits: map[string]any{"road_ref": strings.Repeat("r", 33)}, want: []string{`string_too_long@["body","road_ref"]`}},
		{name: "description 280 characters", edits: map[string]any{"description": strings.Repeat("ü", 280)}},
		{name: "description 281 characters", edits: map[string]any{"description": strings.Repeat("d", 281)}, want: []string{`string_too_long@["body","description"]`}},
		{name: "unknown severity", edits: map[string]any{"severity": "extreme"}, want: []string{`enum@["body","severity"]`}},
		{name: "client_event_id pattern", edits: map[string]any{"client_event_id": "a/b"}, want: []string{`string_pattern_mismatch@["body","client_event_id"]`}},
		{name: "client_event_id empty", edits: map[string]any{"client_event_id": ""}, want: []string{`string_pattern_mismatch@["body","client_event_id"]`}},
		{name: "reporter_token pattern", edits: map[string]any{"reporter_token": "vehicle 7"}, want: []string{`string_pattern_mismatch@["body","reporter_token"]`}},

		// docs/api.md §2.2: occurred_at carries a timezone and is at most 300 s ahead.
		{name: "naive occurred_at", edits: map[string]any{"occurred_at": "2024-05-01T09:55:00"}, want: []string{`timezone_aware@["body","occurred_at"]`}},
		{name: "unparsable occurred_at", edits: map[string]any{"occurred_at": "yesterday"}, want: []string{`datetime_parsing@["body","occurred_at"]`}},
		{name: "occurred_at with an offset", edits: map[string]any{"occurred_at": "2024-05-01T11:55:00+02:00"}},
		{name: "occurred_at 299 s ahead", edits: map[string]any{"occurred_at": "2024-05-01T10:04:59Z"}},
		{name: "occurred_at 300 s ahead", edits: map[string]any{"occurred_at": "2024-05-01T10:05:00Z"}},
		{name: "occurred_at 301 s ahead", edits: map[string]any{"occurred_at": "2024-05-01T10:05:01Z"}, want: []string{`value_error@["body","occurred_at"]`}},
		{name: "occurred_at 300.5 s ahead", edits: map[string]any{"occurred_at": "2024-05-01T10:05:00.5Z"}, want: []string{`value_error@["body","occurred_at"]`}},
		{name: "occurred_at ahead by its offset", edits: map[string]any{"occurred_at": "2024-05-01T10:10:00-01:00"}, want: []string{`value_error@["body","occurred_at"]`}},

		// docs/api.md §10.1: every error in a payload is reported, cross-field rules included, in
		// the payload's field order with unknown members last.
		{name: "several errors at once", edits: map[string]any{
			"type": "accident", "lat": json.Number("48.2"), "heading": json.Number("400"),
			"road_ref": strings.Repeat("r", 33), "description": strings.Repeat("d", 281),
			"occurred_at": "2024-05-01T11:00:00Z", "environment": "live"},
			want: []string{
				`value_error@["body","subtype"]`,
				`value_error@["body","geometry"]`,
				`less_than_equal@["body","heading"]`,
				`string_too_long@["body","road_ref"]`,
				`string_too_long@["body","description"]`,
				`value_error@["body","occurred_at"]`,
				`extra_forbidden@["body","environment"]`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := tc.body
			if body == nil {
				body = object(t, fullEvent, tc.edits)
			}
			got := brief(event.ValidateEventIn(body, now))
			if !slices.Equal(got, tc.want) {
				t.Errorf("ValidateEventIn errors = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestValueErrorMessages checks the value_error items are well-formed (docs/api.md §10.1: type,
// loc, msg, input) and that a misplaced subtype names where it belongs (docs/api.md §7: "subtype
// under the wrong type").
func TestValueErrorMessages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		edits     map[string]any
		wantInput any
		wantInMsg []string
	}{
		{"subtype belongs elsewhere", map[string]any{"type": "accident", "subtype": "landslide"}, "landslide",
			[]string{"Value error, ", "'landslide'", "'accident'", "object_on_road"}},
		{"subtype unknown", map[string]any{"subtype": "crater"}, "crater",
			[]string{"'crater'", "'road_damage'", "pothole"}},
		{"geometry start", map[string]any{"lat": json.Number("48.2")}, nil,
			[]string{"first point", "48.2"}},
		{"future occurred_at", map[string]any{"occurred_at": "2024-05-01T12:00:00Z"}, "2024-05-01T12:00:00Z",
			[]string{"300 seconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := object(t, fullEvent, tc.edits)
			errs := event.ValidateEventIn(body, t0)
			if len(errs) != 1 {
				t.Fatalf("ValidateEventIn errors = %q; want one value_error", brief(errs))
			}
			e := errs[0]
			if e.Type != schema.ErrValue {
				t.Errorf("type = %q; want %q", e.Type, schema.ErrValue)
			}
			for _, frag := range tc.wantInMsg {
				if !strings.Contains(e.Msg, frag) {
					t.Errorf("msg = %q; want it to contain %q", e.Msg, frag)
				}
			}
			if tc.wantInput != nil && e.Input != tc.wantInput {
				t.Errorf("input = %#v; want %#v", e.Input, tc.wantInput)
			}
			if tc.wantInput == nil && e.Input == nil {
				t.Errorf("input = nil; want the offending value")
			}
		})
	}
}

// TestValidateRevisionIn covers the revision 422s of docs/api.md §7: unknown field, subtype under
// the stored type, coordinate out of range, lat/lon not matching the geometry start.
func TestValidateRevisionIn(t *testing.T) {
	t.Parallel()
	const full = `{"lat":48.13743,"lon":11.57549,"geometry":{"coordinates":[[11.57549,48.13743],[11.58,48.14]]},
		"severity":"low","subtype":"sinkhole"}`
	cases := []struct {
		name       string
		edits      map[string]any
		storedType string
		want       []string
	}{
		{name: "every field valid", storedType: "road_damage"},
		{name: "lat and lon alone", storedType: "road_damage", edits: map[string]any{"geometry": nil, "severity": nil, "subtype": nil}},
		{name: "type cannot be restated", storedType: "road_damage", edits: map[string]any{"type": "accident"}, want: []string{`extra_forbidden@["body","type"]`}},
		{name: "client_event_id cannot be restated", storedType: "road_damage", edits: map[string]any{"client_event_id": "x"}, want: []string{`extra_forbidden@["body","client_event_id"]`}},
		{name: "description is not restatable", storedType: "road_damage", edits: map[string]any{"description": "x"}, want: []string{`extra_forbidden@["body","description"]`}},
		{name: "subtype under the stored type", storedType: "object_on_road", want: []string{`value_error@["body","subtype"]`}},
		{name: "subtype rule skipped without a stored type", storedType: ""},
		{name: "subtype pattern", storedType: "road_damage", edits: map[string]any{"subtype": "sink hole"}, want: []string{`string_pattern_mismatch@["body","subtype"]`}},
		{name: "lat out of range", storedType: "road_damage", edits: map[string]any{"lat": json.Number("91"), "geometry": nil}, want: []string{`less_than_equal@["body","lat"]`}},
		{name: "lon out of range", storedType: "road_damage", edits: map[string]any{"lon": json.Number("-180.1"), "geometry": nil}, want: []string{`greater_than_equal@["body","lon"]`}},
		{name: "geometry latitude out of range", storedType: "road_damage", edits: map[string]any{"geometry": map[string]any{
			"coordinates": []any{[]any{json.Number("11.57549"), json.Number("48.13743")}, []any{json.Number("11.6"), json.Number("-90.5")}}}},
			want: []string{`greater_than_equal@["body","geometry","coordinates",1,1]`}},
		{name: "lat/lon not matching geometry start", storedType: "road_damage", edits: map[string]any{"lon": json.Number("11.6")}, want: []string{`value_error@["body","geometry"]`}},
		{name: "missing lat and lon", storedType: "road_damage", edits: map[string]any{"lat": nil, "lon": nil, "geometry": nil},
			want: []string{`missing@["body","lat"]`, `missing@["body","lon"]`}},
		{name: "unknown severity", storedType: "road_damage", edits: map[string]any{"severity": "none"}, want: []string{`enum@["body","severity"]`}},
		{name: "several errors at once", storedType: "accident", edits: map[string]any{"lat": json.Number("48.2"), "heading": json.Number("1")},
			want: []string{`value_error@["body","geometry"]`, `value_error@["body","subtype"]`, `extra_forbidden@["body","heading"]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := brief(event.ValidateRevisionIn(object(t, full, tc.edits), tc.storedType))
			if !slices.Equal(got, tc.want) {
				t.Errorf("ValidateRevisionIn errors = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestValidateSignalIn covers the signal 422s of docs/api.md §7 (action other than confirm or deny,
// unknown field, coordinate out of range) and the both-or-neither position of §10.2.
func TestValidateSignalIn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"confirm", `{"action":"confirm"}`, nil},
		{"deny with token and position", `{"action":"deny","reporter_token":"veh-1","lat":48.1,"lon":11.5}`, nil},
		{"position null on both", `{"action":"deny","lat":null,"lon":null}`, nil},
		{"unknown action", `{"action":"upvote"}`, []string{`enum@["body","action"]`}},
		{"action not a string", `{"action":1}`, []string{`enum@["body","action"]`}},
		{"missing action", `{}`, []string{`missing@["body","action"]`}},
		{"unknown field", `{"action":"confirm","weight":2}`, []string{`extra_forbidden@["body","weight"]`}},
		{"lat out of range", `{"action":"confirm","lat":91,"lon":11.5}`, []string{`less_than_equal@["body","lat"]`}},
		{"lon out of range", `{"action":"confirm","lat":48,"lon":-200}`, []string{`greater_than_equal@["body","lon"]`}},
		{"lat without lon", `{"action":"confirm","lat":48.1}`, []string{`value_error@["body"]`}},
		{"lon without lat", `{"action":"confirm","lon":11.5}`, []string{`value_error@["body"]`}},
		{"lat with a null lon", `{"action":"confirm","lat":48.1,"lon":null}`, []string{`value_error@["body"]`}},
		{"reporter_token pattern", `{"action":"confirm","reporter_token":"a b"}`, []string{`string_pattern_mismatch@["body","reporter_token"]`}},
		{"several errors at once", `{"action":"maybe","lat":95,"extra":true}`,
			[]string{`enum@["body","action"]`, `less_than_equal@["body","lat"]`, `extra_forbidden@["body","extra"]`, `value_error@["body"]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := brief(event.ValidateSignalIn(decode(t, tc.body)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("ValidateSignalIn(%s) errors = %q; want %q", tc.body, got, tc.want)
			}
		})
	}
}

// TestStructValidate checks the Validate methods on Go values: the path a handler takes
// after decoding a body, and a guard for events built in code.
func TestStructValidate(t *testing.T) {
	t.Parallel()
	cet := time.FixedZone("CET", 3600)
	cases := []struct {
		name string
		err  error
		want []string
	}{
		{"valid event", event.EventIn{Type: "accident", Lat: 1, Lon: 2, OccurredAt: ptr(t0.In(cet))}.Validate(t0), nil},
		{"geometry without type", event.EventIn{Type: "congestion", Lat: 1, Lon: 2,
			Geometry: &event.LineString{Coordinates: [][2]float64{{2, 1}, {2.1, 1.1}}}}.Validate(t0), nil},
		{"event breaking rules", event.EventIn{Type: "accident", Subtype: ptr("pothole"), Lat: 100, Lon: 2,
			OccurredAt: ptr(t0.Add(time.Hour))}.Validate(t0),
			[]string{`value_error@["body","subtype"]`, `less_than_equal@["body","lat"]`, `value_error@["body","occurred_at"]`}},
		{"geometry latitude", event.EventIn{Type: "congestion", Lat: 1, Lon: 2,
			Geometry: &event.LineString{Coordinates: [][2]float64{{2, 1}, {2.1, 91}}}}.Validate(t0),
			[]string{`less_than_equal@["body","geometry","coordinates",1,1]`}},
		{"valid revision", event.RevisionIn{Lat: 1, Lon: 2, Subtype: ptr("queue")}.Validate("congestion"), nil},
		{"revision subtype", event.RevisionIn{Lat: 1, Lon: 2, Subtype: ptr("queue")}.Validate("accident"),
			[]string{`value_error@["body","subtype"]`}},
		{"valid signal", event.SignalIn{Action: event.ActionDeny, Lat: ptr(1.0), Lon: ptr(2.0)}.Validate(), nil},
		{"signal half a position", event.SignalIn{Action: event.ActionDeny, Lon: ptr(2.0)}.Validate(),
			[]string{`value_error@["body"]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.want == nil {
				if tc.err != nil {
					t.Errorf("Validate() = %v; want nil", tc.err)
				}
				return
			}
			got := brief(validationErrors(t, tc.err))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Validate() errors = %q; want %q", got, tc.want)
			}
		})
	}
}
