// Command console-orgs is the Lambda function of the console-orgs route group (organisations,
// members, invitations, audit, keys, usage, vitality, reputation; docs/architecture.md §4), behind
// the HTTP API (payload format 2.0). It is wiring only: shared/app builds the group's handler from
// the environment, as main.go builds every group, and aws-lambda-go-api-proxy turns each API
// Gateway event into a request for it. scripts/build-lambdas.sh builds it as the bootstrap of
// provided.al2023 on arm64.
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
	if app.StartLambda(routetable.GroupConsoleOrgs, build) != nil {
		os.Exit(1) // StartLambda has reported why
	}
}
