package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/httpapi/openapitest"
)

// TestOpenAPIIsValidOpenAPI31 validates the generated document against the official
// OpenAPI 3.1 JSON Schema, and each of its schemas as JSON Schema 2020-12 (see openapitest).
func TestOpenAPIIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{Description: "Test routes"})
	n, err := openapitest.Validate(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("found only %d schemas in the document; the walk is broken", n)
	}
}

func TestOpenAPIContent(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{})
	var doc map[string]any
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) any {
		var cur any = doc
		for _, p := range path {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[p]
		}
		return cur
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	cases := []struct {
		name string
		path []string
		want string // JSON of the value at path
	}{
		{"version", []string{"openapi"}, `"3.1.0"`},
		{"title", []string{"info", "title"}, `"Road Event Sharing Service"`},
		{"info version", []string{"info", "version"}, `"1.0.0"`},
		{"ValidationError component", []string{"components", "schemas", "ValidationError", "required"}, `["type","loc","msg"]`},
		{"HTTPValidationError component", []string{"components", "schemas", "HTTPValidationError", "properties", "detail", "items"}, `{"$ref":"#/components/schemas/ValidationError"}`},
		{"error body component", []string{"components", "schemas", "HTTPError", "properties", "detail", "type"}, `"string"`},
		{"payload components", []string{"components", "schemas", "LineString", "title"}, `"LineString"`},
		{"api key scheme", []string{"components", "securitySchemes", "APIKey"}, `{"bearerFormat":"svc_ + 43 base62 characters","description":"API key in Authorization: Bearer. It never goes in a URL.","scheme":"bearer","type":"http"}`},
		{"ticket scheme", []string{"components", "securitySchemes", "StreamTicket", "in"}, `"query"`},
		{"session scheme", []string{"components", "securitySchemes", "SessionToken", "scheme"}, `"bearer"`},
		{"operation id", []string{"paths", "/v1/events", "post", "operationId"}, `"publish_event"`},
		{"request body", []string{"paths", "/v1/events", "post", "requestBody"}, `{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/EventIn"}}},"required":true}`},
		{"created response", []string{"paths", "/v1/events", "post", "responses", "201", "content", "application/json", "schema"}, `{"$ref":"#/components/schemas/EventPublic"}`},
		{"implicit 422", []string{"paths", "/v1/events", "post", "responses", "422", "content", "application/json", "schema"}, `{"$ref":"#/components/schemas/HTTPValidationError"}`},
		{"implicit 401 with header", []string{"paths", "/v1/events", "post", "responses", "401", "headers", "WWW-Authenticate", "schema"}, `{"const":"Bearer","type":"string"}`},
		{"declared 409", []string{"paths", "/v1/events", "post", "responses", "409", "content", "application/json", "schema"}, `{"$ref":"#/components/schemas/HTTPError"}`},
		{"429 Retry-After", []string{"paths", "/v1/events/{event_id}/signals", "post", "responses", "429", "headers", "Retry-After", "schema"}, `{"format":"int64","type":"integer"}`},
		{"security", []string{"paths", "/v1/events", "post", "security"}, `[{"APIKey":[]}]`},
		{"either credential", []string{"paths", "/v1/stream", "get", "security"}, `[{"APIKey":[]},{"StreamTicket":[]}]`},
		{"stream content type", []string{"paths", "/v1/stream", "get", "responses", "200", "content"}, `{"text/event-stream":{"schema":{"type":"string"}}}`},
		{"query parameter", []string{"paths", "/v1/events", "get", "parameters"}, `[` +
			`{"in":"query","name":"lat","required":true,"schema":{"format":"double","maximum":90,"minimum":-90,"type":"number"}},` +
			`{"in":"query","name":"lon","required":true,"schema":{"format":"double","maximum":180,"minimum":-180,"type":"number"}},` +
			`{"in":"query","name":"radius","schema":{"default":1000,"exclusiveMinimum":0,"format":"double","maximum":9780,"type":"number"}},` +
			`{"in":"query","name":"type","schema":{"items":{"enum":["accident","congestion","road_damage"],"type":"string"},"type":"array"}},` +
			`{"in":"query","name":"min_confidence","schema":{"default":0,"format":"double","maximum":1,"minimum":0,"type":"number"}}]`},
		{"path parameter", []string{"paths", "/v1/events/{event_id}", "get", "parameters"}, `[{"in":"path","name":"event_id","required":true,"schema":{"pattern":"^ev_[a-z2-7]{26}$","type":"string"}}]`},
		{"open route says it needs no credential", []string{"paths", "/", "get", "security"}, `[]`},
		// docs/api.md §9 rule 2: answers grow, so their objects accept members they do not list;
		// requests refuse them (docs/api.md §2.2), and a schema on both sides is two components.
		{"request component is closed", []string{"components", "schemas", "EventIn", "additionalProperties"}, `false`},
		{"answer component is open", []string{"components", "schemas", "EventPublic", "additionalProperties"}, `null`},
		{"error component is open", []string{"components", "schemas", "HTTPValidationError", "additionalProperties"}, `null`},
		{"shared component stays closed in requests", []string{"components", "schemas", "LineString", "additionalProperties"}, `false`},
		{"shared component's answer copy is open", []string{"components", "schemas", "LineStringPublic", "title"}, `"LineStringPublic"`},
		{"answer refers to the copy", []string{"components", "schemas", "EventPublic", "properties", "geometry"}, `{"anyOf":[{"$ref":"#/components/schemas/LineStringPublic"},{"type":"null"}]}`},
		{"servers are the document's origin", []string{"servers"}, `[{"description":"The origin this document was fetched from.","url":"/"}]`},
		{"root path without {$}", []string{"paths", "/", "get", "operationId"}, `"root"`},
		{"derived operation id", []string{"paths", "/v1/tiny", "post", "operationId"}, `"post_v1_tiny"`},
		{"hidden route absent", []string{"paths", "/v1/panic"}, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := js(get(tc.path...)); got != tc.want {
				t.Errorf("%s = %s; want %s", strings.Join(tc.path, "."), got, tc.want)
			}
		})
	}
}

func TestOpenAPIFollowsNewRoutes(t *testing.T) {
	t.Parallel()
	api, _ := newTestAPI(t, httpapi.Config{})
	before := api.OpenAPI()
	api.Handle(httpapi.Route{Method: "GET", Path: "/v1/meta/limits", OperationID: "get_limits",
		Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })})
	after := api.OpenAPI()
	if bytes.Contains(before, []byte("get_limits")) || !bytes.Contains(after, []byte("get_limits")) {
		t.Errorf("document did not follow Handle: before has route %v, after has route %v",
			bytes.Contains(before, []byte("get_limits")), bytes.Contains(after, []byte("get_limits")))
	}
}
