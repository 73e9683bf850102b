package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// RefPrefix is where named schemas live in the OpenAPI document.
const RefPrefix = "#/components/schemas/"

// JSONSchema renders s as a request is checked against it: Rendering{}.JSONSchema(s).
func (s *Schema) JSONSchema() json.RawMessage { return Rendering{}.JSONSchema(s) }

// Definition renders s as a request is checked against it: Rendering{}.Definition(s).
func (s *Schema) Definition() json.RawMessage { return Rendering{}.Definition(s) }

// Rendering says how schemas are written into the document. A request's objects refuse the
// members they do not list, as Validate does (docs/api.md §2.2); an answer's accept them
// (Answer), because answers only grow (docs/api.md §9 rule 2) and a client that validates
// what it receives must not break on the next field. Rename gives the component name a named
// schema is referred to by, when it differs from its Name (one schema used on both sides is
// two components).
type Rendering struct {
	Answer bool
	Rename map[string]string
}

// JSONSchema renders s as it is written where it is used, in the JSON Schema 2020-12 dialect
// of OpenAPI 3.1: a named schema becomes a $ref (wrapped in anyOf with null when nullable),
// an unnamed one is written inline. Nullable scalars use type arrays (["string","null"]).
func (r Rendering) JSONSchema(s *Schema) json.RawMessage { return mustMarshal(r.ref(s)) }

// Definition renders s inline, as it is written under components.schemas: the schema's own
// Nullable is ignored (it belongs to the places that refer to it) and nested named schemas
// are $refs.
func (r Rendering) Definition(s *Schema) json.RawMessage { return mustMarshal(r.inline(s, false)) }

// name is the component name of a named schema.
func (r Rendering) name(s *Schema) string {
	if n, ok := r.Rename[s.Name]; ok {
		return n
	}
	return s.Name
}

// Components returns every named schema reachable from roots, by name. Two different schemas
// with the same name are an error, because one of them would be silently undocumented.
func Components(roots ...*Schema) (map[string]*Schema, error) {
	found := map[string]*Schema{}
	seen := map[*Schema]bool{}
	var walk func(s *Schema) error
	walk = func(s *Schema) error {
		if s == nil || seen[s] {
			return nil
		}
		seen[s] = true
		if s.Name != "" {
			if prev, ok := found[s.Name]; ok {
				if prev != s && !bytes.Equal(prev.Definition(), s.Definition()) {
					return fmt.Errorf("schema: two different schemas are named %q", s.Name)
				}
			} else {
				found[s.Name] = s
			}
		}
		for _, p := range s.Properties {
			if err := walk(p.Schema); err != nil {
				return err
			}
		}
		for _, alt := range s.AnyOf {
			if err := walk(alt); err != nil {
				return err
			}
		}
		return walk(s.Items)
	}
	for _, r := range roots {
		if err := walk(r); err != nil {
			return nil, err
		}
	}
	return found, nil
}

func (r Rendering) ref(s *Schema) ordered {
	if s.Name == "" {
		return r.inline(s, s.Nullable)
	}
	ref := ordered{{"$ref", RefPrefix + r.name(s)}}
	if !s.Nullable {
		return ref
	}
	return ordered{{"anyOf", []any{ref, ordered{{"type", "null"}}}}}
}

