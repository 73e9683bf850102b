package schema

import (
	"encoding/json"
	"strconv"
	"time"
)

// Normalize returns a copy of v, a value that passed Validate, in the form the Go structs
// decode without surprises:
//   - absent optional members that have a Default get it (as Pydantic fills defaults);
//   - integers written as integral floats (3.0, 1e2) become plain integers, which
//     encoding/json would otherwise refuse to put into an int;
//   - date-times become RFC 3339 in UTC with a Z suffix (docs/api.md §10.1: UTC, Z).
//
// v is not modified. Normalize on a value that did not pass Validate leaves what it does not
// understand as it is.
func (s *Schema) Normalize(v any) any {
	if v == nil {
		return nil
	}
	if len(s.AnyOf) > 0 {
		for _, alt := range s.AnyOf {
			if len(alt.Validate(v, nil)) == 0 {
				return alt.Normalize(v)
			}
		}
		return v
	}
	switch s.Type {
	case TypeObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(obj)+len(s.Properties))
		for k, val := range obj {
			if p := s.property(k); p != nil {
				out[k] = p.Schema.Normalize(val)
			} else {
				out[k] = val
			}
		}
		for _, p := range s.Properties {
			if _, present := obj[p.Name]; !present && p.Schema.Default != nil {
				out[p.Name] = p.Schema.Default
			}
		}
		return out
	case TypeArray:
		arr, ok := v.([]any)
		if !ok || s.Items == nil {
			return v
		}
		out := make([]any, len(arr))
		for i, item := range arr {
			out[i] = s.Items.Normalize(item)
		}
		return out
	case TypeInteger:
		if text, ok := numberText(v); ok {
			if n, _, ok := parseInteger(text); ok {
				return json.Number(strconv.FormatInt(n, 10))
			}
		}
	case TypeString:
		if str, ok := v.(string); ok && s.Format == FormatDateTime {
			if t, aware, problem := ParseDateTime(str); problem == "" && aware {
				return t.UTC().Format(time.RFC3339Nano)
			}
		}
	}
	return v
}
