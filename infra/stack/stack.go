// Package stack is the AWS deployment of the service as CDK stacks (docs/architecture.md §5):
// the table, one Lambda per route group and the streamer on Fargate, all behind one internal
// load balancer that only CloudFront reaches (a VPC origin), the console SPA on S3, one
// CloudFront distribution in front of all of it with a WAF web ACL, SES, the secrets, the logs
// and the alarms. The web ACL lives in us-east-1, as CloudFront requires, in a small edge stack
// (NewEdge). NewLocalStack is the cut-down target for LocalStack's community edition.
// infra/main.go synthesizes them; the tests assert on the synthesized templates.
//
// The routes are not listed here: the load balancer's rules come from the route table
// (shared/routetable), which shared/app's tests hold to what each function serves, and so do
// each function's rights on AWS (routetable.Group.Grants): a route added to a group reaches
// that group's function at the next synth, with the rights its code is tested to use.
//
// The files: stack.go (props, the table, the stack's assembly), functions.go (the Lambdas and
// their secrets), iam.go (rights from the grants), origin.go (the network, the load balancer,
// the streamer), edge.go (CloudFront, the web ACL, TLS), logs.go (access logs), nag.go (the
// cdk-nag findings accepted, with their reasons), localstack.go.
package stack

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/shared/routetable"
)

// Stages are the deployment stages (context "stage").
const (
	StageDev  = "dev"
	StageProd = "prod"
)

// The context keys (-c key=value) of the props that a deployment sets (docs/operations.md §5).
const (
	ContextOriginDomain         = "originDomain"
	ContextOriginCertificateARN = "originCertificateArn"
	ContextDomainName           = "domainName"
	ContextCertificateARN       = "certificateArn"
	ContextWebACLARN            = "webAclArn"
	ContextRateLimit            = "rateLimit"
	ContextRateLimitMode        = "rateLimitMode"
	ContextReservedConcurrency  = "reservedConcurrency"
	ContextLogRetentionDays     = "logRetentionDays"
)

// ErrProps is returned by Props.Check for a configuration the stack refuses to synthesize.
var ErrProps = errors.New("stack")

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
// subscribed organisation whose total moved, in turn); HTTP requests are cut at CloudFront's
// 30 s origin read timeout whatever it is.
var Sizes = map[routetable.Group]FunctionSize{
	routetable.GroupMeta:        {MemoryMB: 256, TimeoutSeconds: 5},
	routetable.GroupEvents:      {MemoryMB: 1024, TimeoutSeconds: 10},
	routetable.GroupConsoleAuth: {MemoryMB: 512, TimeoutSeconds: 10},
	routetable.GroupConsoleOrgs: {MemoryMB: 512, TimeoutSeconds: 10},
	routetable.GroupBilling:     {MemoryMB: 512, TimeoutSeconds: 120},
}

// DefaultReservedConcurrency bounds each function's instances (docs/operations.md §5): about
// the peak requests per second it is sized for times its p99 duration, with room to spare.
// events: 1 000 requests/s at 100 ms; the console's groups: interactive traffic of people;
// billing: Stripe's seconds-long calls, rarely. Their sum, 135, leaves Lambda's required 100
// unreserved within the default account limit of 1 000.
var DefaultReservedConcurrency = map[routetable.Group]float64{
	routetable.GroupMeta:        10,
	routetable.GroupEvents:      100,
	routetable.GroupConsoleAuth: 10,
	routetable.GroupConsoleOrgs: 10,
	routetable.GroupBilling:     5,
}

