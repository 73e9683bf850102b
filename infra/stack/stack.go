// Package stack is the AWS deployment of the service as one CDK stack (ARCHITECTURE.md, "On
// AWS"): the table, one Lambda per route group behind an HTTP API, the streamer on Fargate
// behind a load balancer, the console SPA on S3, one CloudFront distribution in front of all
// of it, SES, the secrets and the alarms. infra/main.go synthesizes it; stack_test.go asserts
// on the synthesized template.
//
// The HTTP API's routes are not listed here: each group's routes come from
// service.GroupRoutes, the code the function itself runs, so a route added to a group is wired
// to that group's function at the next synth.
package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecspatterns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsses"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/shared/service"
)

// Stages are the deployment stages (context "stage").
const (
	StageDev  = "dev"
	StageProd = "prod"
)

// Streamer settings (README, "How many streamer tasks can read one table's stream").
const (
	// StreamerPort is where the streamer container listens (ROADEVENTS_ADDR).
	StreamerPort = 8080
	// StreamerMaxTasks: DynamoDB Streams serves about 2 readers per shard, and every task
	// reads every shard.
	StreamerMaxTasks = 2
	// StreamerIdleTimeout is the load balancer's idle timeout: above the stream's 20 s
	// keepalive (spec 5), so an idle stream is never cut between two keepalives.
	StreamerIdleTimeoutSeconds = 120
	// StreamerScaleOutConnections: past this many open connections on the load balancer a
	// second task starts. One task served 10 000 streams in the load test (README); the second
	// is for availability as much as capacity.
	StreamerScaleOutConnections = 4000
	// StreamOriginReadTimeoutSeconds is CloudFront's wait for the next bytes from the
	// streamer: the most CloudFront allows without a quota increase, three keepalives.
	StreamOriginReadTimeoutSeconds = 60
)

// TTLAttribute, PartitionKey and SortKey are the table's key schema and TTL attribute, as
// shared/store/dynamodb.CreateTable makes them.
const (
	PartitionKey = "pk"
	SortKey      = "sk"
	TTLAttribute = "ttl"
)

// FunctionSize is a function's memory and timeout.
type FunctionSize struct {
	MemoryMB       float64
	TimeoutSeconds float64
}

// Sizes are the functions' memory and timeout per group. Lambda gives CPU in proportion to
// memory: events covers circles with H3 cells and reads many partitions in parallel, billing
// waits on Stripe. Billing's timeout is the hourly overage job's (one Stripe call per
// subscribed organisation whose total moved, in turn); HTTP requests are cut at the HTTP
// API's 30 seconds whatever it is.
var Sizes = map[service.Group]FunctionSize{
	service.GroupMeta:        {MemoryMB: 256, TimeoutSeconds: 5},
	service.GroupEvents:      {MemoryMB: 1024, TimeoutSeconds: 10},
	service.GroupConsoleAuth: {MemoryMB: 512, TimeoutSeconds: 10},
	service.GroupConsoleOrgs: {MemoryMB: 512, TimeoutSeconds: 10},
	service.GroupBilling:     {MemoryMB: 512, TimeoutSeconds: 120},
}

// Props configure the stack.
type Props struct {
	awscdk.StackProps
	// Stage is StageDev or StageProd: production keeps the table and logs longer and protects
	// the table from deletion.
	Stage string
	// BundleDir holds <group>.zip for each function (scripts/build-lambdas.sh writes
	// build/lambda). Ignored when Bundles is set.
	BundleDir string
	// Bundles, when set, gives each function's code directly: the synth test passes
	// placeholder assets so that it needs no cross-compiled build.
	Bundles func(scope constructs.Construct, group service.Group) awslambda.Code
	// WebDist is the console SPA's built files (web/dist), uploaded under app/. When the
	// folder does not exist the bucket is created empty and a warning is added.
	WebDist string
	// RepoRoot is the Docker build context of the streamer image (streamer/Dockerfile).
	RepoRoot string
	// MailDomain is the SES sending identity; mail leaves as no-reply@MailDomain.
	MailDomain string
	// ConsoleURL is the console's address (ends in "/app/"), known only once the distribution
	// or a custom domain exists: the functions cannot read the distribution's name from
	// the template, because the distribution depends on them.
	ConsoleURL string
	// AlarmEmail, when set, subscribes an address to the alarms' topic.
	AlarmEmail string
}

