// Command meta is the Lambda function of the meta route group (/health, /, /openapi.json,
// /v1/meta/*; docs/architecture.md §4), which reads no table. It is wiring only: it hands the
// group's constructor (shared/app/metagroup, serving the OpenAPI document generated ahead of time
// in shared/app/openapidoc) to shared/app/lambdaapp, which serves each front door's events.
// scripts/build-lambdas.sh builds it as the bootstrap of provided.al2023 on arm64.
package main

import (
	"os"

	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/metagroup"
	"github.com/roadevents/roadevents/shared/app/openapidoc"
	"github.com/roadevents/roadevents/shared/routetable"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

func main() {
	if lambdaapp.Start(routetable.GroupMeta, build, metagroup.Lambda(openapidoc.For)) != nil {
		os.Exit(1) // Start has reported why
	}
}
