package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Validate checks v, a JSON value decoded with json.Decoder.UseNumber (objects as
// map[string]any, arrays as []any, numbers as json.Number), and returns every error found,
// each located under loc (for a request body, loc is ["body"]).
//
// JSON bodies are strict: a string is never taken for a number or a boolean, and true/false
// are not numbers. Objects reject unknown members unless AdditionalProperties is set. For a
// scalar the first broken constraint is reported (as Pydantic does); for containers every
// member and element is checked. Errors come in declaration order; unknown members come last,
// sorted by name.
func (s *Schema) Validate(v any, loc []any) Errors {
	var errs Errors
	s.validate(v, cloneLoc(loc), &errs)
	return errs
}

func (s *Schema) validate(v any, loc []any, errs *Errors) {
	if v == nil {
		if s.Nullable || s.isAny() {
			return
		}
		*errs = append(*errs, s.typeError(nil, loc))
		return
	}
	if len(s.AnyOf) > 0 {
		s.validateAnyOf(v, loc, errs)
		return
	}
	if s.Const != nil {
		if !constEqual(s.Const, v) {
			expected := repr(s.Const)
			*errs = append(*errs, ValidationError{Type: ErrLiteral, Loc: loc, Msg: "Input should be " + expected,
				Input: v, Ctx: map[string]any{"expected": expected}})
		}
		return
	}
	if len(s.Enum) > 0 {
		str, ok := v.(string)
		if !ok || !contains(s.Enum, str) {
			expected := expectedList(s.Enum)
			*errs = append(*errs, ValidationError{Type: ErrEnum, Loc: loc, Msg: "Input should be " + expected,
				Input: v, Ctx: map[string]any{"expected": expected}})
		}
		return
	}
	switch s.Type {
	case TypeAny:
	case TypeObject:
		s.validateObject(v, loc, errs)
	case TypeArray:
		s.validateArray(v, loc, errs)
	case TypeString:
		s.validateString(v, loc, errs)
	case TypeInteger:
		s.validateInteger(v, loc, errs)
	case TypeNumber:
		s.validateNumber(v, loc, errs)
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			*errs = append(*errs, s.typeError(v, loc))
		}
	default:
		panic(fmt.Sprintf("schema: unknown type %q", s.Type))
	}
}

func (s *Schema) isAny() bool {
	return s.Type == TypeAny && len(s.AnyOf) == 0 && s.Const == nil && len(s.Enum) == 0
}

// typeError is the error for a value of the wrong JSON type (null included).
func (s *Schema) typeError(v any, loc []any) ValidationError {
	e := ValidationError{Loc: loc, Input: v}
	switch {
	case s.Const != nil:
		e.Type, e.Msg = ErrLiteral, "Input should be "+repr(s.Const)
		e.Ctx = map[string]any{"expected": repr(s.Const)}
	case len(s.Enum) > 0:
		e.Type, e.Msg = ErrEnum, "Input should be "+expectedList(s.Enum)
		e.Ctx = map[string]any{"expected": expectedList(s.Enum)}
	case s.Type == TypeObject:
		// FastAPI validates bodies with from_attributes, so Pydantic names this error
		// model_attributes_type at every depth.
		e.Type, e.Msg = ErrModelAttributesType, "Input should be a valid dictionary or object to extract fields from"
	case s.Type == TypeArray:
		e.Type, e.Msg = ErrListType, "Input should be a valid list"
	case s.Type == TypeString && s.Format == FormatDateTime:
		e.Type, e.Msg = ErrDatetimeType, "Input should be a valid datetime"
	case s.Type == TypeString:
		e.Type, e.Msg = ErrStringType, "Input should be a valid string"
	case s.Type == TypeInteger:
		e.Type, e.Msg = ErrIntType, "Input should be a valid integer"
	case s.Type == TypeNumber:
		e.Type, e.Msg = ErrFloatType, "Input should be a valid number"
	case s.Type == TypeBoolean:
		// The list of docs/api.md §10.1 has no bool_type; bool_parsing is the nearest name in it.
		e.Type, e.Msg = ErrBoolParsing, "Input should be a valid boolean, unable to interpret input"
	default:
		e.Type, e.Msg = ErrValue, "Value error, unexpected value"
	}
	return e
}

func (s *Schema) validateAnyOf(v any, loc []any, errs *Errors) {
	if obj, ok := v.(map[string]any); ok && s.Discriminator != "" {
		// The alternative the discriminator names is the one whose errors the caller needs.
		for _, alt := range s.AnyOf {
			if constEqual(alt.property(s.Discriminator).Schema.Const, obj[s.Discriminator]) {
				alt.validate(v, loc, errs)
				return
			}
		}
	}
	var best Errors
	for i, alt := range s.AnyOf {
		var got Errors
		alt.validate(v, loc, &got)
		if len(got) == 0 {
			return
		}
		if i == 0 || len(got) < len(best) {
			best = got
		}
	}
	*errs = append(*errs, best...)
}

