package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Validation follows docs/api.md §10.1: every error of a payload is reported, the schema's and the
// cross-field rules' together. The cross-field rules are value_error items (schema.ValueError)
// located where a Pydantic field validator would put them:
//
//   - geometry start differs from lat/lon: ["body","geometry"];
//   - occurred_at more than 300 s ahead:   ["body","occurred_at"];
//   - subtype not under the type:          ["body","subtype"];
//   - signal lat without lon or the reverse: ["body"] (a rule of the whole payload).
//
// A rule is checked only when every field it reads is itself valid, so one mistake is not
// reported twice.

// bodyLoc is the root of every payload error (docs/api.md §10.1).
func bodyLoc(parts ...any) []any { return append([]any{"body"}, parts...) }

// ValidateEventIn validates a decoded POST /v1/events body (a JSON value decoded with UseNumber, as
// schema.Validate takes it) against EventInSchema and the cross-field rules of docs/api.md §2.2,
// with now as the server's clock for the occurred_at slack. It returns every error, or nil.
func ValidateEventIn(body any, now time.Time) schema.Errors {
	_, errs := DecodeEventIn(body, now)
	return errs
}

// DecodeEventIn is ValidateEventIn that also returns the body decoded and normalised, which is
// only complete when there is no error.
func DecodeEventIn(body any, now time.Time) (EventIn, schema.Errors) {
	var in EventIn
	errs := EventInSchema.Validate(body, bodyLoc())
	obj, ok := body.(map[string]any)
	if !ok {
		return in, errs
	}
	errs = append(errs, checkPositionLatitudes(obj, errs)...)
	valid := decodeValid(EventInSchema, obj, errs, &in)
	if valid["lat"] && valid["lon"] && valid["geometry"] {
		if e := checkGeometryStart(in.Lat, in.Lon, in.Geometry, obj["geometry"]); e != nil {
			errs = append(errs, *e)
		}
	}
	if valid["occurred_at"] && in.OccurredAt != nil {
		if in.OccurredAt.Sub(now) > FutureSlack {
			errs = append(errs, schema.ValueError(bodyLoc("occurred_at"),
				fmt.Sprintf("occurred_at must not be more than %d seconds in the future", int(FutureSlack.Seconds())),
				obj["occurred_at"]))
		}
	}
	if valid["type"] && valid["subtype"] && in.Subtype != nil {
		if e := checkSubtype(in.Type, *in.Subtype, "type"); e != nil {
			errs = append(errs, *e)
		}
	}
	return in, ordered(EventInSchema, errs)
}

// ValidateRevisionIn validates a decoded revision body (docs/api.md §2.4, §10.2). storedType is
// the type of the event being revised, which the subtype must belong to (docs/api.md §7: "subtype
// under the stored type"); pass "" to skip that rule before the event has been read, as
// Revise checks it again.
func ValidateRevisionIn(body any, storedType string) schema.Errors {
	_, errs := DecodeRevisionIn(body, storedType)
	return errs
}

// DecodeRevisionIn is ValidateRevisionIn that also returns the body decoded and normalised,
// which is only complete when there is no error.
func DecodeRevisionIn(body any, storedType string) (RevisionIn, schema.Errors) {
	var in RevisionIn
	errs := RevisionInSchema.Validate(body, bodyLoc())
	obj, ok := body.(map[string]any)
	if !ok {
		return in, errs
	}
	errs = append(errs, checkPositionLatitudes(obj, errs)...)
	valid := decodeValid(RevisionInSchema, obj, errs, &in)
	if valid["lat"] && valid["lon"] && valid["geometry"] {
		if e := checkGeometryStart(in.Lat, in.Lon, in.Geometry, obj["geometry"]); e != nil {
			errs = append(errs, *e)
		}
	}
	if storedType != "" && valid["subtype"] && in.Subtype != nil {
		if e := checkSubtype(storedType, *in.Subtype, "the event's type"); e != nil {
			errs = append(errs, *e)
		}
	}
	return in, ordered(RevisionInSchema, errs)
}

// ValidateSignalIn validates a decoded signal body (docs/api.md §2.5, §10.2): the reporter
// position is both lat and lon or neither (docs/api.md §10.2), a value_error at ["body"].
func ValidateSignalIn(body any) schema.Errors {
	errs := SignalInSchema.Validate(body, bodyLoc())
	obj, ok := body.(map[string]any)
	if !ok {
		return errs
	}
	if (obj["lat"] == nil) != (obj["lon"] == nil) {
		errs = append(errs, schema.ValueError(bodyLoc(),
			"lat and lon give the reporter position together: send both or neither", obj))
	}
	return ordered(SignalInSchema, errs)
}

// Validate checks a Go-built or decoded EventIn with ValidateEventIn. It returns nil or
// schema.Errors (which the HTTP layer answers with 422); it never returns a typed nil.
func (in EventIn) Validate(now time.Time) error {
	v, err := toJSONValue(in)
	if err != nil {
		return fmt.Errorf("event: validate EventIn: %w", err)
	}
	return asError(ValidateEventIn(v, now))
}

// Validate checks a RevisionIn with ValidateRevisionIn against the stored type.
func (in RevisionIn) Validate(storedType string) error {
	v, err := toJSONValue(in)
	if err != nil {
		return fmt.Errorf("event: validate RevisionIn: %w", err)
	}
	return asError(ValidateRevisionIn(v, storedType))
}

