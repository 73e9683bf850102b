// Command billing is the Lambda function of the billing route group (plans, billing summary,
// checkout, portal, Stripe webhook; docs/architecture.md §4) and of the hourly overage job
// (docs/console.md §3), which an EventBridge schedule rule invokes. It is wiring only: it hands
// the group's constructor (shared/app/billinggroup, on the table shared/app/lambdastore opens)
// to shared/app/lambdaapp, which serves each front door's events and runs the job for a
// scheduled one. scripts/build-lambdas.sh builds it as the bootstrap of provided.al2023 on arm64.
package main

import (
	"os"

	"github.com/roadevents/roadevents/shared/app/billinggroup"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/lambdastore"
	"github.com/roadevents/roadevents/shared/routetable"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

func main() {
	if lambdaapp.Start(routetable.GroupBilling, build, lambdastore.Opener(routetable.GroupBilling, billinggroup.New)) != nil {
		os.Exit(1) // Start has reported why
	}
}