func (s *Schema) validateObject(v any, loc []any, errs *Errors) {
	obj, ok := v.(map[string]any)
	if !ok {
		*errs = append(*errs, s.typeError(v, loc))
		return
	}
	for _, p := range s.Properties {
		val, present := obj[p.Name]
		if !present {
			if p.Required {
				*errs = append(*errs, ValidationError{Type: ErrMissing, Loc: at(loc, p.Name), Msg: "Field required", Input: obj})
			}
			continue
		}
		p.Schema.validate(val, at(loc, p.Name), errs)
	}
	if s.AdditionalProperties {
		return
	}
	var extra []string
	for name := range obj {
		if s.property(name) == nil {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		*errs = append(*errs, ValidationError{Type: ErrExtraForbidden, Loc: at(loc, name),
			Msg: "Extra inputs are not permitted", Input: obj[name]})
	}
}

func (s *Schema) property(name string) *Property {
	for i := range s.Properties {
		if s.Properties[i].Name == name {
			return &s.Properties[i]
		}
	}
	return nil
}

func (s *Schema) validateArray(v any, loc []any, errs *Errors) {
	arr, ok := v.([]any)
	if !ok {
		*errs = append(*errs, s.typeError(v, loc))
		return
	}
	n := len(arr)
	if s.MaxItems != nil && n > *s.MaxItems {
		// Like Pydantic, stop at the length: the elements of an oversized list are not
		// checked one by one (it also bounds the size of the answer).
		*errs = append(*errs, ValidationError{Type: ErrTooLong, Loc: loc,
			Msg:   fmt.Sprintf("List should have at most %d %s after validation, not %d", *s.MaxItems, plural(*s.MaxItems, "item"), n),
			Input: v, Ctx: map[string]any{"field_type": "List", "max_length": *s.MaxItems, "actual_length": n}})
		return
	}
	if s.Items != nil {
		for i, item := range arr {
			s.Items.validate(item, at(loc, i), errs)
		}
	}
	if s.MinItems != nil && n < *s.MinItems {
		*errs = append(*errs, ValidationError{Type: ErrTooShort, Loc: loc,
			Msg:   fmt.Sprintf("List should have at least %d %s after validation, not %d", *s.MinItems, plural(*s.MinItems, "item"), n),
			Input: v, Ctx: map[string]any{"field_type": "List", "min_length": *s.MinItems, "actual_length": n}})
	}
}

func (s *Schema) validateString(v any, loc []any, errs *Errors) {
	str, ok := v.(string)
	if !ok {
		*errs = append(*errs, s.typeError(v, loc))
		return
	}
	if str == "" && s.AllowEmpty {
		return
	}
	switch s.Format {
	case FormatDateTime:
		if e := checkDateTime(str, loc); e != nil {
			*errs = append(*errs, *e)
		}
		return
	case FormatDate:
		if _, err := time.Parse(time.DateOnly, str); err != nil || len(str) != len(time.DateOnly) {
			// date_parsing is not in the list of docs/api.md §10.1; value_error is.
			*errs = append(*errs, ValueError(loc, "Input should be a valid date in the format YYYY-MM-DD", v))
			return
		}
	case FormatEmail:
		if !validEmail(str) {
			*errs = append(*errs, ValueError(loc, "value is not a valid email address", v))
			return
		}
	}
	n := utf8.RuneCountInString(str)
	if s.MinLength != nil && n < *s.MinLength {
		*errs = append(*errs, ValidationError{Type: ErrStringTooShort, Loc: loc,
			Msg:   fmt.Sprintf("String should have at least %d %s", *s.MinLength, plural(*s.MinLength, "character")),
			Input: v, Ctx: map[string]any{"min_length": *s.MinLength}})
		return
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		*errs = append(*errs, ValidationError{Type: ErrStringTooLong, Loc: loc,
			Msg:   fmt.Sprintf("String should have at most %d %s", *s.MaxLength, plural(*s.MaxLength, "character")),
			Input: v, Ctx: map[string]any{"max_length": *s.MaxLength}})
		return
	}
	if s.Pattern != "" {
		re, err := compilePattern(s.Pattern)
		if err != nil {
			panic(fmt.Sprintf("schema: pattern %q: %v", s.Pattern, err))
		}
		if !re.MatchString(str) {
			*errs = append(*errs, ValidationError{Type: ErrStringPattern, Loc: loc,
				Msg:   fmt.Sprintf("String should match pattern '%s'", s.Pattern),
				Input: v, Ctx: map[string]any{"pattern": s.Pattern}})
			return
		}
	}
	// Checked after the length, as Pydantic runs a field's own validators after its
	// constraints: an empty name stays string_too_short.
	if s.Format == FormatPrintable {
		if problem := PrintableProblem(str); problem != "" {
			*errs = append(*errs, ValueError(loc, problem, v))
		}
	}
}

// PrintableProblem says why s is not FormatPrintable, or "" when it is (docs/api.md §11.2); the
// stores apply it to names that reach them without a request body (the apikey command).
func PrintableProblem(s string) string {
	visible := false
	for _, r := range s {
		switch {
		case unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Bidi_Control):
			return "the text must not contain control characters, line breaks or bidirectional formatting marks"
		case !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r):
			visible = true
		}
	}
	if !visible {
		return "the text must contain a visible character"
	}
	return ""
}

