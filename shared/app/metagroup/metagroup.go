// Package metagroup is the meta route group (docs/architecture.md §4): /health, /, /openapi.json
// and /v1/meta/*. It reads no table and takes no credential, so its function links neither.
package metagroup

import (
	"context"

	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/meta"
)

// Routes returns the group's routes; openAPI returns the document of every group, which
// /openapi.json serves.
func Routes(b groupapi.Base, openAPI func() []byte) []httpapi.Route {
	return meta.Routes(meta.Deps{
		Build:      b.Build,
		ConsoleURL: b.Config.ConsoleURL,
		Limits:     b.Config.Limits,
		Basemap:    b.Config.Basemap,
		OpenAPI:    openAPI,
	})
}

// Lambda returns the constructor of the meta function. Its /openapi.json serves what
// document returns for the configuration: the function links no other group to build the
// document from, so the document is generated ahead of time (openapidoc.For).
func Lambda(document func(config.Config) ([]byte, error)) groupapi.Constructor {
	return func(_ context.Context, b groupapi.Base) (*groupapi.Group, error) {
		doc, err := document(b.Config)
		if err != nil {
			return nil, err
		}
		api := groupapi.NewAPI(b)
		api.Handle(Routes(b, func() []byte { return doc })...)
		return &groupapi.Group{API: api}, nil
	}
}