// Props configure the main stack.
type Props struct {
	awscdk.StackProps
	// Stage is StageDev or StageProd: production keeps the table and logs longer, protects the
	// table from deletion, and requires TLS from CloudFront to the load balancer.
	Stage string
	// BundleDir holds <group>.zip for each function (scripts/build-lambdas.sh writes
	// build/lambda). Ignored when Bundles is set.
	BundleDir string
	// Bundles, when set, gives each function's code directly: the synth test passes
	// placeholder assets so that it needs no cross-compiled build.
	Bundles func(scope constructs.Construct, group routetable.Group) awslambda.Code
	// WebDist is the console SPA's built files (web/dist), uploaded under app/. When the
	// folder does not exist the bucket is created empty and a warning is added.
	WebDist string
	// RepoRoot is the Docker build context of the streamer image (streamer/Dockerfile).
	RepoRoot string
	// MailDomain is the SES sending identity; mail leaves as no-reply@MailDomain.
	MailDomain string
	// ConsoleURL is the console's address (ends in "/app/"). With DomainName it defaults to
	// https://DomainName/app/; without, it is known only once the distribution exists, and the
	// functions cannot read the distribution's name from the template (it depends on them).
	ConsoleURL string
	// AlarmEmail, when set, subscribes an address to the alarms' topic.
	AlarmEmail string

	// OriginDomain is the load balancer's own name (for example origin.roadevents.example),
	// under which CloudFront reaches it over HTTPS and checks its certificate;
	// OriginCertificateARN is an ACM certificate for it in the stack's region. Both or
	// neither; required in prod. Without them CloudFront reaches the load balancer over HTTP,
	// inside the VPC (docs/architecture.md §5), and synth warns.
	OriginDomain         string
	OriginCertificateARN string
	// DomainName is the viewers' name of the distribution (console and API), and
	// CertificateARN an ACM certificate for it in us-east-1 (CloudFront's). Both or neither:
	// with them viewers need TLS 1.2 (TLSv1.2_2021); without, the distribution answers on its
	// *.cloudfront.net name with CloudFront's certificate, whose minimum protocol cannot be
	// set.
	DomainName     string
	CertificateARN string
	// WebACLARN is the CloudFront web ACL of the distribution: NewEdge's, or one the
	// deployment already has (-c webAclArn). Required: every request passes the web ACL.
	WebACLARN string
	// ReservedConcurrency bounds each function; DefaultReservedConcurrency for a group it
	// does not name.
	ReservedConcurrency map[routetable.Group]float64
	// LogRetentionDays is how long every log is kept: the functions' and the streamer's,
	// the access logs of CloudFront, the load balancer and the site bucket, the VPC's flow
	// log. 0 is the stage's default (DefaultLogRetentionDays); else one of the values
	// CloudWatch Logs accepts (LogRetentionChoices).
	LogRetentionDays float64
}

// DefaultLogRetentionDays are the stages' log retentions.
var DefaultLogRetentionDays = map[string]float64{StageDev: 14, StageProd: 90}

// retentions are the retentions CloudWatch Logs accepts, in days.
var retentions = map[float64]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
	150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
	1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}

// LogRetentionChoices are the retentions CloudWatch Logs accepts, in days.
func LogRetentionChoices() []float64 { return slices.Sorted(maps.Keys(retentions)) }

// OriginOverHTTPS reports whether CloudFront reaches the load balancer over HTTPS.
func (p Props) OriginOverHTTPS() bool { return p.OriginDomain != "" && p.OriginCertificateARN != "" }

// CustomDomain reports whether viewers reach the distribution under DomainName.
func (p Props) CustomDomain() bool { return p.DomainName != "" && p.CertificateARN != "" }

// logRetentionDays is p.LogRetentionDays or the stage's default.
func (p Props) logRetentionDays() float64 {
	if p.LogRetentionDays != 0 {
		return p.LogRetentionDays
	}
	return DefaultLogRetentionDays[p.Stage]
}

// reservedConcurrency is g's bound.
func (p Props) reservedConcurrency(g routetable.Group) float64 {
	if n, ok := p.ReservedConcurrency[g]; ok {
		return n
	}
	return DefaultReservedConcurrency[g]
}

// consoleURL is the console's address, when known.
func (p Props) consoleURL() string {
	if p.ConsoleURL == "" && p.CustomDomain() {
		return "https://" + p.DomainName + "/app/"
	}
	return p.ConsoleURL
}

