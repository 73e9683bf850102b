package stack_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/web"
)

// synthesized is one stack's template, synthesized once for every test (jsii starts a Node.js
// process, which is slow).
type synthesized struct {
	stack    *stack.Stack
	template assertions.Template
	json     map[string]any
	// annotations are the stack's synth-time messages (read before the output folder is
	// removed).
	annotations assertions.Annotations
}

var (
	synthOnce sync.Once
	stages    map[string]*synthesized
	synthErr  error
)

// The prod stack's stream origin in the tests: prod refuses to synthesize without one. The dev
// stack is synthesized without, as from a fresh clone, so it exercises the HTTP fallback.
const (
	testStreamOriginDomain = "stream-origin.roadevents.example"
	testStreamCertificate  = "arn:aws:acm:eu-west-1:123456789012:certificate/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
)

// synth synthesizes the dev and prod stacks in one app, with placeholder bundles (the
// functions' code is only an asset to the template) and the repository's web/dist.
func synth(t *testing.T) map[string]*synthesized {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("Node.js is not installed: the CDK (jsii) needs it")
	}
	synthOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				synthErr = fmt.Errorf("synth panicked: %v", r)
			}
		}()
		start := time.Now()
		out, err := os.MkdirTemp("", "roadevents-cdk-test-")
		if err != nil {
			synthErr = err
			return
		}
		bundle := filepath.Join(out, "placeholder-bundle")
		if err := stack.WritePlaceholderBundle(bundle); err != nil {
			synthErr = err
			return
		}
		root, _ := filepath.Abs(filepath.Join("..", ".."))
		cdkApp := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(out, "cdk.out"))})
		stages = map[string]*synthesized{}
		for _, stage := range []string{stack.StageDev, stack.StageProd} {
			domain, cert := "", ""
			if stage == stack.StageProd {
				domain, cert = testStreamOriginDomain, testStreamCertificate
			}
			s := stack.New(cdkApp, "roadevents-"+stage, stack.Props{
				StreamOriginDomain:   domain,
				StreamCertificateARN: cert,
				Stage:                stage,
				Bundles: func(constructs.Construct, routetable.Group) awslambda.Code {
					return awslambda.Code_FromAsset(jsii.String(bundle), nil)
				},
				WebDist:    filepath.Join(root, "web", "dist"),
				RepoRoot:   root,
				MailDomain: "roadevents.example",
				ConsoleURL: "https://console.roadevents.example/app/",
			})
			stages[stage] = &synthesized{stack: s}
		}
		for _, syn := range stages {
			tmpl := assertions.Template_FromStack(syn.stack.Stack, nil)
			raw, err := json.Marshal(tmpl.ToJSON())
			if err != nil {
				synthErr = err
				return
			}
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				synthErr = err
				return
			}
			syn.template, syn.json = tmpl, doc
			syn.annotations = assertions.Annotations_FromStack(syn.stack.Stack)
		}
		fmt.Fprintf(os.Stderr, "synthesized dev and prod stacks in %v\n", time.Since(start).Round(time.Millisecond))
		os.RemoveAll(out)
	})
	if synthErr != nil {
		t.Fatal(synthErr)
	}
	return stages
}

