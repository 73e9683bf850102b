package stack_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/web"
)

// distribution is the one distribution's configuration.
func (s *synthesized) distribution(t *testing.T) map[string]any {
	t.Helper()
	_, d := s.only(t, "AWS::CloudFront::Distribution")
	return d["DistributionConfig"].(map[string]any)
}

// origin is the distribution's origin with id.
func (s *synthesized) origin(t *testing.T, id string) map[string]any {
	t.Helper()
	for _, o := range asList(s.distribution(t)["Origins"]) {
		if om := o.(map[string]any); om["Id"] == id {
			return om
		}
	}
	t.Fatalf("no origin %s", id)
	return nil
}

// behaviours are the distribution's cache behaviours by path pattern, "default" for the
// default one, and their order.
func (s *synthesized) behaviours(t *testing.T) (map[string]map[string]any, []string) {
	t.Helper()
	cfg := s.distribution(t)
	out := map[string]map[string]any{"default": cfg["DefaultCacheBehavior"].(map[string]any)}
	var order []string
	for _, b := range asList(cfg["CacheBehaviors"]) {
		bm := b.(map[string]any)
		out[bm["PathPattern"].(string)] = bm
		order = append(order, bm["PathPattern"].(string))
	}
	return out, order
}

// policyHeader is the custom header name of a response headers policy, with its value and
// origin override, or "" if it has none.
func (s *synthesized) policyHeader(policy, name string) (value string, override bool) {
	p := props(s.resources("AWS::CloudFront::ResponseHeadersPolicy")[policy])
	if p == nil {
		return "", false
	}
	custom, _ := p["ResponseHeadersPolicyConfig"].(map[string]any)["CustomHeadersConfig"].(map[string]any)
	for _, h := range asList(custom["Items"]) {
		if hm := h.(map[string]any); strings.EqualFold(hm["Header"].(string), name) {
			return hm["Value"].(string), hm["Override"] == true
		}
	}
	return "", false
}

// TestDistribution (docs/architecture.md §5): one distribution serves everything, behind the
// web ACL. The stream goes to the load balancer's VPC origin uncached, uncompressed and with the
// longest wait; tickets and the rest of the API to the same load balancer with the API's
// compressing, never-caching policy; the console and the API reference to the bucket with the
// console's headers; the front door's refusal page to the bucket.
func TestDistribution(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			cfg := s.distribution(t)
			bucket := s.logicalID(s.main.SiteBucket)
			kind := map[string]string{} // origin id -> api, stream or bucket
			for _, o := range asList(cfg["Origins"]) {
				om := o.(map[string]any)
				id := om["Id"].(string)
				if vpc, ok := om["VpcOriginConfig"].(map[string]any); ok {
					want := map[string]float64{"api": stack.APIOriginReadTimeoutSeconds, "stream": stack.StreamOriginReadTimeoutSeconds}[id]
					if vpc["OriginReadTimeout"] != want {
						t.Errorf("origin %s read timeout %v; want %v", id, vpc["OriginReadTimeout"], want)
					}
					kind[id] = id
				} else if ref(om["DomainName"]) == bucket {
					kind[id] = "bucket"
				}
			}
			if stack.StreamOriginReadTimeoutSeconds < 60 {
				t.Errorf("stream origin read timeout %d s; want at least 60 (three keepalives)", stack.StreamOriginReadTimeoutSeconds)
			}
			consoleHeaders := ""
			for id, pol := range s.resources("AWS::CloudFront::ResponseHeadersPolicy") {
				sec, _ := props(pol)["ResponseHeadersPolicyConfig"].(map[string]any)["SecurityHeadersConfig"].(map[string]any)
				if csp, _ := sec["ContentSecurityPolicy"].(map[string]any); csp["ContentSecurityPolicy"] == web.ContentSecurityPolicy {
					consoleHeaders = id
				}
			}
			if consoleHeaders == "" {
				t.Fatalf("no response headers policy sends the console's Content-Security-Policy")
			}
			const cachingDisabled = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad" // the managed CachingDisabled policy
			const allButHost = "b689b0a8-53d0-40ab-baf2-68738e2966ac"      // the managed AllViewerExceptHostHeader policy
			behaviours, order := s.behaviours(t)
			for pattern, b := range behaviours {
				got := kind[b["TargetOriginId"].(string)]
				want := "api"
				switch {
				case pattern == "/v1/stream*":
					want = "stream"
					if b["CachePolicyId"] != cachingDisabled || b["Compress"] != false {
						// docs/api.md §10.1: a stream is never compressed, at the edge either.
						t.Errorf("%s: cache policy %v, compress %v; want CachingDisabled, false", pattern, b["CachePolicyId"], b["Compress"])
					}
				case strings.HasPrefix(pattern, "/app"), pattern == web.ReferencePath:
					want = "bucket"
					// docs/api.md §11.3: the console's pages and the API reference carry the
					// console's Content-Security-Policy.
					if ref(b["ResponseHeadersPolicyId"]) != consoleHeaders {
						t.Errorf("%s: response headers policy %v; want the console's (%s)", pattern, b["ResponseHeadersPolicyId"], consoleHeaders)
					}
				case pattern == "/errors/*":
					want = "bucket"
				}
				if got != want {
					t.Errorf("behaviour %s goes to %q; want %q", pattern, got, want)
				}
				if want == "api" || want == "stream" {
					// The load balancer routes on the path; the origin's name, not the
					// viewer's, is what its certificate is checked against.
					if b["OriginRequestPolicyId"] != allButHost {
						t.Errorf("%s: origin request policy %v; want AllViewerExceptHostHeader", pattern, b["OriginRequestPolicyId"])
					}
				}
				if want == "api" {
					s.checkAPICompressed(t, pattern, b)
				}
			}
			for _, p := range []string{"/v1/stream*", "/v1/stream/tickets", "/v1/*", "/console/*", "/health", "/openapi.json", "/app/*", web.ReferencePath, "/errors/*"} {
				if _, ok := behaviours[p]; !ok {
					t.Errorf("no behaviour for %s", p)
				}
			}
			at := func(p string) int { return slices.Index(order, p) }
			if at("/v1/stream/tickets") > at("/v1/stream*") || at("/v1/stream*") > at("/v1/*") {
				t.Errorf("behaviour order %v: want /v1/stream/tickets before /v1/stream* before /v1/*", order)
			}
			if acl := cfg["WebACLId"]; stage == prod && acl != testWebACL || acl == nil {
				t.Errorf("web ACL %s; want prod's %s, and dev's edge stack's (TestEdge)", jsonOf(acl), testWebACL)
			}
		})
	}
}

