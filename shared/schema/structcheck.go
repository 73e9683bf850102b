package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// ErrMismatch is returned by CheckStruct when a Go type and a schema disagree.
var ErrMismatch = errors.New("schema: Go type and schema disagree")

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

// CheckStruct reports whether values of v's type (a struct, a pointer to one, or any other
// type a payload decodes into) and s describe the same JSON: every property has a json field
// of a compatible Go type and every json field has a property, recursively. A payload thus
// cannot gain an undocumented field, nor a documented one that nothing reads.
//
// Compatible means: string for string (time.Time for a date-time), an integer kind for
// integer, a float kind for number, bool for boolean, a slice or array for array, a struct or
// a map with string keys for object, an interface for any value or anyOf. A nullable schema
// needs a Go type that can hold nil (pointer, slice, map, interface). A type with its own
// UnmarshalJSON is trusted to read what the schema describes.
func CheckStruct(s *Schema, v any) error {
	t := reflect.TypeOf(v)
	if t == nil {
		return fmt.Errorf("%w: nil value", ErrMismatch)
	}
	return CheckType(s, t)
}

// CheckType is CheckStruct for a reflect.Type.
func CheckType(s *Schema, t reflect.Type) error {
	return check(s, t, unmarshalerType)
}

// CheckOutput is CheckType for a type that is encoded rather than decoded: an answer. A type
// with its own MarshalJSON is trusted to write what the schema describes, and a Go type that
// cannot hold null fits a nullable property (it only ever writes one of the allowed values).
func CheckOutput(s *Schema, t reflect.Type) error {
	return check(s, t, marshalerType)
}

// check compares s and t, trusting the types that implement trusted (through a pointer).
func check(s *Schema, t reflect.Type, trusted reflect.Type) error {
	c := checker{trusted: trusted}
	c.checkType(s, t, rootName(s, t))
	if len(c.problems) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrMismatch, strings.Join(c.problems, "\n  "))
	}
	return nil
}

type checker struct {
	trusted  reflect.Type
	problems []string
}

func rootName(s *Schema, t reflect.Type) string {
	if s.Name != "" {
		return s.Name
	}
	return t.String()
}

func (c *checker) checkType(s *Schema, t reflect.Type, path string) {
	bad := func(format string, args ...any) {
		c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
	}
	nilable := false
	for t.Kind() == reflect.Pointer {
		nilable = true
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Map, reflect.Interface:
		nilable = true
	}
	// An answer may always be more definite than its schema: a field that is never null
	// still fits a nullable property. A payload must be able to hold the null it may carry.
	if s.Nullable && !nilable && c.trusted != marshalerType {
		bad("schema is nullable but Go type %s cannot hold null", t)
	}
	if t == timeType {
		if s.Type != TypeString || s.Format != FormatDateTime {
			bad("Go type time.Time needs a date-time string schema, schema is %s", describe(s))
		}
		return
	}
	if t.Kind() == reflect.Interface {
		return
	}
	if reflect.PointerTo(t).Implements(c.trusted) {
		return
	}
	if len(s.AnyOf) > 0 {
		bad("anyOf schema needs an interface or a json.Unmarshaler, Go type is %s", t)
		return
	}
	switch s.Type {
	case TypeAny:
		bad("schema accepts any value, Go type %s does not", t)
	case TypeString:
		if t.Kind() != reflect.String {
			bad("schema is a string, Go type is %s", t)
		}
	case TypeInteger:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			bad("schema is an integer, Go type is %s", t)
		}
	case TypeNumber:
		if t.Kind() != reflect.Float64 && t.Kind() != reflect.Float32 {
			bad("schema is a number, Go type is %s", t)
		}
	case TypeBoolean:
		if t.Kind() != reflect.Bool {
			bad("schema is a boolean, Go type is %s", t)
		}
	case TypeArray:
		if (t.Kind() != reflect.Slice && t.Kind() != reflect.Array) || t.Elem().Kind() == reflect.Uint8 {
			bad("schema is an array, Go type is %s", t)
			return
		}
		if s.Items != nil {
			c.checkType(s.Items, t.Elem(), path+"[]")
		}
	case TypeObject:
		switch t.Kind() {
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				bad("schema is an object, Go map key is %s", t.Key())
				return
			}
			for _, p := range s.Properties {
				c.checkType(p.Schema, t.Elem(), path+"."+p.Name)
			}
		case reflect.Struct:
			c.checkStruct(s, t, path)
		default:
			bad("schema is an object, Go type is %s", t)
		}
	default:
		bad("unknown schema type %q", s.Type)
	}
}

func (c *checker) checkStruct(s *Schema, t reflect.Type, path string) {
	fields := map[string]reflect.Type{}
	collectFields(t, fields)
	for _, p := range s.Properties {
		ft, ok := fields[p.Name]
		if !ok {
			c.problems = append(c.problems, fmt.Sprintf("%s.%s: property has no json field in Go type %s", path, p.Name, t))
			continue
		}
		c.checkType(p.Schema, ft, path+"."+p.Name)
	}
	for name := range fields {
		if s.property(name) == nil {
			c.problems = append(c.problems, fmt.Sprintf("%s.%s: json field of Go type %s is not in the schema", path, name, t))
		}
	}
}

// collectFields gathers the JSON member names of a struct as encoding/json sees them,
// promoting the fields of untagged embedded structs.
func collectFields(t reflect.Type, into map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, into)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}

func describe(s *Schema) string {
	if s.Format != "" {
		return s.Type + " (" + s.Format + ")"
	}
	if s.Type == TypeAny {
		return "any"
	}
	return s.Type
}
