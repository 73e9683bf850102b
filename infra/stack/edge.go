package stack

import (
	"fmt"
	"os"
	"path"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/web"
)

// Origin timeouts (docs/architecture.md §5).
const (
	// APIOriginReadTimeoutSeconds is CloudFront's wait for an API answer: every function
	// answers well within it but billing's overage job, which is no request.
	APIOriginReadTimeoutSeconds = 30
	// StreamOriginReadTimeoutSeconds is CloudFront's wait for the next bytes of a stream:
	// the most CloudFront allows without a quota increase, three keepalives.
	StreamOriginReadTimeoutSeconds = 60
)

// Refusals for capacity (docs/operations.md §5). The service answers a capacity refusal 503
// with Retry-After (docs/api.md §7, §8 rule 1); so must the front door. CloudFront runs no edge
// function on an origin's answer of 400 or more, so no function can rewrite those: the
// distribution does it by configuration.
const (
	// RetryAfterSeconds is the Retry-After the front door adds to an answer of the API or the
	// stream that has none: the service's own 429 and 503 keep theirs.
	RetryAfterSeconds = "2"
	// UnavailablePage is the body of the front door's own refusals: the load balancer's 502
	// for a function it could not invoke (throttled at its reserved concurrency, or failed)
	// and its 504, and CloudFront's own 502 and 504 when the load balancer does not answer,
	// all answered 503.
	UnavailablePage = "/errors/unavailable.json"
	// UnavailableDetail is that page's sentence.
	UnavailableDetail = "The service is at capacity right now; retry after the time the Retry-After header gives"
)

// FrontDoorUnavailable are the statuses of the front door's own failures that reach clients as
// 503 with UnavailablePage.
var FrontDoorUnavailable = []float64{502, 504}

// UncachedErrors are the error statuses CloudFront would otherwise keep for 10 s: none is
// kept, since no answer of the API may be served from a cache (docs/api.md §11.3), an error no
// more than a success.
var UncachedErrors = []float64{400, 403, 404, 405, 414, 416, 500, 501, 502, 503, 504}

// SiteRequestFunction is the CloudFront function in front of the site bucket: it maps a page's
// address to its file the way web.Handler and web.ReferenceHandler answer under `go run .`.
var SiteRequestFunction = fmt.Sprintf(`function handler(event) {
  var r = event.request;
  var last = r.uri.split('/').pop();
  if (r.uri === %q) { r.uri = %q; }
  else if (r.uri === '/app' || last.indexOf('.') < 0) { r.uri = '/app/index.html'; }
  return r;
}`, web.ReferencePath, web.Prefix+web.ReferenceFile)

