// Command console-auth is the Lambda function of the console-auth route group (/console/auth/*;
// docs/architecture.md §4). It is wiring only: it hands the group's constructor
// (shared/app/consoleauthgroup, on the table shared/app/lambdastore opens) to
// shared/app/lambdaapp, which serves each front door's events. scripts/build-lambdas.sh builds it
// as the bootstrap of provided.al2023 on arm64.
package main

import (
	"os"

	"github.com/roadevents/roadevents/shared/app/consoleauthgroup"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/lambdastore"
	"github.com/roadevents/roadevents/shared/routetable"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

func main() {
	if lambdaapp.Start(routetable.GroupConsoleAuth, build, lambdastore.Opener(routetable.GroupConsoleAuth, consoleauthgroup.New)) != nil {
		os.Exit(1) // Start has reported why
	}
}
