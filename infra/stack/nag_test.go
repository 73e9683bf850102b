package stack_test

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// nagFindings are the cdk-nag messages of kind ("error" or "warning") of a stack, by rule: the
// unsuppressed findings (a suppressed one leaves no annotation).
func (s *synthesized) nagFindings(kind string) map[string][]string {
	find := s.annotations.FindError
	if kind == "warning" {
		find = s.annotations.FindWarning
	}
	out := map[string][]string{}
	for _, m := range *find(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(`(AwsSolutions|Serverless)-`))) {
		//lint:ignore SA1019 the Go bindings have no other type for a synthesis message
		rule := nagRule.FindString(fmt.Sprint(m.Entry.Data))
		//lint:ignore SA1019 as above
		out[rule] = append(out[rule], *m.Id)
	}
	return out
}

var nagRule = regexp.MustCompile(`(AwsSolutions|Serverless)-[A-Za-z0-9]+`)

// TestNag: cdk-nag's AwsSolutions and Serverless packs find no error left in any stack, both
// stages, the edge stacks and the LocalStack stack: each finding is fixed, or accepted in the
// stack's code with its reason (nag.go's accept). Warnings are listed.
func TestNag(t *testing.T) {
	all := synth(t)
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := all[name]
		for rule, where := range s.nagFindings("error") {
			t.Errorf("%s: cdk-nag %s at %s; fix it, or accept it with its reason", name, rule, strings.Join(where, ", "))
		}
		warnings := s.nagFindings("warning")
		for rule, where := range warnings {
			t.Logf("%s: warning %s at %d resources", name, rule, len(where))
		}
	}
}
