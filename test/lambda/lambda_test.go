// Package lambda_test is the packaging test of the Lambda functions (docs/architecture.md §4): it
// runs each built bootstrap (host architecture, scripts/build-lambdas.sh --host) as Lambda runs a
// provided.al2023 function, a process that polls the Runtime API, which a loopback server plays
// here, and hands it the events of its front doors: API Gateway HTTP API (payload 2.0), function
// URL and load balancer events. It checks the answers, that a function asks for SIGTERM and on it
// writes the usage its invocations counted, and that each function links only its own group;
// BenchmarkInit measures each function's init.
//
// The function's store is the embedded one in a temporary folder, and also a table on
// DynamoDB Local when ROADEVENTS_DYNAMODB_ENDPOINT is set (scripts/test.sh sets it and builds
// the bootstraps first).
package lambda_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// endpointEnv is DynamoDB Local's endpoint, set by scripts/test.sh.
const endpointEnv = "ROADEVENTS_DYNAMODB_ENDPOINT"

// answerTimeout bounds the wait for one answer; it is a hang guard, not a measurement.
const answerTimeout = 60 * time.Second

// bootstrapDirEnv names another folder of host bootstraps (<dir>/<group>/bootstrap) than
// build/lambda/host, for comparing two builds with BenchmarkInit.
const bootstrapDirEnv = "BOOTSTRAP_DIR"

// bootstrapPath returns the host bootstrap of group, skipping the test when it is not built.
func bootstrapPath(t testing.TB, group routetable.Group) string {
	t.Helper()
	dir := os.Getenv(bootstrapDirEnv)
	if dir == "" {
		dir = filepath.Join("..", "..", "build", "lambda", "host")
	}
	p, err := filepath.Abs(filepath.Join(dir, string(group), "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not built: run scripts/build-lambdas.sh --host (scripts/test.sh does)", p)
	}
	return p
}

// backend is a store a function runs on, with the variables that select it.
type backend struct {
	name string
	env  []string
	// open opens the function's table from the test (seeding and reading); the embedded
	// store's file is locked while it is open, so the test closes it before the function starts.
	open func(t testing.TB) store.Table
}

func embeddedBackend(t testing.TB) backend {
	dir := t.TempDir()
	return backend{
		name: "embedded",
		env:  []string{"ROADEVENTS_STORE=embedded", "ROADEVENTS_DATA=" + dir},
		open: func(t testing.TB) store.Table {
			t.Helper()
			s, err := embedded.Open(filepath.Join(dir, config.EmbeddedStoreFile), embedded.Options{SweepInterval: -1})
			if err != nil {
				t.Fatalf("open embedded store: %v", err)
			}
			return s
		},
	}
}