// Stack is the synthesized stack with the constructs the tests look for.
type Stack struct {
	awscdk.Stack
	Table     awsdynamodb.Table
	Functions map[service.Group]awslambda.Function
	// OverageSchedule invokes the billing function hourly for the overage job.
	OverageSchedule awsevents.Rule
	API             awsapigatewayv2.HttpApi
	Streamer        awsecspatterns.ApplicationLoadBalancedFargateService
	SiteBucket      awss3.Bucket
	Distribution    awscloudfront.Distribution
}

// New builds the stack.
func New(scope constructs.Construct, id string, p Props) *Stack {
	if p.Stage != StageDev && p.Stage != StageProd {
		panic(fmt.Sprintf("stack: stage %q: want %q or %q", p.Stage, StageDev, StageProd))
	}
	prod := p.Stage == StageProd
	removal := awscdk.RemovalPolicy_DESTROY
	retention := awslogs.RetentionDays_TWO_WEEKS
	if prod {
		removal = awscdk.RemovalPolicy_RETAIN
		retention = awslogs.RetentionDays_THREE_MONTHS
	}
	st := awscdk.NewStack(scope, jsii.String(id), &p.StackProps)
	awscdk.Tags_Of(st).Add(jsii.String("project"), jsii.String("roadevents"), nil)
	awscdk.Tags_Of(st).Add(jsii.String("stage"), jsii.String(p.Stage), nil)
	s := &Stack{Stack: st, Functions: map[service.Group]awslambda.Function{}}

	// The one table (ARCHITECTURE.md, Storage), as shared/store/dynamodb.CreateTable makes it.
	s.Table = awsdynamodb.NewTable(st, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(SortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(TTLAttribute),
		// The streamer follows every change with both images (a REMOVE's old item).
		Stream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(prod),
		RemovalPolicy:      removal,
	})

	// Shared secret keys, generated by Secrets Manager as 64 hex digits (32 bytes), and the
	// Stripe keys, set by the operator after the first deploy. Each secret holds a JSON
	// object of ROADEVENTS_* variables that the functions read at start
	// (service.SecretsEnv), so no secret value is in the template or the functions'
	// configuration.
	eventIDKey := hexKeySecret(st, "EventIdKey", "ROADEVENTS_EVENT_ID_KEY", removal)
	authHashKey := hexKeySecret(st, "AuthHashKey", "ROADEVENTS_AUTH_HASH_KEY", removal)
	// The Stripe secret starts with empty values (billing off: checkout and portal answer
	// 503) and is filled by the operator; the template holds only the variable names.
	stripe := awssecretsmanager.NewSecret(st, jsii.String("StripeKeys"), &awssecretsmanager.SecretProps{
		Description: jsii.String("Stripe keys of the billing function (contract 4 variables); set them with " +
			"aws secretsmanager put-secret-value (README, Deploying to AWS)"),
		SecretStringValue: awscdk.SecretValue_UnsafePlainText(jsii.String(`{"STRIPE_SECRET_KEY":"","STRIPE_WEBHOOK_SECRET":""}`)),
		RemovalPolicy:     removal,
	})
	// TOTP secrets are sealed with KMS (ROADEVENTS_KMS_KEY_ID), so no sealing key exists
	// outside KMS.
	sealKey := awskms.NewKey(st, jsii.String("TotpSealKey"), &awskms.KeyProps{
		Description:       jsii.String("Seals the console's TOTP secrets"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     removal,
	})

	// SES sending identity; the DNS records it needs are in the stack's outputs' console.
	identity := awsses.NewEmailIdentity(st, jsii.String("MailIdentity"), &awsses.EmailIdentityProps{
		Identity: awsses.Identity_Domain(jsii.String(p.MailDomain)),
	})
	mailFrom := "Road Events <no-reply@" + p.MailDomain + ">"

	// One function per route group (ARCHITECTURE.md, Lambdas and route groups).
	for _, g := range service.LambdaGroups {
		secrets := []awssecretsmanager.ISecret{eventIDKey, authHashKey}
		if g == service.GroupBilling {
			secrets = append(secrets, stripe)
		}
		var arns []string
		for _, sec := range secrets {
			arns = append(arns, *sec.SecretArn())
		}
		env := map[string]*string{
			"ROADEVENTS_STORE":      jsii.String("dynamodb"),
			"ROADEVENTS_TABLE":      s.Table.TableName(),
			"ROADEVENTS_MAILER":     jsii.String("ses"),
			"ROADEVENTS_MAIL_FROM":  jsii.String(mailFrom),
			"ROADEVENTS_KMS_KEY_ID": sealKey.KeyArn(),
			service.SecretsEnv:      awscdk.Fn_Join(jsii.String(","), jsii.Strings(arns...)),
		}
		if p.ConsoleURL != "" {
			env["ROADEVENTS_CONSOLE_URL"] = jsii.String(p.ConsoleURL)
		}
		name := functionID(g)
		logs := awslogs.NewLogGroup(st, jsii.String(name+"Logs"), &awslogs.LogGroupProps{
			Retention: retention, RemovalPolicy: removal,
		})
		code := awslambda.Code(nil)
		if p.Bundles != nil {
			code = p.Bundles(st, g)
		} else {
			code = awslambda.Code_FromAsset(jsii.String(filepath.Join(p.BundleDir, string(g)+".zip")), nil)
		}
		size := Sizes[g]
		fn := awslambda.NewFunction(st, jsii.String(name), &awslambda.FunctionProps{
			Description:   jsii.String("roadevents " + string(g) + " route group"),
			Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:  awslambda.Architecture_ARM_64(),
			Handler:       jsii.String("bootstrap"),
			Code:          code,
			MemorySize:    jsii.Number(size.MemoryMB),
			Timeout:       awscdk.Duration_Seconds(jsii.Number(size.TimeoutSeconds)),
			Environment:   &env,
			LogGroup:      logs,
			LoggingFormat: awslambda.LoggingFormat_JSON,
		})
		grantTableData(fn.Role(), s.Table)
		for _, sec := range secrets {
			sec.GrantRead(fn, nil)
		}
		switch g {
		case service.GroupConsoleAuth, service.GroupConsoleOrgs:
			// Sign-in codes and invitations are e-mailed; TOTP is enrolled and checked
			// (key issuance asks for a TOTP code).
			identity.GrantSendEmail(fn)
			sealKey.GrantEncryptDecrypt(fn)
		}
		s.Functions[g] = fn
	}

	// The overage job (README "Reads beyond included_reads"): every hour EventBridge invokes
	// the billing function with its scheduled event, which the function tells from an HTTP
	// API request (service.IsScheduledEvent). A failed pass is retried by EventBridge; the
	// pass is idempotent (usage records with action=set).
	s.OverageSchedule = awsevents.NewRule(st, jsii.String("OverageSchedule"), &awsevents.RuleProps{
		Description: jsii.String("roadevents: report reads beyond included_reads to Stripe, hourly"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Hours(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewLambdaFunction(s.Functions[service.GroupBilling], &awseventstargets.LambdaFunctionProps{
				RetryAttempts: jsii.Number(2),
			}),
		},
	})

	// The HTTP API: every route of each group to that group's function. CORS preflight
	// (OPTIONS on any path) and paths no route knows go to meta, whose handler answers both
	// as every group's does (spec 5 CORS; spec 7 404 {"detail":"Not Found"}).
	meta := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("metaDefault"), s.Functions[service.GroupMeta],
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0()})
	s.API = awsapigatewayv2.NewHttpApi(st, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("roadevents API (" + p.Stage + ")"),
		DefaultIntegration: meta,
	})
	for _, g := range service.LambdaGroups {
		integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(string(g)+"Integration"), s.Functions[g],
			&awsapigatewayv2integrations.HttpLambdaIntegrationProps{PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0()})
		for _, r := range service.GroupRoutes(g) {
			s.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
				Path:        jsii.String(APIPath(r.Path)),
				Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(r.Method)},
				Integration: integration,
			})
		}
	}
	s.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String("/{proxy+}"),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_OPTIONS},
		Integration: meta,
	})

	s.addStreamer(st, p, removal, retention, eventIDKey, authHashKey)
	s.addSite(st, p, removal)

	// Alarms: function errors and throttles, and the streamer's health.
	topic := awssns.NewTopic(st, jsii.String("Alarms"), &awssns.TopicProps{DisplayName: jsii.String("roadevents " + p.Stage + " alarms")})
	if p.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(topic)
	five := awscdk.Duration_Minutes(jsii.Number(5))
	for _, g := range service.LambdaGroups {
		fn := s.Functions[g]
		alarm(st, functionID(g)+"Errors", fn.MetricErrors(&awscloudwatch.MetricOptions{Period: five}), 1, 1, action)
		alarm(st, functionID(g)+"Throttles", fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: five}), 1, 1, action)
	}
	tg := s.Streamer.TargetGroup()
	alarm(st, "StreamerUnhealthy", tg.Metrics().UnhealthyHostCount(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Maximum")}), 1, 3, action)
	noHealthy := awscloudwatch.NewAlarm(st, jsii.String("StreamerNoHealthyTask"), &awscloudwatch.AlarmProps{
		Metric:             tg.Metrics().HealthyHostCount(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Minimum")}),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(2),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
	})
	noHealthy.AddAlarmAction(action)

	awscdk.NewCfnOutput(st, jsii.String("DistributionDomain"), &awscdk.CfnOutputProps{Value: s.Distribution.DistributionDomainName()})
	awscdk.NewCfnOutput(st, jsii.String("ApiEndpoint"), &awscdk.CfnOutputProps{Value: s.API.ApiEndpoint()})
	awscdk.NewCfnOutput(st, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: s.Table.TableName()})
	awscdk.NewCfnOutput(st, jsii.String("StripeSecret"), &awscdk.CfnOutputProps{Value: stripe.SecretArn()})
	return s
}

// addStreamer runs streamer/ on Fargate behind a public load balancer (ARCHITECTURE.md,
// Streaming). Tasks run in public subnets with a public address (no NAT gateway to pay for)
// and accept traffic from the load balancer only.
func (s *Stack) addStreamer(st awscdk.Stack, p Props, removal awscdk.RemovalPolicy, retention awslogs.RetentionDays, secrets ...awssecretsmanager.ISecret) {
	vpc := awsec2.NewVpc(st, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{
			{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24)},
		},
	})
	cluster := awsecs.NewCluster(st, jsii.String("Cluster"), &awsecs.ClusterProps{Vpc: vpc})
	logs := awslogs.NewLogGroup(st, jsii.String("StreamerLogs"), &awslogs.LogGroupProps{Retention: retention, RemovalPolicy: removal})
	env := map[string]*string{
		"ROADEVENTS_STORE":      jsii.String("dynamodb"),
		"ROADEVENTS_TABLE":      s.Table.TableName(),
		"ROADEVENTS_STREAM_ARN": s.Table.TableStreamArn(),
		"ROADEVENTS_ADDR":       jsii.String(fmt.Sprintf("0.0.0.0:%d", StreamerPort)),
	}
	// ECS reads the secrets at task start into the container's environment; they are not in
	// the task definition.
	ecsSecrets := map[string]awsecs.Secret{}
	for _, sec := range secrets {
		name := secretVariable(sec)
		ecsSecrets[name] = awsecs.Secret_FromSecretsManager(sec, jsii.String(name))
	}
	s.Streamer = awsecspatterns.NewApplicationLoadBalancedFargateService(st, jsii.String("Streamer"), &awsecspatterns.ApplicationLoadBalancedFargateServiceProps{
		Cluster:        cluster,
		Cpu:            jsii.Number(512),
		MemoryLimitMiB: jsii.Number(1024),
		DesiredCount:   jsii.Number(1),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		TaskImageOptions: &awsecspatterns.ApplicationLoadBalancedTaskImageOptions{
			Image: awsecs.ContainerImage_FromAsset(jsii.String(p.RepoRoot), &awsecs.AssetImageProps{
				File: jsii.String("streamer/Dockerfile"),
				// The tasks are Graviton; the Dockerfile cross-compiles, so an amd64
				// machine builds this without emulation.
				Platform: awsecrassets.Platform_LINUX_ARM64(),
			}),
			ContainerName: jsii.String("streamer"),
			ContainerPort: jsii.Number(StreamerPort),
			Environment:   &env,
			Secrets:       &ecsSecrets,
			LogDriver:     awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{LogGroup: logs, StreamPrefix: jsii.String("streamer")}),
		},
		PublicLoadBalancer: jsii.Bool(true),
		AssignPublicIp:     jsii.Bool(true),
		TaskSubnets:        &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PUBLIC},
		IdleTimeout:        awscdk.Duration_Seconds(jsii.Number(StreamerIdleTimeoutSeconds)),
		// A draining task says bye to every stream at once (streamer/main.go), so the
		// deregistration delay only needs to cover that.
		MinHealthyPercent: jsii.Number(100),
		CircuitBreaker:    &awsecs.DeploymentCircuitBreaker{Rollback: jsii.Bool(true)},
	})
	s.Streamer.TargetGroup().ConfigureHealthCheck(&awselasticloadbalancingv2.HealthCheck{
		Path:                    jsii.String("/health"),
		HealthyHttpCodes:        jsii.String("200"),
		Interval:                awscdk.Duration_Seconds(jsii.Number(10)),
		HealthyThresholdCount:   jsii.Number(2),
		UnhealthyThresholdCount: jsii.Number(2),
	})
	s.Streamer.TargetGroup().SetAttribute(jsii.String("deregistration_delay.timeout_seconds"), jsii.String("30"))

	// The stream: read every shard, follow it, read events for snapshots, count connects and
	// verify tickets and keys (the same item actions as the functions).
	role := s.Streamer.TaskDefinition().TaskRole()
	grantTableData(role, s.Table)
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:DescribeTable"),
		Resources: jsii.Strings(*s.Table.TableArn()),
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
		Resources: jsii.Strings(*s.Table.TableStreamArn()),
	}))

	// Scale on open connections, up to StreamerMaxTasks.
	scaling := s.Streamer.Service().AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{
		MinCapacity: jsii.Number(1),
		MaxCapacity: jsii.Number(StreamerMaxTasks),
	})
	scaling.ScaleOnMetric(jsii.String("Connections"), &awsapplicationautoscaling.BasicStepScalingPolicyProps{
		Metric: s.Streamer.LoadBalancer().Metrics().ActiveConnectionCount(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Maximum"),
		}),
		ScalingSteps: &[]*awsapplicationautoscaling.ScalingInterval{
			{Upper: jsii.Number(StreamerScaleOutConnections / 2), Change: jsii.Number(-1)},
			{Lower: jsii.Number(StreamerScaleOutConnections), Change: jsii.Number(1)},
		},
		AdjustmentType: awsapplicationautoscaling.AdjustmentType_CHANGE_IN_CAPACITY,
		Cooldown:       awscdk.Duration_Minutes(jsii.Number(5)),
	})
}

