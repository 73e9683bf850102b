package httpapi

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestParseWellFormedAgreesWithTokens: the fast path of parseJSON returns what the token
// parser returns, and leaves to it every body the token parser refuses, whatever the refusal
// (duplicate names at any depth, too deep, trailing data, syntax), including names and
// strings that hold quotes, colons and brackets.
func TestParseWellFormedAgreesWithTokens(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	bodies := []string{
		`{"type":"accident","lat":48.1,"lon":11.5,"geometry":{"type":"LineString","coordinates":[[11.5,48.1],[11.6,48.2]]}}`,
		`{"a:b":"c:d","e\"f:":"}{][","g\\":{"h":[1,{"i":null}]},"j":true}`,
		`{"":{"":{"":{}}}}`, `[]`, `{}`, `"x:y"`, `0`, ` {"a":1} `,
		deep(32),
		// refused, each for one rule
		deep(33),
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":1}}`, `[{"x":1},{"y":1,"y":2}]`, `{"a:":1,"a:":2}`,
		`{"a\u0062":1,"ab":2}`,
		`{"a":1} x`, `{"a":1}{}`, `{"a":}`, `{"a" 1}`, `{"a":1`, `[1,]`, `{"a":"\x"}`,
	}
	for _, body := range bodies {
		checkFastPath(t, []byte(body))
	}
}

// FuzzParseWellFormed is TestParseWellFormedAgreesWithTokens on arbitrary valid UTF-8:
//
//	go test -run '^$' -fuzz FuzzParseWellFormed -fuzztime 60s ./shared/httpapi/
func FuzzParseWellFormed(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c:\"}"}]}`, `{"a":1,"a":1}`, `[[[]]]`, `{"a":1} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if utf8.Valid(body) {
			checkFastPath(t, body)
		}
	})
}

func checkFastPath(t *testing.T, body []byte) {
	t.Helper()
	want, _, problem := parseTokens(body, DefaultMaxDepth)
	got, ok := parseWellFormed(body, DefaultMaxDepth)
	switch {
	case problem != "" && ok:
		t.Errorf("%s: fast path accepted a body the token parser refuses (%s)", body, problem)
	case problem == "" && !ok:
		t.Errorf("%s: fast path refused a valid body", body)
	case ok && !reflect.DeepEqual(got, want):
		t.Errorf("%s: fast path %#v, token parser %#v", body, got, want)
	}
}

func BenchmarkParseJSON(b *testing.B) {
	body := []byte(`{"type":"congestion","subtype":"queue.end","lat":48.13743,"lon":11.57549,"heading":270,"severity":"high","description":"Stau","occurred_at":"2024-05-01T10:00:00.25+02:00","client_event_id":"c-1","geometry":{"type":"LineString","coordinates":[[11.57549,48.13743],[11.58,48.14],[11.59,48.15]]}}`)
	for _, c := range []struct {
		name  string
		parse func([]byte, int) (any, int, string)
	}{{"parseJSON", parseJSON}, {"tokens", parseTokens}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, problem := c.parse(body, DefaultMaxDepth); problem != "" {
					b.Fatal(problem)
				}
			}
		})
	}
}
