package openapidoc_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/openapidoc"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §10.1 (/openapi.json): the document the meta function serves is the one the code
// describes, as `go run .` serves it; a route changed without regenerating it fails here.
func TestDocumentIsCurrent(t *testing.T) {
	t.Parallel()
	built, err := app.Document(tables.Embedded(t).Table)
	if err != nil {
		t.Fatalf("app.Document: %v", err)
	}
	embedded, err := openapidoc.For(config.Default())
	if err != nil {
		t.Fatalf("For(config.Default()): %v", err)
	}
	if !bytes.Equal(embedded, built) {
		t.Fatalf("shared/app/openapidoc/openapi.json (%d bytes) differs from the document the code builds (%d bytes): "+
			"run go generate ./shared/app/openapidoc and commit openapi.json", len(embedded), len(built))
	}
}

// The generated document states the default widest radius; a function configured with another
// one would serve a document contradicting its events routes, so For refuses it.
func TestForRefusesAnotherRadius(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Limits.MaxQueryRadiusM = 5000
	if _, err := openapidoc.For(cfg); !errors.Is(err, openapidoc.ErrConfiguration) {
		t.Errorf("For(radius 5000) = %v; want ErrConfiguration", err)
	}
}
