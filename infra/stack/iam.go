package stack

import (
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/shared/routetable"
)

// LeadingKeysCondition is the IAM condition that limits a statement to the items whose
// partition key matches one of its patterns: every key a request names must match
// (ForAllValues), the keys of each item of a batch or a transaction included.
const LeadingKeysCondition = "ForAllValues:StringLike"

// ItemStatement is one statement of a group's rights on the table's items: Action on the items
// whose partition key starts with one of Prefixes.
type ItemStatement struct {
	Action   routetable.ItemAction
	Prefixes []string
}

// ItemStatements turns grants into statements: one per action, holding every prefix granted
// that action, reads first, in a fixed order. One statement per action rather than per set of
// actions, because IAM checks the partition keys of a batch or a transaction against each
// statement as a whole: a BatchGetItem naming keys of two prefixes needs one statement that
// allows both.
func ItemStatements(grants routetable.Grants) []ItemStatement {
	prefixes := map[routetable.ItemAction][]string{}
	for _, ig := range grants.Items {
		for _, a := range ig.Actions {
			prefixes[a] = append(prefixes[a], ig.Prefix)
		}
	}
	var out []ItemStatement
	for _, a := range []routetable.ItemAction{
		routetable.GetItem, routetable.BatchGetItem, routetable.Query,
		routetable.PutItem, routetable.UpdateItem, routetable.DeleteItem, routetable.ConditionCheckItem,
	} {
		if ps := prefixes[a]; len(ps) > 0 {
			slices.Sort(ps)
			out = append(out, ItemStatement{Action: a, Prefixes: ps})
		}
	}
	return out
}

// grantItems gives grantee exactly grants' rights on table's items: no scan, no table
// management, and each action only on the partition-key prefixes that call for it.
func grantItems(grantee awsiam.IGrantable, table awsdynamodb.ITable, grants routetable.Grants) {
	for _, st := range ItemStatements(grants) {
		var patterns []*string
		for _, p := range st.Prefixes {
			patterns = append(patterns, jsii.String(p+"*"))
		}
		grantee.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String(strings.TrimPrefix(string(st.Action), "dynamodb:")),
			Actions:   jsii.Strings(string(st.Action)),
			Resources: jsii.Strings(*table.TableArn()),
			Conditions: &map[string]any{
				LeadingKeysCondition: map[string]any{"dynamodb:LeadingKeys": patterns},
			},
		}))
	}
}