// validEmail accepts a bare addr-spec with a dotted domain, at most 254 characters.
func validEmail(s string) bool {
	if len(s) > 254 || strings.ContainsAny(s, " \t\r\n<>") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	domain := s[at+1:]
	return at > 0 && strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// numberText returns the decimal text of a JSON number value (json.Number or a Go number,
// for callers that validate values they built themselves).
func numberText(v any) (string, bool) {
	switch n := v.(type) {
	case json.Number:
		return n.String(), true
	case float64:
		return strconv.FormatFloat(n, 'g', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(n), 'g', -1, 32), true
	case int:
		return strconv.Itoa(n), true
	case int64:
		return strconv.FormatInt(n, 10), true
	case int32:
		return strconv.FormatInt(int64(n), 10), true
	}
	return "", false
}

// parseInteger returns the value of an integral JSON number. Integral floats (3.0, 1e2) are
// integers, as in Pydantic; reason is the message suffix when the number is not one.
func parseInteger(text string) (n int64, reason string, ok bool) {
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return i, "", true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		if isDecimalInteger(text) {
			return 0, ", got a number too large for 64 bits", false
		}
		return 0, "", false
	}
	if f != math.Trunc(f) {
		return 0, ", got a number with a fractional part", false
	}
	if f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, ", got a number too large for 64 bits", false
	}
	return int64(f), "", true
}

func isDecimalInteger(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (s *Schema) validateInteger(v any, loc []any, errs *Errors) {
	text, ok := numberText(v)
	if !ok {
		*errs = append(*errs, s.typeError(v, loc))
		return
	}
	n, reason, ok := parseInteger(text)
	if !ok {
		*errs = append(*errs, ValidationError{Type: ErrIntType, Loc: loc, Msg: "Input should be a valid integer" + reason, Input: v})
		return
	}
	s.checkBounds(float64(n), v, loc, errs)
}

func (s *Schema) validateNumber(v any, loc []any, errs *Errors) {
	text, ok := numberText(v)
	if !ok {
		*errs = append(*errs, s.typeError(v, loc))
		return
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		*errs = append(*errs, ValidationError{Type: ErrFloatType, Loc: loc, Msg: "Input should be a finite number", Input: v})
		return
	}
	s.checkBounds(f, v, loc, errs)
}

func (s *Schema) checkBounds(f float64, v any, loc []any, errs *Errors) {
	switch {
	case s.ExclusiveMinimum != nil && !(f > *s.ExclusiveMinimum):
		*errs = append(*errs, ValidationError{Type: ErrGreaterThan, Loc: loc,
			Msg: "Input should be greater than " + formatNumber(*s.ExclusiveMinimum), Input: v,
			Ctx: map[string]any{"gt": *s.ExclusiveMinimum}})
	case s.Minimum != nil && f < *s.Minimum:
		*errs = append(*errs, ValidationError{Type: ErrGreaterThanEqual, Loc: loc,
			Msg: "Input should be greater than or equal to " + formatNumber(*s.Minimum), Input: v,
			Ctx: map[string]any{"ge": *s.Minimum}})
	case s.Maximum != nil && f > *s.Maximum:
		*errs = append(*errs, ValidationError{Type: ErrLessThanEqual, Loc: loc,
			Msg: "Input should be less than or equal to " + formatNumber(*s.Maximum), Input: v,
			Ctx: map[string]any{"le": *s.Maximum}})
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// repr prints a value the way Python's repr does in Pydantic's messages.
func repr(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + x + "'"
	case bool:
		if x {
			return "True"
		}
		return "False"
	}
	return fmt.Sprint(v)
}

// expectedList renders enum members as Pydantic does: 'a', 'b' or 'c'.
func expectedList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = repr(v)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

func constEqual(want, got any) bool {
	switch w := want.(type) {
	case string, bool:
		return w == got
	}
	wt, _ := numberText(want)
	gt, ok := numberText(got)
	if !ok {
		return false
	}
	wf, err1 := strconv.ParseFloat(wt, 64)
	gf, err2 := strconv.ParseFloat(gt, 64)
	return err1 == nil && err2 == nil && wf == gf
}
