package lambdaapp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/routetable"
)

// request is what a client sent a front door.
type request struct {
	method, target string // target: path and query, as the client wrote it
	headers        map[string]string
	body           string
	// base64 sends the body base64-encoded, as a front door does with a body it does not
	// take for text.
	base64 bool
}

func (r request) split() (path, rawQuery, body string) {
	path, rawQuery, _ = strings.Cut(r.target, "?")
	body = r.body
	if r.base64 {
		body = base64.StdEncoding.EncodeToString([]byte(r.body))
	}
	return path, rawQuery, body
}

// answer is what the front door makes of the function's response.
type answer struct {
	status      int
	description string // a load balancer's status description
	header      http.Header
	base64      bool
	body        []byte // decoded from base64 when it came so
}

// frontDoor is one kind of event source: how it turns a request into an event and reads the
// function's answer.
type frontDoor struct {
	name   string
	event  func(t *testing.T, r request) []byte
	answer func(t *testing.T, out []byte) answer
}

// httpEvent is API Gateway's HTTP API event (payload format 2.0): single-value headers, lower
// case, repeated ones joined with commas; the raw query string.
func httpEvent(t *testing.T, r request) []byte {
	t.Helper()
	path, query, body := r.split()
	h := map[string]string{"host": "api.example.com"}
	for k, v := range r.headers {
		h[strings.ToLower(k)] = v
	}
	return mustJSON(t, events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, RawQueryString: query, Headers: h,
		Body: body, IsBase64Encoded: r.base64,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			APIID: "api", DomainName: "api.example.com", Stage: "$default", RequestID: "req-1",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1"},
		},
	})
}

func httpAnswer(t *testing.T, out []byte) answer {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	mustDecode(t, out, &resp)
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	return answer{status: resp.StatusCode, header: h, base64: resp.IsBase64Encoded, body: body(t, resp.Body, resp.IsBase64Encoded)}
}

// functionURLEvent is a Lambda function URL's event: payload format 2.0 as well, on the
// function's own domain, without a stage.
func functionURLEvent(t *testing.T, r request) []byte {
	t.Helper()
	path, query, body := r.split()
	const domain = "abcdefghijklmnop.lambda-url.eu-west-1.on.aws"
	h := map[string]string{"host": domain}
	for k, v := range r.headers {
		h[strings.ToLower(k)] = v
	}
	return mustJSON(t, events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, RawQueryString: query, Headers: h, Body: body, IsBase64Encoded: r.base64,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: "123456789012", RequestID: "req-1", APIID: "abcdefghijklmnop", DomainName: domain,
			DomainPrefix: "abcdefghijklmnop", TimeEpoch: time.Now().UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1"},
		},
	})
}

func functionURLAnswer(t *testing.T, out []byte) answer {
	t.Helper()
	var resp events.LambdaFunctionURLResponse
	mustDecode(t, out, &resp)
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	return answer{status: resp.StatusCode, header: h, base64: resp.IsBase64Encoded, body: body(t, resp.Body, resp.IsBase64Encoded)}
}

// albEvent is an Application Load Balancer's event. With multi-value headers on, headers and
// query parameters come as lists; either way the query's names and values come as the client
// encoded them.
func albEvent(multiValue bool) func(t *testing.T, r request) []byte {
	return func(t *testing.T, r request) []byte {
		t.Helper()
		path, query, body := r.split()
		ev := events.ALBTargetGroupRequest{
			HTTPMethod: r.method, Path: path, Body: body, IsBase64Encoded: r.base64,
			RequestContext: events.ALBTargetGroupRequestContext{ELB: events.ELBContext{
				TargetGroupArn: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/meta/6d0ecf831eec9f09",
			}},
		}
		headers := map[string]string{"host": "roadevents-123.eu-west-1.elb.amazonaws.com", "x-forwarded-for": "192.0.2.1"}
		for k, v := range r.headers {
			headers[strings.ToLower(k)] = v
		}
		var pairs [][2]string
		for _, pair := range strings.Split(query, "&") {
			if k, v, ok := strings.Cut(pair, "="); ok {
				pairs = append(pairs, [2]string{k, v})
			}
		}
		if multiValue {
			ev.MultiValueHeaders = map[string][]string{}
			for k, v := range headers {
				ev.MultiValueHeaders[k] = []string{v}
			}
			ev.MultiValueQueryStringParameters = map[string][]string{}
			for _, p := range pairs {
				ev.MultiValueQueryStringParameters[p[0]] = append(ev.MultiValueQueryStringParameters[p[0]], p[1])
			}
		} else {
			ev.Headers = headers
			ev.QueryStringParameters = map[string]string{}
			for _, p := range pairs {
				ev.QueryStringParameters[p[0]] = p[1] // the last of a repeated name
			}
		}
		return mustJSON(t, ev)
	}
}