func dynamoBackend(t testing.TB) backend {
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		t.Skipf("%s is not set: scripts/test.sh starts DynamoDB Local and sets it", endpointEnv)
	}
	client := ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	name := "lambda-" + strings.ToLower(rand.Text()[:12])
	if err := dynamodb.CreateTable(context.Background(), client, name); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		client.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(name)})
	})
	return backend{
		name: "dynamodb",
		env: []string{
			"ROADEVENTS_STORE=dynamodb", "ROADEVENTS_TABLE=" + name, "ROADEVENTS_DATA=" + t.TempDir(),
			"AWS_ENDPOINT_URL_DYNAMODB=" + endpoint,
			"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
			// The shared keys a Lambda on DynamoDB must be given (lambdastore.ErrKeys).
			"ROADEVENTS_EVENT_ID_KEY=" + randomHex(32), "ROADEVENTS_AUTH_HASH_KEY=" + randomHex(32),
			"ROADEVENTS_SEAL_KEY=" + randomHex(32),
		},
		open: func(testing.TB) store.Table { return dynamodb.New(client, name, dynamodb.Options{}) },
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// function is a running bootstrap.
type function struct {
	rt      *runtimeAPI
	cmd     *exec.Cmd
	exited  chan struct{}
	started time.Time
}

// start runs the bootstrap of group with the environment Lambda gives a function plus env.
func start(t testing.TB, group routetable.Group, env []string) *function {
	t.Helper()
	path := bootstrapPath(t, group)
	rt := newRuntimeAPI(t)
	cmd := exec.Command(path)
	cmd.Dir = filepath.Dir(path)
	cmd.Env = append([]string{
		"AWS_LAMBDA_RUNTIME_API=" + rt.addr,
		"AWS_LAMBDA_FUNCTION_NAME=roadevents-" + string(group),
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_REGION=us-east-1",
		"LAMBDA_TASK_ROOT=" + cmd.Dir,
		"_HANDLER=bootstrap",
		"TZ=:UTC",
		"ROADEVENTS_LOG_LEVEL=warn",
		"ROADEVENTS_MAIL_FROM=Road Events <no-reply@example.com>",
		// Billing on (docs/api.md §10.4), pointed at an address where nothing listens: no route
		// exercised here reaches Stripe before refusing the request.
		"STRIPE_SECRET_KEY=sk_test_packaging", "STRIPE_WEBHOOK_SECRET=whsec_packaging",
		"ROADEVENTS_STRIPE_API_BASE=http://127.0.0.1:9",
	}, env...)
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	f := &function{rt: rt, cmd: cmd, exited: make(chan struct{})}
	f.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	go func() {
		cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(func() {
		f.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", group, logs)
		}
	})
	return f
}

// terminate sends the process SIGTERM, as Lambda does before it reclaims an instance of a
// function that asked for it, and waits for the process to end, which must be a success.
func (f *function) terminate(t testing.TB) {
	t.Helper()
	f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-f.exited:
	case <-time.After(answerTimeout):
		t.Fatal("the process did not end after SIGTERM")
	}
	if code := f.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status after SIGTERM %d; want 0", code)
	}
}

// kill ends the process at once, as Lambda may drop a frozen instance: nothing runs after
// the last response.
func (f *function) kill() {
	select {
	case <-f.exited:
		return
	default:
	}
	f.cmd.Process.Signal(syscall.SIGKILL)
	<-f.exited
}

// call hands the function one API Gateway event and returns its response.
func (f *function) call(t testing.TB, method, target string, headers map[string]string, body string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	f.invoke(t, apiEvent(method, target, headers, body), &resp)
	return resp
}

// invoke hands the function one event and decodes its response into resp.
func (f *function) invoke(t testing.TB, ev, resp any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	f.rt.wait(ctx, t, f.rt.enqueue(t, ev), f.exited, resp)
}

// apiEvent is the event API Gateway's HTTP API sends a Lambda integration (payload 2.0) for
// a request to target (path and query).
func apiEvent(method, target string, headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	path, query, _ := strings.Cut(target, "?")
	h := map[string]string{"host": "api.example.com", "user-agent": "packaging-test"}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	if body != "" {
		h["content-type"] = "application/json"
	}
	now := time.Now()
	return events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        path,
		RawQueryString: query,
		Headers:        h,
		Body:           body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID:  "000000000000",
			APIID:      "api",
			DomainName: "api.example.com",
			Stage:      "$default",
			RequestID:  rand.Text(),
			Time:       now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1", UserAgent: "packaging-test",
			},
		},
	}
}

// functionURLEvent is the event a Lambda function URL sends for a request to target: payload
// format 2.0 on the function's own domain.
func functionURLEvent(method, target string, headers map[string]string, body string) events.LambdaFunctionURLRequest {
	api := apiEvent(method, target, headers, body)
	const domain = "abcdefghijklmnop.lambda-url.us-east-1.on.aws"
	api.Headers["host"] = domain
	return events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: api.RawPath, RawQueryString: api.RawQueryString, Headers: api.Headers, Body: body,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: "000000000000", RequestID: rand.Text(), APIID: "abcdefghijklmnop", DomainName: domain,
			DomainPrefix: "abcdefghijklmnop", TimeEpoch: time.Now().UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: method, Path: api.RawPath, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1", UserAgent: "packaging-test",
			},
		},
	}
}

