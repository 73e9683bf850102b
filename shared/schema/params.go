package schema

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Where a parameter is read from; also the first element of its error loc.
const (
	InQuery = "query"
	InPath  = "path"
)

// Param is one query or path parameter. Its Schema is a scalar (string, integer, number,
// boolean, optionally with an enum and bounds), or an array of scalars for a repeatable query
// parameter (?type=a&type=b). A default comes from Schema.Default.
type Param struct {
	Name        string  // the query parameter or path wildcard name
	In          string  // InQuery or InPath; also the first element of the error loc
	Description string  // prose for the OpenAPI document
	Required    bool    // absent is a missing error; path parameters are always required
	Schema      *Schema // the value's type and rules, and its Default
}

// Query declares an optional query parameter.
func Query(name string, s *Schema) Param { return Param{Name: name, In: InQuery, Schema: s} }

// Path declares a path parameter (always required).
func Path(name string, s *Schema) Param {
	return Param{Name: name, In: InPath, Schema: s, Required: true}
}

// Require marks the parameter required.
func (p Param) Require() Param { p.Required = true; return p }

// Describe sets the description.
func (p Param) Describe(text string) Param { p.Description = text; return p }

// Repeatable reports whether the parameter may be given more than once.
func (p Param) Repeatable() bool { return p.Schema != nil && p.Schema.Type == TypeArray }

// Values holds parsed parameters by name: int64 for integers, float64 for numbers, bool,
// string, and []any of those for repeatable parameters. Absent optional parameters without a
// default are not in the map.
type Values map[string]any

// Has reports whether the parameter was given or has a default.
func (v Values) Has(name string) bool { _, ok := v[name]; return ok }

// String returns a string parameter, or "".
func (v Values) String(name string) string { s, _ := v[name].(string); return s }

// Int returns an integer parameter, or 0.
func (v Values) Int(name string) int64 { n, _ := v[name].(int64); return n }

// Float returns a number parameter (an integer one converted), or 0.
func (v Values) Float(name string) float64 {
	switch n := v[name].(type) {
	case float64:
		return n
	case int64:
		return float64(n)
	}
	return 0
}

// Bool returns a boolean parameter, or false.
func (v Values) Bool(name string) bool { b, _ := v[name].(bool); return b }

// Strings returns a repeatable string parameter, or nil.
func (v Values) Strings(name string) []string {
	list, _ := v[name].([]any)
	out := make([]string, 0, len(list))
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ParseParams parses and validates the declared parameters from the query string and the
// path (path returns the value of a path wildcard, as http.Request.PathValue does). Strings
// are converted as FastAPI does for query and path parameters: int_parsing, float_parsing and
// bool_parsing when a value does not convert, then the schema's own rules. Parameters not
// declared are ignored. Every error is reported, each at ["query", name] or ["path", name]
// (plus the index for a repeatable parameter).
func ParseParams(params []Param, query url.Values, path func(name string) string) (Values, Errors) {
	vals := Values{}
	var errs Errors
	for _, p := range params {
		loc := []any{p.In, p.Name}
		var raw []string
		switch p.In {
		case InPath:
			if path != nil {
				if s := path(p.Name); s != "" {
					raw = []string{s}
				}
			}
		case InQuery:
			raw = query[p.Name]
		default:
			panic(fmt.Sprintf("schema: parameter %q: In must be %q or %q", p.Name, InQuery, InPath))
		}
		if len(raw) == 0 {
			switch {
			case p.Required:
				errs = append(errs, ValidationError{Type: ErrMissing, Loc: loc, Msg: "Field required", Input: nil})
			case p.Schema.Default != nil:
				vals[p.Name] = typedDefault(p.Schema, p.Schema.Default)
			}
			continue
		}
		if p.Repeatable() {
			list := make([]any, 0, len(raw))
			jsonList := make([]any, 0, len(raw))
			ok := true
			for i, r := range raw {
				j, typed, e := convert(p.Schema.Items, r, at(loc, i))
				if e != nil {
					errs = append(errs, *e)
					ok = false
					continue
				}
				jsonList = append(jsonList, j)
				list = append(list, typed)
			}
			if !ok {
				continue
			}
			if got := p.Schema.Validate(jsonList, loc); len(got) > 0 {
				errs = append(errs, got...)
				continue
			}
			vals[p.Name] = list
			continue
		}
		// A single-valued parameter given twice takes the last value, as FastAPI does.
		j, typed, e := convert(p.Schema, raw[len(raw)-1], loc)
		if e != nil {
			errs = append(errs, *e)
			continue
		}
		if got := p.Schema.Validate(j, loc); len(got) > 0 {
			errs = append(errs, got...)
			continue
		}
		vals[p.Name] = typed
	}
	return vals, errs
}

var (
	decimalRE = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	trueWords = []string{"1", "on", "t", "true", "y", "yes"}
	falseWord = []string{"0", "off", "f", "false", "n", "no"}
)

// convert turns a parameter string into its JSON form (for Validate) and its Go form (for
// Values).
func convert(s *Schema, raw string, loc []any) (jsonValue, typed any, e *ValidationError) {
	if s == nil {
		return raw, raw, nil
	}
	switch s.Type {
	case TypeInteger:
		t := strings.TrimSpace(raw)
		if decimalRE.MatchString(t) {
			if n, _, ok := parseInteger(t); ok {
				return json.Number(strconv.FormatInt(n, 10)), n, nil
			}
		}
		return nil, nil, &ValidationError{Type: ErrIntParsing, Loc: loc,
			Msg: "Input should be a valid integer, unable to parse string as an integer", Input: raw}
	case TypeNumber:
		t := strings.TrimSpace(raw)
		if decimalRE.MatchString(t) {
			if f, err := strconv.ParseFloat(t, 64); err == nil {
				return json.Number(t), f, nil
			}
			return nil, nil, &ValidationError{Type: ErrFloatParsing, Loc: loc, Msg: "Input should be a finite number", Input: raw}
		}
		return nil, nil, &ValidationError{Type: ErrFloatParsing, Loc: loc,
			Msg: "Input should be a valid number, unable to parse string as a number", Input: raw}
	case TypeBoolean:
		w := strings.ToLower(strings.TrimSpace(raw))
		switch {
		case contains(trueWords, w):
			return true, true, nil
		case contains(falseWord, w):
			return false, false, nil
		}
		return nil, nil, &ValidationError{Type: ErrBoolParsing, Loc: loc,
			Msg: "Input should be a valid boolean, unable to interpret input", Input: raw}
	}
	return raw, raw, nil
}

func typedDefault(s *Schema, d any) any {
	switch s.Type {
	case TypeInteger:
		if text, ok := numberText(d); ok {
			if n, _, ok := parseInteger(text); ok {
				return n
			}
		}
	case TypeNumber:
		if text, ok := numberText(d); ok {
			if f, err := strconv.ParseFloat(text, 64); err == nil {
				return f
			}
		}
	case TypeArray:
		if list, ok := d.([]string); ok {
			out := make([]any, len(list))
			for i, v := range list {
				out[i] = v
			}
			return out
		}
	}
	return d
}
