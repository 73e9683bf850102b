// Package openapidoc holds the OpenAPI document of every route group, generated ahead of time
// from the code (docs/architecture.md §4), for the meta function, which links no other group
// and so cannot build it. `go run .` builds the same document from its routes; the package's
// test fails when the copy here differs from it.
package openapidoc

//go:generate go run ./internal/generate openapi.json

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"

	"github.com/roadevents/roadevents/shared/config"
)

//go:embed openapi.json
var document []byte

// ErrConfiguration is returned by For for a configuration under which the service's
// document differs from the one generated here.
var ErrConfiguration = errors.New("openapidoc: the generated document describes the default configuration")

// For returns the document of every group as the service describes itself under cfg. The
// document was generated under config.Default(), and the only setting it depends on is the
// widest query radius (the maximum of the radius parameter); for another radius For fails
// rather than serve a document that contradicts the events routes.
func For(cfg config.Config) ([]byte, error) {
	if want := config.Default().Limits.MaxQueryRadiusM; cfg.Limits.MaxQueryRadiusM != want {
		return nil, fmt.Errorf("%w: ROADEVENTS_MAX_QUERY_RADIUS_M is %g, the document says %g; "+
			"change the default in shared/config and run go generate ./shared/app/openapidoc",
			ErrConfiguration, cfg.Limits.MaxQueryRadiusM, want)
	}
	return bytes.Clone(document), nil
}