// checkAPICompressed asserts docs/api.md §10.1 (compression) for one of the API's behaviours:
// CloudFront compresses at the edge and forwards the client's Accept-Encoding, which needs a
// cache policy that enables gzip and Brotli (the managed CachingDisabled does not), while
// nothing is cached (default and minimum TTL 0) and the cache key would keep callers apart
// (Authorization and every query parameter) should an answer ever carry a lifetime.
func (s *synthesized) checkAPICompressed(t *testing.T, pattern string, behaviour map[string]any) {
	t.Helper()
	if behaviour["Compress"] != true {
		t.Errorf("%s: Compress %v; want true", pattern, behaviour["Compress"])
	}
	policy, ok := s.resources("AWS::CloudFront::CachePolicy")[ref(behaviour["CachePolicyId"])]
	if !ok {
		t.Errorf("%s: cache policy %v; want the stack's own (the managed CachingDisabled turns compression off)", pattern, behaviour["CachePolicyId"])
		return
	}
	cfg := props(policy)["CachePolicyConfig"].(map[string]any)
	key := cfg["ParametersInCacheKeyAndForwardedToOrigin"].(map[string]any)
	if key["EnableAcceptEncodingGzip"] != true || key["EnableAcceptEncodingBrotli"] != true {
		t.Errorf("%s: cache policy gzip %v, brotli %v; want both enabled", pattern, key["EnableAcceptEncodingGzip"], key["EnableAcceptEncodingBrotli"])
	}
	if cfg["DefaultTTL"] != float64(0) || cfg["MinTTL"] != float64(0) {
		t.Errorf("%s: cache policy TTLs default %v, min %v; want 0 (nothing cached)", pattern, cfg["DefaultTTL"], cfg["MinTTL"])
	}
	headers, queries := jsonOf(key["HeadersConfig"]), jsonOf(key["QueryStringsConfig"])
	if !strings.Contains(headers, `"Authorization"`) || !strings.Contains(queries, `"all"`) {
		t.Errorf("%s: cache key headers %s, query strings %s; want Authorization and every query parameter", pattern, headers, queries)
	}
}

