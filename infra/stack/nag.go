package stack

import (
	"strings"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// accept records that rule, a cdk-nag finding (the AwsSolutions and Serverless packs the tests
// apply), is accepted for c and everything under it, and why. A finding is fixed where it can
// be; every one accepted is accepted here, next to what it is about, with its reason.
func accept(c constructs.IConstruct, rule, reason string) {
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String(rule), Reason: jsii.String(reason)},
	}, jsii.Bool(true))
}

// cdkProviders are the construct ids of the functions CDK adds to a stack for its own
// deploy-time work: the bucket deployments' handler and the SDK calls' (AwsCustomResource).
var cdkProviders = []string{"Custom::CDKBucketDeployment", "AWS679f53fac002430cb0da5b7982bd2287"}

// acceptCDKProviders accepts the findings on CDK's own deploy-time functions, which the stack
// does not write: their runtime, memory and role are CDK's, they run only while CloudFormation
// deploys, and nothing queues for them.
func acceptCDKProviders(st constructs.Construct) {
	for _, c := range *st.Node().Children() {
		id := *c.Node().Id()
		for _, prefix := range cdkProviders {
			if !strings.HasPrefix(id, prefix) {
				continue
			}
			// In a fixed order: the reasons are in the template's metadata.
			for _, r := range [][2]string{
				{"AwsSolutions-IAM4", "CDK's deploy-time function: the managed basic execution policy lets it write its logs"},
				{"AwsSolutions-IAM5", "CDK's deploy-time function: the bucket deployment copies the objects of the asset bucket into the site " +
					"bucket (object wildcards of those two buckets)"},
				{"AwsSolutions-L1", "CDK's deploy-time function: its runtime is the one CDK ships it for"},
				{"Serverless-LambdaDLQ", "CDK's deploy-time function: CloudFormation waits for its answer, nothing is queued"},
				{"Serverless-LambdaDefaultMemorySize", "CDK's deploy-time function: CDK sizes it"},
				{"Serverless-LambdaLatestVersion", "CDK's deploy-time function: its runtime is the one CDK ships it for"},
			} {
				accept(c, r[0], r[1])
			}
		}
	}
}
