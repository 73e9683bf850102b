package schema

import (
	"fmt"
	"strings"
)

// Error types of contract section 1 (Pydantic v2 names). Clients match on these and on loc;
// the message is prose.
const (
	ErrMissing             = "missing"
	ErrExtraForbidden      = "extra_forbidden"
	ErrJSONInvalid         = "json_invalid"
	ErrModelAttributesType = "model_attributes_type"
	ErrStringType          = "string_type"
	ErrIntType             = "int_type"
	ErrIntParsing          = "int_parsing"
	ErrFloatType           = "float_type"
	ErrFloatParsing        = "float_parsing"
	ErrBoolParsing         = "bool_parsing"
	ErrListType            = "list_type"
	ErrStringTooShort      = "string_too_short"
	ErrStringTooLong       = "string_too_long"
	ErrStringPattern       = "string_pattern_mismatch"
	ErrTooShort            = "too_short"
	ErrTooLong             = "too_long"
	ErrGreaterThan         = "greater_than"
	ErrGreaterThanEqual    = "greater_than_equal"
	ErrLessThanEqual       = "less_than_equal"
	ErrLiteral             = "literal_error"
	ErrEnum                = "enum"
	ErrDatetimeType        = "datetime_type"
	ErrDatetimeParsing     = "datetime_parsing"
	ErrTimezoneAware       = "timezone_aware"
	ErrValue               = "value_error"
)

// ValidationError is one item of a 422 validation body (contract section 1, spec 7).
type ValidationError struct {
	// Type is one of the Err constants.
	Type string `json:"type"`
	// Loc is the path to the value: "body", "query" or "path" first, then member names
	// (strings) and array indexes (ints).
	Loc []any `json:"loc"`
	// Msg is Pydantic's wording; clients must not match on it.
	Msg string `json:"msg"`
	// Input is the offending value; for a missing member it is the enclosing object, as
	// Pydantic reports it.
	Input any `json:"input"`
	// Ctx holds the limit that was broken (for example {"max_length": 32}).
	Ctx map[string]any `json:"ctx,omitempty"`
}

// Errors is the full list of validation errors of one request. It is an error, so domain
// code can return cross-field failures and the HTTP layer answers them with 422.
type Errors []ValidationError

// Error summarises the list for logs.
func (e Errors) Error() string {
	if len(e) == 0 {
		return "schema: no validation errors"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schema: %d validation error(s): ", len(e))
	for i, v := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		if i == 3 {
			b.WriteString("...")
			break
		}
		fmt.Fprintf(&b, "%s at %v", v.Type, v.Loc)
	}
	return b.String()
}

// ValueError reports a failed cross-field rule (contract section 1, value_error): geometry
// start differing from lat/lon, occurred_at too far ahead, subtype under the wrong type.
// msg is a sentence without a trailing period, as Pydantic prints "Value error, <msg>".
func ValueError(loc []any, msg string, input any) ValidationError {
	return ValidationError{
		Type:  ErrValue,
		Loc:   loc,
		Msg:   "Value error, " + msg,
		Input: input,
		Ctx:   map[string]any{"error": msg},
	}
}

// Loc builds a location path, for example Loc("body", "geometry", "coordinates", 0).
func Loc(parts ...any) []any { return parts }

// at returns loc extended by part, never sharing the backing array with loc (every error
// keeps its own path).
func at(loc []any, part any) []any {
	out := make([]any, len(loc), len(loc)+1)
	copy(out, loc)
	return append(out, part)
}

func cloneLoc(loc []any) []any {
	out := make([]any, len(loc))
	copy(out, loc)
	return out
}