// must turns a failed CDK assertion (a panic from jsii) into a test error.
func must(t *testing.T, what string, assert func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

// resources returns the template's resources of type typ by logical id.
func (s *synthesized) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.json["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

func props(res map[string]any) map[string]any {
	p, _ := res["Properties"].(map[string]any)
	return p
}

// logicalID is the template id of c's CloudFormation resource.
func (s *synthesized) logicalID(c constructs.IConstruct) string {
	return *s.stack.GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
}

// ref reads {"Ref": id} or {"Fn::GetAtt": [id, ...]}.
func ref(v any) string {
	m, _ := v.(map[string]any)
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
		s, _ := ga[0].(string)
		return s
	}
	return ""
}

// TestRoutesWiredToTheirFunction: every row of the route table but the stream's is an HTTP
// API route whose integration invokes the function of the row's group.
func TestRoutesWiredToTheirFunction(t *testing.T) {
	s := synth(t)[stack.StageDev]
	integrationTarget := map[string]string{} // integration id -> function id
	for id, res := range s.resources("AWS::ApiGatewayV2::Integration") {
		integrationTarget[id] = ref(props(res)["IntegrationUri"])
		if got := props(res)["PayloadFormatVersion"]; got != "2.0" {
			t.Errorf("integration %s: payload format %v; want 2.0", id, got)
		}
	}
	routeFunction := map[string]string{} // route key -> function id
	for _, res := range s.resources("AWS::ApiGatewayV2::Route") {
		p := props(res)
		key, _ := p["RouteKey"].(string)
		// Target: {"Fn::Join": ["", ["integrations/", {"Ref": id}]]}
		join := p["Target"].(map[string]any)["Fn::Join"].([]any)[1].([]any)
		routeFunction[key] = integrationTarget[ref(join[1])]
	}

	// shared/app's tests check that each group serves exactly its rows.
	want := map[string]routetable.Group{}
	for _, g := range routetable.All {
		for _, r := range g.Routes() {
			key := r.Method + " " + stack.APIPath(r.Path)
			if g.IsLambda() {
				want[key] = g
			} else if _, ok := routeFunction[key]; ok {
				t.Errorf("%s is an HTTP API route; want it on the %s group's process only", key, g)
			}
		}
	}
	for key, g := range want {
		fn := s.logicalID(s.stack.Functions[g])
		if got := routeFunction[key]; got != fn {
			t.Errorf("route %s invokes %q; want %q (the %s function)", key, got, fn, g)
		}
	}
	if got := routeFunction["$default"]; got != s.logicalID(s.stack.Functions[routetable.GroupMeta]) {
		t.Errorf("$default route invokes %q; want the meta function", got)
	}
	if got := routeFunction["OPTIONS /{proxy+}"]; got != s.logicalID(s.stack.Functions[routetable.GroupMeta]) {
		t.Errorf("OPTIONS /{proxy+} invokes %q; want the meta function", got)
	}
	t.Logf("%d routes wired", len(want))
	must(t, "GET /v1/events route", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{"RouteKey": "GET /v1/events"})
	})
}

// TestDistribution: one origin for everything (docs/architecture.md §5): the stream goes to the
// load balancer, uncached and with a long read timeout; tickets and the API to the HTTP API; the
// SPA to the bucket.
func TestDistribution(t *testing.T) {
	s := synth(t)[stack.StageDev]
	dists := s.resources("AWS::CloudFront::Distribution")
	if len(dists) != 1 {
		t.Fatalf("%d distributions; want 1", len(dists))
	}
	var cfg map[string]any
	for _, d := range dists {
		cfg = props(d)["DistributionConfig"].(map[string]any)
	}
	alb := s.logicalID(s.stack.Streamer.LoadBalancer())
	bucket := s.logicalID(s.stack.SiteBucket)
	originKind := map[string]string{} // origin id -> "alb", "api" or "bucket"
	originTimeout := map[string]float64{}
	for _, o := range cfg["Origins"].([]any) {
		om := o.(map[string]any)
		id := om["Id"].(string)
		dn, _ := json.Marshal(om["DomainName"])
		switch {
		case ref(om["DomainName"]) == alb || om["DomainName"] == testStreamOriginDomain:
			originKind[id] = "alb"
		case ref(om["DomainName"]) == bucket:
			originKind[id] = "bucket"
		case strings.Contains(string(dn), "ApiEndpoint") || strings.Contains(string(dn), s.logicalID(s.stack.API)):
			originKind[id] = "api"
		}
		if c, ok := om["CustomOriginConfig"].(map[string]any); ok {
			if v, ok := c["OriginReadTimeout"].(float64); ok {
				originTimeout[id] = v
			}
		}
	}
	const cachingDisabled = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad" // the managed CachingDisabled policy
	consoleHeaders := ""
	for id, pol := range s.resources("AWS::CloudFront::ResponseHeadersPolicy") {
		sec, _ := props(pol)["ResponseHeadersPolicyConfig"].(map[string]any)["SecurityHeadersConfig"].(map[string]any)
		csp, _ := sec["ContentSecurityPolicy"].(map[string]any)
		if csp["ContentSecurityPolicy"] == web.ContentSecurityPolicy {
			consoleHeaders = id
		}
	}
	if consoleHeaders == "" {
		t.Fatalf("no response headers policy sends the console's Content-Security-Policy")
	}
	behaviours := cfg["CacheBehaviors"].([]any)
	order := map[string]int{}
	for i, b := range behaviours {
		bm := b.(map[string]any)
		pattern := bm["PathPattern"].(string)
		order[pattern] = i
		kind := originKind[bm["TargetOriginId"].(string)]
		want := "api"
		switch {
		case pattern == "/v1/stream*":
			want = "alb"
			if bm["CachePolicyId"] != cachingDisabled {
				t.Errorf("%s: cache policy %v; want CachingDisabled", pattern, bm["CachePolicyId"])
			}
			// docs/api.md §10.1: a stream is never compressed, at the edge either.
			if bm["Compress"] != false {
				t.Errorf("%s: Compress %v; want false", pattern, bm["Compress"])
			}
			if got := originTimeout[bm["TargetOriginId"].(string)]; got < 60 {
				t.Errorf("%s: origin read timeout %v s; want at least 60", pattern, got)
			}
		case strings.HasPrefix(pattern, "/app"), pattern == web.ReferencePath:
			want = "bucket"
			// docs/api.md §11.3: the console's pages and the API reference carry the
			// console's Content-Security-Policy.
			if ref(bm["ResponseHeadersPolicyId"]) != consoleHeaders {
				t.Errorf("%s: response headers policy %v; want the console's (%s)", pattern, bm["ResponseHeadersPolicyId"], consoleHeaders)
			}
		}
		if kind != want {
			t.Errorf("behaviour %s goes to %q; want %q", pattern, kind, want)
		}
		if want == "api" {
			s.checkAPICompressed(t, pattern, bm)
		}
	}
	for _, p := range []string{"/v1/stream*", "/v1/stream/tickets", "/v1/*", "/console/*", "/health", "/openapi.json", "/app/*", web.ReferencePath} {
		if _, ok := order[p]; !ok {
			t.Errorf("no behaviour for %s", p)
		}
	}
	if order["/v1/stream/tickets"] > order["/v1/stream*"] || order["/v1/stream*"] > order["/v1/*"] {
		t.Errorf("behaviour order %v: want /v1/stream/tickets before /v1/stream* before /v1/*", order)
	}
	// GET / is the API's JSON: the default behaviour is the API.
	def := cfg["DefaultCacheBehavior"].(map[string]any)
	if kind := originKind[def["TargetOriginId"].(string)]; kind != "api" {
		t.Errorf("default behaviour goes to %q; want the API (GET / is its JSON)", kind)
	}
	s.checkAPICompressed(t, "default", def)
}

