package stack_test

import (
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/relay"
	"github.com/roadevents/roadevents/shared/routetable"
)

// matchALB reports whether path matches a load balancer path pattern: * is any run of
// characters, slashes included, ? one character, the rest literal and case-sensitive.
func matchALB(pattern, path string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(path)
}

var routeParam = regexp.MustCompile(`\{[A-Za-z_]+(\.\.\.)?\}`)

// samplePath is a request path of a route pattern: each parameter a value, a trailing
// wildcard two segments.
func samplePath(pattern string) string {
	if pattern == "/{$}" {
		return "/"
	}
	return routeParam.ReplaceAllStringFunc(pattern, func(p string) string {
		if strings.HasSuffix(p, "...}") {
			return "a1/b2"
		}
		return "x1"
	})
}

// albRule is one listener rule as the template has it.
type albRule struct {
	priority    float64
	paths       []string
	targetGroup string
}

// listenerRules reads the listener's rules, by priority, and its default target group.
func (s *synthesized) listenerRules(t *testing.T) (rules []albRule, fallback string) {
	t.Helper()
	_, listener := s.only(t, "AWS::ElasticLoadBalancingV2::Listener")
	actions := asList(listener["DefaultActions"])
	if len(actions) != 1 {
		t.Fatalf("listener default actions %s; want one forward", jsonOf(actions))
	}
	fallback = ref(actions[0].(map[string]any)["TargetGroupArn"])
	for id, r := range s.resources("AWS::ElasticLoadBalancingV2::ListenerRule") {
		p := props(r)
		conds := asList(p["Conditions"])
		acts := asList(p["Actions"])
		if len(conds) != 1 || len(acts) != 1 || acts[0].(map[string]any)["Type"] != "forward" {
			t.Fatalf("rule %s: conditions %s actions %s; want one path condition and one forward", id, jsonOf(conds), jsonOf(acts))
		}
		cond := conds[0].(map[string]any)
		var paths []string
		for _, v := range asList(cond["PathPatternConfig"].(map[string]any)["Values"]) {
			paths = append(paths, v.(string))
		}
		if cond["Field"] != "path-pattern" || len(paths) == 0 {
			t.Fatalf("rule %s condition %s; want path patterns", id, jsonOf(cond))
		}
		rules = append(rules, albRule{priority: p["Priority"].(float64), paths: paths, targetGroup: ref(acts[0].(map[string]any)["TargetGroupArn"])})
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].priority < rules[j].priority })
	return rules, fallback
}

// route sends path through rules as the load balancer does: the first rule with a matching
// pattern, else the default.
func route(rules []albRule, fallback, path string) string {
	for _, r := range rules {
		for _, p := range r.paths {
			if matchALB(p, path) {
				return r.targetGroup
			}
		}
	}
	return fallback
}

// TestRoutesReachTheirGroup (docs/architecture.md §4, §5): by the load balancer's first-match
// rules, every route of the table reaches its group's target group, whose one target is that
// group's function (or, for the stream, the streamer's service); a path no route knows, and a
// preflight on it, reaches meta, which answers them as every group does. The rules stay within
// the listener's limits (three patterns per condition, five wildcards per rule).
func TestRoutesReachTheirGroup(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			rules, fallback := s.listenerRules(t)
			targets := map[string]routetable.Group{}
			for g, tg := range s.main.TargetGroups {
				targets[s.logicalID(tg)] = g
			}
			for _, r := range rules {
				wildcards := 0
				for _, p := range r.paths {
					wildcards += strings.Count(p, "*") + strings.Count(p, "?")
				}
				if len(r.paths) > 3 || wildcards > 5 {
					t.Errorf("rule %v: %d patterns, %d wildcards; the listener allows 3 and 5", r.priority, len(r.paths), wildcards)
				}
			}
			routes := 0
			for _, g := range routetable.All {
				for _, r := range g.Routes() {
					path := samplePath(r.Path)
					if got := targets[route(rules, fallback, path)]; got != g {
						t.Errorf("%s (as %s) reaches %q; want the %s group", r, path, got, g)
					}
					routes++
				}
			}
			if got := targets[route(rules, fallback, "/no/such/path")]; got != routetable.GroupMeta {
				t.Errorf("an unknown path reaches %q; want meta", got)
			}
			t.Logf("%d routes through %d rules", routes, len(rules))

			// Each Lambda target group holds its function alone, with repeated headers and
			// query parameters passed whole.
			tgs := s.resources("AWS::ElasticLoadBalancingV2::TargetGroup")
			for _, g := range routetable.Lambdas {
				p := props(tgs[s.logicalID(s.main.TargetGroups[g])])
				ts := asList(p["Targets"])
				if p["TargetType"] != "lambda" || len(ts) != 1 || ref(ts[0].(map[string]any)["Id"]) != s.logicalID(s.main.Functions[g]) {
					t.Errorf("%s target group: type %v targets %s; want the %s function alone", g, p["TargetType"], jsonOf(ts), g)
				}
				if !strings.Contains(jsonOf(p["TargetGroupAttributes"]), `{"Key":"lambda.multi_value_headers.enabled","Value":"true"}`) {
					t.Errorf("%s target group attributes %s; want multi-value headers", g, jsonOf(p["TargetGroupAttributes"]))
				}
			}
			service := props(s.resources("AWS::ECS::Service")[s.logicalID(s.main.Streamer)])
			if got := ref(asList(service["LoadBalancers"])[0].(map[string]any)["TargetGroupArn"]); targets[got] != routetable.GroupStream {
				t.Errorf("the streamer's service registers in %q; want the stream's target group", got)
			}
		})
	}
}