func albAnswer(multiValue bool) func(t *testing.T, out []byte) answer {
	return func(t *testing.T, out []byte) answer {
		t.Helper()
		var resp events.ALBTargetGroupResponse
		mustDecode(t, out, &resp)
		h := http.Header{}
		if multiValue {
			if len(resp.Headers) != 0 {
				t.Errorf("answer to a multi-value target group has headers %v; want multiValueHeaders only", resp.Headers)
			}
			for k, vs := range resp.MultiValueHeaders {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
		} else {
			if len(resp.MultiValueHeaders) != 0 {
				t.Errorf("answer to a single-value target group has multiValueHeaders %v; want headers only", resp.MultiValueHeaders)
			}
			for k, v := range resp.Headers {
				h.Set(k, v)
			}
		}
		return answer{status: resp.StatusCode, description: resp.StatusDescription, header: h, base64: resp.IsBase64Encoded,
			body: body(t, resp.Body, resp.IsBase64Encoded)}
	}
}

func body(t *testing.T, b string, encoded bool) []byte {
	t.Helper()
	if !encoded {
		return []byte(b)
	}
	raw, err := base64.StdEncoding.DecodeString(b)
	if err != nil {
		t.Fatalf("body flagged isBase64Encoded is not base64: %v", err)
	}
	return raw
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecode(t *testing.T, out []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("answer %s: %v", out, err)
	}
}

var frontDoors = []frontDoor{
	{"HTTP API", httpEvent, httpAnswer},
	{"function URL", functionURLEvent, functionURLAnswer},
	{"load balancer, multi-value headers", albEvent(true), albAnswer(true)},
	{"load balancer, single-value headers", albEvent(false), albAnswer(false)},
}

// docs/architecture.md §4 (front doors) and docs/api.md §10.1 (compression): the function takes
// the events of every front door the stack may put before it and answers each in its own
// shape; a compressed answer comes whole, base64-encoded with Content-Encoding and Vary, a
// body sent base64-encoded is decoded, and a query reaches the handler decoded once.
func TestEventShapes(t *testing.T) {
	t.Parallel()
	f := newFunction(t, routetable.GroupMeta, &stub{}, clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)))
	const payload = `{"label":"Zoë's fleet","ids":[1,2]}`
	cases := []struct {
		name         string
		req          request
		wantStatus   int
		wantEncoding string // Content-Encoding
		want         func(t *testing.T, e echoed)
	}{
		{
			name:       "GET, gzip accepted",
			req:        request{method: http.MethodGet, target: "/echo?near=a%20b&near=c%2Bd", headers: map[string]string{"Accept-Encoding": "gzip"}},
			wantStatus: http.StatusOK, wantEncoding: "gzip",
			want: func(t *testing.T, e echoed) {
				// A load balancer without multi-value headers passes the last of a repeated name.
				near := e.Query["near"]
				if e.Method != http.MethodGet || e.Path != "/echo" || len(near) == 0 || near[len(near)-1] != "c+d" ||
					(len(near) == 2 && near[0] != "a b") {
					t.Errorf("handler got %s %s query %v; want GET /echo with near=a b and c+d, decoded once", e.Method, e.Path, e.Query)
				}
			},
		},
		{
			name:       "GET, zstd accepted",
			req:        request{method: http.MethodGet, target: "/echo", headers: map[string]string{"Accept-Encoding": "zstd"}},
			wantStatus: http.StatusOK, wantEncoding: "zstd",
		},
		{
			name:       "GET, nothing accepted",
			req:        request{method: http.MethodGet, target: "/echo"},
			wantStatus: http.StatusOK,
		},
		{
			name: "POST with a JSON body",
			req: request{method: http.MethodPost, target: "/echo", body: payload,
				headers: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer svc_x"}},
			wantStatus: http.StatusOK,
			want: func(t *testing.T, e echoed) {
				if e.Method != http.MethodPost || e.Body != payload || !slices.Equal(e.Authorization, []string{"Bearer svc_x"}) {
					t.Errorf("handler got %s, body %q, Authorization %q; want POST, %q, Bearer svc_x", e.Method, e.Body, e.Authorization, payload)
				}
			},
		},
		{
			name: "POST with a base64-encoded JSON body, gzip accepted",
			req: request{method: http.MethodPost, target: "/echo", body: payload, base64: true,
				headers: map[string]string{"Content-Type": "application/json", "Accept-Encoding": "gzip, deflate, br"}},
			wantStatus: http.StatusOK, wantEncoding: "gzip",
			want: func(t *testing.T, e echoed) {
				if e.Body != payload {
					t.Errorf("handler got body %q; want it decoded from base64: %q", e.Body, payload)
				}
			},
		},
		{
			name:       "unknown path",
			req:        request{method: http.MethodGet, target: "/nowhere"},
			wantStatus: http.StatusNotFound,
		},
	}
	for _, door := range frontDoors {
		t.Run(door.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range cases {
				out, err := f.Invoke(context.Background(), door.event(t, tc.req))
				if err != nil {
					t.Fatalf("%s: Invoke = %v", tc.name, err)
				}
				a := door.answer(t, out)
				if a.status != tc.wantStatus {
					t.Errorf("%s: status %d; want %d (body %s)", tc.name, a.status, tc.wantStatus, a.body)
				}
				if want := strconv.Itoa(tc.wantStatus) + " " + http.StatusText(tc.wantStatus); strings.HasPrefix(door.name, "load balancer") && a.description != want {
					t.Errorf("%s: status description %q; want %q", tc.name, a.description, want)
				}
				if got := a.header.Get("Content-Encoding"); got != tc.wantEncoding {
					t.Errorf("%s: Content-Encoding %q; want %q", tc.name, got, tc.wantEncoding)
				}
				if tc.wantEncoding != "" && (!a.base64 || !strings.Contains(a.header.Get("Vary"), "Accept-Encoding")) {
					t.Errorf("%s: compressed answer with isBase64Encoded %v, Vary %q; want base64 and Vary: Accept-Encoding",
						tc.name, a.base64, a.header.Get("Vary"))
				}
				if tc.wantEncoding == "" && a.base64 {
					t.Errorf("%s: uncompressed JSON sent base64-encoded; want it as text", tc.name)
				}
				doc, err := apitest.Decompressed(tc.wantEncoding, a.body)
				if err != nil {
					t.Fatalf("%s: decode %s answer: %v", tc.name, tc.wantEncoding, err)
				}
				if !json.Valid(doc) {
					t.Fatalf("%s: answer %q is not JSON", tc.name, doc)
				}
				if tc.want != nil {
					var e echoed
					mustDecode(t, doc, &e)
					tc.want(t, e)
				}
			}
		})
	}
}