// checkAPICompressed asserts docs/api.md §10.1 (compression) for one of the API's behaviours:
// CloudFront compresses at the edge and forwards the client's Accept-Encoding, which needs a
// cache policy that enables gzip and Brotli (the managed CachingDisabled does not), while
// nothing is cached (default and minimum TTL 0) and the cache key would keep callers apart
// (Authorization and every query parameter) should an answer ever carry a lifetime.
func (s *synthesized) checkAPICompressed(t *testing.T, pattern string, behaviour map[string]any) {
	t.Helper()
	if behaviour["Compress"] != true {
		t.Errorf("%s: Compress %v; want true", pattern, behaviour["Compress"])
	}
	policy, ok := s.resources("AWS::CloudFront::CachePolicy")[ref(behaviour["CachePolicyId"])]
	if !ok {
		t.Errorf("%s: cache policy %v; want the stack's own (the managed CachingDisabled turns compression off)", pattern, behaviour["CachePolicyId"])
		return
	}
	cfg := props(policy)["CachePolicyConfig"].(map[string]any)
	key := cfg["ParametersInCacheKeyAndForwardedToOrigin"].(map[string]any)
	if key["EnableAcceptEncodingGzip"] != true || key["EnableAcceptEncodingBrotli"] != true {
		t.Errorf("%s: cache policy gzip %v, brotli %v; want both enabled", pattern, key["EnableAcceptEncodingGzip"], key["EnableAcceptEncodingBrotli"])
	}
	if cfg["DefaultTTL"] != float64(0) || cfg["MinTTL"] != float64(0) {
		t.Errorf("%s: cache policy TTLs default %v, min %v; want 0 (nothing cached)", pattern, cfg["DefaultTTL"], cfg["MinTTL"])
	}
	headers, _ := json.Marshal(key["HeadersConfig"])
	queries, _ := json.Marshal(key["QueryStringsConfig"])
	if !strings.Contains(string(headers), `"Authorization"`) || !strings.Contains(string(queries), `"all"`) {
		t.Errorf("%s: cache key headers %s, query strings %s; want Authorization and every query parameter", pattern, headers, queries)
	}
}