// addSite creates the private SPA bucket and the one CloudFront distribution
// (docs/architecture.md §5): the API and the stream through the VPC origin, the console from
// the bucket, the web ACL in front of all of it.
func (s *Stack) addSite(st awscdk.Stack, p Props, removal awscdk.RemovalPolicy) {
	s.SiteBucket = awss3.NewBucket(st, jsii.String("Site"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:             jsii.Bool(true),
		ServerAccessLogsBucket: s.LogBucket,
		ServerAccessLogsPrefix: jsii.String("site/"),
		RemovalPolicy:          removal,
		AutoDeleteObjects:      jsii.Bool(removal == awscdk.RemovalPolicy_DESTROY),
	})
	// The SPA routes in the browser: a path under /app/ without a file extension is a page
	// of the SPA, answered with its index.html. The API reference is a page of the same build
	// served outside /app/ (docs/api.md §11.3).
	spaIndex := awscloudfront.NewFunction(st, jsii.String("SpaIndex"), &awscloudfront.FunctionProps{
		Runtime: awscloudfront.FunctionRuntime_JS_2_0(),
		Comment: jsii.String("serve /app/index.html for the console's own paths, and the API reference at " + web.ReferencePath),
		Code:    awscloudfront.FunctionCode_FromInline(jsii.String(SiteRequestFunction)),
	})
	// The console's files carry the headers `go run .` sends with them (docs/api.md §11.3): the
	// bucket cannot set them, so CloudFront adds them.
	consoleHeaders := awscloudfront.NewResponseHeadersPolicy(st, jsii.String("ConsoleHeaders"), &awscloudfront.ResponseHeadersPolicyProps{
		Comment: jsii.String("roadevents " + p.Stage + ": the console's Content-Security-Policy"),
		SecurityHeadersBehavior: &awscloudfront.ResponseSecurityHeadersBehavior{
			ContentSecurityPolicy: &awscloudfront.ResponseHeadersContentSecurityPolicy{
				ContentSecurityPolicy: jsii.String(web.ContentSecurityPolicy), Override: jsii.Bool(true)},
			ContentTypeOptions: &awscloudfront.ResponseHeadersContentTypeOptions{Override: jsii.Bool(true)},
			ReferrerPolicy: &awscloudfront.ResponseHeadersReferrerPolicy{
				ReferrerPolicy: awscloudfront.HeadersReferrerPolicy_NO_REFERRER, Override: jsii.Bool(true)},
		},
	})
	bucketOrigin := awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(s.SiteBucket, nil)
	site := &awscloudfront.BehaviorOptions{
		Origin:                bucketOrigin,
		ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		CachePolicy:           awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
		ResponseHeadersPolicy: consoleHeaders,
		FunctionAssociations: &[]*awscloudfront.FunctionAssociation{
			{EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST, Function: spaIndex},
		},
	}
	// Retry-After on every answer of the API and the stream that has none, so that a 503 of
	// the load balancer (no healthy streamer) or of CloudFront carries one too; the
	// service's own 429 and 503 keep theirs. On other answers it means nothing to a client.
	retryAfter := awscloudfront.NewResponseHeadersPolicy(st, jsii.String("RetryAfter"), &awscloudfront.ResponseHeadersPolicyProps{
		Comment: jsii.String("roadevents " + p.Stage + ": Retry-After on the front door's refusals"),
		CustomHeadersBehavior: &awscloudfront.ResponseCustomHeadersBehavior{CustomHeaders: &[]*awscloudfront.ResponseCustomHeader{
			{Header: jsii.String("Retry-After"), Value: jsii.String(RetryAfterSeconds), Override: jsii.Bool(false)},
		}},
	})
	// The front door's own refusals' body, a file of the bucket.
	errorPage := &awscloudfront.BehaviorOptions{
		Origin:                bucketOrigin,
		ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		CachePolicy:           awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
		ResponseHeadersPolicy: retryAfter,
	}

	// One VPC origin for the load balancer, seen as two origins: the API's, and the stream's
	// with its longer wait for the next bytes.
	protocol := awscloudfront.OriginProtocolPolicy_HTTP_ONLY
	if p.OriginOverHTTPS() {
		protocol = awscloudfront.OriginProtocolPolicy_HTTPS_ONLY
	}
	vpcOrigin := awscloudfront.NewVpcOrigin(st, jsii.String("VpcOrigin"), &awscloudfront.VpcOriginProps{
		Endpoint:           awscloudfront.VpcOriginEndpoint_ApplicationLoadBalancer(s.LoadBalancer),
		ProtocolPolicy:     protocol,
		HttpPort:           jsii.Number(80),
		HttpsPort:          jsii.Number(443),
		OriginSslProtocols: &[]awscloudfront.OriginSslPolicy{awscloudfront.OriginSslPolicy_TLS_V1_2},
	})
	origin := func(id string, readTimeout float64) awscloudfront.IOrigin {
		props := &awscloudfrontorigins.VpcOriginProps{
			OriginId:         jsii.String(id),
			ReadTimeout:      awscdk.Duration_Seconds(jsii.Number(readTimeout)),
			KeepaliveTimeout: awscdk.Duration_Seconds(jsii.Number(60)),
		}
		if p.OriginOverHTTPS() {
			// CloudFront checks the load balancer's certificate against this name.
			props.DomainName = jsii.String(p.OriginDomain)
		}
		return awscloudfrontorigins.VpcOrigin_WithVpcOrigin(vpcOrigin, props)
	}
	api := &awscloudfront.BehaviorOptions{
		Origin:               origin("api", APIOriginReadTimeoutSeconds),
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:          apiCachePolicy(st, p.Stage),
		// Every viewer header goes through: the load balancer routes on the path alone.
		OriginRequestPolicy:   awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
		ResponseHeadersPolicy: retryAfter,
		Compress:              jsii.Bool(true),
	}
	// The stream: never cached, never compressed, and CloudFront waits as long as it may for
	// the next bytes (the streamer writes a keepalive every 20 s).
	stream := &awscloudfront.BehaviorOptions{
		Origin:                origin("stream", StreamOriginReadTimeoutSeconds),
		ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:        awscloudfront.AllowedMethods_ALLOW_GET_HEAD_OPTIONS(),
		CachePolicy:           awscloudfront.CachePolicy_CACHING_DISABLED(),
		OriginRequestPolicy:   awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
		ResponseHeadersPolicy: retryAfter,
		Compress:              jsii.Bool(false),
	}

	var errorResponses []*awscloudfront.ErrorResponse
	for _, code := range UncachedErrors {
		r := &awscloudfront.ErrorResponse{HttpStatus: jsii.Number(code), Ttl: awscdk.Duration_Seconds(jsii.Number(0))}
		for _, unavailable := range FrontDoorUnavailable {
			if code == unavailable {
				r.ResponseHttpStatus, r.ResponsePagePath = jsii.Number(503), jsii.String(UnavailablePage)
			}
		}
		errorResponses = append(errorResponses, r)
	}

	cloudFrontLogs := newLogBucket(st, "EdgeLogs", p, removal, awss3.ObjectOwnership_BUCKET_OWNER_PREFERRED)
	props := &awscloudfront.DistributionProps{
		Comment:         jsii.String("roadevents " + p.Stage + ": console, API and stream on one origin"),
		DefaultBehavior: api,
		HttpVersion:     awscloudfront.HttpVersion_HTTP2_AND_3,
		PriceClass:      awscloudfront.PriceClass_PRICE_CLASS_100,
		WebAclId:        jsii.String(p.WebACLARN),
		ErrorResponses:  &errorResponses,
		EnableLogging:   jsii.Bool(true),
		LogBucket:       cloudFrontLogs,
		LogFilePrefix:   jsii.String("cloudfront/"),
	}
	if p.CustomDomain() {
		props.DomainNames = jsii.Strings(p.DomainName)
		props.Certificate = awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String("ViewerCertificate"), jsii.String(p.CertificateARN))
		props.MinimumProtocolVersion = awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021
	}
	// GET / is the API's JSON (the console lives under /app/), so the default behaviour is
	// the API and the SPA has its own; every API path goes there through the default, and is
	// also listed so the routing reads plainly.
	s.Distribution = awscloudfront.NewDistribution(st, jsii.String("Distribution"), props)
	if !p.CustomDomain() {
		accept(s.Distribution, "AwsSolutions-CFR4", "without -c "+ContextDomainName+" and -c "+ContextCertificateARN+
			" the distribution answers with CloudFront's default certificate, whose minimum protocol cannot be set (docs/operations.md §5)")
	}
	accept(s.Distribution, "AwsSolutions-CFR1", "a public API and console, for clients anywhere: no country is refused")
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
		{web.ReferencePath, site},
		{"/errors/*", errorPage},
	} {
		s.Distribution.AddBehavior(jsii.String(b.pattern), b.opts.Origin, &awscloudfront.AddBehaviorOptions{
			ViewerProtocolPolicy:  b.opts.ViewerProtocolPolicy,
			AllowedMethods:        b.opts.AllowedMethods,
			CachePolicy:           b.opts.CachePolicy,
			OriginRequestPolicy:   b.opts.OriginRequestPolicy,
			FunctionAssociations:  b.opts.FunctionAssociations,
			ResponseHeadersPolicy: b.opts.ResponseHeadersPolicy,
			Compress:              b.opts.Compress,
		})
	}

	// The front door's refusal page, and the console under app/.
	awss3deployment.NewBucketDeployment(st, jsii.String("ErrorPages"), &awss3deployment.BucketDeploymentProps{
		Sources: &[]awss3deployment.ISource{awss3deployment.Source_JsonData(jsii.String(path.Base(UnavailablePage)),
			map[string]any{"detail": UnavailableDetail}, nil)},
		DestinationBucket:    s.SiteBucket,
		DestinationKeyPrefix: jsii.String(path.Dir(UnavailablePage)[1:] + "/"),
	})
	if _, err := os.Stat(p.WebDist); err != nil {
		awscdk.Annotations_Of(s.SiteBucket).AddWarningV2(jsii.String("roadevents:no-web-dist"),
			jsii.String("no console build at "+p.WebDist+": the site bucket is deployed without the console"))
		return
	}
	console := awss3deployment.NewBucketDeployment(st, jsii.String("SiteFiles"), &awss3deployment.BucketDeploymentProps{
		Sources:              &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(p.WebDist), nil)},
		DestinationBucket:    s.SiteBucket,
		DestinationKeyPrefix: jsii.String("app/"),
	})
	s.invalidateConsole(st, p, console)
}