// TestListenerRulesFromTheTable: LoadBalancerPath turns the table's patterns into the load
// balancer's, and ListenerRules orders a more specific pattern of one group before a wider one
// of another that would take its paths.
func TestListenerRulesFromTheTable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/{$}":                                  "/",
		"/v1/events/{event_id}/signals":         "/v1/events/*/signals",
		"/console/orgs/{org_id}/keys/{key_id}":  "/console/orgs/*/keys/*",
		"/files/{rest...}":                      "/files/*",
		"/v1/stream":                            "/v1/stream",
		"/console/orgs/{org_id}/billing/portal": "/console/orgs/*/billing/portal",
	} {
		if got := stack.LoadBalancerPath(in); got != want {
			t.Errorf("LoadBalancerPath(%q) = %q; want %q", in, got, want)
		}
	}
	first := map[string]int{}
	for i, r := range stack.ListenerRules() {
		for _, p := range r.Paths {
			first[p] = i
		}
	}
	if first["/console/orgs/*/billing"] > first["/console/orgs/*"] {
		t.Errorf("billing's /console/orgs/*/billing is tried after console-orgs' /console/orgs/*, which would take it")
	}
}

// TestOrigin (docs/architecture.md §5): no address of the API or the stream answers from the
// internet. The one load balancer is internal, in isolated subnets, and admits on its
// listener's port only the VPC's own range, where CloudFront's VPC origin reaches it: no
// address range from anywhere, no HTTP API, no function URL, no public listener. Prod: HTTPS on
// 443 with the given certificate, CloudFront reaching it HTTPS only, TLS 1.2, by the origin's
// name; dev without a name: HTTP on 80, and synth says so.
func TestOrigin(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			for _, typ := range []string{"AWS::ApiGatewayV2::Api", "AWS::ApiGateway::RestApi", "AWS::Lambda::Url"} {
				if n := len(s.resources(typ)); n != 0 {
					t.Errorf("%d resources of type %s; want none: the load balancer is the only way in", n, typ)
				}
			}
			// Nothing left of an origin on the internet: no lookup of CloudFront's address
			// list, no shared secret header.
			for id, r := range s.resources("Custom::AWS") {
				if strings.Contains(jsonOf(props(r)), "PrefixList") {
					t.Errorf("custom resource %s looks up a prefix list: %s", id, jsonOf(props(r)["Create"]))
				}
			}
			if strings.Contains(jsonOf(s.json), "X-Origin-Verify") {
				t.Errorf("the template still sends an origin-verify header")
			}
			lbID, lb := s.only(t, "AWS::ElasticLoadBalancingV2::LoadBalancer")
			if lb["Scheme"] != "internal" {
				t.Errorf("load balancer scheme %v; want internal", lb["Scheme"])
			}
			subnets := s.resources("AWS::EC2::Subnet")
			for _, sn := range asList(lb["Subnets"]) {
				if props(subnets[ref(sn)])["MapPublicIpOnLaunch"] == true || !strings.Contains(ref(sn), "origin") {
					t.Errorf("load balancer subnet %s; want the isolated origin subnets", ref(sn))
				}
			}
			prodTLS := stage == prod
			wantPort, wantProtocol := 80.0, "HTTP"
			if prodTLS {
				wantPort, wantProtocol = 443, "HTTPS"
			}
			_, listener := s.only(t, "AWS::ElasticLoadBalancingV2::Listener")
			if listener["Port"] != wantPort || listener["Protocol"] != wantProtocol || ref(listener["LoadBalancerArn"]) != lbID {
				t.Errorf("listener %v on %v; want %s on %v", listener["Protocol"], listener["Port"], wantProtocol, wantPort)
			}
			if certs := jsonOf(listener["Certificates"]); prodTLS && certs != `[{"CertificateArn":"`+testOriginCert+`"}]` {
				t.Errorf("listener certificates %s; want %s", certs, testOriginCert)
			}

			// The load balancer's security group: the VPC's range on the listener's port only.
			var ingress []any
			groups := map[string]bool{}
			for _, sg := range asList(lb["SecurityGroups"]) {
				groups[ref(sg)] = true
				ingress = append(ingress, asList(props(s.resources("AWS::EC2::SecurityGroup")[ref(sg)])["SecurityGroupIngress"])...)
			}
			for _, r := range s.resources("AWS::EC2::SecurityGroupIngress") {
				if groups[ref(props(r)["GroupId"])] {
					ingress = append(ingress, props(r))
				}
			}
			vpc := s.logicalID(s.main.Vpc)
			if len(ingress) != 1 {
				t.Fatalf("load balancer ingress %s; want one rule", jsonOf(ingress))
			}
			in := ingress[0].(map[string]any)
			if ref(in["CidrIp"]) != vpc || in["FromPort"] != wantPort || in["ToPort"] != wantPort || in["CidrIpv6"] != nil {
				t.Errorf("load balancer ingress %s; want the VPC's range (%s) on port %v", jsonOf(in), vpc, wantPort)
			}
			for _, sg := range s.resources("AWS::EC2::SecurityGroup") {
				for _, r := range asList(props(sg)["SecurityGroupIngress"]) {
					if cidr := r.(map[string]any)["CidrIp"]; cidr == "0.0.0.0/0" {
						t.Errorf("a security group admits 0.0.0.0/0: %s", jsonOf(r))
					}
				}
			}

			// CloudFront's origin for the API and the stream is the VPC origin of that load
			// balancer.
			_, vo := s.only(t, "AWS::CloudFront::VpcOrigin")
			cfg := vo["VpcOriginEndpointConfig"].(map[string]any)
			wantPolicy := "http-only"
			if prodTLS {
				wantPolicy = "https-only"
			}
			if ref(cfg["Arn"]) != lbID || cfg["OriginProtocolPolicy"] != wantPolicy || jsonOf(cfg["OriginSSLProtocols"]) != `["TLSv1.2"]` {
				t.Errorf("VPC origin %s; want the load balancer, %s, TLSv1.2", jsonOf(cfg), wantPolicy)
			}
			for _, id := range []string{"api", "stream"} {
				o := s.origin(t, id)
				if prodTLS && o["DomainName"] != testOriginDomain {
					t.Errorf("origin %s is reached as %v; want %s, the certificate's name", id, o["DomainName"], testOriginDomain)
				}
			}
			overHTTP := assertions.Match_StringLikeRegexp(jsii.String("over HTTP"))
			must(t, "a warning when the origin is HTTP", func() {
				if prodTLS {
					s.annotations.HasNoWarning(jsii.String("*"), overHTTP)
				} else {
					s.annotations.HasWarning(jsii.String("*"), overHTTP)
				}
			})
		})
	}
}