// Validate checks a SignalIn with ValidateSignalIn.
func (in SignalIn) Validate() error {
	v, err := toJSONValue(in)
	if err != nil {
		return fmt.Errorf("event: validate SignalIn: %w", err)
	}
	return asError(ValidateSignalIn(v))
}

func asError(errs schema.Errors) error {
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// toJSONValue turns a payload struct into the generic JSON value schema.Validate reads.
// Geometry type is defaulted first, as decoding would have done. A Go time.Time always has a
// zone, so a struct cannot carry a naive occurred_at.
func toJSONValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	if obj, ok := out.(map[string]any); ok {
		if g, ok := obj["geometry"].(map[string]any); ok && g["type"] == "" {
			g["type"] = GeometryType
		}
	}
	return out, nil
}

// checkPositionLatitudes applies the latitude bound to the second member of every geometry
// position (see positionLatitude), skipping positions the schema already faulted.
func checkPositionLatitudes(obj map[string]any, prior schema.Errors) schema.Errors {
	g, ok := obj["geometry"].(map[string]any)
	if !ok {
		return nil
	}
	coords, ok := g["coordinates"].([]any)
	if !ok || len(coords) > MaxPoints { // an oversized list is reported by its length alone
		return nil
	}
	var errs schema.Errors
	for i, p := range coords {
		pos, ok := p.([]any)
		if !ok || len(pos) != 2 {
			continue
		}
		loc := bodyLoc("geometry", "coordinates", i, 1)
		if hasErrorUnder(prior, loc) {
			continue
		}
		errs = append(errs, positionLatitude.Validate(pos[1], loc)...)
	}
	return errs
}

// checkGeometryStart checks that lat and lon, when present, are the first point of the
// geometry (docs/api.md §2.2), compared after the 5-decimal rounding both sides get on write.
func checkGeometryStart(lat, lon float64, g *LineString, input any) *schema.ValidationError {
	if g == nil || len(g.Coordinates) == 0 {
		return nil
	}
	first := g.Coordinates[0]
	if geo.Round5(first[0]) == geo.Round5(lon) && geo.Round5(first[1]) == geo.Round5(lat) {
		return nil
	}
	e := schema.ValueError(bodyLoc("geometry"), fmt.Sprintf(
		"the first point of geometry [%s, %s] must equal lon %s, lat %s",
		formatCoord(first[0]), formatCoord(first[1]), formatCoord(lon), formatCoord(lat)), input)
	return &e
}

// checkSubtype checks that the subtype belongs to the event's type (docs/api.md §2.2). The
// message names the types the subtype does belong to, when there are any, so the publisher
// can fix the right field.
func checkSubtype(typ, subtype, typeWord string) *schema.ValidationError {
	if taxonomy.HasSubtype(typ, subtype) {
		return nil
	}
	msg := fmt.Sprintf("subtype '%s' does not belong to %s '%s'", subtype, typeWord, typ)
	if elsewhere := taxonomy.TypesWithSubtype(subtype); len(elsewhere) > 0 {
		msg += fmt.Sprintf("; it belongs to %s", strings.Join(elsewhere, ", "))
	} else if t, ok := taxonomy.Lookup(typ); ok {
		if len(t.Subtypes) == 0 {
			msg += "; that type has no subtypes"
		} else {
			msg += fmt.Sprintf("; its subtypes are %s", strings.Join(t.Subtypes, ", "))
		}
	}
	e := schema.ValueError(bodyLoc("subtype"), msg, subtype)
	return &e
}

func formatCoord(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// decodeValid decodes into out the members of obj that are declared by s and have no error,
// after schema normalisation (defaults, integral numbers, UTC date-times), and reports which
// properties are valid. An absent optional property is valid; an absent required one is not.
func decodeValid(s *schema.Schema, obj map[string]any, errs schema.Errors, out any) map[string]bool {
	norm, _ := s.Normalize(obj).(map[string]any)
	valid := make(map[string]bool, len(s.Properties))
	keep := make(map[string]any, len(s.Properties))
	for _, p := range s.Properties {
		if hasErrorUnder(errs, bodyLoc(p.Name)) {
			continue
		}
		v, present := norm[p.Name]
		if !present && p.Required {
			continue
		}
		valid[p.Name] = true
		if present {
			keep[p.Name] = v
		}
	}
	if err := assign(out, keep); err != nil {
		// Unreachable for values that passed their schema; without a decoded value no
		// cross-field rule can run, and the schema errors still stand.
		return map[string]bool{}
	}
	return valid
}

// hasErrorUnder reports whether an error is located at loc or below it.
func hasErrorUnder(errs schema.Errors, loc []any) bool {
	for _, e := range errs {
		if len(e.Loc) >= len(loc) && slices.Equal(e.Loc[:len(loc)], loc) {
			return true
		}
	}
	return false
}

// ordered sorts errors by the declaration order of the top-level member they concern, the
// order Pydantic reports them in; unknown members and whole-body errors come last. The sort
// is stable, so errors of one member keep their order.
func ordered(s *schema.Schema, errs schema.Errors) schema.Errors {
	rank := func(e schema.ValidationError) int {
		if len(e.Loc) < 2 {
			return len(s.Properties) + 1
		}
		name, _ := e.Loc[1].(string)
		for i, p := range s.Properties {
			if p.Name == name {
				return i
			}
		}
		return len(s.Properties)
	}
	slices.SortStableFunc(errs, func(a, b schema.ValidationError) int { return rank(a) - rank(b) })
	return errs
}
