package routetable_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/routetable"
)

// TestEachRouteHasOneGroup: the CDK stack wires each row to its group's function, so each
// route must be in exactly one group, and the groups must hold what they are named for.
func TestEachRouteHasOneGroup(t *testing.T) {
	t.Parallel()
	owner := map[string]routetable.Group{}
	for _, g := range routetable.All {
		if len(g.Routes()) == 0 {
			t.Errorf("group %s has no routes", g)
		}
		for _, r := range g.Routes() {
			if o, dup := owner[r.String()]; dup {
				t.Errorf("route %s is in groups %s and %s; want one", r, o, g)
			}
			owner[r.String()] = g
		}
	}
	for _, want := range []struct {
		route string
		group routetable.Group
	}{
		{"GET /health", routetable.GroupMeta},
		{"GET /openapi.json", routetable.GroupMeta},
		{"POST /v1/events", routetable.GroupEvents},
		{"POST /v1/stream/tickets", routetable.GroupEvents},
		{"POST /console/auth/request-code", routetable.GroupConsoleAuth},
		{"GET /v1/stream", routetable.GroupStream},
	} {
		if got := owner[want.route]; got != want.group {
			t.Errorf("route %s is in group %q; want %q", want.route, got, want.group)
		}
	}
}

// TestLambdas: every group but the stream is a Lambda; GET /v1/stream is served by the
// streamer only.
func TestLambdas(t *testing.T) {
	t.Parallel()
	for _, g := range routetable.All {
		if got, want := g.IsLambda(), g != routetable.GroupStream; got != want {
			t.Errorf("%s.IsLambda() = %v; want %v", g, got, want)
		}
	}
	for _, g := range routetable.Lambdas {
		if !slices.Contains(routetable.All, g) {
			t.Errorf("Lambda group %s is not in All", g)
		}
	}
}

// TestGrantsAreWellFormed: every group has grants; each prefix ends its partition key's first
// segment ("org#", not "org", which would also match "orgevents#"), appears once per group
// and carries actions; a group that reads or writes items is every group but meta.
func TestGrantsAreWellFormed(t *testing.T) {
	t.Parallel()
	for _, g := range routetable.All {
		gr := g.Grants()
		prefixes := map[string]bool{}
		for _, ig := range gr.Items {
			if !strings.HasSuffix(ig.Prefix, "#") || prefixes[ig.Prefix] || len(ig.Actions) == 0 {
				t.Errorf("%s: grant %+v: want a prefix ending in #, once, with actions", g, ig)
			}
			prefixes[ig.Prefix] = true
		}
		if got, want := len(gr.Items) > 0, g != routetable.GroupMeta; got != want {
			t.Errorf("%s has item grants: %v; want %v", g, got, want)
		}
	}
	if (routetable.Grants{Items: []routetable.ItemGrant{{Prefix: "org#", Actions: []routetable.ItemAction{routetable.GetItem}}}}).Allows(routetable.GetItem, "orgevents#x") {
		t.Error(`a grant on "org#" allows "orgevents#x"`)
	}
}