// TestStreamer: the load balancer outlives the keepalive, the streamer's target group checks
// /health, its service scales on the streams per task up to StreamerMaxTasks, its tasks reach
// AWS through their public addresses (no NAT gateway), follow the relay's log rather than the
// table's stream, and the container gets no secret.
func TestStreamer(t *testing.T) {
	s := synth(t)[dev]
	must(t, "idle timeout", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::LoadBalancer"), map[string]any{
			"LoadBalancerAttributes": assertions.Match_ArrayWith(&[]any{
				map[string]any{"Key": "idle_timeout.timeout_seconds", "Value": fmt.Sprint(stack.IdleTimeoutSeconds)},
			}),
		})
	})
	if stack.IdleTimeoutSeconds <= 20 {
		t.Errorf("idle timeout %d s; want above the 20 s keepalive", stack.IdleTimeoutSeconds)
	}
	must(t, "health check", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ElasticLoadBalancingV2::TargetGroup"), map[string]any{
			"HealthCheckPath": "/health", "TargetType": "ip", "Port": stack.StreamerPort,
		})
	})
	must(t, "up to StreamerMaxTasks", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), map[string]any{
			"MinCapacity": 1, "MaxCapacity": stack.StreamerMaxTasks,
		})
	})
	if stack.StreamerMaxTasks <= 2 {
		t.Errorf("at most %d streamer tasks; the relay lets the tier pass the two readers a shard of the table's stream allows", stack.StreamerMaxTasks)
	}
	// The scaling alarms divide the load balancer's connections (two a stream) by the
	// running tasks.
	scaling := 0
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		metrics := jsonOf(props(a)["Metrics"])
		if !strings.Contains(metrics, "conns / (2 * FILL(tasks, 1))") {
			continue
		}
		scaling++
		for _, want := range []string{`"MetricName":"ActiveConnectionCount"`, `"Stat":"Sum"`, `"MetricName":"RunningTaskCount"`, `"Namespace":"ECS/ContainerInsights"`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("scaling alarm %s metrics %s; want %s", id, metrics, want)
			}
		}
	}
	if scaling != 2 {
		t.Errorf("%d alarms on the streams per task; want 2 (scale out, scale in)", scaling)
	}
	must(t, "scale out at StreamerScaleOutStreams", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), map[string]any{
			"StepScalingPolicyConfiguration": assertions.Match_ObjectLike(&map[string]any{
				"StepAdjustments": assertions.Match_ArrayWith(&[]any{
					map[string]any{"MetricIntervalLowerBound": 0, "MetricIntervalUpperBound": stack.StreamerScaleOutStreams, "ScalingAdjustment": 1},
				}),
			}),
		})
	})
	must(t, "public addresses, no NAT", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ECS::Service"), map[string]any{
			"NetworkConfiguration": map[string]any{"AwsvpcConfiguration": assertions.Match_ObjectLike(&map[string]any{"AssignPublicIp": "ENABLED"})},
		})
		s.template.ResourceCountIs(jsii.String("AWS::EC2::NatGateway"), jsii.Number(0))
	})
	task := s.resources("AWS::ECS::TaskDefinition")[s.logicalID(s.main.Streamer.TaskDefinition())]
	c := s.container(t, task)
	if c["Secrets"] != nil {
		t.Errorf("the streamer gets secrets %s; want none (routetable.GroupStream's grants name none)", jsonOf(c["Secrets"]))
	}
	env := jsonOf(c["Environment"])
	for _, want := range []string{`"Name":"ROADEVENTS_RELAY_REDIS"`, fmt.Sprintf(`{"Name":"ROADEVENTS_ADDR","Value":"0.0.0.0:%d"}`, stack.StreamerPort)} {
		if !strings.Contains(env, want) {
			t.Errorf("streamer environment %s; want %s", env, want)
		}
	}
	if strings.Contains(env, "ROADEVENTS_STREAM_ARN") {
		t.Errorf("streamer environment %s names the table's stream; the streamers follow the relay's log", env)
	}
	if props(task)["RuntimePlatform"].(map[string]any)["CpuArchitecture"] != "ARM64" {
		t.Errorf("streamer platform %s; want ARM64", jsonOf(props(task)["RuntimePlatform"]))
	}
}