// TestSiteRequestFunction: the function in front of the bucket answers the addresses of the
// site as `go run .` does (web.Handler, web.ReferenceHandler): /docs is the API reference
// (docs/api.md §11.3), a console path without an extension is the console's index.html, and a
// file is itself. The function deployed is the one run here.
func TestSiteRequestFunction(t *testing.T) {
	s := synth(t)[stack.StageDev]
	var deployed []string
	for _, fn := range s.resources("AWS::CloudFront::Function") {
		code, _ := props(fn)["FunctionCode"].(string)
		deployed = append(deployed, code)
	}
	if len(deployed) != 1 || deployed[0] != stack.SiteRequestFunction {
		t.Fatalf("CloudFront functions %q; want the one stack.SiteRequestFunction", deployed)
	}
	cases := map[string]string{
		"/docs":                        "/app/reference.html",
		"/app":                         "/app/index.html",
		"/app/":                        "/app/index.html",
		"/app/orgs/org_1/keys":         "/app/index.html",
		"/app/assets/reference-abc.js": "/app/assets/reference-abc.js",
		"/app/reference-licences.txt":  "/app/reference-licences.txt",
		"/app/config.json":             "/app/config.json",
	}
	uris, _ := json.Marshal(cases)
	script := stack.SiteRequestFunction + `
const want = ` + string(uris) + `;
const got = {};
for (const uri of Object.keys(want)) got[uri] = handler({ request: { uri } }).uri;
process.stdout.write(JSON.stringify(got));`
	out, err := exec.Command("node", "-e", script).Output()
	if err != nil {
		t.Fatalf("running the function in Node.js: %v", err)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("function output %q: %v", out, err)
	}
	for uri, want := range cases {
		if got[uri] != want {
			t.Errorf("the site function maps %s to %q; want %q", uri, got[uri], want)
		}
	}
}

// TestStreamer: the streamer's load balancer outlives the keepalive, checks /health, and the
// service scales on connections up to the tasks one stream allows.
func TestStreamer(t *testing.T) {
	s := synth(t)[stack.StageDev]
	must(t, "idle timeout", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::LoadBalancer"), map[string]any{
			"LoadBalancerAttributes": assertions.Match_ArrayWith(&[]any{
				map[string]any{"Key": "idle_timeout.timeout_seconds", "Value": fmt.Sprint(stack.StreamerIdleTimeoutSeconds)},
			}),
		})
	})
	if stack.StreamerIdleTimeoutSeconds <= 20 {
		t.Errorf("idle timeout %d s; want above the 20 s keepalive", stack.StreamerIdleTimeoutSeconds)
	}
	must(t, "health check", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::TargetGroup"), map[string]any{
			"HealthCheckPath": "/health",
		})
	})
	must(t, "at most 2 tasks", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), map[string]any{
			"MaxCapacity": stack.StreamerMaxTasks,
		})
	})
	must(t, "scaling on connections", func() {
		s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"MetricName": "ActiveConnectionCount",
		})
	})
	must(t, "container configuration", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ECS::TaskDefinition"), map[string]any{
			"RuntimePlatform": map[string]any{"CpuArchitecture": "ARM64"},
			"ContainerDefinitions": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"PortMappings": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"ContainerPort": stack.StreamerPort})}),
				"Environment": assertions.Match_ArrayWith(&[]any{
					map[string]any{"Name": "ROADEVENTS_ADDR", "Value": fmt.Sprintf("0.0.0.0:%d", stack.StreamerPort)},
					assertions.Match_ObjectLike(&map[string]any{"Name": "ROADEVENTS_STREAM_ARN"}),
				}),
			})}),
		})
	})
}

// TestTable: TTL, a stream with both images, on-demand, point-in-time recovery, and deletion
// protection in production only.
func TestTable(t *testing.T) {
	for stage, s := range synth(t) {
		must(t, stage+" table", func() {
			s.template.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"KeySchema": []any{
					map[string]any{"AttributeName": stack.PartitionKey, "KeyType": "HASH"},
					map[string]any{"AttributeName": stack.SortKey, "KeyType": "RANGE"},
				},
				"BillingMode":                      "PAY_PER_REQUEST",
				"TimeToLiveSpecification":          map[string]any{"AttributeName": stack.TTLAttribute, "Enabled": true},
				"StreamSpecification":              map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"DeletionProtectionEnabled":        stage == stack.StageProd,
			})
		})
	}
}

