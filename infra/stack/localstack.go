package stack

import (
	"path/filepath"
	"runtime"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/routetable"
)

// LocalStackVersion is the LocalStack release whose community edition the LocalStack stack is
// written for (docs/operations.md §5): the last one published as a free image before LocalStack
// folded its editions into one that needs an account.
const LocalStackVersion = "4.14.0"

// LocalStackResourceTypes are the CloudFormation resource types LocalStack's community edition
// deploys at LocalStackVersion: the resource providers of its open-source repository at that tag
// (localstack-core/localstack/services/*/resource_providers). A type outside it is either
// ignored with a warning or, in later versions, fails the deployment; the stack's test holds
// the LocalStack stack to it.
var LocalStackResourceTypes = []string{
	"AWS::ApiGateway::Account", "AWS::ApiGateway::ApiKey", "AWS::ApiGateway::BasePathMapping", "AWS::ApiGateway::Deployment",
	"AWS::ApiGateway::DomainName", "AWS::ApiGateway::GatewayResponse", "AWS::ApiGateway::Method", "AWS::ApiGateway::Model",
	"AWS::ApiGateway::RequestValidator", "AWS::ApiGateway::Resource", "AWS::ApiGateway::RestApi", "AWS::ApiGateway::Stage",
	"AWS::ApiGateway::UsagePlan", "AWS::ApiGateway::UsagePlanKey",
	"AWS::CDK::Metadata",
	"AWS::CertificateManager::Certificate",
	"AWS::CloudFormation::Macro", "AWS::CloudFormation::Stack", "AWS::CloudFormation::WaitCondition", "AWS::CloudFormation::WaitConditionHandle",
	"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm",
	"AWS::DynamoDB::GlobalTable", "AWS::DynamoDB::Table",
	"AWS::EC2::DHCPOptions", "AWS::EC2::Instance", "AWS::EC2::InternetGateway", "AWS::EC2::KeyPair", "AWS::EC2::NatGateway",
	"AWS::EC2::NetworkAcl", "AWS::EC2::PrefixList", "AWS::EC2::Route", "AWS::EC2::RouteTable", "AWS::EC2::SecurityGroup",
	"AWS::EC2::Subnet", "AWS::EC2::SubnetRouteTableAssociation", "AWS::EC2::TransitGateway", "AWS::EC2::TransitGatewayAttachment",
	"AWS::EC2::VPC", "AWS::EC2::VPCEndpoint", "AWS::EC2::VPCGatewayAttachment",
	"AWS::ECR::Repository",
	"AWS::Elasticsearch::Domain",
	"AWS::Events::ApiDestination", "AWS::Events::Connection", "AWS::Events::EventBus", "AWS::Events::EventBusPolicy", "AWS::Events::Rule",
	"AWS::IAM::AccessKey", "AWS::IAM::Group", "AWS::IAM::InstanceProfile", "AWS::IAM::ManagedPolicy", "AWS::IAM::Policy",
	"AWS::IAM::Role", "AWS::IAM::ServerCertificate", "AWS::IAM::ServiceLinkedRole", "AWS::IAM::User",
	"AWS::KMS::Alias", "AWS::KMS::Key",
	"AWS::Kinesis::Stream", "AWS::Kinesis::StreamConsumer", "AWS::KinesisFirehose::DeliveryStream",
	"AWS::Lambda::Alias", "AWS::Lambda::CodeSigningConfig", "AWS::Lambda::EventInvokeConfig", "AWS::Lambda::EventSourceMapping",
	"AWS::Lambda::Function", "AWS::Lambda::LayerVersion", "AWS::Lambda::LayerVersionPermission", "AWS::Lambda::Permission",
	"AWS::Lambda::Url", "AWS::Lambda::Version",
	"AWS::Logs::LogGroup", "AWS::Logs::LogStream", "AWS::Logs::SubscriptionFilter",
	"AWS::OpenSearchService::Domain",
	"AWS::Redshift::Cluster",
	"AWS::ResourceGroups::Group",
	"AWS::Route53::HealthCheck", "AWS::Route53::RecordSet",
	"AWS::S3::Bucket", "AWS::S3::BucketPolicy",
	"AWS::SES::EmailIdentity",
	"AWS::SNS::Subscription", "AWS::SNS::Topic", "AWS::SNS::TopicPolicy",
	"AWS::SQS::Queue", "AWS::SQS::QueueInlinePolicy", "AWS::SQS::QueuePolicy",
	"AWS::SSM::MaintenanceWindow", "AWS::SSM::MaintenanceWindowTarget", "AWS::SSM::MaintenanceWindowTask", "AWS::SSM::Parameter",
	"AWS::SSM::PatchBaseline",
	"AWS::Scheduler::Schedule", "AWS::Scheduler::ScheduleGroup",
	"AWS::SecretsManager::ResourcePolicy", "AWS::SecretsManager::RotationSchedule", "AWS::SecretsManager::Secret",
	"AWS::SecretsManager::SecretTargetAttachment",
	"AWS::StepFunctions::Activity", "AWS::StepFunctions::StateMachine",
}