// albEvent is the event an Application Load Balancer's target group with multi-value headers
// sends for a request to target; the query's names and values stay URL-encoded.
func albEvent(method, target string, headers map[string]string, body string) events.ALBTargetGroupRequest {
	api := apiEvent(method, target, headers, body)
	ev := events.ALBTargetGroupRequest{
		HTTPMethod: method, Path: api.RawPath, Body: body,
		MultiValueHeaders:               map[string][]string{"x-forwarded-for": {"192.0.2.1"}},
		MultiValueQueryStringParameters: map[string][]string{},
		RequestContext: events.ALBTargetGroupRequestContext{ELB: events.ELBContext{
			TargetGroupArn: "arn:aws:elasticloadbalancing:us-east-1:000000000000:targetgroup/roadevents/0123456789abcdef",
		}},
	}
	for k, v := range api.Headers {
		ev.MultiValueHeaders[k] = []string{v}
	}
	for _, pair := range strings.Split(api.RawQueryString, "&") {
		if k, v, ok := strings.Cut(pair, "="); ok {
			ev.MultiValueQueryStringParameters[k] = append(ev.MultiValueQueryStringParameters[k], v)
		}
	}
	return ev
}

// testCompressedThroughEveryFrontDoor: docs/api.md §10.1 (compression) behind every front door
// the stack may put before a function: the document, asked for with gzip, comes compressed,
// base64-encoded, with Content-Encoding and Vary, and decodes to the document.
func testCompressedThroughEveryFrontDoor(t *testing.T, f *function) {
	plain := f.call(t, "GET", "/openapi.json", nil, "")
	if plain.StatusCode != 200 || plain.IsBase64Encoded {
		t.Fatalf("GET /openapi.json: %d, base64 %v; want 200 and the JSON as text", plain.StatusCode, plain.IsBase64Encoded)
	}
	gzip := map[string]string{"Accept-Encoding": "gzip"}
	type answer struct {
		status         int
		base64         bool
		body           string
		encoding, vary string
	}
	answers := map[string]answer{}
	var api events.APIGatewayV2HTTPResponse
	f.invoke(t, apiEvent("GET", "/openapi.json", gzip, ""), &api)
	answers["HTTP API"] = answer{api.StatusCode, api.IsBase64Encoded, api.Body, api.Headers["Content-Encoding"], api.Headers["Vary"]}
	var url events.LambdaFunctionURLResponse
	f.invoke(t, functionURLEvent("GET", "/openapi.json", gzip, ""), &url)
	answers["function URL"] = answer{url.StatusCode, url.IsBase64Encoded, url.Body, url.Headers["Content-Encoding"], url.Headers["Vary"]}
	var alb events.ALBTargetGroupResponse
	f.invoke(t, albEvent("GET", "/openapi.json", gzip, ""), &alb)
	answers["load balancer"] = answer{alb.StatusCode, alb.IsBase64Encoded, alb.Body,
		strings.Join(alb.MultiValueHeaders["Content-Encoding"], ","), strings.Join(alb.MultiValueHeaders["Vary"], ",")}
	for door, a := range answers {
		if a.status != 200 || !a.base64 || a.encoding != "gzip" || !strings.Contains(a.vary, "Accept-Encoding") {
			t.Errorf("%s: GET /openapi.json with gzip: %d, base64 %v, Content-Encoding %q, Vary %q; want 200, base64, gzip, Accept-Encoding",
				door, a.status, a.base64, a.encoding, a.vary)
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(a.body)
		if err != nil {
			t.Fatalf("%s: %v", door, err)
		}
		doc, err := apitest.Decompressed("gzip", raw)
		if err != nil {
			t.Fatalf("%s: %v", door, err)
		}
		if string(doc) != plain.Body {
			t.Errorf("%s: the compressed document decodes to %d bytes; want the %d of the document", door, len(doc), len(plain.Body))
		}
	}
}

// detail reads the {"detail": "..."} of an error answer.
func detail(resp events.APIGatewayV2HTTPResponse) string {
	var d struct {
		Detail any `json:"detail"`
	}
	json.Unmarshal([]byte(resp.Body), &d)
	s, _ := d.Detail.(string)
	return s
}

// unmatched reports the router's own answer to a request no route of the group matched.
func unmatched(resp events.APIGatewayV2HTTPResponse) bool {
	return (resp.StatusCode == 404 && detail(resp) == "Not Found") || resp.StatusCode == 405
}

var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// concrete turns a route pattern into a path that matches it.
func concrete(pattern string) string {
	if pattern == "/{$}" {
		return "/"
	}
	return wildcard.ReplaceAllString(pattern, "x")
}

// TestFunctions runs every function's bootstrap on each store.
func TestFunctions(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the bootstraps are Linux programs")
	}
	for _, group := range routetable.Lambdas {
		t.Run(string(group), func(t *testing.T) {
			bootstrapPath(t, group)
			for name, mk := range map[string]func(testing.TB) backend{"embedded": embeddedBackend, "dynamodb": dynamoBackend} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					testFunction(t, group, mk(t))
				})
			}
		})
	}
}

