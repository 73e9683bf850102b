// Package apptest builds the service for the tests of its route groups: the one place where a
// test calls app.New, so that how New reports a failure is handled once. It is imported by
// tests only.
package apptest

import (
	"io"
	"log/slog"
	"testing"

	"github.com/roadevents/roadevents/shared/app"
)

// New builds the service serving groups (every group when none are named) on d, as a test
// runs it: build "test" and a logger that discards, unless d has its own.
func New(t testing.TB, d app.Deps, groups ...app.Group) *app.API {
	t.Helper()
	if d.Build == "" {
		d.Build = "test"
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	return app.New(d, groups...)
}
