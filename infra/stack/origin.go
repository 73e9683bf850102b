package stack

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticloadbalancingv2targets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/shared/routetable"
)

// Streamer settings (docs/operations.md §6).
const (
	// StreamerPort is where the streamer container listens (ROADEVENTS_ADDR).
	StreamerPort = 8080
	// StreamerMaxTasks bounds the stream tier. The tasks follow the relay's log, not the
	// table's stream, so the bound is one of cost: ten tasks hold some 100 000 streams
	// (docs/performance.md §8).
	StreamerMaxTasks = 10
	// IdleTimeoutSeconds is the load balancer's idle timeout: above the stream's 20 s
	// keepalive (docs/api.md §5), so an idle stream is never cut between two keepalives.
	IdleTimeoutSeconds = 120
	// StreamerScaleOutStreams: past this many streams per task another task starts; below
	// half of it one stops. One process held 10 000 in the load test (docs/performance.md
	// §8) on a full machine; a task has half a core. The count is estimated from the load
	// balancer's connections, which include CloudFront's few kept-alive ones for the API.
	StreamerScaleOutStreams = 3000
)

// ListenerRule is one rule of the load balancer's listener: a request whose path matches one
// of Paths (load balancer patterns, * and ? wildcards, case-sensitive) goes to Group's target.
// The rules are tried in order; a request no rule takes goes to meta, which answers unknown
// paths as every group does (docs/api.md §7, 404).
type ListenerRule struct {
	Group routetable.Group
	Paths []string
}

// The listener's limits: three values per condition, five wildcards per rule.
const (
	maxPathsPerRule     = 3
	maxWildcardsPerRule = 5
)

// ListenerRules derives the listener's rules from the route table, in few rules (the load
// balancer charges for each rule a request passes): the routes are taken by their first two
// path segments (/console/auth, /v1/events, /health). A prefix whose routes are all one group's
// is one pattern for the prefix itself and one for everything under it. Where groups share a
// prefix (/console/orgs: console-orgs and billing; /v1/stream: the stream and its tickets), the
// routes of every group but the one with the most routes come first, each route its own
// pattern, the most specific first (more literal characters); the group with the most routes
// then takes the rest of the prefix. Methods play no part: each group answers a method it does
// not serve with 405 itself, and a preflight on any of its paths as every group does. It
// panics if one path belonged to two groups, which the rules could not tell apart.
func ListenerRules() []ListenerRule {
	type prefix struct {
		routes map[routetable.Group][]string // load balancer patterns by group
	}
	prefixes := map[string]*prefix{}
	owner := map[string]routetable.Group{}
	for _, g := range routetable.All {
		for _, r := range g.Routes() {
			p := LoadBalancerPath(r.Path)
			if o, ok := owner[p]; ok && o != g {
				panic(fmt.Sprintf("stack: path %s belongs to groups %s and %s; the load balancer routes by path alone", p, o, g))
			}
			owner[p] = g
			key := firstSegments(p, 2)
			if prefixes[key] == nil {
				prefixes[key] = &prefix{routes: map[routetable.Group][]string{}}
			}
			prefixes[key].routes[g] = append(prefixes[key].routes[g], p)
		}
	}
	keys := make([]string, 0, len(prefixes))
	for k := range prefixes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type pattern struct {
		path  string
		group routetable.Group
	}
	var ordered []pattern
	literal := func(p string) int { return len(p) - strings.Count(p, "*") - strings.Count(p, "?") }
	for _, k := range keys {
		pre := prefixes[k]
		var main routetable.Group
		for g, rs := range pre.routes {
			if len(rs) > len(pre.routes[main]) || len(rs) == len(pre.routes[main]) && g < main {
				main = g
			}
		}
		var specific []pattern
		for g, rs := range pre.routes {
			if g != main {
				for _, r := range rs {
					specific = append(specific, pattern{r, g})
				}
			}
		}
		sort.Slice(specific, func(i, j int) bool {
			if li, lj := literal(specific[i].path), literal(specific[j].path); li != lj {
				return li > lj
			}
			return specific[i].path < specific[j].path
		})
		ordered = append(ordered, specific...)
		if slices.Contains(pre.routes[main], k) {
			ordered = append(ordered, pattern{k, main})
		}
		if slices.ContainsFunc(pre.routes[main], func(r string) bool { return r != k }) {
			ordered = append(ordered, pattern{strings.TrimSuffix(k, "/") + "/*", main})
		}
	}
	var rules []ListenerRule
	wildcards := 0
	for _, p := range ordered {
		w := strings.Count(p.path, "*")
		last := len(rules) - 1
		if last < 0 || rules[last].Group != p.group || len(rules[last].Paths) == maxPathsPerRule || wildcards+w > maxWildcardsPerRule {
			rules = append(rules, ListenerRule{Group: p.group})
			last, wildcards = last+1, 0
		}
		rules[last].Paths = append(rules[last].Paths, p.path)
		wildcards += w
	}
	return rules
}

