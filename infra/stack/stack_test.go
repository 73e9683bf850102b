package stack_test

import (
	"encoding/json"
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
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/routetable"
)

// synthesized is one stack's template, synthesized once for every test (jsii starts a Node.js
// process, which is slow).
type synthesized struct {
	stack awscdk.Stack
	// main is the main stack's constructs (dev and prod only).
	main     *stack.Stack
	template assertions.Template
	json     map[string]any
	// annotations are the stack's synth-time messages (cdk-nag's among them), read before the
	// output folder is removed.
	annotations assertions.Annotations
}

// The stacks of the tests, by name.
const (
	dev        = stack.StageDev  // no TLS to the origin, no custom domain, the edge stack's web ACL
	prod       = stack.StageProd // TLS to the origin, a custom domain, an existing web ACL
	edgeOff    = "edge"          // dev's edge stack: no rate limit
	edgeBlock  = "edge-block"    // a rate limit that refuses
	edgeCount  = "edge-count"    // a rate limit that counts
	localStack = "localstack"
)

// The test deployments' values.
const (
	testAccount          = "123456789012"
	testRegion           = "eu-west-1"
	testOriginDomain     = "origin.roadevents.example"
	testOriginCert       = "arn:aws:acm:eu-west-1:123456789012:certificate/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
	testDomain           = "roads.example.com"
	testViewerCert       = "arn:aws:acm:us-east-1:123456789012:certificate/1c2d3e4f-5061-7283-94a5-b6c7d8e9f001"
	testWebACL           = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/roadevents/a1b2c3d4-0000-1111-2222-333344445555"
	testRateLimit        = 2000
	testProdRetention    = 30
	testProdEventsBudget = 250
)

var (
	synthOnce sync.Once
	stacks    map[string]*synthesized
	synthErr  error
	// testBundle is the placeholder code of every function.
	testBundle string
)

// repoRoot is the repository's root.
func repoRoot() string {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	return root
}

func testEnv(region string) *awscdk.Environment {
	return &awscdk.Environment{Account: jsii.String(testAccount), Region: jsii.String(region)}
}

func placeholders(constructs.Construct, routetable.Group) awslambda.Code {
	return awslambda.Code_FromAsset(jsii.String(testBundle), nil)
}

// devProps are the dev stage's props, its web ACL aside.
func devProps() stack.Props {
	return stack.Props{
		StackProps: awscdk.StackProps{Env: testEnv(testRegion)},
		Stage:      stack.StageDev,
		Bundles:    placeholders,
		WebDist:    filepath.Join(repoRoot(), "web", "dist"),
		RepoRoot:   repoRoot(),
		MailDomain: "roadevents.example",
		ConsoleURL: "https://console.roadevents.example/app/",
	}
}

// addDev adds dev and its edge stack to app.
func addDev(app awscdk.App) (*stack.Stack, *stack.Edge) {
	edge := stack.NewEdge(app, "roadevents-dev-edge", stack.EdgeProps{StackProps: awscdk.StackProps{Env: testEnv(stack.EdgeRegion)}, Stage: stack.StageDev})
	p := devProps()
	p.WebACLARN = *edge.WebACL.AttrArn()
	return stack.New(app, "roadevents-dev", p), edge
}

