// Package schema is the one description of every JSON payload and query parameter of the
// service. A payload is declared once as a *Schema; the same value validates requests
// (Validate, ParseParams) and is written into /openapi.json (JSONSchema, Definition), so the
// documented interface and the enforced one cannot drift apart. CheckStruct holds the Go
// struct a payload decodes into to the same declaration.
//
// Validation errors follow Pydantic v2 (docs/api.md §10.1): the error types, the loc paths
// and the message wording are the ones FastAPI clients already match on, and every error in a
// payload is reported, not only the first.
//
// The package is a leaf: it knows nothing of net/http or of the domain.
//
// Declarations read like this:
//
//	var LineString = schema.Object(
//		schema.Prop("type", schema.Const("LineString").WithDefault("LineString")),
//		schema.Req("coordinates", schema.Array(position).Count(2, 512)),
//	).Named("LineString")
//
// Builder methods set a field on the receiver and return it; OrNull returns a copy, so one
// named schema can be referenced both as itself and as "X or null".
package schema

import (
	"fmt"
	"regexp"
	"sync"
)

// JSON types a Schema may declare. The empty type accepts any JSON value.
const (
	TypeAny     = ""
	TypeObject  = "object"
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeArray   = "array"
)

// String formats that Validate checks (all others are documentation only).
const (
	// FormatDateTime is an RFC 3339 date-time that must carry a time zone (docs/api.md §10.1:
	// one timestamp format everywhere; docs/api.md §2.2: occurred_at must carry a timezone).
	FormatDateTime = "date-time"
	// FormatDate is a calendar date, YYYY-MM-DD (docs/api.md §10.1).
	FormatDate = "date"
	// FormatEmail is an e-mail address (addr-spec only, no display name).
	FormatEmail = "email"
	// FormatPrintable is text people read back, in the console, in e-mails and in logs: an
	// organisation's name, a key's label, a display name (docs/api.md §11.2). See Printable.
	FormatPrintable = "printable"
)

// PrintableRule says in words what FormatPrintable accepts; the OpenAPI document adds it to
// the description of every such string.
const PrintableRule = "Printable text: no control characters (C0, C1, U+2028, U+2029) and no bidirectional " +
	"formatting marks (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069); at least one character " +
	"that is neither white space nor an invisible formatting character."

// Schema describes one JSON value. The zero value accepts anything.
type Schema struct {
	// Name makes the schema a component: the OpenAPI document lists it under
	// components.schemas and refers to it with $ref wherever it is used.
	Name string
	// Description is prose for the OpenAPI document.
	Description string
	// Type is one of the Type constants; TypeAny accepts every value.
	Type string
	// Nullable also accepts JSON null. On a named schema it belongs to the place that refers
	// to it, not to the component.
	Nullable bool

	// Properties of an object, in the order they are documented and validated.
	Properties []Property
	// AdditionalProperties accepts members not listed in Properties. Payloads leave it false:
	// unknown fields are always rejected (docs/api.md §2.2, §2.4, §2.5).
	AdditionalProperties bool

	// Items is the schema of every element of an array.
	Items *Schema
	// MinItems and MaxItems bound the length of an array.
	MinItems, MaxItems *int

	// AnyOf accepts a value that matches at least one of the schemas.
	AnyOf []*Schema
	// Discriminator names the property whose constant tells the AnyOf alternatives apart
	// (see OneOf); empty for a plain anyOf.
	Discriminator string
	// Enum lists the accepted strings.
	Enum []string
	// Const is the only accepted value (a Python Literal).
	Const any

	// MinLength and MaxLength bound a string, counted in characters, not bytes.
	MinLength, MaxLength *int
	// AllowEmpty accepts the empty string besides the strings the other rules accept; a
	// MinLength of 1 then goes unwritten in the document, which cannot show a larger one.
	AllowEmpty bool
	// Pattern is a regular expression (RE2 syntax) a string must contain a match of; anchor
	// it with ^ and $ to match the whole string.
	Pattern string
	// Format is one of the Format constants.
	Format string

	// Minimum and Maximum are inclusive bounds; ExclusiveMinimum is a strict lower bound.
	Minimum, Maximum, ExclusiveMinimum *float64

	// Default is the value used when an optional property or query parameter is absent.
	Default any
}

// Property is one member of an object schema.
type Property struct {
	Name     string  // the JSON member name, exactly (case matters)
	Schema   *Schema // the member's value
	Required bool    // an absent member is a missing error
}

// Object declares an object with the given properties, in order.
func Object(props ...Property) *Schema {
	return &Schema{Type: TypeObject, Properties: props}
}

// FreeObject declares an object with any members (for example an audit entry's detail).
func FreeObject() *Schema {
	return &Schema{Type: TypeObject, AdditionalProperties: true}
}

// Prop declares an optional property.
func Prop(name string, s *Schema) Property { return Property{Name: name, Schema: s} }

// Req declares a required property.
func Req(name string, s *Schema) Property { return Property{Name: name, Schema: s, Required: true} }

// String declares a string.
func String() *Schema { return &Schema{Type: TypeString} }

// Integer declares an integer. Integral numbers such as 3.0 are accepted (as Pydantic does).
func Integer() *Schema { return &Schema{Type: TypeInteger} }

// Number declares a number.
func Number() *Schema { return &Schema{Type: TypeNumber} }

// Boolean declares true or false.
func Boolean() *Schema { return &Schema{Type: TypeBoolean} }

