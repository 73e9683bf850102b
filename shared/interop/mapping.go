package interop

// How each of our types and subtypes is said in each format (docs/interop.md §2). A type a
// format has no word for is left out of that format's export and counted.

// cifsCode is a Waze CIFS incident type and subtype.
type cifsCode struct{ Type, Subtype string }

// cifsCodes maps type, then subtype ("" for none or one not listed), to CIFS. Wrong-way
// vehicles, people on the road and speed cameras have no CIFS code: a bare HAZARD_ON_ROAD is
// read back as an object on the road (cifsTypes).
var cifsCodes = map[string]map[string]cifsCode{
	"accident": {"": {"ACCIDENT", "ACCIDENT_MINOR"}},
	"stopped_vehicle": {
		"":                 {"HAZARD", "HAZARD_ON_ROAD_CAR_STOPPED"},
		"on_hard_shoulder": {"HAZARD", "HAZARD_ON_SHOULDER_CAR_STOPPED"},
	},
	"object_on_road": {
		"":       {"HAZARD", "HAZARD_ON_ROAD_OBJECT"},
		"animal": {"HAZARD", "HAZARD_ON_SHOULDER_ANIMALS"},
	},
	"weather_hazard": {
		"":            {"HAZARD", "HAZARD_ON_ROAD_ICE"},
		"fog_bank":    {"HAZARD", "HAZARD_WEATHER_FOG"},
		"aquaplaning": {"HAZARD", "HAZARD_WEATHER_FLOOD"},
		"snow":        {"HAZARD", "HAZARD_WEATHER_HEAVY_SNOW"},
		"hail":        {"HAZARD", "HAZARD_WEATHER_HAIL"},
		"gusts":       {"HAZARD", "HAZARD_WEATHER"},
	},
	"congestion": {
		"":                   {"JAM", "JAM_HEAVY_TRAFFIC"},
		"stationary_traffic": {"JAM", "JAM_STAND_STILL_TRAFFIC"},
	},
	"road_damage":  {"": {"HAZARD", "HAZARD_ON_ROAD_POT_HOLE"}},
	"police_check": {"": {"POLICE", "POLICE_VISIBLE"}},
	"road_closure": {
		"":     {"ROAD_CLOSED", "ROAD_CLOSED_HAZARD"},
		"lane": {"HAZARD", "HAZARD_ON_ROAD_LANE_CLOSED"},
	},
	"infrastructure_fault": {
		"":             {"HAZARD", "HAZARD_ON_ROAD_TRAFFIC_LIGHT_FAULT"},
		"missing_sign": {"HAZARD", "HAZARD_ON_SHOULDER_MISSING_SIGN"},
		"turned_sign":  {"HAZARD", "HAZARD_ON_SHOULDER_MISSING_SIGN"},
	},
	"roadworks": {"": {"HAZARD", "HAZARD_ON_ROAD_CONSTRUCTION"}},
}

// tdxIncident is a TDx incident's category and type.
type tdxIncident struct{ Category, Type string }

// tdxIncidents maps type, then subtype, to TDx incident feed codes: crashes, vehicles stopped
// after one, and gusts. The other types have no TDx incident type.
var tdxIncidents = map[string]map[string]tdxIncident{
	"accident":        {"": {"crash", "crash"}},
	"stopped_vehicle": {"": {"crash", "incident"}},
	"weather_hazard":  {"gusts": {"wind", "gusts"}},
}

// datexRecord is a DATEX II situation record class (its JSON key without the sit prefix), the
// member holding its type, that type's value, and whether the member is a list.
type datexRecord struct {
	Class, Member, Value string
	List                 bool
}

// datexRecords maps type, then subtype, to the SRTI profile's record classes. Road damage,
// congestion, police checks, speed cameras, closures and infrastructure faults are not SRTI
// records and are left out.
var datexRecords = map[string]map[string]datexRecord{
	"accident": {"": {"Accident", "accidentType", "accident", true}},
	"stopped_vehicle": {
		"": {"VehicleObstruction", "vehicleObstructionType", "brokenDownVehicle", false},
	},
	"object_on_road": {
		"":           {"GeneralObstruction", "obstructionType", "objectOnTheRoad", false},
		"lost_cargo": {"GeneralObstruction", "obstructionType", "shedLoad", false},
		"animal":     {"AnimalPresenceObstruction", "animalPresenceType", "animalsOnTheRoad", false},
		"landslide":  {"EnvironmentalObstruction", "environmentalObstructionType", "landslips", false},
	},
	"weather_hazard": {
		"":            {"WeatherRelatedRoadConditions", "weatherRelatedRoadConditionType", "slippery", false},
		"black_ice":   {"WeatherRelatedRoadConditions", "weatherRelatedRoadConditionType", "blackIce", false},
		"aquaplaning": {"WeatherRelatedRoadConditions", "weatherRelatedRoadConditionType", "surfaceWater", false},
		"fog_bank":    {"PoorEnvironmentConditions", "poorEnvironmentType", "fog", false},
		"gusts":       {"PoorEnvironmentConditions", "poorEnvironmentType", "strongWinds", false},
		"hail":        {"PoorEnvironmentConditions", "poorEnvironmentType", "hail", false},
	},
	"wrong_way_vehicle": {
		"": {"VehicleObstruction", "vehicleObstructionType", "vehicleOnWrongCarriageway", false},
	},
	"people_on_road": {
		"":        {"GeneralObstruction", "obstructionType", "peopleOnRoadway", false},
		"cyclist": {"GeneralObstruction", "obstructionType", "cyclistsOnRoadway", false},
	},
	"roadworks": {"": {"MaintenanceWorks", "roadMaintenanceType", "maintenanceWork", false}},
}

// lookup finds the code of typ and subtype in table: the subtype's own, else the type's.
func lookup[C any](table map[string]map[string]C, typ string, subtype *string) (C, bool) {
	byType, ok := table[typ]
	if !ok {
		var zero C
		return zero, false
	}
	if subtype != nil {
		if c, ok := byType[*subtype]; ok {
			return c, true
		}
	}
	c, ok := byType[""]
	return c, ok
}