// TestRelay (docs/operations.md §6.2): one serverless Valkey cache in the isolated subnets,
// reached on its port from the relay's and the streamers' tasks only, and its address a
// rediss:// URL in both; one relay task, never two at once, running `streamer -relay` on the
// table's stream; alarms when it is not running or keeps restarting.
func TestRelay(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			_, cache := s.only(t, "AWS::ElastiCache::ServerlessCache")
			if cache["Engine"] != "valkey" {
				t.Errorf("cache engine %v; want valkey", cache["Engine"])
			}
			if name, _ := cache["ServerlessCacheName"].(string); !regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`).MatchString(name) {
				t.Errorf("cache name %q; ElastiCache wants 1 to 40 lower-case letters, digits and hyphens, a letter first", name)
			}
			isolated := map[string]bool{}
			for _, id := range *s.main.Vpc.IsolatedSubnets() {
				isolated[s.logicalID(id)] = true
			}
			subnets := asList(cache["SubnetIds"])
			for _, sn := range subnets {
				if !isolated[ref(sn)] {
					t.Errorf("cache subnet %s; want the isolated subnets only", jsonOf(sn))
				}
			}
			if len(subnets) < 2 {
				t.Errorf("cache in %d subnets; want one per zone, two at least", len(subnets))
			}
			groups := asList(cache["SecurityGroupIds"])
			if len(groups) != 1 {
				t.Fatalf("cache security groups %s; want one", jsonOf(groups))
			}
			cacheSG := ref(groups[0])
			// Its ingress rules, inline and on their own.
			rules := asList(props(s.resources("AWS::EC2::SecurityGroup")[cacheSG])["SecurityGroupIngress"])
			for _, r := range s.resources("AWS::EC2::SecurityGroupIngress") {
				if ref(props(r)["GroupId"]) == cacheSG {
					rules = append(rules, props(r))
				}
			}
			sources := map[string]bool{}
			for _, r := range rules {
				p := r.(map[string]any)
				if p["FromPort"] != float64(stack.RelayCachePort) || p["ToPort"] != float64(stack.RelayCachePort) || p["CidrIp"] != nil {
					t.Errorf("cache ingress %s; want port %d from a security group", jsonOf(p), stack.RelayCachePort)
				}
				sources[ref(p["SourceSecurityGroupId"])] = true
			}
			want := map[string]bool{}
			for _, svc := range []awsecs.FargateService{s.main.Relay, s.main.Streamer} {
				want[s.logicalID((*svc.Connections().SecurityGroups())[0])] = true
			}
			if !maps.Equal(sources, want) {
				t.Errorf("cache reached from %v; want the relay's and the streamers' security groups %v", sources, want)
			}

			task := s.resources("AWS::ECS::TaskDefinition")[s.logicalID(s.main.Relay.TaskDefinition())]
			c := s.container(t, task)
			if got := jsonOf(c["Command"]); got != `["-relay"]` {
				t.Errorf("relay command %s; want [\"-relay\"]", got)
			}
			env := jsonOf(c["Environment"])
			for _, want := range []string{`"Name":"ROADEVENTS_STREAM_ARN"`, `"Name":"ROADEVENTS_RELAY_REDIS","Value":{"Fn::Join":["",["rediss://",{"Fn::GetAtt":["` + *s.stack.GetLogicalId(s.main.Cache)} {
				if !strings.Contains(env, want) {
					t.Errorf("relay environment %s; want %s", env, want)
				}
			}
			streamer := jsonOf(s.container(t, s.resources("AWS::ECS::TaskDefinition")[s.logicalID(s.main.Streamer.TaskDefinition())])["Environment"])
			if !strings.Contains(streamer, `"rediss://",{"Fn::GetAtt":["`+*s.stack.GetLogicalId(s.main.Cache)) {
				t.Errorf("streamer environment %s; want the cache's address over TLS", streamer)
			}
			svc := props(s.resources("AWS::ECS::Service")[s.logicalID(s.main.Relay)])
			if jsonOf(svc["DesiredCount"]) != "1" || jsonOf(svc["DeploymentConfiguration"].(map[string]any)["MaximumPercent"]) != "100" {
				t.Errorf("relay service %s; want one task and never a second beside it (MaximumPercent 100)", jsonOf(svc))
			}
			for _, a := range []string{"RelayNotRunning", "RelayRestarting"} {
				found := false
				for id, alarm := range s.resources("AWS::CloudWatch::Alarm") {
					found = found || strings.HasPrefix(id, a) && len(asList(props(alarm)["AlarmActions"])) == 1
				}
				if !found {
					t.Errorf("no alarm %s with an action", a)
				}
			}
			must(t, "restart count", func() {
				s.template.HasResourceProperties(jsii.String("AWS::Logs::MetricFilter"), map[string]any{
					"FilterPattern": assertions.Match_StringLikeRegexp(jsii.String(regexp.QuoteMeta(relay.RestartMessage))),
				})
			})
		})
	}
}

// container is the one container of a task definition resource, or fails t.
func (s *synthesized) container(t *testing.T, task map[string]any) map[string]any {
	t.Helper()
	containers := asList(props(task)["ContainerDefinitions"])
	if len(containers) != 1 {
		t.Fatalf("%d containers; want 1", len(containers))
	}
	return containers[0].(map[string]any)
}
