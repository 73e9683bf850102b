// Command console-orgs is the Lambda function of the console-orgs route group (organisations,
// members, invitations, audit, keys, usage, vitality, reputation; docs/architecture.md §4). It is
// wiring only: it hands the group's constructor (shared/app/consoleorgsgroup, on the table
// shared/app/lambdastore opens) to shared/app/lambdaapp, which serves each front door's events.
// scripts/build-lambdas.sh builds it as the bootstrap of provided.al2023 on arm64.
package main

import (
	"os"

	"github.com/roadevents/roadevents/shared/app/consoleorgsgroup"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/lambdastore"
	"github.com/roadevents/roadevents/shared/routetable"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

func main() {
	if lambdaapp.Start(routetable.GroupConsoleOrgs, build, lambdastore.Opener(routetable.GroupConsoleOrgs, consoleorgsgroup.New)) != nil {
		os.Exit(1) // Start has reported why
	}
}
