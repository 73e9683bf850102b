// Package apptest builds the service for the tests of its route groups: the one place where a
// test calls app.New, so that how New reports a failure is handled once, and where every
// answer the tests receive is checked against /openapi.json. It is imported by tests only.
package apptest

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi/openapitest"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
)

// Config is config.Default with the keys a deployment sets, fixed: the console's hash and
// sealing keys and the event id key, so that codes, sealed secrets and event ids hold across
// a test's restarts.
func Config() config.Config {
	cfg := config.Default()
	cfg.Console.HashKey = bytes.Repeat([]byte{0x5a}, 32)
	cfg.Console.SealKey = bytes.Repeat([]byte{0xa5}, 32)
	cfg.EventIDKey = bytes.Repeat([]byte{0x3c}, 32)
	return cfg
}

// API is a service built for a test. Its Handler checks every answer against the service's
// /openapi.json with kin-openapi, a validator third-party clients use (openapitest.Answers):
// an answer the document does not allow fails the test that received it, so the document
// cannot drift from what the routes answer, for any route, a new one included.
type API struct {
	*app.API
	handler http.Handler
}

// Handler serves the API's routes, checking each answer.
func (a *API) Handler() http.Handler { return a.handler }

// New builds the service serving groups (every group when none are named) on d, as a test
// runs it: build "test", a logger that discards, and keys and a meter on d.Table without
// background writes, unless d has its own. A failure to build ends the test.
func New(t testing.TB, d app.Deps, groups ...routetable.Group) *API {
	t.Helper()
	if d.Build == "" {
		d.Build = "test"
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if d.Keys == nil {
		d.Keys = apikey.New(d.Table, apikey.Options{Clock: d.Clock, Logger: d.Logger})
	}
	if d.Meter == nil {
		d.Meter = metering.New(d.Table, metering.Options{Clock: d.Clock, Logger: d.Logger, FlushInterval: -1})
	}
	api, err := app.New(d, groups...)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	answers, err := openapitest.AnswersOf(api.OpenAPI())
	if err != nil {
		t.Fatalf("apptest: %v", err)
	}
	return &API{API: api, handler: answers.Handler(api.Handler(), func(err error) { t.Error(err) })}
}
