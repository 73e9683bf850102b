package interop

import (
	"encoding/json"
	"time"

	"github.com/roadevents/roadevents/shared/event"
)

// The specification versions the GeoJSON feeds follow.
const (
	wzdxVersion = "4.2"
	tdxVersion  = "1.1"
)

// unnamedRoad is the road name of an event published without road_ref: both formats want
// at least one.
const unnamedRoad = "unknown"

// geoFeed is a WZDx work zone feed or a TDx road incident feed (docs/interop.md §5).
type geoFeed struct {
	FeedInfo feedInfo     `json:"feed_info"`
	Type     string       `json:"type"`
	Features []geoFeature `json:"features"`
}

type feedInfo struct {
	Publisher   string       `json:"publisher"`
	Version     string       `json:"version"`
	UpdateDate  string       `json:"update_date"`
	DataSources []dataSource `json:"data_sources"`
}

type dataSource struct {
	ID               string `json:"data_source_id"`
	OrganizationName string `json:"organization_name"`
}

type geoFeature struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Properties roadEvent `json:"properties"`
	Geometry   geoLine   `json:"geometry"`
}

type geoLine struct {
	Type        string       `json:"type"`
	Coordinates [][2]float64 `json:"coordinates"`
}

// roadEvent is the properties of a WZDx work zone or a TDx incident; the members of one only
// are left out of the other.
type roadEvent struct {
	CoreDetails             coreDetails      `json:"core_details"`
	TypesOfIncident         []typeOfIncident `json:"types_of_incident,omitempty"`
	StartDate               string           `json:"start_date"`
	EndDate                 string           `json:"end_date"`
	IsStartDateVerified     bool             `json:"is_start_date_verified"`
	IsEndDateVerified       bool             `json:"is_end_date_verified"`
	IsStartPositionVerified bool             `json:"is_start_position_verified"`
	IsEndPositionVerified   bool             `json:"is_end_position_verified"`
	WorkZoneType            string           `json:"work_zone_type,omitempty"`
	VehicleImpact           string           `json:"vehicle_impact"`
	LocationMethod          string           `json:"location_method"`
}

type coreDetails struct {
	EventType    string   `json:"event_type"`
	DataSourceID string   `json:"data_source_id"`
	RoadNames    []string `json:"road_names"`
	Direction    string   `json:"direction"`
	Description  string   `json:"description,omitempty"`
	CreationDate string   `json:"creation_date"`
	UpdateDate   string   `json:"update_date"`
}

type typeOfIncident struct {
	Category    string `json:"incident_category"`
	Type        string `json:"incident_type"`
	Description string `json:"description"`
}

// renderGeoJSON writes a WZDx work zone feed (our roadworks) or a TDx incident feed (crashes,
// stopped vehicles, gusts).
func renderGeoJSON(f Format, events []event.EventPublic, p Publisher) ([]byte, int, error) {
	feed := geoFeed{
		FeedInfo: feedInfo{
			Publisher: p.Name, Version: wzdxVersion, UpdateDate: p.Now.UTC().Format(time.RFC3339),
			DataSources: []dataSource{{ID: SourceID, OrganizationName: p.Name}},
		},
		Type:     "FeatureCollection",
		Features: make([]geoFeature, 0, len(events)),
	}
	if f == TDx {
		feed.FeedInfo.Version = tdxVersion
	}
	omitted := 0
	for i := range events {
		ev := &events[i]
		props := roadEvent{
			CoreDetails: coreDetails{
				DataSourceID: SourceID, RoadNames: []string{unnamedRoad}, Direction: cardinal(ev.Heading),
				Description: deref(ev.Description), CreationDate: seconds(ev.CreatedAt), UpdateDate: seconds(version(ev)),
			},
			StartDate: seconds(start(ev)), EndDate: seconds(ev.ExpiresAt),
			// Confirmed by the network: reporters beyond the publisher saw it.
			IsStartDateVerified: ev.Verification == "confirmed",
			// The event's own point was where a vehicle saw the hazard: a line's first
			// position, a drawn point line's last (line).
			IsStartPositionVerified: hasLine(ev), IsEndPositionVerified: !hasLine(ev),
			VehicleImpact: "unknown", LocationMethod: "other",
		}
		if ev.RoadRef != nil {
			props.CoreDetails.RoadNames = []string{*ev.RoadRef}
		}
		switch f {
		case WZDx:
			if ev.Type != "roadworks" {
				omitted++
				continue
			}
			props.CoreDetails.EventType = "work-zone"
			props.WorkZoneType = "static"
			if ev.Subtype != nil && *ev.Subtype == "mobile_crew" {
				props.WorkZoneType = "moving"
			}
		case TDx:
			code, ok := lookup(tdxIncidents, ev.Type, ev.Subtype)
			if !ok {
				omitted++
				continue
			}
			props.CoreDetails.EventType = "incident"
			props.TypesOfIncident = []typeOfIncident{{Category: code.Category, Type: code.Type, Description: typeDescription(ev)}}
		}
		var coords [][2]float64
		for _, pt := range line(ev) {
			coords = append(coords, [2]float64{pt.Lon, pt.Lat})
		}
		feed.Features = append(feed.Features, geoFeature{
			ID: ev.EventID, Type: "Feature", Properties: props, Geometry: geoLine{Type: "LineString", Coordinates: coords},
		})
	}
	b, err := json.Marshal(feed)
	return b, omitted, err
}

// typeDescription says what the event is in words: its description, else its type and subtype.
func typeDescription(ev *event.EventPublic) string {
	if ev.Description != nil {
		return *ev.Description
	}
	if ev.Subtype != nil {
		return ev.Type + " (" + *ev.Subtype + ")"
	}
	return ev.Type
}