// LocalDataDir is the functions' data folder on LocalStack, where the outbox mailer writes
// (shared/app: <data>/outbox); scripts/localstack-deploy.sh says how to mount it.
const LocalDataDir = "/tmp/roadevents"

// LocalConsoleURL is the console's address in e-mails on LocalStack: the local front that
// scripts/localstack-deploy.sh starts.
const LocalConsoleURL = "http://127.0.0.1:8090/app/"

// LocalStackProps configure the LocalStack stack.
type LocalStackProps struct {
	awscdk.StackProps
	// BundleDir holds <group>/bootstrap for each function, built for this machine
	// (scripts/build-lambdas.sh --host writes build/lambda/host). Ignored when Bundles is set.
	BundleDir string
	// Bundles, when set, gives each function's code directly (the synth test's placeholders).
	Bundles func(scope constructs.Construct, group routetable.Group) awslambda.Code
}

// LocalStackStack is the synthesized LocalStack stack.
type LocalStackStack struct {
	awscdk.Stack
	Table     awsdynamodb.Table
	Functions map[routetable.Group]awslambda.Function
	URLs      map[routetable.Group]awslambda.FunctionUrl
}

// NewLocalStack builds what LocalStack's community edition deploys of the service
// (docs/operations.md §5): the same table with its stream and the same five functions with
// the same grants, secrets and sealing key, but built for this machine, each answering on a
// function URL (it has no HTTP API, no load balancer, no CloudFront), mailing to the outbox
// (no SES v2). The streamer runs beside it as a local process, and a local front puts the
// function URLs and the stream on one origin (scripts/localstack-deploy.sh).
func NewLocalStack(scope constructs.Construct, id string, p LocalStackProps) *LocalStackStack {
	st := awscdk.NewStack(scope, jsii.String(id), &p.StackProps)
	removal := awscdk.RemovalPolicy_DESTROY
	table := newTable(st, false, removal)
	sec := newSecrets(st, removal)
	arch := awslambda.Architecture_X86_64()
	if runtime.GOARCH == "arm64" {
		arch = awslambda.Architecture_ARM_64()
	}
	s := &LocalStackStack{Stack: st, Table: table, Functions: map[routetable.Group]awslambda.Function{}, URLs: map[routetable.Group]awslambda.FunctionUrl{}}
	for _, g := range routetable.Lambdas {
		grants := g.Grants()
		role := awsiam.NewRole(st, jsii.String(functionID(g)+"Role"), &awsiam.RoleProps{
			AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		})
		env := giveGrants(role, table, grants, sec)
		env["ROADEVENTS_STORE"] = jsii.String("dynamodb")
		env["ROADEVENTS_TABLE"] = table.TableName()
		env["ROADEVENTS_MAILER"] = jsii.String(string(config.MailOutbox))
		env["ROADEVENTS_DATA"] = jsii.String(LocalDataDir)
		env["ROADEVENTS_CONSOLE_URL"] = jsii.String(LocalConsoleURL)
		code := awslambda.Code(nil)
		if p.Bundles != nil {
			code = p.Bundles(st, g)
		} else {
			code = awslambda.Code_FromAsset(jsii.String(filepath.Join(p.BundleDir, string(g))), nil)
		}
		fn := awslambda.NewFunction(st, jsii.String(functionID(g)), &awslambda.FunctionProps{
			Description:  jsii.String("roadevents " + string(g) + " route group (LocalStack)"),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: arch,
			Handler:      jsii.String("bootstrap"),
			Code:         code,
			Role:         role,
			MemorySize:   jsii.Number(Sizes[g].MemoryMB),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(Sizes[g].TimeoutSeconds)),
			Environment:  &env,
		})
		accept(fn, "Serverless-LambdaDLQ", "invoked synchronously through its URL: a failed invocation is answered, not queued")
		s.Functions[g] = fn
		// The front door LocalStack's community edition runs; payload format 2.0, as the
		// HTTP API's was.
		s.URLs[g] = fn.AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: awslambda.FunctionUrlAuthType_NONE})
		awscdk.NewCfnOutput(st, jsii.String(groupID(g)+"Url"), &awscdk.CfnOutputProps{Value: s.URLs[g].Url()})
	}
	overage := awsevents.NewRule(st, jsii.String("OverageSchedule"), &awsevents.RuleProps{
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Hours(jsii.Number(1))),
		Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Functions[routetable.GroupBilling], nil)},
	})
	accept(overage, "Serverless-EventBusDLQ", "the next hourly pass reports the same totals again (usage records with action=set)")
	awscdk.NewCfnOutput(st, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: table.TableName()})
	awscdk.NewCfnOutput(st, jsii.String("TableStreamArn"), &awscdk.CfnOutputProps{Value: table.TableStreamArn()})
	return s
}