// TestSiteRequestFunction: the function in front of the bucket answers the addresses of the
// site as `go run .` does (web.Handler, web.ReferenceHandler): /docs is the API reference
// (docs/api.md §11.3), a console path without an extension is the console's index.html, and a
// file is itself. The function deployed is the one run here, the distribution's only one.
func TestSiteRequestFunction(t *testing.T) {
	s := synth(t)[dev]
	var deployed []string
	for _, fn := range s.resources("AWS::CloudFront::Function") {
		code, _ := props(fn)["FunctionCode"].(string)
		deployed = append(deployed, code)
	}
	if len(deployed) != 1 || deployed[0] != stack.SiteRequestFunction {
		t.Fatalf("CloudFront functions %q; want the one stack.SiteRequestFunction", deployed)
	}
	cases := map[string]string{
		"/docs":                        "/app/reference.html",
		"/app":                         "/app/index.html",
		"/app/":                        "/app/index.html",
		"/app/orgs/org_1/keys":         "/app/index.html",
		"/app/assets/reference-abc.js": "/app/assets/reference-abc.js",
		"/app/reference-licences.txt":  "/app/reference-licences.txt",
		"/app/config.json":             "/app/config.json",
	}
	uris, _ := json.Marshal(cases)
	script := stack.SiteRequestFunction + `
const want = ` + string(uris) + `;
const got = {};
for (const uri of Object.keys(want)) got[uri] = handler({ request: { uri } }).uri;
process.stdout.write(JSON.stringify(got));`
	out, err := exec.Command("node", "-e", script).Output()
	if err != nil {
		t.Fatalf("running the function in Node.js: %v", err)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("function output %q: %v", out, err)
	}
	for uri, want := range cases {
		if got[uri] != want {
			t.Errorf("the site function maps %s to %q; want %q", uri, got[uri], want)
		}
	}
}

// viewerAnswer is what a client receives for an answer at the front door.
type viewerAnswer struct {
	status     int
	retryAfter string
	body       string
}

// atTheEdge applies the distribution's configuration to an answer of its origin, with the
// rules CloudFront documents: a custom error response replaces an error status it names, and
// serves its page through the behaviour of the page's path; a response headers policy's
// custom header is added to an answer without that header, and replaces it only when the
// policy overrides the origin. No edge function runs: CloudFront invokes none on an origin's
// answer of 400 or more.
func (s *synthesized) atTheEdge(t *testing.T, behaviour string, status int, retryAfter, body string) viewerAnswer {
	t.Helper()
	behaviours, _ := s.behaviours(t)
	out := viewerAnswer{status: status, retryAfter: retryAfter, body: body}
	policy := ref(behaviours[behaviour]["ResponseHeadersPolicyId"])
	for _, r := range asList(s.distribution(t)["CustomErrorResponses"]) {
		rm := r.(map[string]any)
		if int(rm["ErrorCode"].(float64)) != status {
			continue
		}
		if rm["ErrorCachingMinTTL"] != float64(0) {
			t.Errorf("status %d is cached for %v s; want 0 (no API answer is served from a cache)", status, rm["ErrorCachingMinTTL"])
		}
		if page, ok := rm["ResponsePagePath"].(string); ok {
			out = viewerAnswer{status: int(rm["ResponseCode"].(float64)), body: page}
			for pattern, b := range behaviours {
				if strings.HasSuffix(pattern, "*") && strings.HasPrefix(page, strings.TrimSuffix(pattern, "*")) {
					policy = ref(b["ResponseHeadersPolicyId"])
				}
			}
		}
	}
	if v, override := s.policyHeader(policy, "Retry-After"); v != "" && (out.retryAfter == "" || override) {
		out.retryAfter = v
	}
	return out
}

