package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// RefPrefix is where named schemas live in the OpenAPI document.
const RefPrefix = "#/components/schemas/"

// JSONSchema renders s as it is written where it is used, in the JSON Schema 2020-12 dialect
// of OpenAPI 3.1: a named schema becomes a $ref (wrapped in anyOf with null when nullable),
// an unnamed one is written inline. Nullable scalars use type arrays (["string","null"]).
func (s *Schema) JSONSchema() json.RawMessage { return mustMarshal(s.ref()) }

// Definition renders s inline, as it is written under components.schemas: the schema's own
// Nullable is ignored (it belongs to the places that refer to it) and nested named schemas
// are $refs.
func (s *Schema) Definition() json.RawMessage { return mustMarshal(s.inline(false)) }

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

func (s *Schema) ref() ordered {
	if s.Name == "" {
		return s.inline(s.Nullable)
	}
	ref := ordered{{"$ref", RefPrefix + s.Name}}
	if !s.Nullable {
		return ref
	}
	return ordered{{"anyOf", []any{ref, ordered{{"type", "null"}}}}}
}

func (s *Schema) inline(nullable bool) ordered {
	var o ordered
	if s.Name != "" {
		o = append(o, member{"title", s.Name})
	}
	if desc := s.describe(); desc != "" {
		o = append(o, member{"description", desc})
	}
	switch {
	case len(s.AnyOf) > 0:
		alts := make([]any, 0, len(s.AnyOf)+1)
		for _, a := range s.AnyOf {
			alts = append(alts, a.ref())
		}
		if nullable {
			alts = append(alts, ordered{{"type", "null"}})
		}
		o = append(o, member{"anyOf", alts})
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
				props = append(props, member{p.Name, p.Schema.ref()})
				if p.Required {
					required = append(required, p.Name)
				}
			}
			o = append(o, member{"properties", props})
			if len(required) > 0 {
				o = append(o, member{"required", required})
			}
		}
		if !s.AdditionalProperties {
			o = append(o, member{"additionalProperties", false})
		}
	}
	if s.Items != nil {
		o = append(o, member{"items", s.Items.ref()})
	}
	if s.MinItems != nil {
		o = append(o, member{"minItems", *s.MinItems})
	}
	if s.MaxItems != nil {
		o = append(o, member{"maxItems", *s.MaxItems})
	}
	if s.MinLength != nil {
		o = append(o, member{"minLength", *s.MinLength})
	}
	if s.MaxLength != nil {
		o = append(o, member{"maxLength", *s.MaxLength})
	}
	if s.Pattern != "" {
		o = append(o, member{"pattern", s.Pattern})
	}
	if s.Format != "" {
		o = append(o, member{"format", s.Format})
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
