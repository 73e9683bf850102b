package taxonomy_test

import (
	"slices"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/taxonomy"
)

// specTable is the lifetime table of docs/api.md §2.1 as printed, one row per type: default TTL,
// extension per first confirmation from a new reporter ("same"/"same as first row" = 15 min,
// docs/api.md §10.2), and ceiling from created_at. It is written out here, not derived from the
// package, so that a change to the package's table fails this test.
var specTable = []struct {
	id                      string
	ttl, extension, ceiling string
}{
	{"accident", "2h", "15m", "12h"},
	{"stopped_vehicle", "1h", "15m", "12h"},
	{"object_on_road", "30m", "15m", "12h"},
	{"weather_hazard", "3h", "15m", "12h"},
	{"congestion", "30m", "15m", "12h"},
	{"wrong_way_vehicle", "20m", "15m", "12h"},
	{"road_damage", "12h", "12h", "720h"},
	{"people_on_road", "30m", "15m", "12h"},
	{"police_check", "30m", "15m", "12h"},
	{"speed_camera", "1h", "2h", "168h"},
	{"road_closure", "2h", "15m", "12h"},
	{"infrastructure_fault", "6h", "6h", "168h"},
	{"roadworks", "4h", "15m", "12h"},
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// docs/api.md §2.1: the 13 types, in the order of the flat list.
func TestIDsAreTheSpecList(t *testing.T) {
	want := []string{"accident", "stopped_vehicle", "object_on_road", "weather_hazard", "congestion",
		"wrong_way_vehicle", "road_damage", "people_on_road", "police_check", "speed_camera",
		"road_closure", "infrastructure_fault", "roadworks"}
	if got := taxonomy.IDs(); !slices.Equal(got, want) {
		t.Fatalf("IDs() = %v; want %v", got, want)
	}
}

// docs/api.md §2.1 table, row by row.
func TestLifetimeTable(t *testing.T) {
	for _, row := range specTable {
		t.Run(row.id, func(t *testing.T) {
			typ, ok := taxonomy.Lookup(row.id)
			if !ok {
				t.Fatalf("Lookup(%q) not found", row.id)
			}
			if want := mustDuration(t, row.ttl); typ.TTL != want || taxonomy.TTL(row.id) != want {
				t.Errorf("TTL = %v; want %v", typ.TTL, want)
			}
			if want := mustDuration(t, row.extension); typ.Extension != want {
				t.Errorf("Extension = %v; want %v", typ.Extension, want)
			}
			if want := mustDuration(t, row.ceiling); typ.Ceiling != want {
				t.Errorf("Ceiling = %v; want %v", typ.Ceiling, want)
			}
			if typ.Meaning == "" {
				t.Errorf("Meaning is empty")
			}
		})
	}
	if len(specTable) != len(taxonomy.All()) {
		t.Fatalf("taxonomy has %d types; docs/api.md §2.1 has %d", len(taxonomy.All()), len(specTable))
	}
}

// docs/api.md §2.1 rule 2: an unknown type falls back to the shortest known TTL (wrong_way_vehicle,
// 20 min).
func TestUnknownTypeGetsShortestTTL(t *testing.T) {
	if got, want := taxonomy.TTL("tornado"), 20*time.Minute; got != want {
		t.Fatalf("TTL(unknown) = %v; want %v", got, want)
	}
	if taxonomy.Known("tornado") || taxonomy.Known("other") {
		t.Fatal("Known reports an unknown type, or an 'other' type (docs/api.md §2.1 rule 4 forbids it)")
	}
}

// docs/api.md §2.1 "Known subtypes" and rule 4 (a rockfall is object_on_road/landslide).
func TestKnownSubtypes(t *testing.T) {
	for _, c := range []struct{ typ, subtype string }{
		{"road_damage", "pothole"}, {"road_damage", "damaged_surface"}, {"road_damage", "damaged_barrier"},
		{"road_damage", "sinkhole"}, {"object_on_road", "landslide"},
	} {
		if !taxonomy.HasSubtype(c.typ, c.subtype) {
			t.Errorf("HasSubtype(%q, %q) = false; want true", c.typ, c.subtype)
		}
	}
	if taxonomy.HasSubtype("accident", "pothole") {
		t.Error("HasSubtype(accident, pothole) = true; a subtype belongs to one type (docs/api.md §2.2)")
	}
	if got := taxonomy.TypesWithSubtype("pothole"); !slices.Equal(got, []string{"road_damage"}) {
		t.Errorf("TypesWithSubtype(pothole) = %v; want [road_damage]", got)
	}
	for _, typ := range taxonomy.All() {
		for _, s := range typ.Subtypes {
			if owners := taxonomy.TypesWithSubtype(s); len(owners) != 1 {
				t.Errorf("subtype %q belongs to %v; each subtype must belong to exactly one type", s, owners)
			}
		}
	}
}

// docs/api.md §10.2: extension = max(expires_at, now + extension), capped at created_at + ceiling;
// revision = min(now + TTL, created_at + ceiling).
func TestExpiryRules(t *testing.T) {
	created := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	cases := []struct {
		name               string
		typ                string
		expires, now, want time.Time
		revise             bool
	}{
		{name: "confirm late extends to now+15m", typ: "accident",
			expires: created.Add(2 * time.Hour), now: created.Add(119 * time.Minute), want: created.Add(134 * time.Minute)},
		{name: "confirm early keeps the later expiry", typ: "accident",
			expires: created.Add(2 * time.Hour), now: created.Add(10 * time.Minute), want: created.Add(2 * time.Hour)},
		{name: "confirm capped at ceiling", typ: "accident",
			expires: created.Add(715 * time.Minute), now: created.Add(714 * time.Minute), want: created.Add(12 * time.Hour)},
		{name: "road_damage extends by 12h", typ: "road_damage",
			expires: created.Add(12 * time.Hour), now: created.Add(11 * time.Hour), want: created.Add(23 * time.Hour)},
		{name: "speed_camera extends by 2h", typ: "speed_camera",
			expires: created.Add(time.Hour), now: created.Add(50 * time.Minute), want: created.Add(170 * time.Minute)},
		{name: "revision resets to a full TTL", typ: "accident", revise: true,
			now: created.Add(5 * time.Hour), want: created.Add(7 * time.Hour)},
		{name: "revision capped at ceiling", typ: "accident", revise: true,
			now: created.Add(11 * time.Hour), want: created.Add(12 * time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got time.Time
			if c.revise {
				got = taxonomy.RevisedExpiry(c.typ, created, c.now)
			} else {
				got = taxonomy.ExtendedExpiry(c.typ, created, c.expires, c.now)
			}
			if !got.Equal(c.want) {
				t.Fatalf("got %v; want %v", got, c.want)
			}
		})
	}
	if taxonomy.ExtendsOnRevision("wrong_way_vehicle") || !taxonomy.ExtendsOnRevision("accident") {
		t.Fatal("docs/api.md §3: a revision extends every type but wrong_way_vehicle")
	}
}
