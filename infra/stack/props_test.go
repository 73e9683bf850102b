package stack_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/routetable"
)

// TestPropsCheck: the stack refuses what it cannot deploy as documented (docs/operations.md
// §5), naming the context key to fix: prod without TLS to the load balancer; a name without
// its certificate or the reverse; a name with a scheme; a certificate that is no ACM ARN, or
// for viewers one outside us-east-1; no web ACL; a reserved concurrency below 1 or for no
// function; a retention CloudWatch Logs refuses.
func TestPropsCheck(t *testing.T) {
	t.Parallel()
	ok := func(p stack.Props) stack.Props {
		p.Stage, p.WebACLARN = stack.StageDev, testWebACL
		return p
	}
	prodTLS := func(p stack.Props) stack.Props {
		p = ok(p)
		p.Stage, p.OriginDomain, p.OriginCertificateARN = stack.StageProd, testOriginDomain, testOriginCert
		return p
	}
	for _, tc := range []struct {
		name  string
		props stack.Props
		key   string // the context key the refusal names; "" when accepted
	}{
		{"dev with nothing", ok(stack.Props{}), ""},
		{"prod with TLS to the origin", prodTLS(stack.Props{}), ""},
		{"prod without TLS to the origin", stack.Props{Stage: stack.StageProd, WebACLARN: testWebACL}, stack.ContextOriginDomain},
		{"origin name without certificate", ok(stack.Props{OriginDomain: testOriginDomain}), stack.ContextOriginCertificateARN},
		{"origin certificate without name", ok(stack.Props{OriginCertificateARN: testOriginCert}), stack.ContextOriginDomain},
		{"origin name with a scheme", ok(stack.Props{OriginDomain: "https://" + testOriginDomain, OriginCertificateARN: testOriginCert}), stack.ContextOriginDomain},
		{"origin certificate not from ACM", ok(stack.Props{OriginDomain: testOriginDomain, OriginCertificateARN: "arn:aws:iam::123456789012:server-certificate/x"}), stack.ContextOriginCertificateARN},
		{"custom domain", ok(stack.Props{DomainName: testDomain, CertificateARN: testViewerCert}), ""},
		{"viewer certificate outside us-east-1", ok(stack.Props{DomainName: testDomain, CertificateARN: testOriginCert}), stack.ContextCertificateARN},
		{"domain without certificate", ok(stack.Props{DomainName: testDomain}), stack.ContextCertificateARN},
		{"no web ACL", stack.Props{Stage: stack.StageDev}, stack.ContextWebACLARN},
		{"a reserved concurrency of 0", ok(stack.Props{ReservedConcurrency: map[routetable.Group]float64{routetable.GroupMeta: 0}}), stack.ContextReservedConcurrency},
		{"a reserved concurrency for the stream", ok(stack.Props{ReservedConcurrency: map[routetable.Group]float64{routetable.GroupStream: 5}}), stack.ContextReservedConcurrency},
		{"a retention of 10 days", ok(stack.Props{LogRetentionDays: 10}), stack.ContextLogRetentionDays},
		{"a retention of a year", ok(stack.Props{LogRetentionDays: 365}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.props.Check()
			switch {
			case tc.key == "" && err != nil:
				t.Errorf("Check() = %v; want nil", err)
			case tc.key != "" && (err == nil || !errors.Is(err, stack.ErrProps) || !strings.Contains(err.Error(), "-c "+tc.key)):
				t.Errorf("Check() = %v; want an ErrProps naming -c %s", err, tc.key)
			}
		})
	}
}

// TestProdWithoutOriginTLSDoesNotSynthesize: stack.New itself refuses, so no caller can build a
// prod template whose API keys cross AWS's network unencrypted.
func TestProdWithoutOriginTLSDoesNotSynthesize(t *testing.T) {
	synth(t) // skips without Node.js, and starts jsii once
	var got any
	func() {
		defer func() { got = recover() }()
		stack.New(awscdk.NewApp(nil), "roadevents-prod", stack.Props{Stage: stack.StageProd, MailDomain: "roadevents.example", WebACLARN: testWebACL})
	}()
	if msg := fmt.Sprint(got); got == nil || !strings.Contains(msg, stack.ContextOriginDomain) || !strings.Contains(msg, stack.ContextOriginCertificateARN) {
		t.Errorf("stack.New(prod, no origin TLS) panicked with %v; want a refusal naming -c %s and -c %s",
			got, stack.ContextOriginDomain, stack.ContextOriginCertificateARN)
	}
}

// TestFromContext: the context keys of docs/operations.md §5 reach the props, and a value that is
// no number is refused naming its key.
func TestFromContext(t *testing.T) {
	t.Parallel()
	ctx := map[string]string{
		"stage": "prod", stack.ContextOriginDomain: testOriginDomain, stack.ContextOriginCertificateARN: testOriginCert,
		stack.ContextDomainName: testDomain, stack.ContextCertificateARN: testViewerCert, stack.ContextWebACLARN: testWebACL,
		stack.ContextReservedConcurrency: "events=250, meta=12", stack.ContextLogRetentionDays: "30",
		stack.ContextRateLimit: "2000", stack.ContextRateLimitMode: "count",
	}
	p, e, err := stack.FromContext(func(k string) string { return ctx[k] })
	if err != nil {
		t.Fatal(err)
	}
	if p.Stage != stack.StageProd || p.OriginDomain != testOriginDomain || p.OriginCertificateARN != testOriginCert ||
		p.DomainName != testDomain || p.CertificateARN != testViewerCert || p.WebACLARN != testWebACL || p.LogRetentionDays != 30 ||
		p.ReservedConcurrency[routetable.GroupEvents] != 250 || p.ReservedConcurrency[routetable.GroupMeta] != 12 {
		t.Errorf("FromContext props = %+v", p)
	}
	if e.Stage != stack.StageProd || e.RateLimit != 2000 || !e.RateLimitCountOnly {
		t.Errorf("FromContext edge props = %+v; want prod, 2000, count only", e)
	}
	if err := p.Check(); err != nil {
		t.Errorf("Check() of the context's props = %v", err)
	}
	for key, bad := range map[string]string{
		stack.ContextReservedConcurrency: "events:200", stack.ContextLogRetentionDays: "a month",
		stack.ContextRateLimit: "lots", stack.ContextRateLimitMode: "drop",
	} {
		_, _, err := stack.FromContext(func(k string) string {
			if k == key {
				return bad
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), "-c "+key) {
			t.Errorf("FromContext(%s=%s) = %v; want a refusal naming -c %s", key, bad, err, key)
		}
	}
}