// firstSegments is p up to its n-th segment, or p when it has fewer; "/" is "/".
func firstSegments(p string, n int) string {
	parts := strings.SplitN(p, "/", n+2)
	if len(parts) <= n+1 {
		return p
	}
	return strings.Join(parts[:n+1], "/")
}

var pathParam = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]*(\.\.\.)?\}`)

// LoadBalancerPath turns a net/http route pattern into a load balancer path pattern: "/{$}"
// is "/", and each {name} or trailing {name...} is "*" (which spans slashes too).
func LoadBalancerPath(pattern string) string {
	if pattern == "/{$}" {
		return "/"
	}
	return pathParam.ReplaceAllString(pattern, "*")
}

// addOrigin builds the network and the one internal load balancer behind CloudFront
// (docs/architecture.md §5): a target group per Lambda group and the streamer's, the rules of
// ListenerRules, and the streamer on Fargate. The load balancer has no public address; its
// security group admits the VPC's own addresses, where CloudFront's VPC origin reaches it.
func (s *Stack) addOrigin(st awscdk.Stack, p Props, removal awscdk.RemovalPolicy) {
	// Tasks run in public subnets with a public address, for their way out to AWS's APIs
	// without a NAT gateway to pay for, and accept traffic from the load balancer only. The
	// load balancer is in isolated subnets: a VPC origin wants a private one, and the VPC an
	// internet gateway, which the public subnets bring.
	s.Vpc = awsec2.NewVpc(st, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{
			{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24)},
			{Name: jsii.String("origin"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(24)},
		},
	})
	s.Vpc.AddFlowLog(jsii.String("FlowLog"), &awsec2.FlowLogOptions{
		Destination: awsec2.FlowLogDestination_ToS3(s.LogBucket, jsii.String("vpc-flow/"), nil),
		TrafficType: awsec2.FlowLogTrafficType_ALL,
	})

	port, protocol := 80.0, awselasticloadbalancingv2.ApplicationProtocol_HTTP
	if p.OriginOverHTTPS() {
		port, protocol = 443, awselasticloadbalancingv2.ApplicationProtocol_HTTPS
	}
	sg := awsec2.NewSecurityGroup(st, jsii.String("OriginSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              s.Vpc,
		Description:      jsii.String("the internal load balancer: the listener's port from within the VPC (CloudFront's VPC origin)"),
		AllowAllOutbound: jsii.Bool(false),
	})
	sg.AddIngressRule(awsec2.Peer_Ipv4(s.Vpc.VpcCidrBlock()), awsec2.Port_Tcp(jsii.Number(port)),
		jsii.String("CloudFront's VPC origin, from its interfaces in the VPC"), nil)
	accept(sg, "AwsSolutions-EC23", "the one ingress rule admits the VPC's own range, which cdk-nag cannot read from the template")
	s.LoadBalancer = awselasticloadbalancingv2.NewApplicationLoadBalancer(st, jsii.String("LoadBalancer"), &awselasticloadbalancingv2.ApplicationLoadBalancerProps{
		Vpc:                     s.Vpc,
		InternetFacing:          jsii.Bool(false),
		VpcSubnets:              &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED},
		SecurityGroup:           sg,
		IdleTimeout:             awscdk.Duration_Seconds(jsii.Number(IdleTimeoutSeconds)),
		DropInvalidHeaderFields: jsii.Bool(true),
	})
	s.LoadBalancer.LogAccessLogs(s.LogBucket, jsii.String("load-balancer"))

	s.TargetGroups = map[routetable.Group]awselasticloadbalancingv2.ApplicationTargetGroup{}
	for _, g := range routetable.Lambdas {
		s.TargetGroups[g] = awselasticloadbalancingv2.NewApplicationTargetGroup(st, jsii.String(groupID(g)+"Targets"), &awselasticloadbalancingv2.ApplicationTargetGroupProps{
			TargetType: awselasticloadbalancingv2.TargetType_LAMBDA,
			Targets:    &[]awselasticloadbalancingv2.IApplicationLoadBalancerTarget{awselasticloadbalancingv2targets.NewLambdaTarget(s.Functions[g])},
			// Repeated query parameters and headers reach the function whole (the `type`
			// filter of GET /v1/events may repeat).
			MultiValueHeadersEnabled: jsii.Bool(true),
		})
	}
	s.addStreamer(st, p, removal)

	listener := &awselasticloadbalancingv2.BaseApplicationListenerProps{
		Port:          jsii.Number(port),
		Protocol:      protocol,
		Open:          jsii.Bool(false),
		DefaultAction: awselasticloadbalancingv2.ListenerAction_Forward(&[]awselasticloadbalancingv2.IApplicationTargetGroup{s.TargetGroups[routetable.GroupMeta]}, nil),
	}
	if p.OriginOverHTTPS() {
		listener.Certificates = &[]awselasticloadbalancingv2.IListenerCertificate{
			awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String("OriginCertificate"), jsii.String(p.OriginCertificateARN)),
		}
		// TLS 1.3 and 1.2 with forward secrecy: CloudFront speaks TLS 1.2 to origins.
		listener.SslPolicy = awselasticloadbalancingv2.SslPolicy_RECOMMENDED_TLS
	}
	s.Listener = s.LoadBalancer.AddListener(jsii.String("Listener"), listener)
	for i, r := range ListenerRules() {
		s.Rules = append(s.Rules, awselasticloadbalancingv2.NewApplicationListenerRule(st, jsii.String(fmt.Sprintf("Rule%d", i+1)), &awselasticloadbalancingv2.ApplicationListenerRuleProps{
			Listener:   s.Listener,
			Priority:   jsii.Number(float64(i + 1)),
			Conditions: &[]awselasticloadbalancingv2.ListenerCondition{awselasticloadbalancingv2.ListenerCondition_PathPatterns(jsii.Strings(r.Paths...))},
			Action:     awselasticloadbalancingv2.ListenerAction_Forward(&[]awselasticloadbalancingv2.IApplicationTargetGroup{s.TargetGroups[r.Group]}, nil),
		}))
	}
	// ECS refuses a service whose target group no load balancer uses yet.
	for _, r := range s.Rules {
		s.Streamer.Node().AddDependency(r)
	}
	if !p.OriginOverHTTPS() {
		awscdk.Annotations_Of(s.LoadBalancer).AddWarningV2(jsii.String("roadevents:origin-http"), jsii.String(
			"CloudFront reaches the load balancer over HTTP inside the VPC: API keys and tickets cross AWS's network unencrypted between them. "+
				"Pass -c "+ContextOriginDomain+"=<name> -c "+ContextOriginCertificateARN+"=<ACM ARN> (required in "+StageProd+"; docs/operations.md §5)"))
	}
}

// addStreamer runs streamer/ on Fargate (docs/architecture.md §3) as the load balancer's
// target for GET /v1/stream, each task following the relay's log (addRelay), scaling on the
// streams per task up to StreamerMaxTasks.
func (s *Stack) addStreamer(st awscdk.Stack, p Props, removal awscdk.RemovalPolicy) {
	cluster := awsecs.NewCluster(st, jsii.String("Cluster"), &awsecs.ClusterProps{
		Vpc:                            s.Vpc,
		ContainerInsightsV2:            awsecs.ContainerInsights_ENABLED,
		EnableFargateCapacityProviders: jsii.Bool(false),
	})
	// One image for the streamers and the relay (`streamer -relay`).
	image := awsecs.ContainerImage_FromAsset(jsii.String(p.RepoRoot), &awsecs.AssetImageProps{
		File: jsii.String("streamer/Dockerfile"),
		// The tasks are Graviton; the Dockerfile cross-compiles, so an amd64 machine
		// builds this without emulation.
		Platform: awsecrassets.Platform_LINUX_ARM64(),
	})
	relayURL := s.addRelay(st, p, removal, cluster, image)
	task := gravitonTask(st, "StreamerTask", 512, 1024, "streamer", &awsecs.ContainerDefinitionOptions{
		Image:        image,
		PortMappings: &[]*awsecs.PortMapping{{ContainerPort: jsii.Number(StreamerPort)}},
		// No secret: the stream neither derives ids nor checks codes (its grants name none).
		Environment: &map[string]*string{
			"ROADEVENTS_STORE":       jsii.String("dynamodb"),
			"ROADEVENTS_TABLE":       s.Table.TableName(),
			"ROADEVENTS_RELAY_REDIS": relayURL,
			"ROADEVENTS_ADDR":        jsii.String(fmt.Sprintf("0.0.0.0:%d", StreamerPort)),
		},
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{LogGroup: logGroup(st, "StreamerLogs", p, removal), StreamPrefix: jsii.String("streamer")}),
	})
	accept(task, "AwsSolutions-ECS2", "the container's environment holds the table's name, the cache's address and its own: configuration, not secrets")
	// A draining task says bye to every stream at once (streamer/main.go), so the
	// deregistration delay only needs to cover that.
	s.Streamer = publicService(st, "Streamer", cluster, task, 100, 200)
	tg := awselasticloadbalancingv2.NewApplicationTargetGroup(st, jsii.String("StreamTargets"), &awselasticloadbalancingv2.ApplicationTargetGroupProps{
		Vpc:                 s.Vpc,
		Port:                jsii.Number(StreamerPort),
		Protocol:            awselasticloadbalancingv2.ApplicationProtocol_HTTP,
		TargetType:          awselasticloadbalancingv2.TargetType_IP,
		Targets:             &[]awselasticloadbalancingv2.IApplicationLoadBalancerTarget{s.Streamer},
		DeregistrationDelay: awscdk.Duration_Seconds(jsii.Number(30)),
		HealthCheck: &awselasticloadbalancingv2.HealthCheck{
			Path:                    jsii.String("/health"),
			HealthyHttpCodes:        jsii.String("200"),
			Interval:                awscdk.Duration_Seconds(jsii.Number(10)),
			HealthyThresholdCount:   jsii.Number(2),
			UnhealthyThresholdCount: jsii.Number(2),
		},
	})
	s.TargetGroups[routetable.GroupStream] = tg
	s.CacheSecurityGroup.AddIngressRule(awsec2.Peer_SecurityGroupId(firstSecurityGroup(s.Streamer), nil),
		awsec2.Port_Tcp(jsii.Number(RelayCachePort)), jsii.String("the streamers read the log"), nil)

	// The stream: its grants on the items (keys, tickets, the area index, usage) and the
	// table's description, which the store reads at start. Not the table's stream: the
	// relay reads it.
	role := task.TaskRole()
	grantItems(role, s.Table, routetable.GroupStream.Grants())
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("DescribeTable"),
		Actions:   jsii.Strings("dynamodb:DescribeTable"),
		Resources: jsii.Strings(*s.Table.TableArn()),
	}))

	scaling := s.Streamer.AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{
		MinCapacity: jsii.Number(1),
		MaxCapacity: jsii.Number(StreamerMaxTasks),
	})
	scaling.ScaleOnMetric(jsii.String("StreamsPerTask"), &awsapplicationautoscaling.BasicStepScalingPolicyProps{
		Metric: s.streamsPerTask(),
		ScalingSteps: &[]*awsapplicationautoscaling.ScalingInterval{
			{Upper: jsii.Number(StreamerScaleOutStreams / 2), Change: jsii.Number(-1)},
			{Lower: jsii.Number(StreamerScaleOutStreams), Upper: jsii.Number(2 * StreamerScaleOutStreams), Change: jsii.Number(1)},
			// A crowd arriving at once (a major incident) gets tasks faster.
			{Lower: jsii.Number(2 * StreamerScaleOutStreams), Change: jsii.Number(3)},
		},
		AdjustmentType: awsapplicationautoscaling.AdjustmentType_CHANGE_IN_CAPACITY,
		Cooldown:       awscdk.Duration_Minutes(jsii.Number(3)),
	})
}

// gravitonTask is a Fargate task definition on arm64 with cpu units and memory MiB, running
// container.
func gravitonTask(st awscdk.Stack, id string, cpu, memory float64, name string, container *awsecs.ContainerDefinitionOptions) awsecs.FargateTaskDefinition {
	task := awsecs.NewFargateTaskDefinition(st, jsii.String(id), &awsecs.FargateTaskDefinitionProps{
		Cpu:            jsii.Number(cpu),
		MemoryLimitMiB: jsii.Number(memory),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
	})
	task.AddContainer(jsii.String(name), container)
	// The execution role exists once a container needs it.
	accept(task.ExecutionRole(), "AwsSolutions-IAM5", "ecr:GetAuthorizationToken has no resource to name: it is granted on \"*\" or not at all")
	return task
}

// publicService runs one task of task in the public subnets with a public address (the way
// out to AWS's APIs without a NAT gateway), deploying between minHealthy and maxHealthy
// percent of it and rolling back a deployment that does not become healthy.
func publicService(st awscdk.Stack, id string, cluster awsecs.Cluster, task awsecs.FargateTaskDefinition, minHealthy, maxHealthy float64) awsecs.FargateService {
	return awsecs.NewFargateService(st, jsii.String(id), &awsecs.FargateServiceProps{
		Cluster:           cluster,
		TaskDefinition:    task,
		DesiredCount:      jsii.Number(1),
		AssignPublicIp:    jsii.Bool(true),
		VpcSubnets:        &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PUBLIC},
		MinHealthyPercent: jsii.Number(minHealthy),
		MaxHealthyPercent: jsii.Number(maxHealthy),
		CircuitBreaker:    &awsecs.DeploymentCircuitBreaker{Rollback: jsii.Bool(true)},
	})
}

// streamsPerTask estimates the open streams per streamer task: the load balancer counts each
// stream twice (CloudFront's connection to it and its own to the task), divided by the tasks
// running (Container Insights; one when that metric is missing).
func (s *Stack) streamsPerTask() awscloudwatch.IMetric {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("conns / (2 * FILL(tasks, 1))"),
		Label:      jsii.String("streams per streamer task"),
		Period:     minute,
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"conns": s.LoadBalancer.Metrics().ActiveConnectionCount(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Sum")}),
			"tasks": runningTasks(s.Streamer),
		},
	})
}

// runningTasks is a service's running task count (Container Insights), per minute.
func runningTasks(svc awsecs.FargateService) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String("ECS/ContainerInsights"),
		MetricName:    jsii.String("RunningTaskCount"),
		DimensionsMap: &map[string]*string{"ClusterName": svc.Cluster().ClusterName(), "ServiceName": svc.ServiceName()},
		Period:        awscdk.Duration_Minutes(jsii.Number(1)),
		Statistic:     jsii.String("Average"),
	})
}