// TestLeastPrivilege: no policy statement grants every action of a service, and none
// touching the table names "*" as its resource.
func TestLeastPrivilege(t *testing.T) {
	s := synth(t)[stack.StageDev]
	statements := 0
	check := func(where string, doc any) {
		d, _ := doc.(map[string]any)
		for _, st := range asList(d["Statement"]) {
			sm := st.(map[string]any)
			statements++
			actions := asList(sm["Action"])
			dynamo := false
			for _, a := range actions {
				as, _ := a.(string)
				if as == "*" || strings.HasSuffix(as, ":*") {
					t.Errorf("%s grants %q", where, as)
				}
				dynamo = dynamo || strings.HasPrefix(as, "dynamodb:")
			}
			if !dynamo || sm["Effect"] != "Allow" {
				continue
			}
			for _, r := range asList(sm["Resource"]) {
				raw, _ := json.Marshal(r)
				if strings.Contains(string(raw), "*") {
					t.Errorf("%s grants %v on %s; want the table's (or its stream's) ARN only", where, actions, raw)
				}
			}
		}
	}
	for id, res := range s.resources("AWS::IAM::Policy") {
		check(id, props(res)["PolicyDocument"])
	}
	for id, res := range s.resources("AWS::IAM::Role") {
		for _, p := range asList(props(res)["Policies"]) {
			check(id, p.(map[string]any)["PolicyDocument"])
		}
	}
	if statements == 0 {
		t.Fatal("no policy statements found")
	}
	// Each function reads only the secrets it needs and uses the table's item actions.
	for _, g := range routetable.Lambdas {
		must(t, string(g)+" table actions", func() {
			s.template.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
				"Roles": assertions.Match_ArrayWith(&[]any{map[string]any{"Ref": *s.stack.GetLogicalId(s.stack.Functions[g].Role().Node().DefaultChild().(awscdk.CfnElement))}}),
				"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
					"Action":   stack.TableDataActions,
					"Resource": map[string]any{"Fn::GetAtt": []any{s.logicalID(s.stack.Table), "Arn"}},
				})})},
			})
		})
	}
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// TestSiteBucketPrivate: the SPA bucket blocks public access and only CloudFront reads it.
func TestSiteBucketPrivate(t *testing.T) {
	s := synth(t)[stack.StageDev]
	must(t, "public access block", func() {
		s.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
		})
	})
	for id, res := range s.resources("AWS::S3::BucketPolicy") {
		for _, st := range asList(props(res)["PolicyDocument"].(map[string]any)["Statement"]) {
			sm := st.(map[string]any)
			raw, _ := json.Marshal(sm["Principal"])
			if sm["Effect"] == "Allow" && (string(raw) == `"*"` || strings.Contains(string(raw), `"AWS":"*"`)) {
				t.Errorf("bucket policy %s allows everyone: %v", id, sm)
			}
		}
	}
	must(t, "origin access control", func() {
		s.template.ResourceCountIs(jsii.String("AWS::CloudFront::OriginAccessControl"), jsii.Number(1))
	})
}

// TestFunctions: every function is arm64 on provided.al2023, sized for its group, with its
// logs kept and its secrets named, never valued, in its configuration.
func TestFunctions(t *testing.T) {
	s := synth(t)[stack.StageDev]
	fns := s.resources("AWS::Lambda::Function")
	for _, g := range routetable.Lambdas {
		id := s.logicalID(s.stack.Functions[g])
		p := props(fns[id])
		if p == nil {
			t.Errorf("no function %s for group %s", id, g)
			continue
		}
		if got := asList(p["Architectures"]); len(got) != 1 || got[0] != "arm64" {
			t.Errorf("%s architectures %v; want [arm64]", g, got)
		}
		if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" {
			t.Errorf("%s runtime %v handler %v; want provided.al2023 and bootstrap", g, p["Runtime"], p["Handler"])
		}
		if p["MemorySize"] != stack.Sizes[g].MemoryMB || p["Timeout"] != stack.Sizes[g].TimeoutSeconds {
			t.Errorf("%s memory %v timeout %v; want %v", g, p["MemorySize"], p["Timeout"], stack.Sizes[g])
		}
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if _, ok := vars[config.SecretsEnv]; !ok {
			t.Errorf("%s has no %s", g, config.SecretsEnv)
		}
		for k := range vars {
			if strings.HasSuffix(k, "_KEY") && k != "ROADEVENTS_KMS_KEY_ID" {
				t.Errorf("%s has secret variable %s in its configuration; want it in %s", g, k, config.SecretsEnv)
			}
		}
		if _, ok := p["LoggingConfig"].(map[string]any)["LogGroup"]; !ok {
			t.Errorf("%s has no log group of its own (retention)", g)
		}
	}
	must(t, "log retention", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"RetentionInDays": 14})
	})
	must(t, "alarms on errors and throttles", func() {
		s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "Errors"})
		s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "Throttles"})
		s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "HealthyHostCount"})
	})
	must(t, "SES identity", func() {
		s.template.HasResourceProperties(jsii.String("AWS::SES::EmailIdentity"), map[string]any{"EmailIdentity": "roadevents.example"})
	})
}

