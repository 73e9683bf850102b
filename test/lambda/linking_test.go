package lambda_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/routetable"
)

// module is the import path of this repository.
const module = "github.com/roadevents/roadevents/"

// buildTags are the tags scripts/build-lambdas.sh builds the bootstraps with.
const buildTags = "netgo,osusergo,lambda.norpc"

// routePackages are, for each route group, the packages that hold or build its routes: a
// function of another group must not link them, or it carries that group's code and start-up
// work (docs/architecture.md §4).
var routePackages = map[routetable.Group][]string{
	routetable.GroupMeta:        {module + "shared/meta", module + "shared/app/metagroup", module + "shared/app/openapidoc"},
	routetable.GroupEvents:      {module + "shared/eventstore", module + "shared/verdict", module + "shared/feedpoll", module + "shared/consoleroad", module + "shared/app/eventsgroup"},
	routetable.GroupConsoleAuth: {module + "shared/consoleaccount", module + "shared/app/consoleauthgroup"},
	routetable.GroupConsoleOrgs: {module + "shared/consoleusage", module + "shared/consolereputation", module + "shared/consolefeeds", module + "shared/consolewebhooks", module + "shared/app/consoleorgsgroup"},
	routetable.GroupBilling:     {module + "shared/billing", module + "shared/app/billinggroup", "github.com/stripe/stripe-go/v76"},
	routetable.GroupStream:      {module + "shared/stream"},
}

// sharedPackages are the packages of another group a function needs for its own routes.
var sharedPackages = map[routetable.Group][]string{
	// POST /v1/stream/tickets mints the tickets GET /v1/stream reads.
	routetable.GroupEvents: {module + "shared/stream"},
	// The billing summary shows the month's usage.
	routetable.GroupBilling: {module + "shared/consoleusage"},
	// Deleting an organisation, by its owner or with the account of its only member, deletes
	// its Stripe customer (docs/privacy.md §6).
	routetable.GroupConsoleOrgs: {module + "shared/billing", module + "shared/app/billinggroup", "github.com/stripe/stripe-go/v76"},
	// (billing's summary shows the month's usage)
	routetable.GroupConsoleAuth: {module + "shared/billing", module + "shared/app/billinggroup", "github.com/stripe/stripe-go/v76", module + "shared/consoleusage"},
}

// tableFree are the groups whose routes never read the table; their functions link no store.
var tableFree = []routetable.Group{routetable.GroupMeta}

// tablePackages are the store and what lives on it.
var tablePackages = []string{
	module + "shared/store/dynamodb", module + "shared/store/embedded", module + "shared/apikey",
	module + "shared/metering", module + "shared/app/tenants", module + "shared/app/lambdastore",
	"github.com/aws/aws-sdk-go-v2/service/dynamodb", "go.etcd.io/bbolt",
}

// neverLinked are packages no function links: the assembly of every group, and the RPC mode
// of aws-lambda-go, which only the retired go1.x runtime used (it brings net/rpc and
// html/template, whose reflection keeps every exported method of the binary).
var neverLinked = []string{module + "shared/app", "net/rpc", "html/template"}

// linked returns the packages the function of group links, as `go list -deps` lists them.
func linked(t *testing.T, group routetable.Group) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", buildTags, "./functions/"+string(group))
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./functions/%s: %v", group, err)
	}
	return strings.Fields(string(out))
}

// docs/architecture.md §4 (what each function links): a function links its own group's
// packages and none of another group's, but those its routes share; the meta function links
// no store.
func TestFunctionsLinkOnlyTheirGroup(t *testing.T) {
	t.Parallel()
	for _, group := range routetable.Lambdas {
		t.Run(string(group), func(t *testing.T) {
			t.Parallel()
			deps := linked(t, group)
			for _, p := range routePackages[group] {
				if !slices.Contains(deps, p) {
					t.Errorf("links no %s, one of its own group's packages: is the list above out of date?", p)
				}
			}
			forbidden := slices.Clone(neverLinked)
			for _, other := range routetable.All {
				if other == group {
					continue
				}
				for _, p := range routePackages[other] {
					if !slices.Contains(sharedPackages[group], p) {
						forbidden = append(forbidden, p)
					}
				}
			}
			if slices.Contains(tableFree, group) {
				forbidden = append(forbidden, tablePackages...)
			}
			for _, p := range forbidden {
				if slices.Contains(deps, p) {
					t.Errorf("links %s, which is not its group's (go list -deps -tags %s ./functions/%s)", p, buildTags, group)
				}
			}
		})
	}
}