// Array declares an array whose elements all match items.
func Array(items *Schema) *Schema { return &Schema{Type: TypeArray, Items: items} }

// Any declares a value of any type.
func Any() *Schema { return &Schema{} }

// DateTime declares an RFC 3339 date-time with a time zone.
func DateTime() *Schema { return &Schema{Type: TypeString, Format: FormatDateTime} }

// Date declares a YYYY-MM-DD date.
func Date() *Schema { return &Schema{Type: TypeString, Format: FormatDate} }

// Email declares an e-mail address.
func Email() *Schema { return &Schema{Type: TypeString, Format: FormatEmail} }

// Enum declares a string that must be one of values.
func Enum(values ...string) *Schema { return &Schema{Type: TypeString, Enum: values} }

// Const declares a single accepted value: a string, a bool or a number.
func Const(v any) *Schema {
	s := &Schema{Const: v}
	switch v.(type) {
	case string:
		s.Type = TypeString
	case bool:
		s.Type = TypeBoolean
	case int, int64, int32:
		s.Type = TypeInteger
	case float64, float32:
		s.Type = TypeNumber
	default:
		panic(fmt.Sprintf("schema: Const(%T): want a string, bool or number", v))
	}
	return s
}

// AnyOf declares a value matching at least one of schemas.
func AnyOf(schemas ...*Schema) *Schema { return &Schema{AnyOf: schemas} }

// OneOf declares a value matching exactly one of alternatives, told apart by the constant
// each holds in its property prop: the document writes oneOf with a discriminator mapping,
// which generated clients decode by. It panics when an alternative is not a named object
// with a constant prop, a declaration bug.
func OneOf(prop string, alternatives ...*Schema) *Schema {
	seen := map[any]bool{}
	for _, a := range alternatives {
		p := a.property(prop)
		if a.Name == "" || p == nil || p.Schema.Const == nil || seen[p.Schema.Const] {
			panic(fmt.Sprintf("schema: OneOf(%q): %q needs a distinct constant %s", prop, a.Name, prop))
		}
		seen[p.Schema.Const] = true
	}
	return &Schema{AnyOf: alternatives, Discriminator: prop}
}

// Named makes s a component called name.
func (s *Schema) Named(name string) *Schema { s.Name = name; return s }

// Describe sets the description.
func (s *Schema) Describe(text string) *Schema { s.Description = text; return s }

// OrNull returns a copy of s that also accepts null. The copy shares everything else with s,
// so a named component stays one component.
func (s *Schema) OrNull() *Schema {
	c := *s
	c.Nullable = true
	return &c
}

// MinLen sets the minimum string length in characters.
func (s *Schema) MinLen(n int) *Schema { s.MinLength = &n; return s }

// MaxLen sets the maximum string length in characters.
func (s *Schema) MaxLen(n int) *Schema { s.MaxLength = &n; return s }

// Len sets both string length bounds.
func (s *Schema) Len(min, max int) *Schema { return s.MinLen(min).MaxLen(max) }

// Match sets the pattern; it panics on an invalid expression, because declarations are made
// at package initialisation where a bad pattern is a programming error.
func (s *Schema) Match(pattern string) *Schema {
	if _, err := compilePattern(pattern); err != nil {
		panic(fmt.Sprintf("schema: pattern %q: %v", pattern, err))
	}
	s.Pattern = pattern
	return s
}

// Min sets the inclusive minimum.
func (s *Schema) Min(v float64) *Schema { s.Minimum = &v; return s }

// Max sets the inclusive maximum.
func (s *Schema) Max(v float64) *Schema { s.Maximum = &v; return s }

// Range sets both inclusive bounds.
func (s *Schema) Range(min, max float64) *Schema { return s.Min(min).Max(max) }

// GreaterThan sets the exclusive minimum.
func (s *Schema) GreaterThan(v float64) *Schema { s.ExclusiveMinimum = &v; return s }

// Count sets both bounds on the number of array elements.
func (s *Schema) Count(min, max int) *Schema { s.MinItems = &min; s.MaxItems = &max; return s }

// MinCount sets the minimum number of array elements.
func (s *Schema) MinCount(n int) *Schema { s.MinItems = &n; return s }

// MaxCount sets the maximum number of array elements.
func (s *Schema) MaxCount(n int) *Schema { s.MaxItems = &n; return s }

// OrEmpty accepts the empty string too (AllowEmpty): where null means "clear", so that a client
// whose generated code leaves nulls out can send "" instead.
func (s *Schema) OrEmpty() *Schema { s.AllowEmpty = true; return s }

// Printable makes the string FormatPrintable: Validate refuses control characters, line and
// paragraph separators and bidirectional formatting marks, which would break or disguise the
// text where it is shown, and a value with nothing visible in it (docs/api.md §11.2).
func (s *Schema) Printable() *Schema { s.Format = FormatPrintable; return s }

// WithFormat sets the string format.
func (s *Schema) WithFormat(f string) *Schema { s.Format = f; return s }

// WithDefault sets the default value.
func (s *Schema) WithDefault(v any) *Schema { s.Default = v; return s }

// AllowExtra accepts object members not listed in Properties.
func (s *Schema) AllowExtra() *Schema { s.AdditionalProperties = true; return s }

// patterns caches compiled expressions: schemas are declared once and used on every request.
var patterns sync.Map // string -> *regexp.Regexp

func compilePattern(p string) (*regexp.Regexp, error) {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patterns.Store(p, re)
	return re, nil
}
