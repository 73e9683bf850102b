package main

import (
	"errors"
	"fmt"
)

// errNotArray is returned by countArray for an answer that is not a JSON array of objects.
var errNotArray = errors.New("answer is not a JSON array of objects")

// countArray returns the number of elements of the JSON array b, checking that each is an
// object. It tracks only nesting and strings instead of decoding: the generator shares the
// machine with the server, and decoding 500 events per answer would take CPU from the
// server it measures. It is a shape check, not a validation of the events.
func countArray(b []byte) (int, error) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '[' {
		return 0, errNotArray
	}
	depth, n := 0, 0
	expect := true // at depth 1, the next value starts an element
	inString, escaped := false, false
	for ; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if depth == 1 && expect && c != ']' {
			if c != '{' {
				return 0, fmt.Errorf("%w: element %d starts with %q", errNotArray, n, c)
			}
			n++
			expect = false
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				if j := skipSpace(b, i+1); j != len(b) {
					return 0, fmt.Errorf("%w: data after the array", errNotArray)
				}
				if expect && n > 0 {
					return 0, fmt.Errorf("%w: trailing comma", errNotArray)
				}
				return n, nil
			}
		case ',':
			if depth == 1 {
				if expect {
					return 0, fmt.Errorf("%w: empty element", errNotArray)
				}
				expect = true
			}
		}
	}
	return 0, fmt.Errorf("%w: truncated", errNotArray)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
