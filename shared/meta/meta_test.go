package meta_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/meta"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	cfg := config.Default()
	cfg.ConsoleURL = "http://console.test/"
	tab := tables.Embedded(t)
	api, err := app.New(app.Deps{Config: cfg, Build: "test-build", Table: tab.Table, Clock: tab.Clock,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Keys:   apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		Meter:  metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1})}, routetable.GroupMeta)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// Scenarios for the open routes: docs/api.md §4.1 (meta routes, /health, /), §2.6, §2.7, §5 (open,
// no credential needed) and §10.1 and §10.2 (bodies).
func TestOpenRoutes(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	cases := []struct {
		name, method, path string
		wantStatus         int
		wantBody           string // exact JSON, compared after re-encoding both sides
	}{
		{"health", "GET", "/health", 200, `{"status":"ok","version":"test-build"}`},
		{"root", "GET", "/", 200, `{"service":"road-events","version":"1.0.0","openapi":"/openapi.json","console":"http://console.test/","docs":"/docs"}`},
		{"event types are a flat list", "GET", "/v1/meta/event-types", 200,
			`["accident","stopped_vehicle","object_on_road","weather_hazard","congestion","wrong_way_vehicle","road_damage","people_on_road","police_check","speed_camera","road_closure","infrastructure_fault","roadworks"]`},
		{"limits", "GET", "/v1/meta/limits", 200, ""},
		{"open route ignores a credential it does not need", "GET", "/v1/meta/taxonomy", 200, ""},
		{"query parameters on an open route are ignored", "GET", "/health?x=1&lat=abc", 200, ""},
		{"unknown path is JSON 404", "GET", "/v1/meta/nothing", 404, `{"detail":"Not Found"}`},
		{"wrong method is JSON 405", "POST", "/v1/meta/taxonomy", 405, `{"detail":"Method Not Allowed"}`},
		{"wrong method with a body is JSON 405", "POST", "/health", 405, `{"detail":"Method Not Allowed"}`},
		{"trailing slash is another path", "GET", "/health/", 404, `{"detail":"Not Found"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, h, body := do(t, srv, c.method, c.path, `{"truncated":`)
			if status != c.wantStatus {
				t.Fatalf("%s %s = %d %s; want %d", c.method, c.path, status, body, c.wantStatus)
			}
			if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type = %q; want application/json", ct)
			}
			if c.wantBody != "" && !sameJSON(t, body, []byte(c.wantBody)) {
				t.Errorf("body = %s; want %s", body, c.wantBody)
			}
		})
	}
}

// docs/api.md §2.6: TaxonomyOut has schema_version and one TypeSpec per type, same order as the
// flat list, with the lifetimes of §2.1.
func TestTaxonomyDocument(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	status, _, body := do(t, srv, "GET", "/v1/meta/taxonomy", "")
	if status != 200 {
		t.Fatalf("status = %d", status)
	}
	var got meta.TaxonomyOut
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != 1 {
		t.Errorf("schema_version = %d; want 1", got.SchemaVersion)
	}
	ids := make([]string, len(got.Types))
	for i, typ := range got.Types {
		ids[i] = typ.ID
		if typ.Subtypes == nil {
			t.Errorf("%s: subtypes is null; want an array, possibly empty", typ.ID)
		}
		want, _ := taxonomy.Lookup(typ.ID)
		if typ.TTLSeconds != int64(want.TTL.Seconds()) || typ.MaxTTLSeconds != int64(want.Ceiling.Seconds()) {
			t.Errorf("%s: ttl %d max %d; want %v %v", typ.ID, typ.TTLSeconds, typ.MaxTTLSeconds, want.TTL, want.Ceiling)
		}
	}
	if !slices.Equal(ids, taxonomy.IDs()) {
		t.Errorf("types = %v; want the flat list %v", ids, taxonomy.IDs())
	}
	var raw struct {
		Types []map[string]json.RawMessage `json:"types"`
	}
	json.Unmarshal(body, &raw)
	if string(raw.Types[6]["subtypes"]) != `["pothole","damaged_surface","damaged_barrier","sinkhole"]` {
		t.Errorf("road_damage subtypes = %s; want the list of docs/api.md §2.1", raw.Types[6]["subtypes"])
	}
	if string(raw.Types[5]["subtypes"]) != `[]` {
		t.Errorf("wrong_way_vehicle subtypes = %s; want []", raw.Types[5]["subtypes"])
	}
}

// docs/api.md §2.7 and §10.2: the limits document.
func TestLimitsDocument(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	_, _, body := do(t, srv, "GET", "/v1/meta/limits", "")
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	// query_level is the resolution the area index is read at, whatever the configuration says.
	if got["max_query_radius_m"] != 9780.0 || got["query_level"] != float64(eventstore.QueryLevel) || got["note"] == "" {
		t.Fatalf("limits = %v; want max_query_radius_m 9780, query_level %d and a note", got, eventstore.QueryLevel)
	}
	if len(got) != 3 {
		t.Errorf("limits has keys %v; want exactly max_query_radius_m, query_level, note", got)
	}
}

// docs/console.md §5: the console's map background is the deployment's tiles and their
// attribution, OpenStreetMap's by default; "none" is no background, which the map draws its
// events on a plain one for.
func TestBasemapDocument(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	_, _, body := do(t, srv, "GET", "/v1/meta/basemap", "")
	if string(body) != `{"tiles":"https://tile.openstreetmap.org/{z}/{x}/{y}.png","attribution":"© OpenStreetMap contributors"}` {
		t.Errorf("default basemap %s", body)
	}
	none := meta.Routes(meta.Deps{Basemap: config.Basemap{Tiles: "none", Attribution: ""}})
	for _, rt := range none {
		if rt.Path == "/v1/meta/basemap" {
			rec := httptest.NewRecorder()
			rt.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/meta/basemap", nil))
			if rec.Body.String() != `{"tiles":null,"attribution":""}` {
				t.Errorf("basemap without tiles %s; want tiles null", rec.Body)
			}
		}
	}
}

// The response structs agree with the schemas documented in /openapi.json.
func TestBodiesMatchTheirSchemas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s *schema.Schema
		v any
	}{
		{meta.HealthSchema, meta.Health{}},
		{meta.RootSchema, meta.Root{}},
		{meta.TaxonomySchema, meta.TaxonomyOut{}},
		{meta.TypeSpecSchema, meta.TypeSpec{}},
		{meta.LimitsSchema, meta.LimitsOut{}},
		{meta.BasemapSchema, meta.BasemapOut{}},
	} {
		if err := schema.CheckStruct(c.s, c.v); err != nil {
			t.Errorf("%s: %v", c.s.Name, err)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	ea, _ := json.Marshal(va)
	eb, _ := json.Marshal(vb)
	return string(ea) == string(eb)
}
