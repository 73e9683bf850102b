package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"github.com/roadevents/roadevents/shared/service"
)

// synthesized is one stack's template, synthesized once for every test (jsii starts a Node.js
// process, which is slow).
type synthesized struct {
	stack    *stack.Stack
	template assertions.Template
	json     map[string]any
}

var (
	synthOnce sync.Once
	stages    map[string]*synthesized
	synthErr  error
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
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(out, "cdk.out"))})
		stages = map[string]*synthesized{}
		for _, stage := range []string{stack.StageDev, stack.StageProd} {
			s := stack.New(app, "roadevents-"+stage, stack.Props{
				Stage: stage,
				Bundles: func(constructs.Construct, service.Group) awslambda.Code {
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

// TestRoutesWiredToTheirFunction: every route of the API document except the stream is an
// HTTP API route whose integration invokes the function of the route's group.
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

	want := map[string]service.Group{}
	for _, g := range service.LambdaGroups {
		for _, r := range service.GroupRoutes(g) {
			want[r.Method+" "+stack.APIPath(r.Path)] = g
		}
	}
	// The document describes every route of every group: each one but the stream must be
	// wired, so that no spec route is left out of the API.
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(service.Document(), &doc); err != nil {
		t.Fatalf("decode the API document: %v", err)
	}
	documented := 0
	for path, ops := range doc.Paths {
		for method := range ops {
			m := strings.ToUpper(method)
			if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, m) {
				continue
			}
			documented++
			key := m + " " + path
			if key == "GET /v1/stream" {
				if _, ok := routeFunction[key]; ok {
					t.Errorf("%s is an HTTP API route; want it on the streamer only", key)
				}
				continue
			}
			if _, ok := routeFunction[key]; !ok {
				t.Errorf("documented route %s is not in the HTTP API", key)
			}
		}
	}
	for key, g := range want {
		fn := s.logicalID(s.stack.Functions[g])
		if got := routeFunction[key]; got != fn {
			t.Errorf("route %s invokes %q; want %q (the %s function)", key, got, fn, g)
		}
	}
	if got := routeFunction["$default"]; got != s.logicalID(s.stack.Functions[service.GroupMeta]) {
		t.Errorf("$default route invokes %q; want the meta function", got)
	}
	if got := routeFunction["OPTIONS /{proxy+}"]; got != s.logicalID(s.stack.Functions[service.GroupMeta]) {
		t.Errorf("OPTIONS /{proxy+} invokes %q; want the meta function", got)
	}
	t.Logf("%d routes wired, %d documented operations", len(want), documented)
	must(t, "GET /v1/events route", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{"RouteKey": "GET /v1/events"})
	})
}

// TestDistribution: one origin for everything (ARCHITECTURE.md): the stream goes to the load
// balancer, uncached and with a long read timeout; tickets and the API to the HTTP API; the
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
		case ref(om["DomainName"]) == alb:
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
			if got := originTimeout[bm["TargetOriginId"].(string)]; got < 60 {
				t.Errorf("%s: origin read timeout %v s; want at least 60", pattern, got)
			}
		case strings.HasPrefix(pattern, "/app"):
			want = "bucket"
		}
		if kind != want {
			t.Errorf("behaviour %s goes to %q; want %q", pattern, kind, want)
		}
	}
	for _, p := range []string{"/v1/stream*", "/v1/stream/tickets", "/v1/*", "/console/*", "/health", "/openapi.json", "/app/*"} {
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
	for _, g := range service.LambdaGroups {
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
	for _, g := range service.LambdaGroups {
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
		if _, ok := vars[service.SecretsEnv]; !ok {
			t.Errorf("%s has no %s", g, service.SecretsEnv)
		}
		for k := range vars {
			if strings.HasSuffix(k, "_KEY") && k != "ROADEVENTS_KMS_KEY_ID" {
				t.Errorf("%s has secret variable %s in its configuration; want it in %s", g, k, service.SecretsEnv)
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

// The overage job (README "Reads beyond included_reads"): one EventBridge rule, hourly,
// whose one target is the billing function, allowed to invoke it.
func TestOverageSchedule(t *testing.T) {
	s := synth(t)[stack.StageDev]
	rules := s.resources("AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("%d EventBridge rules; want 1", len(rules))
	}
	billing := s.logicalID(s.stack.Functions[service.GroupBilling])
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
