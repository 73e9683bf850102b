// Command infra is the CDK app of the AWS deployment (cdk.json at the repository root runs it
// with `go run ./infra`; docs/operations.md §5). It reads the context, checks that the
// Lambda bundles are built, and synthesizes the stack of package infra/stack.
//
// Context (-c key=value): stage (dev or prod, default dev), bundleDir (default build/lambda),
// webDist (default web/dist), mailDomain (default roadevents.example), consoleUrl (the
// console's https address ending in /app/, once known), alarmEmail, streamOriginDomain and
// streamCertificateArn (the streamer load balancer's domain and its ACM certificate, required
// in prod; see stack.Props), and bundles=placeholder to synthesize without built bundles (the
// template is then not deployable).
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
	cdkApp := awscdk.NewApp(nil)
	ctx := func(key, def string) string {
		if v, ok := cdkApp.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stage := ctx("stage", stack.StageDev)
	if stage != stack.StageDev && stage != stack.StageProd {
		fmt.Fprintf(os.Stderr, "infra: -c stage=%s: want %s or %s\n", stage, stack.StageDev, stack.StageProd)
		os.Exit(2)
	}
	props := stack.Props{
		StackProps: awscdk.StackProps{
			Env:         env(),
			Description: jsii.String("Road events service (" + stage + ")"),
		},
		Stage:      stage,
		BundleDir:  abs(root, ctx("bundleDir", "build/lambda")),
		WebDist:    abs(root, ctx("webDist", "web/dist")),
		RepoRoot:   root,
		MailDomain: ctx("mailDomain", "roadevents.example"),
		ConsoleURL: ctx("consoleUrl", ""),
		AlarmEmail: ctx("alarmEmail", ""),

		StreamOriginDomain:   ctx(stack.ContextStreamOriginDomain, ""),
		StreamCertificateARN: ctx(stack.ContextStreamCertificateARN, ""),
	}
	if err := props.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(2)
	}
	if ctx("bundles", "") == "placeholder" {
		dir := filepath.Join(os.TempDir(), "roadevents-placeholder-bundle")
		if err := stack.WritePlaceholderBundle(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		props.Bundles = func(constructs.Construct, routetable.Group) awslambda.Code {
			return awslambda.Code_FromAsset(jsii.String(dir), nil)
		}
	} else {
		for _, g := range routetable.Lambdas {
			zip := filepath.Join(props.BundleDir, string(g)+".zip")
			if _, err := os.Stat(zip); err != nil {
				fmt.Fprintf(os.Stderr, "infra: %s is missing: run scripts/build-lambdas.sh first "+
					"(or pass -c bundles=placeholder to synthesize without bundles)\n", zip)
				os.Exit(1)
			}
		}
	}
	stack.New(cdkApp, "roadevents-"+stage, props)
	cdkApp.Synth(nil)
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// env is the account and region the CDK CLI resolved from the AWS configuration, or none
// (an environment-agnostic template) when it has none, as on a machine without credentials.
func env() *awscdk.Environment {
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if account == "" || region == "" {
		return nil
	}
	return &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
}
