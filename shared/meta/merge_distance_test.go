package meta_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/roadevents/roadevents/shared/taxonomy"
)

// docs/network.md §1 and docs/api.md §2.6: every TypeSpec of GET /v1/meta/taxonomy publishes the
// type's merge distance (merge_distance_m, metres, above 0), the one the merge applies, and
// the TypeSpec schema of /openapi.json lists it as a required number.
func TestTaxonomyMergeDistances(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	status, _, body := do(t, srv, "GET", "/v1/meta/taxonomy", "")
	if status != 200 {
		t.Fatalf("GET /v1/meta/taxonomy = %d %s", status, body)
	}
	var doc struct {
		Types []struct {
			ID             string   `json:"id"`
			MergeDistanceM *float64 `json:"merge_distance_m"`
		} `json:"types"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Types) != len(taxonomy.IDs()) {
		t.Fatalf("%d types; want %d", len(doc.Types), len(taxonomy.IDs()))
	}
	for _, typ := range doc.Types {
		want, _ := taxonomy.Lookup(typ.ID)
		switch {
		case typ.MergeDistanceM == nil:
			t.Errorf("%s: no merge_distance_m", typ.ID)
		case *typ.MergeDistanceM <= 0 || *typ.MergeDistanceM != want.MergeDistance:
			t.Errorf("%s: merge_distance_m %v; want the distance the merge applies, %v, above 0", typ.ID, *typ.MergeDistanceM, want.MergeDistance)
		}
	}

	status, _, body = do(t, srv, "GET", "/openapi.json", "")
	if status != 200 {
		t.Fatalf("GET /openapi.json = %d", status)
	}
	var api struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Type any `json:"type"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &api); err != nil {
		t.Fatal(err)
	}
	spec := api.Components.Schemas["TypeSpec"]
	prop, ok := spec.Properties["merge_distance_m"]
	if !ok || prop.Type != "number" || !slices.Contains(spec.Required, "merge_distance_m") {
		t.Errorf("TypeSpec schema: merge_distance_m %+v (listed %v), required %v; want a required number", prop, ok, spec.Required)
	}
}