// Check reports a configuration the stack refuses to synthesize, naming the context key to
// fix: prod without TLS between CloudFront and the load balancer, a domain without its
// certificate or the reverse, values of the wrong shape, a certificate for viewers outside
// us-east-1, no web ACL, a reserved concurrency below 1, a retention CloudWatch refuses.
func (p Props) Check() error {
	if p.Stage != StageDev && p.Stage != StageProd {
		return fmt.Errorf("%w: -c stage=%s: want %s or %s", ErrProps, p.Stage, StageDev, StageProd)
	}
	if err := checkDomain(ContextOriginDomain, p.OriginDomain, ContextOriginCertificateARN, p.OriginCertificateARN, ""); err != nil {
		return err
	}
	if p.Stage == StageProd && !p.OriginOverHTTPS() {
		return fmt.Errorf("%w: stage %s needs -c %s=<a name for the load balancer> and -c %s=<ACM certificate ARN for it, in the stack's region> "+
			"(docs/operations.md §5): CloudFront must reach the load balancer over HTTPS", ErrProps, p.Stage, ContextOriginDomain, ContextOriginCertificateARN)
	}
	// CloudFront reads its certificates in us-east-1 only.
	if err := checkDomain(ContextDomainName, p.DomainName, ContextCertificateARN, p.CertificateARN, "us-east-1"); err != nil {
		return err
	}
	if p.WebACLARN == "" {
		return fmt.Errorf("%w: no web ACL: build one with NewEdge, or pass -c %s=<ARN of a CloudFront web ACL>", ErrProps, ContextWebACLARN)
	}
	for g, n := range p.ReservedConcurrency {
		if !g.IsLambda() || n < 1 {
			return fmt.Errorf("%w: -c %s: %s=%v: want a route group's function and at least 1 (0 would stop it)", ErrProps, ContextReservedConcurrency, g, n)
		}
	}
	if _, ok := retentions[p.LogRetentionDays]; p.LogRetentionDays != 0 && !ok {
		return fmt.Errorf("%w: -c %s=%v: want one of %v", ErrProps, ContextLogRetentionDays, p.LogRetentionDays, LogRetentionChoices())
	}
	return nil
}

// checkDomain checks a name and its ACM certificate: both or neither, a bare domain name, an
// ACM ARN (in region, when given).
func checkDomain(domainKey, domain, certKey, cert, region string) error {
	switch {
	case (domain == "") != (cert == ""):
		return fmt.Errorf("%w: give both -c %s and -c %s, or neither", ErrProps, domainKey, certKey)
	case domain != "" && (strings.Contains(domain, "/") || strings.Contains(domain, ":") || !strings.Contains(domain, ".")):
		return fmt.Errorf("%w: -c %s=%q: want a bare domain name such as origin.example.com", ErrProps, domainKey, domain)
	case cert == "":
		return nil
	}
	m := certificateARN.FindStringSubmatch(cert)
	switch {
	case m == nil:
		return fmt.Errorf("%w: -c %s=%q: want an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)", ErrProps, certKey, cert)
	case region != "" && m[1] != region:
		return fmt.Errorf("%w: -c %s=%q: want a certificate in %s, where CloudFront reads them", ErrProps, certKey, cert, region)
	}
	return nil
}

var certificateARN = regexp.MustCompile(`^arn:aws[a-z-]*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[A-Za-z0-9-]+$`)