// The overage job (docs/console.md §3): one EventBridge rule, hourly,
// whose one target is the billing function, allowed to invoke it.
func TestOverageSchedule(t *testing.T) {
	s := synth(t)[stack.StageDev]
	rules := s.resources("AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("%d EventBridge rules; want 1", len(rules))
	}
	billing := s.logicalID(s.stack.Functions[routetable.GroupBilling])
	for id, res := range rules {
		p := props(res)
		if p["ScheduleExpression"] != "rate(1 hour)" || p["State"] != "ENABLED" {
			t.Errorf("rule %s: schedule %v state %v; want rate(1 hour), ENABLED", id, p["ScheduleExpression"], p["State"])
		}
		targets := asList(p["Targets"])
		if len(targets) != 1 {
			t.Fatalf("rule %s has %d targets; want 1", id, len(targets))
		}
		target := targets[0].(map[string]any)
		if got := ref(target["Arn"]); got != billing {
			t.Errorf("rule %s targets %q; want the billing function %q", id, got, billing)
		}
		if _, ok := target["Input"]; ok {
			t.Errorf("rule %s sends its own input %v; want EventBridge's scheduled event, which the function recognises", id, target["Input"])
		}
		must(t, "EventBridge may invoke the billing function", func() {
			s.template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
				"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com",
				"FunctionName": map[string]any{"Fn::GetAtt": []any{billing, "Arn"}},
				"SourceArn":    map[string]any{"Fn::GetAtt": []any{id, "Arn"}},
			})
		})
	}
}

// streamOrigin is the distribution's origin for /v1/stream*.
func (s *synthesized) streamOrigin(t *testing.T) map[string]any {
	t.Helper()
	for _, d := range s.resources("AWS::CloudFront::Distribution") {
		cfg := props(d)["DistributionConfig"].(map[string]any)
		target := ""
		for _, b := range cfg["CacheBehaviors"].([]any) {
			if bm := b.(map[string]any); bm["PathPattern"] == "/v1/stream*" {
				target, _ = bm["TargetOriginId"].(string)
			}
		}
		for _, o := range cfg["Origins"].([]any) {
			if om := o.(map[string]any); om["Id"] == target {
				return om
			}
		}
	}
	t.Fatal("no origin for /v1/stream*")
	return nil
}