func (r Rendering) inline(s *Schema, nullable bool) ordered {
	var o ordered
	if s.Name != "" {
		o = append(o, member{"title", r.name(s)})
	}
	if desc := s.describe(); desc != "" {
		o = append(o, member{"description", desc})
	}
	switch {
	case len(s.AnyOf) > 0:
		alts := make([]any, 0, len(s.AnyOf)+1)
		for _, a := range s.AnyOf {
			alts = append(alts, r.ref(a))
		}
		if nullable {
			alts = append(alts, ordered{{"type", "null"}})
		}
		if s.Discriminator == "" {
			o = append(o, member{"anyOf", alts})
			break
		}
		// Each alternative holds a different constant in the discriminating property, so
		// exactly one matches: oneOf, with the mapping generated clients pick a type by.
		mapping := ordered{}
		for _, a := range s.AnyOf {
			mapping = append(mapping, member{fmt.Sprint(a.property(s.Discriminator).Schema.Const), RefPrefix + r.name(a)})
		}
		o = append(o, member{"oneOf", alts},
			member{"discriminator", ordered{{"propertyName", s.Discriminator}, {"mapping", mapping}}})
	case s.Const != nil:
		c := ordered{{"type", s.Type}, {"const", s.Const}}
		if nullable {
			o = append(o, member{"anyOf", []any{c, ordered{{"type", "null"}}}})
		} else {
			o = append(o, c...)
		}
	case s.Type == TypeAny:
		// {} accepts everything, null included.
	default:
		if nullable {
			o = append(o, member{"type", []string{s.Type, "null"}})
		} else {
			o = append(o, member{"type", s.Type})
		}
	}
	if len(s.Enum) > 0 {
		vals := make([]any, 0, len(s.Enum)+1)
		for _, v := range s.Enum {
			vals = append(vals, v)
		}
		if nullable {
			vals = append(vals, nil)
		}
		o = append(o, member{"enum", vals})
	}
	if s.Type == TypeObject {
		if len(s.Properties) > 0 {
			props := make(ordered, 0, len(s.Properties))
			var required []string
			for _, p := range s.Properties {
				props = append(props, member{p.Name, r.ref(p.Schema)})
				if p.Required {
					required = append(required, p.Name)
				}
			}
			o = append(o, member{"properties", props})
			if len(required) > 0 {
				o = append(o, member{"required", required})
			}
		}
		if !s.AdditionalProperties && !r.Answer {
			o = append(o, member{"additionalProperties", false})
		}
	}
	if s.Items != nil {
		o = append(o, member{"items", r.ref(s.Items)})
	}
	if s.MinItems != nil {
		o = append(o, member{"minItems", *s.MinItems})
	}
	if s.MaxItems != nil {
		o = append(o, member{"maxItems", *s.MaxItems})
	}
	if s.MinLength != nil && !(s.AllowEmpty && *s.MinLength <= 1) {
		o = append(o, member{"minLength", *s.MinLength})
	}
	if s.MaxLength != nil {
		o = append(o, member{"maxLength", *s.MaxLength})
	}
	if s.Pattern != "" {
		o = append(o, member{"pattern", s.Pattern})
	}
	if f := s.format(); f != "" {
		o = append(o, member{"format", f})
	}
	if s.ExclusiveMinimum != nil {
		o = append(o, member{"exclusiveMinimum", *s.ExclusiveMinimum})
	}
	if s.Minimum != nil {
		o = append(o, member{"minimum", *s.Minimum})
	}
	if s.Maximum != nil {
		o = append(o, member{"maximum", *s.Maximum})
	}
	if s.Default != nil {
		o = append(o, member{"default", s.Default})
	}
	return o
}

// format is the format the document shows. Numbers are doubles and integers say their width,
// so that generated clients neither round a coordinate to float32 (128.00007 would travel as
// 128.00008) nor guess an integer's size: int32 when the bounds keep it there, int64
// otherwise.
func (s *Schema) format() string {
	switch {
	case s.Format != "":
		return s.Format
	case s.Type == TypeNumber:
		return "double"
	case s.Type == TypeInteger:
		if c, ok := s.Const.(int); ok && c >= math.MinInt32 && c <= math.MaxInt32 {
			return "int32"
		}
		low := s.Minimum
		if low == nil {
			low = s.ExclusiveMinimum
		}
		if low != nil && s.Maximum != nil && *low >= math.MinInt32 && *s.Maximum <= math.MaxInt32 {
			return "int32"
		}
		return "int64"
	}
	return ""
}

// describe is the description the document shows: Description, after the rule of a
// FormatPrintable string, so that a client reads the rule where the field is.
func (s *Schema) describe() string {
	if s.Format != FormatPrintable {
		return s.Description
	}
	if s.Description == "" {
		return PrintableRule
	}
	return PrintableRule + " " + s.Description
}

// ordered is a JSON object that keeps its members in the order they were added, so the
// document lists properties as they are declared.
type ordered []member

type member struct {
	Key   string
	Value any
}

// MarshalJSON writes the members in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", m.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a Default or Const that cannot be marshalled gets here: a declaration bug.
		panic(fmt.Sprintf("schema: render: %v", err))
	}
	return b
}

// SortedNames returns the keys of a Components result in order, for stable documents.
func SortedNames(components map[string]*Schema) []string {
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
