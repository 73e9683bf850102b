package app_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// TestGroupsServeTheirTableRows: the CDK stack wires the HTTP API from the route table, so
// each group must serve exactly its rows, no route more or less.
func TestGroupsServeTheirTableRows(t *testing.T) {
	t.Parallel()
	for _, g := range routetable.All {
		var got, want []string
		for _, r := range newAPI(t, g).Routes() {
			got = append(got, r.Method+" "+r.Path)
		}
		for _, r := range g.Routes() {
			want = append(want, r.String())
		}
		for _, r := range got {
			if !slices.Contains(want, r) {
				t.Errorf("group %s serves %s, which is not in its routetable rows", g, r)
			}
		}
		for _, r := range want {
			if !slices.Contains(got, r) {
				t.Errorf("group %s does not serve %s, which is in its routetable rows", g, r)
			}
		}
	}
}

// TestNewNamesTheMissingDependency: Table, Keys and Meter have no default, and New says which
// one it lacks instead of serving without it.
func TestNewNamesTheMissingDependency(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	full := app.Deps{Table: tab.Table, Keys: apikey.New(tab.Table, apikey.Options{}),
		Meter: metering.New(tab.Table, metering.Options{FlushInterval: -1})}
	for _, tc := range []struct {
		name  string
		unset func(*app.Deps)
	}{
		{"Table", func(d *app.Deps) { d.Table = nil }},
		{"Keys", func(d *app.Deps) { d.Keys = nil }},
		{"Meter", func(d *app.Deps) { d.Meter = nil }},
	} {
		d := full
		tc.unset(&d)
		_, err := app.New(d)
		if !errors.Is(err, app.ErrMissingDependency) || !strings.Contains(err.Error(), "Deps."+tc.name) {
			t.Errorf("New without %s = %v; want ErrMissingDependency naming Deps.%s", tc.name, err, tc.name)
		}
	}
	if _, err := app.New(full, "no-such-group"); err == nil {
		t.Error("New with an unknown group = nil error; want one")
	}
}
