package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
)

// FuzzDecodeJSON feeds arbitrary bodies and content types to POST /v1/events (an
// EventIn-shaped payload: nested object, array of number pairs, patterned strings, a
// date-time, enums). Whatever arrives, the answer must be a 2xx or one of the documented
// refusals (413, 415, 422), never a panic or a 5xx, with a JSON body whose detail has the
// documented shape; and an accepted body, decoded into the Go struct and encoded again, must
// still satisfy the schema.
//
//	go test -run '^$' -fuzz FuzzDecodeJSON -fuzztime 60s ./shared/httpapi/
func FuzzDecodeJSON(f *testing.F) {
	seeds := []string{
		goodEvent,
		`{"type":"congestion","subtype":"queue.end","lat":48.13743,"lon":11.57549,"heading":270,"severity":"high","description":"Stau","occurred_at":"2024-05-01T10:00:00.25+02:00","client_event_id":"c-1","geometry":{"type":"LineString","coordinates":[[11.57549,48.13743],[11.58,48.14],[11.59,48.15]]}}`,
		`{"type":"accident","lat":48.1,"lon":11.5,"geometry":null,"heading":null,"severity":null}`,
		`{"type":"accident","lat":48.1`,
		`{"type":"accident","lat":1e400,"lon":-0}`,
		`{"type":"accident","lat":1,"lon":2,"heading":359.0000000000001}`,
		`{"type":"accident","lat":1,"lon":2,"heading":123456789012345678901234567890}`,
		`{"type":"accident","lat":1,"lat":2,"lon":3}`,
		`{"type":"road_damage","lat":"1","lon":[],"geometry":{"coordinates":[[1,2],[3]]},"x":{}}`,
		`{"type":"accident","lat":1,"lon":2,"occurred_at":"2024-02-30T25:61:61+99:99"}`,
		`{"type":"accident","lat":1,"lon":2,"description":"\ud800"}`,
		"{\"type\":\"acc\xffident\"}",
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`null`, `""`, `0`, `[]`, ``, ` `, `{}`, `{"":null}`, `{"type":"accident"} x`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), "application/json")
	}
	f.Add([]byte(goodEvent), "")
	f.Add([]byte(goodEvent), "text/plain")
	f.Add([]byte(goodEvent), "application/json; charset=ascii")
	f.Add([]byte(`{"type":"accident","lat":1,"lon":2,"description":"`+strings.Repeat("x", 70000)+`"}`), "application/json")

	api, _ := newTestAPI(f, httpapi.Config{})
	h := api.Handler()
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/events", bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		switch rec.Code {
		case http.StatusCreated:
			// The accepted payload, through the struct and back, still satisfies the schema.
			dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
			dec.UseNumber()
			var echoed any
			if err := dec.Decode(&echoed); err != nil {
				t.Fatalf("201 body is not JSON: %v: %s", err, rec.Body)
			}
			if errs := eventIn.Validate(echoed, []any{"body"}); len(errs) > 0 {
				t.Fatalf("accepted body %q re-encodes to %s, which fails its schema: %v", body, rec.Body, errs)
			}
		case http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
			detail := detailShape(t, rec.Body.Bytes())
			_, isList := detail.([]schema.ValidationError)
			if (rec.Code == http.StatusUnprocessableEntity) != isList {
				t.Fatalf("status %d with detail %T: 422 must carry the list, 413/415 a sentence", rec.Code, detail)
			}
		default:
			t.Fatalf("POST %q (Content-Type %q) = %d %s; want 201, 413, 415 or 422", body, contentType, rec.Code, rec.Body)
		}
	})
}
