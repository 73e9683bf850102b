// Package taxonomy is the one table of road-event types (docs/api.md §2.1): what each means, how
// long an event lives, how a confirmation extends it, its ceiling, and its known subtypes.
// Everything that needs a TTL or a subtype list reads it from here, and GET /v1/meta/taxonomy
// serves it.
package taxonomy

import (
	"slices"
	"time"
)

// SchemaVersion is the taxonomy document's own schema version (docs/api.md §9 rule 2).
const SchemaVersion = 1

// Type describes one event type.
type Type struct {
	ID      string
	Meaning string
	// TTL is the default lifetime from publication, and from a revision (docs/api.md §10.2).
	TTL time.Duration
	// Extension is how far a first confirmation from a new reporter pushes expiry:
	// to at least now + Extension (docs/api.md §10.2: the first row's wording holds for every row).
	Extension time.Duration
	// Ceiling caps expiry, counted from created_at.
	Ceiling time.Duration
	// Subtypes are the fine vocabulary under the type; it grows without notice (docs/api.md §1).
	Subtypes []string
	// MergeDistance is how near, in metres, another source's active report of the same hazard
	// must lie for a new report to be merged into it (docs/network.md §1): from the new
	// report's point to the other's whole extent, as the area query measures.
	MergeDistance float64
}

// Merge distances (docs/network.md §1). A point hazard is reported where the vehicle was when
// it saw it, within about a block of where it is; a queue, a closure, a weather front or
// works are long and reported from anywhere along them; a wrong-way vehicle moves at speed
// while it is reported; a pothole or a camera is a fixed spot, and two of them 100 m apart are
// two.
const (
	mergeSpot   = 50.0
	mergePoint  = 150.0
	mergeArea   = 500.0
	mergeMoving = 1000.0
)

// DefaultExtension is the first row's extension in docs/api.md §2.1: to at least 15 min from
// the confirmation.
const DefaultExtension = 15 * time.Minute

// twelveHours is the ceiling shared by most rows of docs/api.md §2.1.
const twelveHours = 12 * time.Hour

// types is the table of docs/api.md §2.1, in the order of its flat list. The subtypes beyond the
// two lists docs/api.md §2.1 names are ours (it does not list the others); they follow each row's
// stated meaning.
var types = []Type{
	{ID: "accident", Meaning: "collision", TTL: 2 * time.Hour, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergePoint,
		Subtypes:      []string{"collision", "multi_vehicle", "single_vehicle", "vehicle_fire"}},
	{ID: "stopped_vehicle", Meaning: "immobilised vehicle", TTL: time.Hour, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergePoint,
		Subtypes:      []string{"breakdown", "on_hard_shoulder", "in_lane"}},
	{ID: "object_on_road", Meaning: "debris, lost cargo, animal", TTL: 30 * time.Minute, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergePoint,
		Subtypes:      []string{"debris", "lost_cargo", "animal", "landslide"}},
	{ID: "weather_hazard", Meaning: "black ice, fog bank, aquaplaning, gusts", TTL: 3 * time.Hour, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergeArea,
		Subtypes:      []string{"black_ice", "fog_bank", "aquaplaning", "gusts", "snow", "hail"}},
	{ID: "congestion", Meaning: "abnormal slowdown or queue; usually a segment with geometry", TTL: 30 * time.Minute, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergeArea,
		Subtypes:      []string{"slow_traffic", "queue", "stationary_traffic"}},
	{ID: "wrong_way_vehicle", Meaning: "vehicle driving against traffic", TTL: 20 * time.Minute, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergeMoving,
		Subtypes:      []string{}},
	{ID: "road_damage", Meaning: "pothole, broken surface, damaged barrier", TTL: 12 * time.Hour, Extension: 12 * time.Hour, Ceiling: 30 * 24 * time.Hour,
		MergeDistance: mergeSpot,
		Subtypes:      []string{"pothole", "damaged_surface", "damaged_barrier", "sinkhole"}},
	{ID: "people_on_road", Meaning: "person in or beside the carriageway", TTL: 30 * time.Minute, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergePoint,
		Subtypes:      []string{"pedestrian", "cyclist", "workers"}},
	{ID: "police_check", Meaning: "checkpoint, patrol, officers with hand-held radar", TTL: 30 * time.Minute, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergePoint,
		Subtypes:      []string{"checkpoint", "patrol", "handheld_radar"}},
	{ID: "speed_camera", Meaning: "unattended device: fixed, mobile, average-speed, red-light", TTL: time.Hour, Extension: 2 * time.Hour, Ceiling: 7 * 24 * time.Hour,
		MergeDistance: mergeSpot,
		Subtypes:      []string{"fixed", "mobile", "average_speed", "red_light"}},
	{ID: "road_closure", Meaning: "road, lane or slip road shut", TTL: 2 * time.Hour, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergeArea,
		Subtypes:      []string{"road", "lane", "slip_road"}},
	{ID: "infrastructure_fault", Meaning: "dead signal, missing or turned sign, lighting out", TTL: 6 * time.Hour, Extension: 6 * time.Hour, Ceiling: 7 * 24 * time.Hour,
		MergeDistance: mergeSpot,
		Subtypes:      []string{"signal_failure", "missing_sign", "turned_sign", "lighting_out"}},
	{ID: "roadworks", Meaning: "unplanned works: mobile crew, emergency dig", TTL: 4 * time.Hour, Extension: DefaultExtension, Ceiling: twelveHours,
		MergeDistance: mergeArea,
		Subtypes:      []string{"mobile_crew", "emergency_dig"}},
}

