// Command infra is the CDK app of the AWS deployment (cdk.json at the repository root runs it
// with `go run ./infra`; docs/operations.md §5). It reads the context, checks that the Lambda
// bundles are built, and synthesizes the stacks of package infra/stack: the main stack in the
// account's region and, unless -c webAclArn names an existing web ACL, the edge stack with the
// distribution's web ACL in us-east-1. With -c target=localstack it synthesizes the LocalStack
// stack instead (scripts/localstack-deploy.sh).
//
// Context (-c key=value; stack.FromContext): stage (dev or prod, default dev), region (when the
// AWS configuration gives none), bundleDir (default build/lambda), webDist (default web/dist),
// mailDomain, consoleUrl, alarmEmail, originDomain and originCertificateArn (TLS from CloudFront
// to the load balancer, required in prod), domainName and certificateArn (the viewers' name and
// its us-east-1 certificate), webAclArn, rateLimit and rateLimitMode, reservedConcurrency,
// logRetentionDays, and bundles=placeholder to synthesize without built bundles (the template
// is then not deployable).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/routetable"
)

func main() {
	defer jsii.Close()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(2)
	}
}

func run() error {
	cdkApp := awscdk.NewApp(nil)
	get := func(key string) string {
		v, _ := cdkApp.Node().TryGetContext(jsii.String(key)).(string)
		return v
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir := func(key, def string) string {
		p := get(key)
		if p == "" {
			p = def
		}
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	bundleDir := dir("bundleDir", "build/lambda")
	placeholder := get("bundles") == "placeholder"

	var bundles func(constructs.Construct, routetable.Group) awslambda.Code
	if placeholder {
		code, err := placeholderBundle()
		if err != nil {
			return err
		}
		bundles = func(constructs.Construct, routetable.Group) awslambda.Code {
			return awslambda.Code_FromAsset(jsii.String(code), nil)
		}
	}

	if get(stack.ContextTarget) == stack.TargetLocalStack {
		hostDir := filepath.Join(bundleDir, "host")
		if !placeholder {
			if err := bundlesBuilt(func(g routetable.Group) string { return filepath.Join(hostDir, string(g), "bootstrap") }, "--host"); err != nil {
				return err
			}
		}
		stack.NewLocalStack(cdkApp, "roadevents-localstack", stack.LocalStackProps{
			StackProps: awscdk.StackProps{Env: env(os.Getenv("CDK_DEFAULT_REGION"))},
			BundleDir:  hostDir,
			Bundles:    bundles,
		})
		cdkApp.Synth(nil)
		return nil
	}

	props, edgeProps, err := stack.FromContext(get)
	if err != nil {
		return err
	}
	region := os.Getenv("CDK_DEFAULT_REGION")
	if region == "" {
		region = get("region")
	}
	if region == "" {
		return fmt.Errorf("no region: the AWS configuration names none, so pass -c region=<region> " +
			"(the web ACL's stack is in us-east-1 and the main stack refers to it across regions)")
	}
	props.StackProps = awscdk.StackProps{Env: env(region), Description: jsii.String("Road events service (" + props.Stage + ")")}
	props.BundleDir, props.WebDist, props.RepoRoot = bundleDir, dir("webDist", "web/dist"), root
	if props.WebACLARN == "" {
		edgeProps.StackProps = awscdk.StackProps{Env: env(stack.EdgeRegion), Description: jsii.String("Road events service (" + props.Stage + "): the edge's web ACL")}
		edge := stack.NewEdge(cdkApp, "roadevents-"+props.Stage+"-edge", edgeProps)
		props.WebACLARN = *edge.WebACL.AttrArn()
	}
	if err := props.Check(); err != nil {
		return err
	}
	props.Bundles = bundles
	if !placeholder {
		if err := bundlesBuilt(func(g routetable.Group) string { return filepath.Join(bundleDir, string(g)+".zip") }, ""); err != nil {
			return err
		}
	}
	stack.New(cdkApp, "roadevents-"+props.Stage, props)
	cdkApp.Synth(nil)
	return nil
}

// placeholderBundle writes the placeholder bootstrap (stack.WritePlaceholderBundle).
func placeholderBundle() (string, error) {
	dir := filepath.Join(os.TempDir(), "roadevents-placeholder-bundle")
	return dir, stack.WritePlaceholderBundle(dir)
}

// bundlesBuilt checks that every function's bundle is at path(group).
func bundlesBuilt(path func(routetable.Group) string, flag string) error {
	for _, g := range routetable.Lambdas {
		if _, err := os.Stat(path(g)); err != nil {
			return fmt.Errorf("%s is missing: run scripts/build-lambdas.sh %s first "+
				"(or pass -c bundles=placeholder to synthesize without bundles)", path(g), flag)
		}
	}
	return nil
}

// env is the account the CDK CLI resolved from the AWS configuration, if any, in region; none
// (an environment-agnostic stack) without a region.
func env(region string) *awscdk.Environment {
	if region == "" {
		return nil
	}
	e := &awscdk.Environment{Region: jsii.String(region)}
	if account := os.Getenv("CDK_DEFAULT_ACCOUNT"); account != "" {
		e.Account = jsii.String(account)
	}
	return e
}