// addSite creates the private SPA bucket and the one CloudFront distribution (ARCHITECTURE.md,
// One origin).
func (s *Stack) addSite(st awscdk.Stack, p Props, removal awscdk.RemovalPolicy) {
	s.SiteBucket = awss3.NewBucket(st, jsii.String("Site"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		RemovalPolicy:     removal,
		AutoDeleteObjects: jsii.Bool(removal == awscdk.RemovalPolicy_DESTROY),
	})
	// The SPA routes in the browser: a path under /app/ without a file extension is a page
	// of the SPA, answered with its index.html.
	spaIndex := awscloudfront.NewFunction(st, jsii.String("SpaIndex"), &awscloudfront.FunctionProps{
		Runtime: awscloudfront.FunctionRuntime_JS_2_0(),
		Comment: jsii.String("serve /app/index.html for the console's own paths"),
		Code: awscloudfront.FunctionCode_FromInline(jsii.String(`function handler(event) {
  var r = event.request;
  var last = r.uri.split('/').pop();
  if (r.uri === '/app' || last.indexOf('.') < 0) { r.uri = '/app/index.html'; }
  return r;
}`)),
	})
	site := &awscloudfront.BehaviorOptions{
		Origin:               awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(s.SiteBucket, nil),
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		CachePolicy:          awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
		FunctionAssociations: &[]*awscloudfront.FunctionAssociation{
			{EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST, Function: spaIndex},
		},
	}
	// The API Gateway origin wants its own Host header: every other viewer header
	// (Authorization included, allowed because nothing is cached) goes through.
	apiHost := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), s.API.ApiEndpoint(), nil))
	api := &awscloudfront.BehaviorOptions{
		Origin:               awscloudfrontorigins.NewHttpOrigin(apiHost, &awscloudfrontorigins.HttpOriginProps{ProtocolPolicy: awscloudfront.OriginProtocolPolicy_HTTPS_ONLY}),
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
		OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
	}
	// The stream: never cached, and CloudFront waits as long as it may for the next bytes
	// (the streamer writes a keepalive every 20 s). The load balancer has no certificate
	// here, so CloudFront reaches it over HTTP; viewers still use HTTPS.
	stream := &awscloudfront.BehaviorOptions{
		Origin: awscloudfrontorigins.NewHttpOrigin(s.Streamer.LoadBalancer().LoadBalancerDnsName(), &awscloudfrontorigins.HttpOriginProps{
			ProtocolPolicy:   awscloudfront.OriginProtocolPolicy_HTTP_ONLY,
			ReadTimeout:      awscdk.Duration_Seconds(jsii.Number(StreamOriginReadTimeoutSeconds)),
			KeepaliveTimeout: awscdk.Duration_Seconds(jsii.Number(60)),
		}),
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_GET_HEAD_OPTIONS(),
		CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
		OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER(),
		Compress:             jsii.Bool(false),
	}
	// GET / is the API's JSON (the console lives under /app/), so the default behaviour is
	// the API and the SPA has its own; every path the issue names for the API goes there
	// through the default, and is also listed so the routing reads plainly.
	s.Distribution = awscloudfront.NewDistribution(st, jsii.String("Distribution"), &awscloudfront.DistributionProps{
		Comment:                jsii.String("roadevents " + p.Stage + ": console, API and stream on one origin"),
		DefaultBehavior:        api,
		HttpVersion:            awscloudfront.HttpVersion_HTTP2_AND_3,
		PriceClass:             awscloudfront.PriceClass_PRICE_CLASS_100,
		MinimumProtocolVersion: awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021,
	})
	// Order matters: CloudFront takes the first pattern that matches. Tickets are an API
	// route under the stream's prefix.
	for _, b := range []struct {
		pattern string
		opts    *awscloudfront.BehaviorOptions
	}{
		{"/v1/stream/tickets", api},
		{"/v1/stream*", stream},
		{"/v1/*", api},
		{"/console/*", api},
		{"/health", api},
		{"/openapi.json", api},
		{"/app", site},
		{"/app/*", site},
	} {
		s.Distribution.AddBehavior(jsii.String(b.pattern), b.opts.Origin, &awscloudfront.AddBehaviorOptions{
			ViewerProtocolPolicy: b.opts.ViewerProtocolPolicy,
			AllowedMethods:       b.opts.AllowedMethods,
			CachePolicy:          b.opts.CachePolicy,
			OriginRequestPolicy:  b.opts.OriginRequestPolicy,
			FunctionAssociations: b.opts.FunctionAssociations,
			Compress:             b.opts.Compress,
		})
	}

	if _, err := os.Stat(p.WebDist); err != nil {
		awscdk.Annotations_Of(s.SiteBucket).AddWarningV2(jsii.String("roadevents:no-web-dist"),
			jsii.String("no console build at "+p.WebDist+": the site bucket is deployed empty"))
		return
	}
	awss3deployment.NewBucketDeployment(st, jsii.String("SiteFiles"), &awss3deployment.BucketDeploymentProps{
		Sources:              &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(p.WebDist), nil)},
		DestinationBucket:    s.SiteBucket,
		DestinationKeyPrefix: jsii.String("app/"),
		Distribution:         s.Distribution,
		DistributionPaths:    jsii.Strings("/app/*"),
	})
}