// TestCapacityRefusals (docs/operations.md §5; docs/api.md §7, §8 rule 1): a request refused
// for capacity reaches the client as 503 with Retry-After, whoever refused it, and the
// service's own answers pass as they are. The load balancer answers 502 when a function is
// throttled at its reserved concurrency (or fails), 504 when it times out, 503 when no streamer
// is healthy; CloudFront 502 or 504 when the load balancer does not answer. Only signals may
// answer 429, with their own Retry-After. A refusal of the web ACL's rate rule is 503 with
// Retry-After too (TestEdge).
func TestCapacityRefusals(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			for _, c := range []struct {
				name       string
				behaviour  string
				status     int
				retryAfter string
				want       viewerAnswer
			}{
				{"the signal ceiling", "/v1/*", 429, "1800", viewerAnswer{429, "1800", ""}},
				{"the table unavailable", "/v1/*", 503, "2", viewerAnswer{503, "2", ""}},
				{"a function throttled", "/v1/*", 502, "", viewerAnswer{503, stack.RetryAfterSeconds, stack.UnavailablePage}},
				{"a function timed out", "/console/*", 504, "", viewerAnswer{503, stack.RetryAfterSeconds, stack.UnavailablePage}},
				{"CloudFront without an answer", "default", 504, "", viewerAnswer{503, stack.RetryAfterSeconds, stack.UnavailablePage}},
				{"no healthy streamer", "/v1/stream*", 503, "", viewerAnswer{503, stack.RetryAfterSeconds, ""}},
				{"the streamer's share refused", "/v1/stream*", 503, "5", viewerAnswer{503, "5", ""}},
				{"a fault of the service", "/v1/*", 500, "", viewerAnswer{500, stack.RetryAfterSeconds, ""}},
				{"a success", "/v1/*", 200, "", viewerAnswer{200, stack.RetryAfterSeconds, ""}},
			} {
				got := s.atTheEdge(t, c.behaviour, c.status, c.retryAfter, "")
				if got != c.want {
					t.Errorf("%s (%d from the origin on %s) reaches the client as %+v; want %+v", c.name, c.status, c.behaviour, got, c.want)
				}
			}
		})
	}
	if !strings.Contains(stack.UnavailableDetail, "Retry-After") {
		t.Errorf("the refusal page %q does not say to wait Retry-After", stack.UnavailableDetail)
	}
}

