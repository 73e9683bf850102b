// Command events is the Lambda function of the events route group (/v1/events*, /v1/stream/tickets;
// docs/architecture.md §4). It is wiring only: it hands the group's constructor
// (shared/app/eventsgroup, on the table shared/app/lambdastore opens) to shared/app/lambdaapp,
// which serves each front door's events. scripts/build-lambdas.sh builds it as the bootstrap of
// provided.al2023 on arm64.
package main

import (
	"os"

	"github.com/roadevents/roadevents/shared/app/eventsgroup"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/lambdastore"
	"github.com/roadevents/roadevents/shared/routetable"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

func main() {
	if lambdaapp.Start(routetable.GroupEvents, build, lambdastore.Opener(routetable.GroupEvents, eventsgroup.New)) != nil {
		os.Exit(1) // Start has reported why
	}
}