// grantTableData lets grantee use the table's items with the actions the store adapter calls
// (shared/store/dynamodb), on the table alone: no scan, no table management, no wildcard.
// TransactWriteItems needs the action of each operation it carries, ConditionCheckItem
// included.
func grantTableData(grantee awsiam.IGrantable, table awsdynamodb.Table) {
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(TableDataActions...),
		ResourceArns: jsii.Strings(*table.TableArn()),
	})
}

// TableDataActions are the DynamoDB actions every function and the streamer get on the table.
var TableDataActions = []string{
	"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query",
	"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem",
}

// hexKeySecret is a secret holding {"<variable>": "<64 hex digits>"}, generated by Secrets
// Manager at creation.
func hexKeySecret(st awscdk.Stack, id, variable string, removal awscdk.RemovalPolicy) awssecretsmanager.Secret {
	sec := awssecretsmanager.NewSecret(st, jsii.String(id), &awssecretsmanager.SecretProps{
		Description: jsii.String(variable + " of every function (hex, 32 bytes); never rotate it while ids or codes made with it are in use"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate:    jsii.String(`{}`),
			GenerateStringKey:       jsii.String(variable),
			PasswordLength:          jsii.Number(64),
			ExcludePunctuation:      jsii.Bool(true),
			ExcludeUppercase:        jsii.Bool(true),
			ExcludeCharacters:       jsii.String("ghijklmnopqrstuvwxyz"),
			IncludeSpace:            jsii.Bool(false),
			RequireEachIncludedType: jsii.Bool(false),
		},
		RemovalPolicy: removal,
	})
	secretVariables[*sec.Node().Addr()] = variable
	return sec
}

