package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/routetable"
)

// statement is one IAM statement of a template, with where it is.
type statement struct {
	where string
	roles []string
	m     map[string]any
}

func (st statement) actions() []string {
	var out []string
	for _, a := range asList(st.m["Action"]) {
		out = append(out, a.(string))
	}
	return out
}

// statements are every statement of the template's policies and roles' inline policies.
func (s *synthesized) statements() []statement {
	var out []statement
	add := func(where string, roles []string, doc any) {
		d, _ := doc.(map[string]any)
		for _, st := range asList(d["Statement"]) {
			out = append(out, statement{where: where, roles: roles, m: st.(map[string]any)})
		}
	}
	for id, res := range s.resources("AWS::IAM::Policy") {
		var roles []string
		for _, r := range asList(props(res)["Roles"]) {
			roles = append(roles, ref(r))
		}
		add(id, roles, props(res)["PolicyDocument"])
	}
	for id, res := range s.resources("AWS::IAM::Role") {
		for _, p := range asList(props(res)["Policies"]) {
			add(id, []string{id}, p.(map[string]any)["PolicyDocument"])
		}
	}
	return out
}

// of returns the statements of role.
func (s *synthesized) of(role string) []statement {
	var out []statement
	for _, st := range s.statements() {
		if slices.Contains(st.roles, role) {
			out = append(out, st)
		}
	}
	return out
}

// itemStatements reads a role's statements on the table's items as ItemStatements, failing t
// on any statement on the table that is not one.
func (s *synthesized) itemStatements(t *testing.T, role string) []stack.ItemStatement {
	t.Helper()
	var table string
	for id := range s.resources("AWS::DynamoDB::Table") {
		table = id
	}
	var out []stack.ItemStatement
	for _, st := range s.of(role) {
		onTable := false // the table itself, not its stream
		for _, r := range asList(st.m["Resource"]) {
			onTable = onTable || ref(r) == table && !strings.Contains(jsonOf(r), "StreamArn")
		}
		acts := st.actions()
		if !onTable || acts[0] == "dynamodb:DescribeTable" {
			continue
		}
		conds, _ := st.m["Condition"].(map[string]any)
		cond, _ := conds[stack.LeadingKeysCondition].(map[string]any)
		keys := asList(cond["dynamodb:LeadingKeys"])
		if len(acts) != 1 || len(keys) == 0 || len(asList(st.m["Resource"])) != 1 {
			t.Errorf("%s: statement %s on the table; want one action on the table alone, limited by %s on dynamodb:LeadingKeys",
				role, jsonOf(st.m), stack.LeadingKeysCondition)
			continue
		}
		is := stack.ItemStatement{Action: routetable.ItemAction(acts[0])}
		for _, k := range keys {
			p, _ := k.(string)
			if !strings.HasSuffix(p, "#*") {
				t.Errorf("%s: leading key pattern %q; want a prefix ending in #, then *", role, p)
			}
			is.Prefixes = append(is.Prefixes, strings.TrimSuffix(p, "*"))
		}
		out = append(out, is)
	}
	return out
}

func equalStatements(a, b []stack.ItemStatement) bool {
	return slices.EqualFunc(a, b, func(x, y stack.ItemStatement) bool {
		return x.Action == y.Action && slices.Equal(x.Prefixes, y.Prefixes)
	})
}

