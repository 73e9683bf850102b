package event

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// assign stores a decoded JSON value (maps, slices, json.Number, strings, bools, nils, as
// schema.Normalize leaves them) into dst, a pointer, as json.Unmarshal would store the value's
// encoding: struct fields by their json names, null leaves a field as it is, time.Time from
// an RFC 3339 string. It replaces a Marshal and Unmarshal round trip on every published event,
// a visible share of the server's CPU under publishing load (docs/performance.md §3).
func assign(dst any, v any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("event: assign into %T: not a non-nil pointer", dst)
	}
	return assignValue(rv.Elem(), v)
}

var timeType = reflect.TypeFor[time.Time]()

func assignValue(dst reflect.Value, v any) error {
	if v == nil {
		return nil // as Unmarshal: a null leaves dst unchanged, a pointer stays nil
	}
	if dst.Type() == timeType {
		s, ok := v.(string)
		if !ok {
			return mismatch(v, dst)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(t))
		return nil
	}
	switch dst.Kind() {
	case reflect.Pointer:
		p := reflect.New(dst.Type().Elem())
		if err := assignValue(p.Elem(), v); err != nil {
			return err
		}
		dst.Set(p)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return mismatch(v, dst)
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return mismatch(v, dst)
		}
		dst.SetBool(b)
	case reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch(v, dst)
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return err
		}
		dst.SetFloat(f)
	case reflect.Int:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch(v, dst)
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return err
		}
		dst.SetInt(i)
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return mismatch(v, dst)
		}
		s := reflect.MakeSlice(dst.Type(), len(arr), len(arr))
		for i, item := range arr {
			if err := assignValue(s.Index(i), item); err != nil {
				return err
			}
		}
		dst.Set(s)
	case reflect.Array:
		arr, ok := v.([]any)
		if !ok || len(arr) != dst.Len() {
			return mismatch(v, dst)
		}
		for i, item := range arr {
			if err := assignValue(dst.Index(i), item); err != nil {
				return err
			}
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch(v, dst)
		}
		t := dst.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if item, present := obj[name]; present && name != "" && name != "-" {
				if err := assignValue(dst.Field(i), item); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
		}
	default:
		return fmt.Errorf("event: assign into %s: unsupported", dst.Type())
	}
	return nil
}

func mismatch(v any, dst reflect.Value) error {
	return fmt.Errorf("event: cannot store %T in %s", v, dst.Type())
}
