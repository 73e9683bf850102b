package lambdaapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// The events a function is invoked with, and how each is told apart (docs/architecture.md §4):
//
//   - API Gateway's HTTP API (payload format 2.0) and Lambda function URLs send the same
//     shape, "version": "2.0", and take the same answer.
//   - An Application Load Balancer's target group sends "requestContext": {"elb": ...} and
//     takes an answer with a status description; with multi-value headers on (the stack's
//     setting) headers and query parameters come as lists, and the answer's headers must too.
//   - An EventBridge schedule rule sends a scheduled event (IsScheduledEvent), which runs the
//     group's scheduled job (groupapi.Group.Scheduled).
//   - The table's stream and the webhook turns' queue send "Records" whose eventSource is
//     aws:dynamodb or aws:sqs, handed to groupapi.Group.Stream and Queue; the answer names the
//     records that failed, so that only those come again.
//
// The answer's body goes base64-encoded (isBase64Encoded) when it is not UTF-8 text, as a
// compressed answer never is (docs/api.md §10.1, compression); Content-Encoding and Vary go
// with it. A request body that came base64-encoded is decoded before the handler reads it.

// adapters turn each front door's events into requests for a Function and its answers back.
type adapters struct {
	http *httpadapter.HandlerAdapterV2
	alb  *httpadapter.HandlerAdapterALB
}

func newAdapters(h http.Handler) adapters {
	return adapters{http: httpadapter.NewV2(h), alb: httpadapter.NewALB(h)}
}

// shape is what tells the events apart.
type shape struct {
	Version        string `json:"version"`
	RequestContext struct {
		ELB json.RawMessage `json:"elb"`
	} `json:"requestContext"`
	Records []struct {
		EventSource string `json:"eventSource"`
	} `json:"Records"`
}

// Invoke serves one invocation (lambda.Handler): a scheduled event runs the group's job, and
// an HTTP event is served as a request and answered in its own shape. A failed job returns its
// error, so the invocation fails and EventBridge runs it again: the job is idempotent.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if IsScheduledEvent(payload) {
		if f.group.Scheduled == nil {
			return nil, fmt.Errorf("%w: a scheduled event, and the %s function has no scheduled job", ErrEvent, f.name)
		}
		if err := f.group.Scheduled(ctx); err != nil {
			return nil, fmt.Errorf("scheduled job of %s: %w", f.name, err)
		}
		return []byte(`{"done":true}`), nil
	}
	var s shape
	if err := json.Unmarshal(payload, &s); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrEvent)
	}
	if len(s.Records) > 0 {
		return f.invokeRecords(ctx, s.Records[0].EventSource, payload)
	}
	switch {
	case s.RequestContext.ELB != nil:
		return f.invokeALB(ctx, payload)
	case s.Version == "2.0":
		return f.invokeHTTP(ctx, payload)
	}
	return nil, fmt.Errorf("%w: neither an HTTP API or function URL event (payload format 2.0) nor a load balancer's", ErrEvent)
}

// invokeRecords hands a batch of the table's stream or of the turns' queue to the group.
func (f *Function) invokeRecords(ctx context.Context, source string, payload []byte) ([]byte, error) {
	var out any
	switch {
	case source == "aws:dynamodb" && f.group.Stream != nil:
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("decode stream event: %w", err)
		}
		out = f.group.Stream(ctx, ev)
	case source == "aws:sqs" && f.group.Queue != nil:
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("decode queue event: %w", err)
		}
		out = f.group.Queue(ctx, ev)
	default:
		return nil, fmt.Errorf("%w: records of %q, which the %s function does not handle", ErrEvent, source, f.name)
	}
	f.finish(ctx)
	return json.Marshal(out)
}

// invokeHTTP serves an HTTP API or function URL event.
func (f *Function) invokeHTTP(ctx context.Context, payload []byte) ([]byte, error) {
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode HTTP API event: %w", err)
	}
	resp, err := f.adapters.http.ProxyWithContext(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// invokeALB serves a load balancer's event.
func (f *Function) invokeALB(ctx context.Context, payload []byte) ([]byte, error) {
	var req events.ALBTargetGroupRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode load balancer event: %w", err)
	}
	// The load balancer passes query parameters as the client sent them, still URL-encoded,
	// where the adapter expects them decoded, and encodes them again.
	req.MultiValueQueryStringParameters = unescapeLists(req.MultiValueQueryStringParameters)
	req.QueryStringParameters = unescapeValues(req.QueryStringParameters)
	resp, err := f.adapters.alb.ProxyWithContext(ctx, req)
	if err != nil {
		return nil, err
	}
	resp.StatusDescription = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	// A target group without multi-value headers reads the answer's headers from headers.
	if req.MultiValueHeaders == nil {
		resp.Headers = map[string]string{}
		for k, vs := range resp.MultiValueHeaders {
			resp.Headers[k] = strings.Join(vs, ", ")
		}
		resp.MultiValueHeaders = nil
	}
	return json.Marshal(resp)
}

func unescapeLists(params map[string][]string) map[string][]string {
	if params == nil {
		return nil
	}
	out := make(map[string][]string, len(params))
	for k, vs := range params {
		k = unescape(k)
		for _, v := range vs {
			out[k] = append(out[k], unescape(v))
		}
	}
	return out
}

func unescapeValues(params map[string]string) map[string]string {
	if params == nil {
		return nil
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		out[unescape(k)] = unescape(v)
	}
	return out
}

// unescape decodes a query parameter's name or value; one that is not valid URL encoding is
// taken as it came.
func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// scheduledEvent is the part of an EventBridge event that tells a schedule rule's
// invocation from an HTTP one.
type scheduledEvent struct {
	Source     string `json:"source"`
	DetailType string `json:"detail-type"`
}

// IsScheduledEvent reports whether payload is an EventBridge scheduled event (source
// aws.events, detail-type "Scheduled Event"), as an EventBridge schedule rule sends it.
func IsScheduledEvent(payload []byte) bool {
	var ev scheduledEvent
	return json.Unmarshal(payload, &ev) == nil && ev.Source == "aws.events" && ev.DetailType == "Scheduled Event"
}