var byID = func() map[string]*Type {
	m := make(map[string]*Type, len(types))
	for i := range types {
		m[types[i].ID] = &types[i]
	}
	return m
}()

// All returns every type in the order of the flat list of docs/api.md §2.1. The caller must not
// modify it.
func All() []Type { return types }

// IDs returns the flat list of type ids (GET /v1/meta/event-types).
func IDs() []string {
	ids := make([]string, len(types))
	for i, t := range types {
		ids[i] = t.ID
	}
	return ids
}

// Lookup returns the type with the given id.
func Lookup(id string) (Type, bool) {
	t, ok := byID[id]
	if !ok {
		return Type{}, false
	}
	return *t, true
}

// Known tells whether id is one of the types.
func Known(id string) bool { return byID[id] != nil }

// TTL returns the default lifetime of type id; an unknown type gets the shortest known TTL
// (docs/api.md §2.1 rule 2).
func TTL(id string) time.Duration {
	if t, ok := byID[id]; ok {
		return t.TTL
	}
	return shortestTTL
}

var shortestTTL = func() time.Duration {
	d := types[0].TTL
	for _, t := range types[1:] {
		d = min(d, t.TTL)
	}
	return d
}()

// HasSubtype tells whether subtype belongs to type id (docs/api.md §2.2: it must belong to
// the event's type).
func HasSubtype(id, subtype string) bool {
	t, ok := byID[id]
	return ok && slices.Contains(t.Subtypes, subtype)
}

// TypesWithSubtype returns the types a subtype belongs to, for error messages that say where a
// misplaced subtype does belong.
func TypesWithSubtype(subtype string) []string {
	var out []string
	for _, t := range types {
		if slices.Contains(t.Subtypes, subtype) {
			out = append(out, t.ID)
		}
	}
	return out
}

// InitialExpiry is when an event of type id published at created expires.
func InitialExpiry(id string, created time.Time) time.Time {
	return created.Add(TTL(id))
}

// ExtendedExpiry is the expiry after a first confirmation from a new reporter at now
// (docs/api.md §10.2): max(expires, now + extension), capped at created + ceiling.
func ExtendedExpiry(id string, created, expires, now time.Time) time.Time {
	t := lookupOrShortest(id)
	next := expires
	if e := now.Add(t.Extension); e.After(next) {
		next = e
	}
	return capAt(next, created.Add(t.Ceiling))
}

// RevisedExpiry is the expiry after a revision at now (docs/api.md §10.2):
// min(now + default TTL, created + ceiling).
func RevisedExpiry(id string, created, now time.Time) time.Time {
	t := lookupOrShortest(id)
	return capAt(now.Add(t.TTL), created.Add(t.Ceiling))
}

// ExtendsOnRevision tells whether a revision pushes expiry back; a wrong-way vehicle report
// is not extended by its publisher (docs/api.md §3).
func ExtendsOnRevision(id string) bool { return id != "wrong_way_vehicle" }

func capAt(t, ceiling time.Time) time.Time {
	if t.After(ceiling) {
		return ceiling
	}
	return t
}

// lookupOrShortest returns the type, or for an unknown id the most cautious rules: shortest
// TTL, default extension, shortest ceiling.
func lookupOrShortest(id string) Type {
	if t, ok := byID[id]; ok {
		return *t
	}
	return Type{ID: id, TTL: shortestTTL, Extension: DefaultExtension, Ceiling: twelveHours}
}
