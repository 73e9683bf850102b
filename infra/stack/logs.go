package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// newLogBucket is a private bucket of access logs, each kept for p's retention. CloudFront's
// standard logs are written with object ACLs, so their bucket must accept them
// (BUCKET_OWNER_PREFERRED); every other log bucket enforces the bucket owner.
func newLogBucket(st constructs.Construct, id string, p Props, removal awscdk.RemovalPolicy, ownership awss3.ObjectOwnership) awss3.Bucket {
	b := awss3.NewBucket(st, jsii.String(id), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   ownership,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Expiration: awscdk.Duration_Days(jsii.Number(p.logRetentionDays())),
		}},
		RemovalPolicy:     removal,
		AutoDeleteObjects: jsii.Bool(removal == awscdk.RemovalPolicy_DESTROY),
	})
	accept(b, "AwsSolutions-S1", "a bucket of access logs: logging its own access would log the logs")
	return b
}