// secretVariables remembers which variable each generated key secret holds.
var secretVariables = map[string]string{}

func secretVariable(sec awssecretsmanager.ISecret) string {
	return secretVariables[*sec.Node().Addr()]
}

// alarm raises when metric reaches threshold for periods periods.
func alarm(st awscdk.Stack, id string, metric awscloudwatch.IMetric, threshold, periods float64, action awscloudwatch.IAlarmAction) {
	a := awscloudwatch.NewAlarm(st, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(periods),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	a.AddAlarmAction(action)
}

// FunctionID is the construct id of group's function ("console-orgs" → "ConsoleOrgsFunction").
func FunctionID(g service.Group) string { return functionID(g) }

func functionID(g service.Group) string {
	var b strings.Builder
	for _, part := range strings.Split(string(g), "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Function"
}

var greedy = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\.\.\.\}`)

// APIPath turns a net/http route pattern into an HTTP API route path: "/{$}" is "/", and a
// trailing wildcard "{name...}" is the greedy "{name+}".
func APIPath(pattern string) string {
	if pattern == "/{$}" {
		return "/"
	}
	return greedy.ReplaceAllString(pattern, "{$1+}")
}

// WritePlaceholderBundle writes into dir a `bootstrap` that only says it is a placeholder:
// the code of every function when the stack is synthesized without built bundles (the synth
// test, `-c bundles=placeholder`). Such a template is for reading, not deploying.
func WritePlaceholderBundle(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("stack: placeholder bundle: %w", err)
	}
	script := "#!/bin/sh\necho 'placeholder bundle: build with scripts/build-lambdas.sh' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte(script), 0o755); err != nil {
		return fmt.Errorf("stack: placeholder bundle: %w", err)
	}
	return nil
}
