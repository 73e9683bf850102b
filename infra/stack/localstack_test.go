package stack_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/routetable"
)

// TestLocalStackStack (docs/operations.md §5): the LocalStack target uses only resource types
// the community edition of stack.LocalStackVersion deploys; it has the same table with its
// stream and the five functions with the same grants as on AWS, built for this machine, each on
// a function URL (no HTTP API, no load balancer, no CloudFront, no WAF, no ECS), mailing to
// the outbox (no SES).
func TestLocalStackStack(t *testing.T) {
	s := synth(t)[localStack]
	for id, r := range s.json["Resources"].(map[string]any) {
		if typ := r.(map[string]any)["Type"].(string); !slices.Contains(stack.LocalStackResourceTypes, typ) {
			t.Errorf("resource %s is a %s, which LocalStack %s's community edition does not deploy", id, typ, stack.LocalStackVersion)
		}
	}
	must(t, "the table with its stream", func() {
		s.template.HasResourceProperties(ptr("AWS::DynamoDB::Table"), map[string]any{
			"StreamSpecification": map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		})
	})
	fns := s.resources("AWS::Lambda::Function")
	urls := s.resources("AWS::Lambda::Url")
	if len(fns) != len(routetable.Lambdas) || len(urls) != len(routetable.Lambdas) {
		t.Fatalf("%d functions, %d URLs; want %d of each", len(fns), len(urls), len(routetable.Lambdas))
	}
	targets := map[string]bool{}
	for _, u := range urls {
		p := props(u)
		if p["AuthType"] != "NONE" {
			t.Errorf("function URL %s; want AuthType NONE", jsonOf(p))
		}
		targets[ref(p["TargetFunctionArn"])] = true
	}
	for id, fn := range fns {
		p := props(fn)
		if !targets[id] {
			t.Errorf("function %s has no URL", id)
		}
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars["ROADEVENTS_MAILER"] != "outbox" || vars["ROADEVENTS_DATA"] != stack.LocalDataDir {
			t.Errorf("function %s mails with %v to %v; want the outbox in %s", id, vars["ROADEVENTS_MAILER"], vars["ROADEVENTS_DATA"], stack.LocalDataDir)
		}
		if arch := jsonOf(p["Architectures"]); arch != `["x86_64"]` && arch != `["arm64"]` {
			t.Errorf("function %s architectures %s; want this machine's", id, arch)
		}
		g := routetable.Group(strings.TrimSuffix(strings.TrimPrefix(p["Description"].(string), "roadevents "), " route group (LocalStack)"))
		if got, want := s.itemStatements(t, ref(p["Role"])), stack.ItemStatements(g.Grants()); !equalStatements(got, want) {
			t.Errorf("%s function's item rights %+v; want its grants' %+v, as on AWS", g, got, want)
		}
	}
}

// TestRegularStagesUnchangedByLocalStack: the LocalStack target changes nothing of the stages
// deployed to AWS: dev synthesized alone is dev synthesized beside the LocalStack stack.
func TestRegularStagesUnchangedByLocalStack(t *testing.T) {
	beside := synth(t)[dev].json
	// The same placeholder, anew: the shared synth's folder is gone.
	testBundle = filepath.Join(t.TempDir(), "placeholder-bundle")
	if err := stack.WritePlaceholderBundle(testBundle); err != nil {
		t.Fatal(err)
	}
	app := newApp(filepath.Join(t.TempDir(), "cdk.out"))
	alone, _ := addDev(app)
	doc, err := templateJSON(assertions.Template_FromStack(alone.Stack, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jsonOf(doc), jsonOf(beside); got != want {
		t.Errorf("dev's template differs when the app also holds the LocalStack stack")
	}
}

func ptr(s string) *string { return &s }