// TestEdge: the web ACL is CloudFront's (us-east-1), with the AWS managed groups for common
// attacks, known bad inputs and addresses of poor reputation, the body size and User-Agent
// rules only counting (events and webhooks are larger than their limit, API clients need not
// send a User-Agent); no rate limit unless asked (docs/api.md §8 rule 1), a limit refusing 503
// with Retry-After, or only counting. The dev distribution reads the web ACL across regions.
func TestEdge(t *testing.T) {
	all := synth(t)
	rulesOf := func(name string) (map[string]any, []map[string]any) {
		s := all[name]
		if got := *s.stack.Region(); got != stack.EdgeRegion {
			t.Errorf("%s is in %s; want %s", name, got, stack.EdgeRegion)
		}
		_, acl := s.only(t, "AWS::WAFv2::WebACL")
		if acl["Scope"] != "CLOUDFRONT" || jsonOf(acl["DefaultAction"]) != `{"Allow":{}}` {
			t.Errorf("%s web ACL scope %v, default %s; want CLOUDFRONT, allow", name, acl["Scope"], jsonOf(acl["DefaultAction"]))
		}
		var rules []map[string]any
		for _, r := range asList(acl["Rules"]) {
			rules = append(rules, r.(map[string]any))
		}
		return acl, rules
	}
	_, rules := rulesOf(edgeOff)
	if len(rules) != len(stack.ManagedRuleGroups) {
		t.Errorf("%d rules without a rate limit; want the %d managed groups alone", len(rules), len(stack.ManagedRuleGroups))
	}
	for i, g := range stack.ManagedRuleGroups {
		if i >= len(rules) {
			break
		}
		st := rules[i]["Statement"].(map[string]any)["ManagedRuleGroupStatement"].(map[string]any)
		if st["Name"] != g.Name || st["VendorName"] != "AWS" {
			t.Errorf("rule %d: %s; want AWS %s", i, jsonOf(st), g.Name)
		}
		for _, r := range g.CountOnly {
			if !strings.Contains(jsonOf(st["RuleActionOverrides"]), `{"ActionToUse":{"Count":{}},"Name":"`+r+`"}`) {
				t.Errorf("%s: %s is not counted only: %s", g.Name, r, jsonOf(st["RuleActionOverrides"]))
			}
		}
	}
	var groups []string
	for _, g := range stack.ManagedRuleGroups {
		groups = append(groups, g.Name)
	}
	for _, want := range []string{"AWSManagedRulesCommonRuleSet", "AWSManagedRulesKnownBadInputsRuleSet", "AWSManagedRulesAmazonIpReputationList"} {
		if !slices.Contains(groups, want) {
			t.Errorf("managed groups %v; want %s", groups, want)
		}
	}

	acl, rules := rulesOf(edgeBlock)
	last := rules[len(rules)-1]
	rate := last["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
	if last["Name"] != stack.RateLimitRule || rate["Limit"] != float64(testRateLimit) || rate["AggregateKeyType"] != "IP" {
		t.Errorf("rate rule %s; want %s, %d per address", jsonOf(last), stack.RateLimitRule, testRateLimit)
	}
	block := last["Action"].(map[string]any)["Block"].(map[string]any)["CustomResponse"].(map[string]any)
	if block["ResponseCode"] != float64(503) || !strings.Contains(jsonOf(block["ResponseHeaders"]), `"Name":"Retry-After"`) {
		t.Errorf("rate rule refusal %s; want 503 with Retry-After", jsonOf(block))
	}
	body := acl["CustomResponseBodies"].(map[string]any)[block["CustomResponseBodyKey"].(string)].(map[string]any)
	var detail map[string]string
	if err := json.Unmarshal([]byte(body["Content"].(string)), &detail); err != nil || detail["detail"] == "" || body["ContentType"] != "APPLICATION_JSON" {
		t.Errorf("rate rule refusal body %s; want {\"detail\": ...} as JSON (docs/api.md §7)", jsonOf(body))
	}
	_, rules = rulesOf(edgeCount)
	if got := jsonOf(rules[len(rules)-1]["Action"]); got != `{"Count":{}}` {
		t.Errorf("rate rule in count mode acts %s; want count", got)
	}

	// dev reads its edge stack's web ACL across regions.
	if got := jsonOf(all[dev].distribution(t)["WebACLId"]); !strings.Contains(got, "CrossRegion") && !strings.Contains(got, "ExportsReader") {
		t.Errorf("dev's web ACL %s; want the edge stack's ARN, imported from us-east-1", got)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(jsonOf(r), stack.ContextRateLimit) {
				t.Errorf("NewEdge with a limit of 5 panicked with %v; want a refusal naming -c %s", r, stack.ContextRateLimit)
			}
		}()
		stack.NewEdge(newApp(t.TempDir()), "edge", stack.EdgeProps{Stage: stack.StageDev, RateLimit: 5})
	}()
}

// TestViewerTLS (docs/operations.md §5): with a domain and its us-east-1 certificate, viewers
// reach the distribution by that name and need TLS 1.2 (TLSv1.2_2021), and the functions put
// that name in their e-mails; without, the distribution answers with CloudFront's certificate,
// whose minimum protocol the stack does not pretend to set.
func TestViewerTLS(t *testing.T) {
	all := synth(t)
	cert := all[prod].distribution(t)["ViewerCertificate"].(map[string]any)
	if got := jsonOf(all[prod].distribution(t)["Aliases"]); got != `["`+testDomain+`"]` {
		t.Errorf("prod aliases %s; want [%s]", got, testDomain)
	}
	if cert["AcmCertificateArn"] != testViewerCert || cert["MinimumProtocolVersion"] != "TLSv1.2_2021" || cert["SslSupportMethod"] != "sni-only" {
		t.Errorf("prod viewer certificate %s; want %s, TLSv1.2_2021, sni-only", jsonOf(cert), testViewerCert)
	}
	for _, g := range all[prod].main.Functions {
		vars := props(all[prod].resources("AWS::Lambda::Function")[all[prod].logicalID(g)])["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars["ROADEVENTS_CONSOLE_URL"] != "https://"+testDomain+"/app/" {
			t.Errorf("prod console URL %v; want the domain's", vars["ROADEVENTS_CONSOLE_URL"])
		}
	}
	devCfg := all[dev].distribution(t)
	if devCfg["Aliases"] != nil {
		t.Errorf("dev aliases %s; want none", jsonOf(devCfg["Aliases"]))
	}
	if c, ok := devCfg["ViewerCertificate"].(map[string]any); ok && (c["AcmCertificateArn"] != nil || c["MinimumProtocolVersion"] != nil && c["MinimumProtocolVersion"] != "TLSv1") {
		t.Errorf("dev viewer certificate %s; want CloudFront's default", jsonOf(c))
	}
}