func jsonOf(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// TestStreamOrigin (docs/architecture.md §5): API keys and stream tickets reach the streamer's load
// balancer over HTTPS from CloudFront only. Prod: an HTTPS listener on 443 with the given
// certificate, and CloudFront's stream origin is that domain, HTTPS only. Both stages: the load
// balancer's security group admits CloudFront's origin-facing prefix list and nothing from
// anywhere, CloudFront adds the secret header and the listener forwards only requests carrying it
// (403 otherwise). Dev without a domain falls back to HTTP and says so at synth.
func TestStreamOrigin(t *testing.T) {
	for stage, s := range synth(t) {
		t.Run(stage, func(t *testing.T) {
			prod := stage == stack.StageProd
			wantPort, wantProtocol := 80.0, "HTTP"
			if prod {
				wantPort, wantProtocol = 443, "HTTPS"
			}
			lb := s.stack.Streamer.LoadBalancer()

			listeners := s.resources("AWS::ElasticLoadBalancingV2::Listener")
			if len(listeners) != 1 {
				t.Fatalf("%d listeners; want 1 (no plain-HTTP listener beside the HTTPS one)", len(listeners))
			}
			for id, l := range listeners {
				p := props(l)
				if p["Protocol"] != wantProtocol || p["Port"] != wantPort {
					t.Errorf("listener %s: %v on %v; want %s on %v", id, p["Protocol"], p["Port"], wantProtocol, wantPort)
				}
				certs := jsonOf(p["Certificates"])
				if prod && certs != `[{"CertificateArn":"`+testStreamCertificate+`"}]` {
					t.Errorf("listener %s certificates %s; want the streamCertificateArn %s", id, certs, testStreamCertificate)
				}
				if got, want := jsonOf(p["DefaultActions"]), `[{"FixedResponseConfig":{"ContentType":"text/plain","MessageBody":"Forbidden","StatusCode":"403"},"Type":"fixed-response"}]`; got != want {
					t.Errorf("listener %s default actions %s; want %s (no header, no stream)", id, got, want)
				}
			}

			// The secret header: the value CloudFront sends is the value the rule requires,
			// a dynamic reference to the generated secret, never a literal in the template.
			secret := s.logicalID(s.stack.OriginVerify)
			origin := s.streamOrigin(t)
			var sent any
			for _, h := range asList(origin["OriginCustomHeaders"]) {
				if hm := h.(map[string]any); hm["HeaderName"] == stack.OriginVerifyHeader {
					sent = hm["HeaderValue"]
				}
			}
			if sent == nil || !strings.Contains(jsonOf(sent), "{{resolve:secretsmanager:") || !strings.Contains(jsonOf(sent), `"Ref":"`+secret+`"`) {
				t.Errorf("stream origin sends %s: %s; want a Secrets Manager reference to %s", stack.OriginVerifyHeader, jsonOf(sent), secret)
			}
			rules := s.resources("AWS::ElasticLoadBalancingV2::ListenerRule")
			if len(rules) != 1 {
				t.Fatalf("%d listener rules; want 1", len(rules))
			}
			tg := s.logicalID(s.stack.Streamer.TargetGroup())
			for id, r := range rules {
				p := props(r)
				want := []any{map[string]any{
					"Field":            "http-header",
					"HttpHeaderConfig": map[string]any{"HttpHeaderName": stack.OriginVerifyHeader, "Values": []any{sent}},
				}}
				if got := jsonOf(p["Conditions"]); got != jsonOf(want) {
					t.Errorf("rule %s conditions %s; want %s", id, got, jsonOf(want))
				}
				actions := asList(p["Actions"])
				if len(actions) != 1 || actions[0].(map[string]any)["Type"] != "forward" || ref(actions[0].(map[string]any)["TargetGroupArn"]) != tg {
					t.Errorf("rule %s actions %s; want forward to the streamer's target group %s", id, jsonOf(actions), tg)
				}
			}

			// CloudFront's stream origin.
			custom, _ := origin["CustomOriginConfig"].(map[string]any)
			if prod {
				if origin["DomainName"] != testStreamOriginDomain || custom["OriginProtocolPolicy"] != "https-only" {
					t.Errorf("stream origin %v %v; want %s, https-only", origin["DomainName"], custom["OriginProtocolPolicy"], testStreamOriginDomain)
				}
				if got := jsonOf(custom["OriginSSLProtocols"]); got != `["TLSv1.2"]` {
					t.Errorf("stream origin TLS %s; want [\"TLSv1.2\"]", got)
				}
			} else if custom["OriginProtocolPolicy"] != "http-only" || ref(origin["DomainName"]) != s.logicalID(lb) {
				t.Errorf("dev stream origin %s %v; want the load balancer's DNS name, http-only", jsonOf(origin["DomainName"]), custom["OriginProtocolPolicy"])
			}

			// The load balancer's security group: the prefix list on the listener's port, and
			// no ingress from anywhere.
			var ingress []any
			groups := map[string]bool{}
			for _, sg := range *lb.Connections().SecurityGroups() {
				id := s.logicalID(sg)
				groups[id] = true
				ingress = append(ingress, asList(props(s.resources("AWS::EC2::SecurityGroup")[id])["SecurityGroupIngress"])...)
			}
			for _, r := range s.resources("AWS::EC2::SecurityGroupIngress") {
				if groups[ref(props(r)["GroupId"])] {
					ingress = append(ingress, props(r))
				}
			}
			fromCloudFront := 0
			for _, in := range ingress {
				im := in.(map[string]any)
				// Any address range, 0.0.0.0/0 and ::/0 first among them, is a way around CloudFront.
				if im["CidrIp"] != nil || im["CidrIpv6"] != nil {
					t.Errorf("load balancer ingress %s: want CloudFront's prefix list only", jsonOf(im))
				}
				if strings.HasPrefix(ref(im["SourcePrefixListId"]), "CloudFrontPrefixList") && im["FromPort"] == wantPort && im["ToPort"] == wantPort {
					fromCloudFront++
				}
			}
			if fromCloudFront != 1 {
				t.Errorf("load balancer ingress %s: want one rule from the looked-up CloudFront prefix list on port %v", jsonOf(ingress), wantPort)
			}
			must(t, "prefix list lookup", func() {
				s.template.HasResourceProperties(jsii.String("Custom::AWS"), map[string]any{
					"Create": assertions.Match_StringLikeRegexp(jsii.String(`DescribeManagedPrefixLists.*` + stack.CloudFrontPrefixListName)),
				})
			})

			// Dev without a domain says it is on HTTP; prod never is.
			overHTTP := assertions.Match_StringLikeRegexp(jsii.String("over HTTP"))
			must(t, "warning that the stream origin is HTTP", func() {
				if prod {
					s.annotations.HasNoWarning(jsii.String("*"), overHTTP)
				} else {
					s.annotations.HasWarning(jsii.String("*"), overHTTP)
				}
			})
		})
	}
}

// TestStreamOriginRequired: prod refuses to synthesize without the stream origin's domain and
// certificate, naming the context keys; dev takes both or neither.
func TestStreamOriginRequired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stage, domain, cert string
		ok                        bool
	}{
		{name: "prod with both", stage: stack.StageProd, domain: testStreamOriginDomain, cert: testStreamCertificate, ok: true},
		{name: "prod with neither", stage: stack.StageProd},
		{name: "prod without certificate", stage: stack.StageProd, domain: testStreamOriginDomain},
		{name: "prod without domain", stage: stack.StageProd, cert: testStreamCertificate},
		{name: "dev with neither", stage: stack.StageDev, ok: true},
		{name: "dev with both", stage: stack.StageDev, domain: testStreamOriginDomain, cert: testStreamCertificate, ok: true},
		{name: "dev with domain only", stage: stack.StageDev, domain: testStreamOriginDomain},
		{name: "domain with a scheme", stage: stack.StageProd, domain: "https://" + testStreamOriginDomain, cert: testStreamCertificate},
		{name: "certificate not an ACM ARN", stage: stack.StageProd, domain: testStreamOriginDomain, cert: "arn:aws:iam::123456789012:server-certificate/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := stack.Props{Stage: tc.stage, StreamOriginDomain: tc.domain, StreamCertificateARN: tc.cert}.Check()
			if (err == nil) != tc.ok {
				t.Fatalf("Check() = %v; want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, stack.ErrStreamOrigin) {
				t.Errorf("Check() = %v; want errors.Is ErrStreamOrigin", err)
			}
			if err != nil && (!strings.Contains(err.Error(), stack.ContextStreamOriginDomain) && !strings.Contains(err.Error(), stack.ContextStreamCertificateARN)) {
				t.Errorf("Check() = %v; want the context key named", err)
			}
		})
	}
}

// TestProdWithoutStreamOriginDoesNotSynthesize: stack.New itself refuses, so no caller can
// build a prod template whose stream crosses the internet in clear.
func TestProdWithoutStreamOriginDoesNotSynthesize(t *testing.T) {
	synth(t) // skips without Node.js, and starts jsii once
	var got any
	func() {
		defer func() { got = recover() }()
		stack.New(awscdk.NewApp(nil), "roadevents-prod", stack.Props{Stage: stack.StageProd, MailDomain: "roadevents.example"})
	}()
	msg := fmt.Sprint(got)
	if got == nil || !strings.Contains(msg, stack.ContextStreamOriginDomain) || !strings.Contains(msg, stack.ContextStreamCertificateARN) {
		t.Errorf("stack.New(prod, no stream origin) panicked with %v; want a refusal naming -c %s and -c %s",
			got, stack.ContextStreamOriginDomain, stack.ContextStreamCertificateARN)
	}
}