// invalidateConsole has CloudFront drop the console's cached pages once a new build is in the
// bucket. A bucket deployment would do it given the distribution, but with the right to
// invalidate any distribution of the account; this call may invalidate this one only.
func (s *Stack) invalidateConsole(st awscdk.Stack, p Props, console awss3deployment.BucketDeployment) {
	build := awscdk.FileSystem_Fingerprint(jsii.String(p.WebDist), nil)
	call := &customresources.AwsSdkCall{
		Service: jsii.String("CloudFront"),
		Action:  jsii.String("CreateInvalidation"),
		Parameters: map[string]any{
			"DistributionId": s.Distribution.DistributionId(),
			"InvalidationBatch": map[string]any{
				"CallerReference": build,
				"Paths":           map[string]any{"Quantity": 2, "Items": []string{"/app/*", web.ReferencePath}},
			},
		},
		PhysicalResourceId: customresources.PhysicalResourceId_Of(build),
	}
	inv := customresources.NewAwsCustomResource(st, jsii.String("ConsoleInvalidation"), &customresources.AwsCustomResourceProps{
		OnCreate: call,
		OnUpdate: call,
		Policy: customresources.AwsCustomResourcePolicy_FromStatements(&[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("cloudfront:CreateInvalidation"),
			Resources: jsii.Strings(*s.Distribution.DistributionArn()),
		})}),
		// The call is in the Lambda runtime's SDK: no download at deploy time.
		InstallLatestAwsSdk: jsii.Bool(false),
	})
	inv.Node().AddDependency(console)
}

