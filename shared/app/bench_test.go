package app_test

import (
	"testing"

	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// BenchmarkNewEventsGroup is what a Lambda of the events group spends building its API at a
// cold start: the served group and the document of every group.
func BenchmarkNewEventsGroup(b *testing.B) {
	tab := tables.Embedded(b)
	cfg := config.Default()
	for b.Loop() {
		apptest.New(b, app.Deps{Config: cfg, Table: tab, Clock: tab.Clock}, routetable.GroupEvents)
	}
}