// Stack is the synthesized main stack with the constructs the tests look for.
type Stack struct {
	awscdk.Stack
	Props     Props
	Table     awsdynamodb.Table
	Functions map[routetable.Group]awslambda.Function
	// OverageSchedule invokes the billing function hourly for the overage job.
	OverageSchedule awsevents.Rule
	// FeedPoller is the events code with a timeout for the feed poll pass, which
	// FeedSchedule invokes every minute.
	FeedPoller   awslambda.Function
	FeedSchedule awsevents.Rule
	// WebhookProducer makes webhook deliveries from the table's stream (WebhookProducerStream),
	// with WebhookStreamFailures for records given up; WebhookDispatcher sends them, invoked by
	// the turns' queue WebhookTurns, whose given-up turns go to WebhookTurnsDeadLetters
	// (docs/webhooks.md §3).
	WebhookProducer         awslambda.Function
	WebhookProducerStream   awslambda.EventSourceMapping
	WebhookDispatcher       awslambda.Function
	WebhookTurns            awssqs.Queue
	WebhookTurnsDeadLetters awssqs.Queue
	WebhookStreamFailures   awssqs.Queue

	Vpc          awsec2.Vpc
	LoadBalancer awselasticloadbalancingv2.ApplicationLoadBalancer
	Listener     awselasticloadbalancingv2.ApplicationListener
	// TargetGroups are the load balancer's targets: each Lambda group's function, and the
	// streamer for GroupStream.
	TargetGroups map[routetable.Group]awselasticloadbalancingv2.ApplicationTargetGroup
	// Rules are the listener's rules by priority - 1 (ListenerRules).
	Rules    []awselasticloadbalancingv2.ApplicationListenerRule
	Streamer awsecs.FargateService
	// Relay is the one task that copies the table's stream into Cache's log, which the
	// streamers follow.
	Relay              awsecs.FargateService
	Cache              awselasticache.CfnServerlessCache
	CacheSecurityGroup awsec2.SecurityGroup

	SiteBucket   awss3.Bucket
	LogBucket    awss3.Bucket
	Distribution awscloudfront.Distribution
	AlarmTopic   awssns.Topic
}