// apiCachePolicy is the cache policy of the API's behaviours (docs/api.md §10.1, compression):
// nothing is kept, yet the client's Accept-Encoding (gzip, br) reaches the functions, and the
// edge may compress what they did not. CloudFront refuses compression on a policy whose TTLs
// are all 0 (the managed CachingDisabled is one), so the maximum is 1 s; the default of 0 keeps
// every API answer uncached, since none sends a lifetime of its own. Should one ever do so, the
// cache key holds Authorization and every query parameter, so no caller is served another's
// answer.
func apiCachePolicy(st awscdk.Stack, stage string) awscloudfront.CachePolicy {
	return awscloudfront.NewCachePolicy(st, jsii.String("ApiCompressed"), &awscloudfront.CachePolicyProps{
		Comment:                    jsii.String("roadevents " + stage + ": the API, never cached, compressed"),
		DefaultTtl:                 awscdk.Duration_Seconds(jsii.Number(0)),
		MinTtl:                     awscdk.Duration_Seconds(jsii.Number(0)),
		MaxTtl:                     awscdk.Duration_Seconds(jsii.Number(1)),
		HeaderBehavior:             awscloudfront.CacheHeaderBehavior_AllowList(jsii.String("Authorization")),
		QueryStringBehavior:        awscloudfront.CacheQueryStringBehavior_All(),
		CookieBehavior:             awscloudfront.CacheCookieBehavior_None(),
		EnableAcceptEncodingGzip:   jsii.Bool(true),
		EnableAcceptEncodingBrotli: jsii.Bool(true),
	})
}

// EdgeRegion is where CloudFront reads web ACLs and certificates.
const EdgeRegion = "us-east-1"

// EdgeProps configure the edge stack.
type EdgeProps struct {
	awscdk.StackProps
	Stage string
	// RateLimit, when above 0, limits each client address to that many requests in any 5
	// minutes, answering the rest 503 with Retry-After. Off by default: docs/api.md §8 rule 1
	// rations nothing on /v1 but signals (docs/operations.md §5).
	RateLimit float64
	// RateLimitCountOnly, with RateLimit, only counts the requests over the limit (in the
	// web ACL's metrics and sampled requests) and refuses none: how to size a limit first.
	RateLimitCountOnly bool
}

// Edge is the stack in us-east-1 holding the distribution's web ACL.
type Edge struct {
	awscdk.Stack
	WebACL awswafv2.CfnWebACL
}

// RateLimitRule is the name of the web ACL's rate-based rule.
const RateLimitRule = "RateLimitPerAddress"

