// Command billing is the Lambda function of the billing route group (plans, billing summary,
// checkout, portal, Stripe webhook; docs/architecture.md §4), behind the HTTP API (payload format
// 2.0), and the hourly overage job (docs/console.md §3), invoked by an
// EventBridge schedule rule. It is wiring only: shared/app builds the group's handler from the
// environment, as main.go builds every group, and its BillingHandler runs the job for a scheduled
// event and turns every other event into a request for the handler (aws-lambda-go-api-proxy).
// scripts/build-lambdas.sh builds it as the bootstrap of provided.al2023 on arm64.
package main

import (
	"os"

	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/routetable"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

func main() {
	if app.StartLambda(routetable.GroupBilling, build) != nil {
		os.Exit(1) // StartLambda has reported why
	}
}