// TestAccessLogs (docs/operations.md §5): CloudFront's standard logs, the load balancer's access
// logs, the site bucket's server access logs and the VPC's flow log are all kept, in private
// log buckets that expire them after the deployment's retention; the alarm topic refuses
// publishers without TLS.
func TestAccessLogs(t *testing.T) {
	for _, stage := range mainStages {
		t.Run(stage, func(t *testing.T) {
			s := synth(t)[stage]
			days := stack.DefaultLogRetentionDays[stage]
			if stage == prod {
				days = testProdRetention
			}
			buckets := s.resources("AWS::S3::Bucket")
			logBucket := func(id, what string) {
				t.Helper()
				p := props(buckets[id])
				if p == nil {
					t.Errorf("%s: no bucket %s", what, id)
					return
				}
				if !strings.Contains(jsonOf(p["LifecycleConfiguration"]), `"ExpirationInDays":`+jsonOf(days)) {
					t.Errorf("%s: log bucket lifecycle %s; want expiry after %v days", what, jsonOf(p["LifecycleConfiguration"]), days)
				}
				if jsonOf(p["PublicAccessBlockConfiguration"]) != `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}` {
					t.Errorf("%s: log bucket public access %s; want all blocked", what, jsonOf(p["PublicAccessBlockConfiguration"]))
				}
			}
			logging := s.distribution(t)["Logging"].(map[string]any)
			logBucket(ref(logging["Bucket"]), "CloudFront")
			lb := props(s.resources("AWS::ElasticLoadBalancingV2::LoadBalancer")[s.logicalID(s.main.LoadBalancer)])
			attrs := jsonOf(lb["LoadBalancerAttributes"])
			if !strings.Contains(attrs, `{"Key":"access_logs.s3.enabled","Value":"true"}`) {
				t.Errorf("load balancer attributes %s; want access logs", attrs)
			}
			for _, a := range asList(lb["LoadBalancerAttributes"]) {
				if am := a.(map[string]any); am["Key"] == "access_logs.s3.bucket" {
					logBucket(ref(am["Value"]), "load balancer")
				}
			}
			site := props(buckets[s.logicalID(s.main.SiteBucket)])
			logBucket(ref(site["LoggingConfiguration"].(map[string]any)["DestinationBucketName"]), "site bucket")
			_, flow := s.only(t, "AWS::EC2::FlowLog")
			if flow["LogDestinationType"] != "s3" || flow["TrafficType"] != "ALL" || ref(flow["ResourceId"]) != s.logicalID(s.main.Vpc) {
				t.Errorf("flow log %s; want all the VPC's traffic to S3", jsonOf(flow))
			}
			must(t, "the alarm topic refuses publishers without TLS", func() {
				s.template.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), map[string]any{
					"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
						"Action": "sns:Publish", "Effect": "Deny", "Principal": "*",
						"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
						"Resource":  map[string]any{"Ref": s.logicalID(s.main.AlarmTopic)},
						"Sid":       "AllowPublishThroughSSLOnly",
					}}, "Version": "2012-10-17"},
				})
			})
		})
	}
}

// TestSiteBucketPrivate: the SPA bucket blocks public access and only CloudFront reads it.
func TestSiteBucketPrivate(t *testing.T) {
	s := synth(t)[dev]
	site := props(s.resources("AWS::S3::Bucket")[s.logicalID(s.main.SiteBucket)])
	if jsonOf(site["PublicAccessBlockConfiguration"]) != `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}` {
		t.Errorf("site bucket public access %s; want all blocked", jsonOf(site["PublicAccessBlockConfiguration"]))
	}
	for id, res := range s.resources("AWS::S3::BucketPolicy") {
		for _, st := range asList(props(res)["PolicyDocument"].(map[string]any)["Statement"]) {
			sm := st.(map[string]any)
			if p := jsonOf(sm["Principal"]); sm["Effect"] == "Allow" && (p == `"*"` || strings.Contains(p, `"AWS":"*"`)) {
				t.Errorf("bucket policy %s allows everyone: %v", id, sm)
			}
		}
	}
	must(t, "origin access control", func() {
		s.template.ResourceCountIs(jsii.String("AWS::CloudFront::OriginAccessControl"), jsii.Number(1))
	})
}