// synth synthesizes every stack of the tests in one app, with placeholder bundles (the
// functions' code is only an asset to the template), the repository's web/dist, and the
// cdk-nag packs applied.
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
		defer os.RemoveAll(out)
		testBundle = filepath.Join(out, "placeholder-bundle")
		if err := stack.WritePlaceholderBundle(testBundle); err != nil {
			synthErr = err
			return
		}
		app := newApp(filepath.Join(out, "cdk.out"))
		all := map[string]awscdk.Stack{}
		mains := map[string]*stack.Stack{}
		devStack, edge := addDev(app)
		all[dev], all[edgeOff], mains[dev] = devStack.Stack, edge.Stack, devStack
		p := devProps()
		p.Stage = stack.StageProd
		p.ConsoleURL = ""
		p.OriginDomain, p.OriginCertificateARN = testOriginDomain, testOriginCert
		p.DomainName, p.CertificateARN = testDomain, testViewerCert
		p.WebACLARN = testWebACL
		p.ReservedConcurrency = map[routetable.Group]float64{routetable.GroupEvents: testProdEventsBudget}
		p.LogRetentionDays = testProdRetention
		mains[prod] = stack.New(app, "roadevents-prod", p)
		all[prod] = mains[prod].Stack
		all[edgeBlock] = stack.NewEdge(app, "roadevents-edge-block", stack.EdgeProps{StackProps: awscdk.StackProps{Env: testEnv(stack.EdgeRegion)},
			Stage: stack.StageProd, RateLimit: testRateLimit}).Stack
		all[edgeCount] = stack.NewEdge(app, "roadevents-edge-count", stack.EdgeProps{StackProps: awscdk.StackProps{Env: testEnv(stack.EdgeRegion)},
			Stage: stack.StageProd, RateLimit: testRateLimit, RateLimitCountOnly: true}).Stack
		all[localStack] = stack.NewLocalStack(app, "roadevents-localstack", stack.LocalStackProps{Bundles: placeholders}).Stack
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Reports: jsii.Bool(false)}), nil)
		awscdk.Aspects_Of(app).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Reports: jsii.Bool(false)}), nil)

		stacks = map[string]*synthesized{}
		for name, st := range all {
			tmpl := assertions.Template_FromStack(st, nil)
			doc, err := templateJSON(tmpl)
			if err != nil {
				synthErr = err
				return
			}
			stacks[name] = &synthesized{stack: st, main: mains[name], template: tmpl, json: doc, annotations: assertions.Annotations_FromStack(st)}
		}
		fmt.Fprintf(os.Stderr, "synthesized %d stacks in %v\n", len(all), time.Since(start).Round(time.Millisecond))
	})
	if synthErr != nil {
		t.Fatal(synthErr)
	}
	return stacks
}

// newApp is an app with the context of cdk.json (its feature flags), as `cdk synth` runs it.
func newApp(outdir string) awscdk.App {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "cdk.json"))
	if err != nil {
		panic(err)
	}
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		panic(err)
	}
	return awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir), Context: &cfg.Context})
}

func templateJSON(tmpl assertions.Template) (map[string]any, error) {
	raw, err := json.Marshal(tmpl.ToJSON())
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	return doc, json.Unmarshal(raw, &doc)
}

// mainStages are the main stacks of both stages.
var mainStages = []string{dev, prod}

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

// only returns the one resource of type typ, or fails t.
func (s *synthesized) only(t *testing.T, typ string) (string, map[string]any) {
	t.Helper()
	rs := s.resources(typ)
	if len(rs) != 1 {
		t.Fatalf("%d resources of type %s; want 1", len(rs), typ)
	}
	for id, r := range rs {
		return id, props(r)
	}
	return "", nil
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

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func jsonOf(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// TestTable: TTL, a stream with both images, on-demand, point-in-time recovery, and deletion
// protection in production only.
func TestTable(t *testing.T) {
	for _, stage := range mainStages {
		s := synth(t)[stage]
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

// TestFunctions: every function is arm64 on provided.al2023, sized for its group, bounded by
// its reserved concurrency (docs/operations.md §5: the defaults, or the deployment's), with its
// logs kept for the deployment's retention, and its secrets named, never valued, in its
// configuration, a function that needs none naming none.
func TestFunctions(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			fns := s.resources("AWS::Lambda::Function")
			groups := s.resources("AWS::Logs::LogGroup")
			for _, g := range routetable.Lambdas {
				id := s.logicalID(s.main.Functions[g])
				p := props(fns[id])
				if p == nil {
					t.Fatalf("no function %s for group %s", id, g)
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
				wantBudget := stack.DefaultReservedConcurrency[g]
				if stage == prod && g == routetable.GroupEvents {
					wantBudget = testProdEventsBudget
				}
				if p["ReservedConcurrentExecutions"] != wantBudget {
					t.Errorf("%s reserved concurrency %v; want %v", g, p["ReservedConcurrentExecutions"], wantBudget)
				}
				vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
				for k := range vars {
					if strings.HasSuffix(k, "_KEY") || strings.HasPrefix(k, "STRIPE_") {
						t.Errorf("%s has secret variable %s in its configuration; want it in %s", g, k, config.SecretsEnv)
					}
				}
				if _, named := vars[config.SecretsEnv]; named != (len(g.Grants().Secrets) > 0) {
					t.Errorf("%s names secrets (%s): %v; its grants name %v", g, config.SecretsEnv, named, g.Grants().Secrets)
				}
				logs := ref(p["LoggingConfig"].(map[string]any)["LogGroup"])
				wantDays := stack.DefaultLogRetentionDays[stage]
				if stage == prod {
					wantDays = testProdRetention
				}
				if got := props(groups[logs])["RetentionInDays"]; got != wantDays {
					t.Errorf("%s log group %s keeps %v days; want %v", g, logs, got, wantDays)
				}
			}
			must(t, "alarms on errors and throttles", func() {
				s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "Errors"})
				s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "Throttles"})
				s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "HealthyHostCount"})
				s.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{"MetricName": "HTTPCode_ELB_5XX_Count"})
			})
			must(t, "SES identity", func() {
				s.template.HasResourceProperties(jsii.String("AWS::SES::EmailIdentity"), map[string]any{"EmailIdentity": "roadevents.example"})
			})
		})
	}
}

