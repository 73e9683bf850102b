package stack

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/shared/relay"
)

// The relay's settings (docs/operations.md §6.2).
const (
	// RelayCachePort is where ElastiCache Serverless answers for writes and reads alike.
	RelayCachePort = 6379
)

// addRelay builds the engine that lets the stream tier grow (docs/architecture.md §3): an
// ElastiCache Serverless cache for Valkey in the isolated subnets, reached over TLS from the
// tasks only, and the relay, one task that follows the table's stream and appends the changes
// streams need to the cache's log. It returns the cache's address as a rediss:// URL.
func (s *Stack) addRelay(st awscdk.Stack, p Props, removal awscdk.RemovalPolicy, cluster awsecs.Cluster, image awsecs.ContainerImage) *string {
	s.CacheSecurityGroup = awsec2.NewSecurityGroup(st, jsii.String("RelayCacheSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              s.Vpc,
		Description:      jsii.String("the relay's cache: its port from the relay and the streamer tasks only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	var subnets []any
	for _, id := range *s.Vpc.SelectSubnets(&awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}).SubnetIds {
		subnets = append(subnets, id)
	}
	// Serverless: it grows with the log and the readers without a node size to choose, and
	// always encrypts in transit and at rest. No user group: the security group is the gate,
	// and nothing in the log is a secret (the changes the streams serve to their clients).
	s.Cache = awselasticache.NewCfnServerlessCache(st, jsii.String("RelayCache"), &awselasticache.CfnServerlessCacheProps{
		Engine:              jsii.String("valkey"),
		MajorEngineVersion:  jsii.String("8"),
		ServerlessCacheName: jsii.String(cacheName(*st.StackName())),
		Description:         jsii.String("roadevents " + p.Stage + ": the relay's log of the table's changes for the streamers"),
		SubnetIds:           &subnets,
		SecurityGroupIds:    &[]any{s.CacheSecurityGroup.SecurityGroupId()},
	})
	// The log holds the last hour of changes at most, all of which are in the table: nothing
	// to keep when the stack goes, whatever the stage.
	s.Cache.ApplyRemovalPolicy(awscdk.RemovalPolicy_DESTROY, nil)
	url := awscdk.Fn_Join(jsii.String(""), &[]*string{
		jsii.String("rediss://"), s.Cache.AttrEndpointAddress(), jsii.String(":"), s.Cache.AttrEndpointPort(),
	})

	logs := logGroup(st, "RelayLogs", p, removal)
	task := gravitonTask(st, "RelayTask", 256, 512, "relay", &awsecs.ContainerDefinitionOptions{
		Image:   image,
		Command: jsii.Strings("-relay"),
		Environment: &map[string]*string{
			"ROADEVENTS_STORE":       jsii.String("dynamodb"),
			"ROADEVENTS_TABLE":       s.Table.TableName(),
			"ROADEVENTS_STREAM_ARN":  s.Table.TableStreamArn(),
			"ROADEVENTS_RELAY_REDIS": url,
			"ROADEVENTS_ADDR":        jsii.String(fmt.Sprintf("0.0.0.0:%d", StreamerPort)),
		},
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{LogGroup: logs, StreamPrefix: jsii.String("relay")}),
	})
	accept(task, "AwsSolutions-ECS2", "the container's environment holds the table's name and stream and the cache's address: configuration, not secrets")
	// The relay reads the table's stream and nothing else of the table: the description
	// (the store reads it at start) and the stream's records.
	role := task.TaskRole()
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("DescribeTable"),
		Actions:   jsii.Strings("dynamodb:DescribeTable"),
		Resources: jsii.Strings(*s.Table.TableArn()),
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadStream"),
		Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
		Resources: jsii.Strings(*s.Table.TableStreamArn()),
	}))
	// Never two relays at once: each would append every change, and every stream would get
	// it twice. A deployment stops the old task before it starts the new one; the new one
	// starts the log with a gap, and the streams take a snapshot there.
	s.Relay = publicService(st, "Relay", cluster, task, 0, 100)
	s.CacheSecurityGroup.AddIngressRule(awsec2.Peer_SecurityGroupId(firstSecurityGroup(s.Relay), nil),
		awsec2.Port_Tcp(jsii.Number(RelayCachePort)), jsii.String("the relay appends to the log"), nil)

	// A relay that keeps failing leaves the streams without changes: count its restarts.
	logs.AddMetricFilter(jsii.String("RelayRestarts"), &awslogs.MetricFilterOptions{
		FilterPattern:   awslogs.FilterPattern_StringValue(jsii.String("$.msg"), jsii.String("="), jsii.String(relay.RestartMessage)),
		MetricNamespace: jsii.String("roadevents"),
		MetricName:      jsii.String("RelayRestarts"),
		MetricValue:     jsii.String("1"),
		DefaultValue:    jsii.Number(0),
	})
	return url
}

// firstSecurityGroup is the id of a service's security group (ECS gives it one).
func firstSecurityGroup(svc awsecs.FargateService) *string {
	return (*svc.Connections().SecurityGroups())[0].SecurityGroupId()
}

// relayMetric is one of the relay's own metrics, summed per minute.
func relayMetric(name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("roadevents"), MetricName: jsii.String(name),
		Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Sum"),
	})
}

var notCacheName = regexp.MustCompile(`[^a-z0-9-]+`)

// cacheName derives the cache's name from the stack's: ElastiCache wants at most 40
// lower-case letters, digits and hyphens, starting with a letter, unique in the region.
func cacheName(stack string) string {
	name := strings.Trim(notCacheName.ReplaceAllString(strings.ToLower(stack), "-"), "-")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "roadevents-" + name
	}
	const suffix = "-relay"
	if len(name) > 40-len(suffix) {
		name = strings.TrimRight(name[:40-len(suffix)], "-")
	}
	return name + suffix
}
