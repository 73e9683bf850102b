package main

import (
	"bytes"
	"errors"
	"fmt"
)

// errNotArray is returned by countArray for an answer that is not a JSON array of objects.
var errNotArray = errors.New("answer is not a JSON array of objects")

// countArray returns the number of elements of the JSON array b, checking that each is an
// object. It tracks only nesting and strings instead of decoding: the generator shares the
// machine with the server, and decoding 500 events per answer would take CPU from the
// server it measures. It is a shape check, not a validation of the events. Strings, most of
// an answer's bytes, are crossed with bytes.IndexByte (vectorised) rather than byte by byte:
// a 9780 m answer is about 325 KB.
func countArray(b []byte) (int, error) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '[' {
		return 0, errNotArray
	}
	depth, n := 0, 0
	expect := true // at depth 1, the next value starts an element
	for ; i < len(b); i++ {
		c := b[i]
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
			end, ok := stringEnd(b, i+1)
			if !ok {
				return 0, fmt.Errorf("%w: truncated", errNotArray)
			}
			i = end
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

// eventStart opens every event the server answers with: EventPublic's first member is event_id.
// A quote within a JSON string is escaped, so the sequence occurs nowhere else in an answer.
var eventStart = []byte(`{"event_id":`)

// countEvents returns the number of events in an answer of GET /v1/events: the objects that
// open with an id, counted with bytes.Count (vectorised). countArray on every answer took a
// large share of the machine from the server being measured; this costs a small fraction of
// countArray (BenchmarkCountArray, BenchmarkCountEvents; docs/performance.md §9).
// It checks only that the answer is an array: the query phase checks one answer in
// fullCheckEvery with countArray too, and fails when the counts differ.
func countEvents(b []byte) (int, error) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return 0, errNotArray
	}
	return bytes.Count(b, eventStart), nil
}

// fullCheckEvery is how often (in answers of one worker) a query's answer is also checked
// with countArray.
const fullCheckEvery = 32

// stringEnd returns the index of the quote that ends the string whose contents start at
// from: the first quote preceded by an even number of backslashes (each pair is an escaped
// backslash; an odd one escapes the quote).
func stringEnd(b []byte, from int) (int, bool) {
	for i := from; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return 0, false
		}
		q += i
		k := q
		for k > from && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q, true
		}
		i = q + 1
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
