// Package meta is the open route group (docs/architecture.md §4, group "meta"): /health, /,
// /openapi.json and /v1/meta/* (docs/api.md §4.1, §2.6, §2.7, §10.1 and §10.2). None of it needs a
// credential (docs/api.md §5).
package meta

import (
	"net/http"
	"strconv"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// InterfaceVersion is the version of the interface description (docs/api.md §9 rule 1): the
// info.version of /openapi.json, so that GET / and the document never disagree.
const InterfaceVersion = httpapi.Version

// Deps is what the group needs.
type Deps struct {
	// Build identifies the running build, for /health.
	Build string
	// ConsoleURL is where the console is, for /.
	ConsoleURL string
	Limits     config.Limits
	Basemap    config.Basemap
	// OpenAPI returns the interface document of the whole service (every route group), which
	// the caller generates from the same routes it serves.
	OpenAPI func() []byte
}

// Health is the body of GET /health (docs/api.md §10.1).
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// Root is the body of GET / (docs/api.md §10.1). Docs is an addition: the first thing a new
// user opening the service's address needs is a readable description.
type Root struct {
	Service string `json:"service"`
	Version string `json:"version"`
	OpenAPI string `json:"openapi"`
	Console string `json:"console"`
	Docs    string `json:"docs"`
}

// ReferencePath is the path of the API reference page, which renders /openapi.json. Package
// web serves it beside the API (web.ReferencePath; this group stays free of the console's
// files, which its Lambda does not serve); test/e2e checks that GET / links a page that
// answers.
const ReferencePath = "/docs"

// TypeSpec describes one event type (docs/api.md §2.6). Description and ExtensionSeconds are
// appended to the four fields of docs/api.md §2.6 so a client can tell what a type means and predict extensions.
type TypeSpec struct {
	ID               string   `json:"id"`
	Subtypes         []string `json:"subtypes"`
	TTLSeconds       int64    `json:"ttl_seconds"`
	MaxTTLSeconds    int64    `json:"max_ttl_seconds"`
	ExtensionSeconds int64    `json:"extension_seconds"`
	Description      string   `json:"description"`
	MergeDistanceM   float64  `json:"merge_distance_m"`
}

// TaxonomyOut is the body of GET /v1/meta/taxonomy (docs/api.md §2.6).
type TaxonomyOut struct {
	SchemaVersion int        `json:"schema_version"`
	Types         []TypeSpec `json:"types"`
}

// LimitsOut is the body of GET /v1/meta/limits (docs/api.md §2.7, §10.2).
type LimitsOut struct {
	MaxQueryRadiusM float64 `json:"max_query_radius_m"`
	QueryLevel      int     `json:"query_level"`
	Note            string  `json:"note"`
}

// Schemas of the bodies, named as docs/api.md §10.1 lists them.
var (
	HealthSchema = schema.Object(
		schema.Req("status", schema.Const("ok")),
		schema.Req("version", schema.String().Describe("The running build.")),
	).Named("HealthOut")
	RootSchema = schema.Object(
		schema.Req("service", schema.Const("road-events")),
		schema.Req("version", schema.String().Describe("Version of the interface description.")),
		schema.Req("openapi", schema.String().Describe("Path of this document.")),
		schema.Req("console", schema.String().Describe("Address of the console.")),
		schema.Req("docs", schema.String().Describe("Path of the API reference, a page rendering this document.")),
	).Named("RootOut")
	TypeSpecSchema = schema.Object(
		schema.Req("id", schema.String()),
		schema.Req("subtypes", schema.Array(schema.String()).Describe("May be empty; grows without notice.")),
		schema.Req("ttl_seconds", schema.Integer().Describe("Default lifetime.")),
		schema.Req("max_ttl_seconds", schema.Integer().Describe("Hard ceiling, counted from created_at.")),
		schema.Req("extension_seconds", schema.Integer().Describe("A first confirmation from a new reporter extends expiry to at least this long from that moment, capped at the ceiling.")),
		schema.Req("description", schema.String().Describe("What the type covers.")),
		schema.Req("merge_distance_m", schema.Number().Describe("A new report of this type lying this close to another source's "+
			"active report (same environment, compatible subtype and heading) is merged into it as a confirmation.")),
	).Named("TypeSpec")
	TaxonomySchema = schema.Object(
		schema.Req("schema_version", schema.Integer()),
		schema.Req("types", schema.Array(TypeSpecSchema).Describe("One per type of the flat list, same order.")),
	).Named("TaxonomyOut")
	BasemapSchema = schema.Object(
		schema.Req("tiles", schema.String().OrNull().Describe("Raster tile URL template with {z}, {x} and {y}; null for no background.")),
		schema.Req("attribution", schema.String().Describe("What the tiles' provider asks to be shown with them.")),
	).Named("BasemapOut")
	LimitsSchema = schema.Object(
		schema.Req("max_query_radius_m", schema.Number()),
		schema.Req("query_level", schema.Integer().Describe("H3 resolution of the area index.")),
		schema.Req("note", schema.String()),
	).Named("LimitsOut")
)

// Taxonomy builds the taxonomy document from the one table in package taxonomy.
func Taxonomy() TaxonomyOut {
	all := taxonomy.All()
	out := TaxonomyOut{SchemaVersion: taxonomy.SchemaVersion, Types: make([]TypeSpec, len(all))}
	for i, t := range all {
		out.Types[i] = TypeSpec{
			ID:               t.ID,
			Subtypes:         append([]string{}, t.Subtypes...),
			TTLSeconds:       int64(t.TTL.Seconds()),
			MaxTTLSeconds:    int64(t.Ceiling.Seconds()),
			ExtensionSeconds: int64(t.Extension.Seconds()),
			Description:      t.Meaning,
			MergeDistanceM:   t.MergeDistance,
		}
	}
	return out
}

// Limits builds the limits document.
func Limits(l config.Limits) LimitsOut {
	return LimitsOut{
		MaxQueryRadiusM: l.MaxQueryRadiusM,
		QueryLevel:      l.QueryLevel,
		Note: "Radius of GET /v1/events and GET /v1/stream is capped at max_query_radius_m (422 above it); " +
			"an area query returns at most 500 events, nearest first, truncated silently. " +
			"These are deployment values: read them here at run time.",
	}
}

// BasemapOut is the map background of the console.
type BasemapOut struct {
	Tiles       *string `json:"tiles"`
	Attribution string  `json:"attribution"`
}

func basemap(b config.Basemap) BasemapOut {
	out := BasemapOut{Attribution: b.Attribution}
	if b.Tiles != "" && b.Tiles != "none" {
		out.Tiles = &b.Tiles
	}
	return out
}

// Routes returns the group's routes.
func Routes(d Deps) []httpapi.Route {
	tags := []string{"meta"}
	taxonomyBody := Taxonomy()
	limitsBody := Limits(d.Limits)
	typeIDs := taxonomy.IDs()
	static := func(v any) http.Handler {
		return httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			return httpapi.WriteJSON(w, http.StatusOK, v)
		})
	}
	return []httpapi.Route{
		{
			Method: http.MethodGet, Path: "/health", OperationID: "health", Tags: tags,
			Summary:     "Liveness of the service",
			Description: "Answers 200 with the running build while the process serves requests; it reads no storage.",
			Responses:   map[int]httpapi.Response{200: httpapi.JSONResponse("The service is up.", HealthSchema)},
			Handler:     static(Health{Status: "ok", Version: d.Build}),
		},
		{
			Method: http.MethodGet, Path: "/{$}", OperationID: "root", Tags: tags,
			Summary:     "What this service is and where its description, reference and console are",
			Description: "Names the service and its interface version, and gives the paths of this document, of the human reference and the address of the console.",
			Responses:   map[int]httpapi.Response{200: httpapi.JSONResponse("Service description.", RootSchema)},
			Handler: static(Root{Service: "road-events", Version: InterfaceVersion,
				OpenAPI: "/openapi.json", Console: d.ConsoleURL, Docs: ReferencePath}),
		},
		{
			Method: http.MethodGet, Path: "/openapi.json", OperationID: "openapi", Tags: tags,
			Summary:     "This interface description (OpenAPI 3.1)",
			Description: "The document you are reading: every route of every group, whichever process serves it. Answer schemas accept members they do not list, since answers only grow; request schemas refuse them.",
			Responses: map[int]httpapi.Response{200: {Description: "The OpenAPI document.",
				Schema: schema.FreeObject(), ContentType: "application/json"}},
			Handler: httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				doc := d.OpenAPI()
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
				_, err := w.Write(doc)
				return err
			}),
		},
		{
			Method: http.MethodGet, Path: "/v1/meta/event-types", OperationID: "listEventTypes", Tags: tags,
			// docs/api.md §9 rule 3. The summary is read in the API reference, which has no
			// specification beside it: the citation stays here.
			Summary:     "The event types, as a flat list of strings",
			Description: "The type ids a publisher may use. This list stays flat; subtypes and lifetimes are in /v1/meta/taxonomy.",
			Responses:   map[int]httpapi.Response{200: httpapi.JSONResponse("Type ids.", schema.Array(schema.String()))},
			Handler:     static(typeIDs),
		},
		{
			Method: http.MethodGet, Path: "/v1/meta/taxonomy", OperationID: "getTaxonomy", Tags: tags,
			Summary:     "The event types with subtypes and lifetimes",
			Description: "Every event type with its subtypes, default and maximum lifetimes, and the taxonomy's schema_version. Types and subtypes are added over time.",
			Responses:   map[int]httpapi.Response{200: httpapi.JSONResponse("The taxonomy.", TaxonomySchema)},
			Handler:     static(taxonomyBody),
		},
		{
			Method: http.MethodGet, Path: "/v1/meta/limits", OperationID: "getLimits", Tags: tags,
			Summary:     "Limits the service enforces that a client must read at run time",
			Description: "The limits a client reads instead of hard-coding them: the largest query radius and the resolution of the area index. Values may change between deployments.",
			Responses:   map[int]httpapi.Response{200: httpapi.JSONResponse("The limits.", LimitsSchema)},
			Handler:     static(limitsBody),
		},
		{
			Method: http.MethodGet, Path: "/v1/meta/basemap", OperationID: "getBasemap", Tags: tags,
			Summary:     "The map background the console draws events on",
			Description: "The deployment's raster tiles and their attribution (ROADEVENTS_BASEMAP_TILES, ROADEVENTS_BASEMAP_ATTRIBUTION; docs/console.md §5).",
			Responses:   map[int]httpapi.Response{200: httpapi.JSONResponse("The basemap.", BasemapSchema)},
			Handler:     static(basemap(d.Basemap)),
		},
	}
}
