package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error types of docs/api.md §10.1 (Pydantic v2 names). Clients match on these and on loc;
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

// ValidationError is one item of a 422 validation body (docs/api.md §10.1, §7).
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

// Bounds of a validation answer (docs/api.md §11.1): without them a request with thousands of
// bad values got an answer of megabytes, each error echoing its input.
const (
	// MaxListed is the most errors an answer lists, the first ones found.
	MaxListed = 20
	// MaxEchoedInput is the longest input an error echoes, in bytes of JSON text. A longer
	// string is cut to its first EchoedChars characters followed by "…"; any other longer
	// value (an object, a list, a number of many digits) is echoed as null.
	MaxEchoedInput = 512
	// EchoedChars is how much of a long string input is echoed.
	EchoedChars = 100
)

// Listed returns the errors as an answer lists them (docs/api.md §11.1): the first MaxListed,
// each with its input cut to MaxEchoedInput, and, when more were found, one more value_error
// at the root of the first one left out ("body", "query" or "path") whose ctx.omitted says
// how many were left out. e is not modified.
func (e Errors) Listed() Errors {
	n := min(len(e), MaxListed)
	out := make(Errors, n, n+1)
	for i := range n {
		out[i] = e[i]
		out[i].Input = echoed(e[i].Input)
	}
	if omitted := len(e) - n; omitted > 0 {
		root := any("body")
		if loc := e[n].Loc; len(loc) > 0 {
			root = loc[0]
		}
		msg := fmt.Sprintf("%d more errors were found and not listed", omitted)
		if omitted == 1 {
			msg = "1 more error was found and not listed"
		}
		rest := ValueError([]any{root}, msg, nil)
		rest.Ctx["omitted"] = omitted
		out = append(out, rest)
	}
	return out
}

// echoed is v as an error echoes it, at most MaxEchoedInput bytes of JSON.
func echoed(v any) any {
	b, err := json.Marshal(v)
	if err != nil || len(b) <= MaxEchoedInput {
		// A value that cannot be encoded is left to the writer, which drops it.
		return v
	}
	s, ok := v.(string)
	if !ok {
		return nil
	}
	cut, chars := 0, 0
	for cut < len(s) && chars < EchoedChars {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
		chars++
	}
	return s[:cut] + "…"
}

// ValueError reports a failed cross-field rule (docs/api.md §10.1, value_error): geometry
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
