package routetable_test

import (
	"slices"
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
