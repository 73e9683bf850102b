package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/routetable"
)

// docs/api.md §10.1 (compression) on AWS: a Lambda compresses a large JSON answer as `go run .`
// does, and the API Gateway proxy carries the compressed bytes whole (base64 in the event), with
// Content-Encoding and Vary; a request accepting nothing gets the JSON as it is.
func TestLambdaCompressesLargeAnswers(t *testing.T) {
	t.Parallel()
	l := embeddedLambda(t, routetable.GroupMeta, clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)))
	proxy := httpadapter.NewV2(l)
	get := func(accept string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		req := events.APIGatewayV2HTTPRequest{
			Version: "2.0", RawPath: "/openapi.json", Headers: map[string]string{},
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: "/openapi.json"},
			},
		}
		if accept != "" {
			req.Headers["accept-encoding"] = accept
		}
		resp, err := proxy.ProxyWithContext(context.Background(), req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /openapi.json (Accept-Encoding %q) = %d, %v; want 200", accept, resp.StatusCode, err)
		}
		return resp
	}
	plain := get("")
	if plain.IsBase64Encoded || plain.Headers["Content-Encoding"] != "" || !json.Valid([]byte(plain.Body)) {
		t.Fatalf("uncompressed answer: base64 %v, Content-Encoding %q; want the JSON as text", plain.IsBase64Encoded, plain.Headers["Content-Encoding"])
	}
	zipped := get("gzip")
	if zipped.Headers["Content-Encoding"] != "gzip" || zipped.Headers["Vary"] == "" || !zipped.IsBase64Encoded {
		t.Fatalf("compressed answer: Content-Encoding %q, Vary %q, base64 %v; want gzip, Accept-Encoding, base64",
			zipped.Headers["Content-Encoding"], zipped.Headers["Vary"], zipped.IsBase64Encoded)
	}
	raw, err := base64.StdEncoding.DecodeString(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := apitest.Decompressed("gzip", raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, []byte(plain.Body)) {
		t.Errorf("compressed answer decodes to %d bytes; want the %d of the document", len(doc), len(plain.Body))
	}
	if len(raw)*3 > len(doc) {
		t.Errorf("compressed to %d of %d bytes; want at most a third", len(raw), len(doc))
	}
}