// New builds the main stack; it panics on props Check refuses.
func New(scope constructs.Construct, id string, p Props) *Stack {
	if err := p.Check(); err != nil {
		panic(err.Error())
	}
	prod := p.Stage == StageProd
	removal := awscdk.RemovalPolicy_DESTROY
	if prod {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	// The web ACL and the viewers' certificate are in us-east-1; the rest may be anywhere.
	p.StackProps.CrossRegionReferences = jsii.Bool(true)
	st := awscdk.NewStack(scope, jsii.String(id), &p.StackProps)
	// Buckets receive server access logs through their policy, not an ACL: the log bucket
	// enforces its owner (and synth fails without this whoever runs it).
	st.Node().SetContext(jsii.String("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"), true)
	awscdk.Tags_Of(st).Add(jsii.String("project"), jsii.String("roadevents"), nil)
	awscdk.Tags_Of(st).Add(jsii.String("stage"), jsii.String(p.Stage), nil)
	s := &Stack{Stack: st, Props: p, Functions: map[routetable.Group]awslambda.Function{}}

	s.Table = newTable(st, prod, removal)
	s.LogBucket = newLogBucket(st, "AccessLogs", p, removal, awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED)
	secrets := newSecrets(st, removal)
	s.addFunctions(st, p, secrets, removal)

	// The overage job (docs/console.md §3): every hour EventBridge invokes the billing
	// function with its scheduled event, which the function tells from an HTTP request
	// (lambdaapp.IsScheduledEvent). A failed pass is retried by EventBridge; the pass is idempotent
	// (usage records with action=set).
	s.OverageSchedule = awsevents.NewRule(st, jsii.String("OverageSchedule"), &awsevents.RuleProps{
		Description: jsii.String("roadevents: report reads beyond included_reads to Stripe, hourly"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Hours(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewLambdaFunction(s.Functions[routetable.GroupBilling], &awseventstargets.LambdaFunctionProps{
				RetryAttempts: jsii.Number(2),
			}),
		},
	})
	accept(s.OverageSchedule, "Serverless-EventBusDLQ", "a failed overage pass needs no dead-letter queue: EventBridge retries it twice, and "+
		"the next hourly pass reports the same totals again (usage records with action=set), so nothing is lost")

	s.addOrigin(st, p, removal)
	s.addSite(st, p, removal)
	s.addAlarms(st, p)
	acceptCDKProviders(st)

	awscdk.NewCfnOutput(st, jsii.String("DistributionDomain"), &awscdk.CfnOutputProps{Value: s.Distribution.DistributionDomainName()})
	awscdk.NewCfnOutput(st, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: s.Table.TableName()})
	awscdk.NewCfnOutput(st, jsii.String("StripeSecret"), &awscdk.CfnOutputProps{Value: secrets.stripe.SecretArn()})
	if p.OriginOverHTTPS() {
		awscdk.NewCfnOutput(st, jsii.String("OriginTarget"), &awscdk.CfnOutputProps{
			Value:       s.LoadBalancer.LoadBalancerDnsName(),
			Description: jsii.String("the internal load balancer: point the " + ContextOriginDomain + " name (CNAME) here"),
		})
	}
	return s
}

// newTable is the one table (docs/architecture.md §2), as shared/store/dynamodb.CreateTable
// makes it.
func newTable(st constructs.Construct, prod bool, removal awscdk.RemovalPolicy) awsdynamodb.Table {
	return awsdynamodb.NewTable(st, jsii.String("Table"), &awsdynamodb.TableProps{
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
}

// addAlarms sends function errors and throttles, the streamer's health and the front door's
// own errors to an SNS topic that refuses publishers without TLS.
func (s *Stack) addAlarms(st awscdk.Stack, p Props) {
	s.AlarmTopic = awssns.NewTopic(st, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("roadevents " + p.Stage + " alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	accept(s.AlarmTopic, "AwsSolutions-SNS2", "the alarms carry no data (metric names and thresholds), and CloudWatch cannot publish to a topic "+
		"encrypted with the AWS managed key: encrypting them would need a customer key for nothing to protect")
	if p.AlarmEmail != "" {
		s.AlarmTopic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(s.AlarmTopic)
	five := awscdk.Duration_Minutes(jsii.Number(5))
	for _, g := range routetable.Lambdas {
		fn := s.Functions[g]
		alarm(st, functionID(g)+"Errors", fn.MetricErrors(&awscloudwatch.MetricOptions{Period: five}), 1, 1, action)
		// A throttle is a request refused at the function's reserved concurrency: the
		// client got a 503 (docs/operations.md §5); sustained, the bound is too low.
		alarm(st, functionID(g)+"Throttles", fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: five}), 1, 1, action)
	}
	tg := s.TargetGroups[routetable.GroupStream]
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	alarm(st, "StreamerUnhealthy", tg.Metrics().UnhealthyHostCount(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}), 1, 3, action)
	noHealthy := awscloudwatch.NewAlarm(st, jsii.String("StreamerNoHealthyTask"), &awscloudwatch.AlarmProps{
		Metric:             tg.Metrics().HealthyHostCount(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Minimum")}),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(2),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
	})
	noHealthy.AddAlarmAction(action)
	// The relay: not running, or failing again and again. Either way the streams get no
	// change (docs/operations.md §6.2).
	relayDown := awscloudwatch.NewAlarm(st, jsii.String("RelayNotRunning"), &awscloudwatch.AlarmProps{
		Metric:             runningTasks(s.Relay),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(3),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
	})
	relayDown.AddAlarmAction(action)
	alarm(st, "RelayRestarting", relayMetric("RelayRestarts"), 1, 3, action)
	s.webhookAlarms(st, action)
	// The load balancer's own 5xx: a function that failed or was throttled, no healthy
	// streamer. Clients saw 503s (docs/operations.md §5).
	alarm(st, "FrontDoorErrors", s.LoadBalancer.Metrics().HttpCodeElb(awselasticloadbalancingv2.HttpCodeElb_ELB_5XX_COUNT,
		&awscloudwatch.MetricOptions{Period: five}), 10, 1, action)
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

// logGroup is a log group kept for p's retention.
func logGroup(st constructs.Construct, id string, p Props, removal awscdk.RemovalPolicy) awslogs.LogGroup {
	return awslogs.NewLogGroup(st, jsii.String(id), &awslogs.LogGroupProps{
		Retention: retentions[p.logRetentionDays()], RemovalPolicy: removal,
	})
}

// FunctionID is the construct id of group's function ("console-orgs" → "ConsoleOrgsFunction").
func FunctionID(g routetable.Group) string { return functionID(g) }

func functionID(g routetable.Group) string { return groupID(g) + "Function" }

// groupID is g in CamelCase ("console-orgs" → "ConsoleOrgs").
func groupID(g routetable.Group) string {
	var b strings.Builder
	for _, part := range strings.Split(string(g), "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
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