// ManagedRuleGroups are the AWS managed rule groups of the web ACL, in priority order, with the
// rules of each that only count: a valid event is up to about 15 KB and a Stripe webhook up to
// 256 KiB, where SizeRestrictions_BODY refuses bodies over 8 KB; API clients need not send a
// User-Agent.
var ManagedRuleGroups = []struct {
	Name      string
	CountOnly []string
}{
	{"AWSManagedRulesAmazonIpReputationList", nil},
	{"AWSManagedRulesCommonRuleSet", []string{"SizeRestrictions_BODY", "NoUserAgent_HEADER"}},
	{"AWSManagedRulesKnownBadInputsRuleSet", nil},
}

// NewEdge builds the edge stack; its region must be EdgeRegion. It panics on a negative limit.
func NewEdge(scope constructs.Construct, id string, p EdgeProps) *Edge {
	if p.RateLimit < 0 || (p.RateLimit > 0 && p.RateLimit < 10) {
		panic(fmt.Sprintf("%v: -c %s=%v: want 0 (off) or at least 10 requests per 5 minutes", ErrProps, ContextRateLimit, p.RateLimit))
	}
	p.StackProps.CrossRegionReferences = jsii.Bool(true)
	st := awscdk.NewStack(scope, jsii.String(id), &p.StackProps)
	awscdk.Tags_Of(st).Add(jsii.String("project"), jsii.String("roadevents"), nil)
	awscdk.Tags_Of(st).Add(jsii.String("stage"), jsii.String(p.Stage), nil)
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true), SampledRequestsEnabled: jsii.Bool(true), MetricName: jsii.String(name),
		}
	}
	var rules []any
	for i, g := range ManagedRuleGroups {
		var overrides []any
		for _, r := range g.CountOnly {
			overrides = append(overrides, &awswafv2.CfnWebACL_RuleActionOverrideProperty{
				Name: jsii.String(r), ActionToUse: &awswafv2.CfnWebACL_RuleActionProperty{Count: map[string]any{}},
			})
		}
		rules = append(rules, &awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String(g.Name),
			Priority: jsii.Number(float64(i)),
			Statement: &awswafv2.CfnWebACL_StatementProperty{ManagedRuleGroupStatement: &awswafv2.CfnWebACL_ManagedRuleGroupStatementProperty{
				VendorName: jsii.String("AWS"), Name: jsii.String(g.Name), RuleActionOverrides: overrides,
			}},
			OverrideAction:   &awswafv2.CfnWebACL_OverrideActionProperty{None: map[string]any{}},
			VisibilityConfig: visibility(g.Name),
		})
	}
	if p.RateLimit > 0 {
		// Refused for capacity: 503 with Retry-After, as the service's own (docs/api.md §7).
		action := &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{
			CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{
				ResponseCode:          jsii.Number(503),
				CustomResponseBodyKey: jsii.String("unavailable"),
				ResponseHeaders: []any{&awswafv2.CfnWebACL_CustomHTTPHeaderProperty{
					Name: jsii.String("Retry-After"), Value: jsii.String("60"),
				}},
			},
		}}
		if p.RateLimitCountOnly {
			action = &awswafv2.CfnWebACL_RuleActionProperty{Count: map[string]any{}}
		}
		rules = append(rules, &awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String(RateLimitRule),
			Priority: jsii.Number(float64(len(ManagedRuleGroups))),
			Statement: &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
				AggregateKeyType: jsii.String("IP"), Limit: jsii.Number(p.RateLimit), EvaluationWindowSec: jsii.Number(300),
			}},
			Action:           action,
			VisibilityConfig: visibility(RateLimitRule),
		})
	}
	e := &Edge{Stack: st}
	e.WebACL = awswafv2.NewCfnWebACL(st, jsii.String("WebAcl"), &awswafv2.CfnWebACLProps{
		Description:   jsii.String("roadevents " + p.Stage + ": every request of the distribution"),
		Scope:         jsii.String("CLOUDFRONT"),
		DefaultAction: &awswafv2.CfnWebACL_DefaultActionProperty{Allow: map[string]any{}},
		CustomResponseBodies: map[string]any{"unavailable": &awswafv2.CfnWebACL_CustomResponseBodyProperty{
			ContentType: jsii.String("APPLICATION_JSON"),
			Content:     jsii.String(`{"detail":"` + UnavailableDetail + `"}`),
		}},
		Rules:            rules,
		VisibilityConfig: visibility("roadevents-" + p.Stage),
	})
	return e
}