// TestLeastPrivilege (docs/security.md §6): each function's role, and the streamer's task role,
// holds exactly its group's grants (the relay's, the table's stream) of shared/routetable, which shared/app's tests hold to
// what the group's routes call: each item action on the partition-key prefixes that need it
// (dynamodb:LeadingKeys), never a scan nor table management; only the secrets it reads; only
// the KMS actions the sealer calls (no ReEncrypt, no data keys); SES only where it mails; its
// own log group rather than the managed policy's every group. No statement anywhere grants every
// action of a service, nor invalidates every distribution.
func TestLeastPrivilege(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			all := s.statements()
			if len(all) == 0 {
				t.Fatal("no policy statements found")
			}
			for _, st := range all {
				for _, a := range st.actions() {
					if a == "*" || strings.HasSuffix(a, ":*") {
						t.Errorf("%s grants %q", st.where, a)
					}
					if a == "cloudfront:CreateInvalidation" && jsonOf(st.m["Resource"]) == `"*"` {
						t.Errorf("%s may invalidate every distribution; want this one only", st.where)
					}
					if strings.HasPrefix(a, "dynamodb:") && strings.Contains(jsonOf(st.m["Resource"]), "*") {
						t.Errorf("%s grants %s on %s; want the table's (or its stream's) ARN only", st.where, a, jsonOf(st.m["Resource"]))
					}
				}
			}
			roles := s.resources("AWS::IAM::Role")
			secrets := map[string]string{} // secret logical id -> the variable it holds
			for id, sec := range s.resources("AWS::SecretsManager::Secret") {
				p := props(sec)
				if gen, ok := p["GenerateSecretString"].(map[string]any); ok {
					secrets[id] = gen["GenerateStringKey"].(string)
				} else {
					secrets[id] = routetable.SecretStripeKey
				}
			}
			check := func(who, role string, g routetable.Group) {
				t.Helper()
				grants := g.Grants()
				if got, want := s.itemStatements(t, role), stack.ItemStatements(grants); !equalStatements(got, want) {
					t.Errorf("%s item rights %+v; want its grants' %+v", who, got, want)
				}
				var kms, secretsRead []string
				mails := false
				for _, st := range s.of(role) {
					for _, a := range st.actions() {
						switch {
						case strings.HasPrefix(a, "kms:"):
							kms = append(kms, a)
						case a == "secretsmanager:GetSecretValue":
							for _, r := range asList(st.m["Resource"]) {
								secretsRead = append(secretsRead, secrets[ref(r)])
							}
						case strings.HasPrefix(a, "ses:"):
							mails = true
						}
					}
				}
				var wantKMS []string
				for _, a := range grants.KMS {
					wantKMS = append(wantKMS, string(a))
				}
				slices.Sort(kms)
				slices.Sort(wantKMS)
				if !slices.Equal(kms, wantKMS) {
					t.Errorf("%s KMS actions %v; want %v", who, kms, wantKMS)
				}
				slices.Sort(secretsRead)
				var wantSecrets []string
				for _, v := range grants.Secrets {
					if v != routetable.SecretStripeHook { // one secret holds both Stripe keys
						wantSecrets = append(wantSecrets, v)
					}
				}
				slices.Sort(wantSecrets)
				if !slices.Equal(secretsRead, wantSecrets) {
					t.Errorf("%s reads the secrets of %v; want %v", who, secretsRead, wantSecrets)
				}
				if mails != grants.SendsMail {
					t.Errorf("%s may send e-mail: %v; want %v", who, mails, grants.SendsMail)
				}
				if mp := props(roles[role])["ManagedPolicyArns"]; mp != nil {
					t.Errorf("%s has managed policies %s; want its own statements only", who, jsonOf(mp))
				}
			}
			for _, g := range routetable.Lambdas {
				check(string(g)+" function", s.logicalID(s.main.Functions[g].Role()), g)
			}
			task := s.logicalID(s.main.Streamer.TaskDefinition().TaskRole())
			check("streamer", task, routetable.GroupStream)
			// The relay reads the table's stream and its description, nothing else; the
			// streamers follow the relay's log and read no stream.
			rights := func(role string) (stream, other []string) {
				for _, st := range s.of(role) {
					if strings.Contains(jsonOf(st.m["Resource"]), "StreamArn") {
						stream = append(stream, st.actions()...)
					} else {
						other = append(other, st.actions()...)
					}
				}
				slices.Sort(stream)
				return stream, other
			}
			if stream, _ := rights(task); len(stream) != 0 {
				t.Errorf("streamer's rights on the table's stream %v; want none (the relay reads it)", stream)
			}
			stream, other := rights(s.logicalID(s.main.Relay.TaskDefinition().TaskRole()))
			if want := []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}; !slices.Equal(stream, want) {
				t.Errorf("relay's rights on the table's stream %v; want %v", stream, want)
			}
			if !slices.Equal(other, []string{"dynamodb:DescribeTable"}) {
				t.Errorf("relay's other rights %v; want dynamodb:DescribeTable only", other)
			}
		})
	}
}

// TestItemStatements: one statement per action, every prefix granted it in the one statement,
// reads before writes, whatever order the grants list them in.
func TestItemStatements(t *testing.T) {
	t.Parallel()
	got := stack.ItemStatements(routetable.Grants{Items: []routetable.ItemGrant{
		{Prefix: "org#", Actions: []routetable.ItemAction{routetable.PutItem, routetable.GetItem}},
		{Prefix: "event#", Actions: []routetable.ItemAction{routetable.GetItem, routetable.BatchGetItem}},
		{Prefix: "area#", Actions: []routetable.ItemAction{routetable.BatchGetItem}},
	}})
	want := []stack.ItemStatement{
		{Action: routetable.GetItem, Prefixes: []string{"event#", "org#"}},
		{Action: routetable.BatchGetItem, Prefixes: []string{"area#", "event#"}},
		{Action: routetable.PutItem, Prefixes: []string{"org#"}},
	}
	if !equalStatements(got, want) {
		t.Errorf("ItemStatements = %+v; want %+v", got, want)
	}
}