// The schedules: the overage job (docs/console.md §3), an hourly rule whose one target is the
// billing function; the feed poll pass (docs/interop.md §13), a rule every minute whose one
// target is the feed poller, the events code with minutes to run and one instance at most.
// Each function may be invoked by its rule only.
func TestSchedules(t *testing.T) {
	s := synth(t)[dev]
	rules := s.resources("AWS::Events::Rule")
	want := map[string]string{
		s.logicalID(s.main.OverageSchedule): "rate(1 hour)",
		s.logicalID(s.main.FeedSchedule):    "rate(1 minute)",
	}
	targetOf := map[string]string{
		s.logicalID(s.main.OverageSchedule): s.logicalID(s.main.Functions[routetable.GroupBilling]),
		s.logicalID(s.main.FeedSchedule):    s.logicalID(s.main.FeedPoller),
	}
	if len(rules) != len(want) {
		t.Fatalf("%d EventBridge rules; want %d", len(rules), len(want))
	}
	for id, res := range rules {
		p := props(res)
		if p["ScheduleExpression"] != want[id] || p["State"] != "ENABLED" {
			t.Errorf("rule %s: schedule %v state %v; want %s, ENABLED", id, p["ScheduleExpression"], p["State"], want[id])
		}
		targets := asList(p["Targets"])
		if len(targets) != 1 {
			t.Fatalf("rule %s has %d targets; want 1", id, len(targets))
		}
		target := targets[0].(map[string]any)
		if got := ref(target["Arn"]); got != targetOf[id] {
			t.Errorf("rule %s targets %q; want %q", id, got, targetOf[id])
		}
		if _, ok := target["Input"]; ok {
			t.Errorf("rule %s sends its own input %v; want EventBridge's scheduled event, which the function recognises", id, target["Input"])
		}
		must(t, "EventBridge may invoke the rule's function", func() {
			s.template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
				"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com",
				"FunctionName": map[string]any{"Fn::GetAtt": []any{targetOf[id], "Arn"}},
				"SourceArn":    map[string]any{"Fn::GetAtt": []any{id, "Arn"}},
			})
		})
	}
	poller := props(s.resources("AWS::Lambda::Function")[s.logicalID(s.main.FeedPoller)])
	events := props(s.resources("AWS::Lambda::Function")[s.logicalID(s.main.Functions[routetable.GroupEvents])])
	if poller["Timeout"] != float64(stack.FeedPollerTimeoutSeconds) || poller["ReservedConcurrentExecutions"] != float64(1) {
		t.Errorf("feed poller timeout %v, reserved concurrency %v; want %d s and 1", poller["Timeout"], poller["ReservedConcurrentExecutions"], stack.FeedPollerTimeoutSeconds)
	}
	if jsonOf(poller["Role"]) != jsonOf(events["Role"]) || jsonOf(poller["Code"]) != jsonOf(events["Code"]) {
		t.Errorf("feed poller role %v code %v; want the events function's %v and %v", poller["Role"], poller["Code"], events["Role"], events["Code"])
	}
	if strings.Contains(jsonOf(poller["Environment"]), "ROADEVENTS_FEEDS_ALLOW_PRIVATE") {
		t.Error("the feed poller may fetch private addresses; on AWS it must not (docs/interop.md §10)")
	}
}