func testFunction(t *testing.T, group routetable.Group, b backend) {
	// A sandbox key, written before the function starts (the embedded file is then free).
	table := b.open(t)
	raw, _, err := apikey.New(table, apikey.Options{}).Issue(context.Background(),
		apikey.IssueRequest{OrgID: "org_pack", Environment: apikey.Sandbox, Label: "packaging"})
	if err != nil {
		t.Fatalf("issue key: %v", err)
	}
	if b.name == "embedded" {
		table.Close()
	}
	auth := map[string]string{"Authorization": "Bearer " + raw}

	f := start(t, group, b.env)
	// The first invocation: what a cold start costs until the first answer.
	resp := f.call(t, "GET", "/no/such/route", nil, "")
	t.Logf("%s on %s: init cost (process start to first response) %v", group, b.name, time.Since(f.started).Round(time.Millisecond))
	if resp.StatusCode != 404 || detail(resp) != "Not Found" {
		t.Errorf("GET /no/such/route: %d %s; want 404 {\"detail\":\"Not Found\"}", resp.StatusCode, resp.Body)
	}

	// CORS preflight is answered by every function (the stack routes OPTIONS to meta).
	resp = f.call(t, "OPTIONS", "/v1/events", map[string]string{"Origin": "https://fleet.example", "Access-Control-Request-Method": "POST"}, "")
	if resp.StatusCode != 204 || resp.Headers["Access-Control-Allow-Origin"] == "" {
		t.Errorf("preflight: %d, Access-Control-Allow-Origin %q; want 204 and an allowed origin", resp.StatusCode, resp.Headers["Access-Control-Allow-Origin"])
	}

	// Every route of the group reaches its handler (whatever the handler then answers to a
	// request without credentials or body), and none fails.
	routes := group.Routes()
	for _, r := range routes {
		target := concrete(r.Path)
		resp := f.call(t, r.Method, target, nil, "")
		if unmatched(resp) || resp.StatusCode >= 500 {
			t.Errorf("%s %s (route %s): %d %s; want the route's handler to answer", r.Method, target, r.Path, resp.StatusCode, resp.Body)
		}
	}
	t.Logf("%s on %s: %d routes answered", group, b.name, len(routes))

	switch group {
	case routetable.GroupMeta:
		resp := f.call(t, "GET", "/health", nil, "")
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"status"`) {
			t.Errorf("GET /health: %d %s; want 200 with a status", resp.StatusCode, resp.Body)
		}
		resp = f.call(t, "GET", "/v1/meta/limits", nil, "")
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, "max_query_radius_m") {
			t.Errorf("GET /v1/meta/limits: %d %s; want 200 with max_query_radius_m", resp.StatusCode, resp.Body)
		}
		testCompressedThroughEveryFrontDoor(t, f)
	case routetable.GroupConsoleAuth:
		const payload = `{"email":"driver@example.com"}`
		if resp := f.call(t, "POST", "/console/auth/request-code", nil, payload); resp.StatusCode != 200 {
			t.Errorf("POST /console/auth/request-code: %d %s; want 200", resp.StatusCode, resp.Body)
		}
		var url events.LambdaFunctionURLResponse
		f.invoke(t, functionURLEvent("POST", "/console/auth/request-code", nil, payload), &url)
		if url.StatusCode != 200 {
			t.Errorf("POST /console/auth/request-code through a function URL: %d %s; want 200", url.StatusCode, url.Body)
		}
		var alb events.ALBTargetGroupResponse
		f.invoke(t, albEvent("POST", "/console/auth/request-code", nil, payload), &alb)
		if alb.StatusCode != 200 {
			t.Errorf("POST /console/auth/request-code through a load balancer: %d %s; want 200", alb.StatusCode, alb.Body)
		}
	case routetable.GroupEvents:
		testEvents(t, f, b, auth)
	case routetable.GroupBilling:
		resp := f.call(t, "GET", "/console/plans", nil, "")
		if resp.StatusCode != 200 {
			t.Errorf("GET /console/plans: %d %s; want 200", resp.StatusCode, resp.Body)
		}
		resp = f.call(t, "POST", "/console/billing/webhook", map[string]string{"Stripe-Signature": "t=1,v1=00"}, `{"type":"ping"}`)
		if resp.StatusCode != 400 {
			t.Errorf("POST /console/billing/webhook with a bad signature: %d %s; want 400", resp.StatusCode, resp.Body)
		}
	}
}

// testEvents publishes and reads an event, then stops the process as Lambda does and finds
// both counted.
func testEvents(t *testing.T, f *function, b backend, auth map[string]string) {
	resp := f.call(t, "POST", "/v1/events", auth, `{"type":"road_damage","lat":50.1,"lon":8.6,"client_event_id":"pack-1"}`)
	if resp.StatusCode != 201 {
		t.Fatalf("POST /v1/events: %d %s; want 201", resp.StatusCode, resp.Body)
	}
	var ev struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &ev); err != nil || ev.EventID == "" {
		t.Fatalf("POST /v1/events: body %s has no event_id", resp.Body)
	}
	resp = f.call(t, "GET", "/v1/events?lat=50.1&lon=8.6&radius_m=500", auth, "")
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, ev.EventID) {
		t.Errorf("GET /v1/events: %d %s; want 200 listing %s", resp.StatusCode, resp.Body, ev.EventID)
	}
	resp = f.call(t, "GET", "/v1/events?lat=50.1&lon=8.6&radius_m=500", nil, "")
	if resp.StatusCode != 401 {
		t.Errorf("GET /v1/events without a key: %d; want 401", resp.StatusCode)
	}

	// docs/architecture.md §4 (usage on Lambda): the function asked for SIGTERM, which Lambda
	// sends only to a function that registered an extension, and on it writes the counts it
	// held.
	if got := f.rt.registered(); !slices.Contains(got, "GoLangEnableSIGTERM") {
		t.Errorf("extensions registered %q; want aws-lambda-go's GoLangEnableSIGTERM", got)
	}
	f.terminate(t)
	table := b.open(t)
	defer table.Close()
	now := time.Now()
	days, err := metering.New(table, metering.Options{FlushInterval: -1}).Read(context.Background(), "org_pack", apikey.Sandbox, now.Add(-24*time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatalf("read usage: %v", err)
	}
	var got metering.Totals
	for _, d := range days {
		got.Reads += d.Reads
		got.Publishes += d.Publishes
	}
	if got.Publishes != 1 || got.Reads != 1 {
		t.Errorf("usage after SIGTERM: %d publishes, %d reads; want 1 and 1", got.Publishes, got.Reads)
	}
}

// TestInitError: a function that cannot start says why through the Runtime API's init error,
// and exits, instead of waiting for events it cannot serve.
func TestInitError(t *testing.T) {
	t.Parallel()
	f := start(t, routetable.GroupEvents, []string{"ROADEVENTS_STORE=dynamodb", "ROADEVENTS_TABLE=t"})
	select {
	case body := <-f.rt.initCh:
		if !strings.Contains(body, "ROADEVENTS_EVENT_ID_KEY") {
			t.Errorf("init error %s; want it to name the missing key", body)
		}
	case <-time.After(answerTimeout):
		t.Fatal("no init error reported")
	}
	select {
	case <-f.exited:
	case <-time.After(answerTimeout):
		t.Fatal("the process did not exit after its init error")
	}
	if code := f.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("exit code %d; want non-zero", code)
	}
}

// offlineAWSEnv configures a function as the stack does on AWS (DynamoDB, SES, KMS, the
// shared keys, which on AWS come from Secrets Manager) without any of them being reachable:
// a function contacts none of them while it starts (the table is neither described nor
// created), so its init runs the code it runs on AWS, with no network.
func offlineAWSEnv(t testing.TB) []string {
	return []string{
		"ROADEVENTS_STORE=dynamodb", "ROADEVENTS_TABLE=roadevents-init", "ROADEVENTS_DATA=" + t.TempDir(),
		"ROADEVENTS_MAILER=ses", "ROADEVENTS_KMS_KEY_ID=arn:aws:kms:us-east-1:000000000000:key/init",
		"ROADEVENTS_EVENT_ID_KEY=" + randomHex(32), "ROADEVENTS_AUTH_HASH_KEY=" + randomHex(32),
		"AWS_ACCESS_KEY_ID=offline", "AWS_SECRET_ACCESS_KEY=offline", "AWS_EC2_METADATA_DISABLED=true",
		// Nothing listens there: a call would fail rather than leave the machine.
		"AWS_ENDPOINT_URL=http://127.0.0.1:9",
	}
}

// BenchmarkInit measures each function's init as Lambda bills it: the time from exec to the
// bootstrap's first GET .../invocation/next, when the function is ready for its first event.
// It reports the median over b.N starts (docs/performance.md §12: run it with -benchtime 15x,
// and BOOTSTRAP_DIR to measure another build).
func BenchmarkInit(b *testing.B) {
	for _, group := range routetable.Lambdas {
		b.Run(string(group), func(b *testing.B) {
			bootstrapPath(b, group)
			env := offlineAWSEnv(b)
			var inits []time.Duration
			for range b.N {
				f := start(b, group, env)
				inits = append(inits, f.initDuration(b))
				f.kill()
			}
			slices.Sort(inits)
			b.ReportMetric(float64(inits[len(inits)/2].Microseconds())/1000, "ms-median/init")
		})
	}
}

// initDuration waits for the function's first poll of the Runtime API and returns how long after
// exec it came.
func (f *function) initDuration(t testing.TB) time.Duration {
	t.Helper()
	select {
	case <-f.rt.polled:
		return f.rt.polledAt.Sub(f.started)
	case body := <-f.rt.initCh:
		t.Fatalf("function reported an init error: %s", body)
	case <-f.exited:
		t.Fatal("function exited during init")
	case <-time.After(answerTimeout):
		t.Fatal("function never polled for an event")
	}
	return 0
}
