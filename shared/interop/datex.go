package interop

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/roadevents/roadevents/shared/event"
)

// DATEX II v3 in JSON, as its schema generator writes it: keys prefixed with their namespace
// (sit, loc), attributes with a G suffix, enumerations as {"value": ...} (docs/interop.md §6).

type datexDocument struct {
	Payload datexPayload `json:"payload"`
}

type datexPayload struct {
	ModelBaseVersion string           `json:"modelBaseVersionG"`
	ProfileName      string           `json:"profileNameG"`
	Publication      datexPublication `json:"sitSituationPublication"`
}

type datexPublication struct {
	Lang            string           `json:"lang"`
	PublicationTime string           `json:"publicationTime"`
	Creator         datexCreator     `json:"publicationCreator"`
	Situations      []datexSituation `json:"situation"`
}

type datexCreator struct {
	Country            string `json:"country"`
	NationalIdentifier string `json:"nationalIdentifier"`
}

type datexSituation struct {
	ID      string                      `json:"idG"`
	Header  datexHeader                 `json:"headerInformation"`
	Records []map[string]map[string]any `json:"situationRecord"`
}

type datexHeader struct {
	InformationStatus datexValue `json:"informationStatus"`
}

type datexValue struct {
	Value string `json:"value"`
}

// probability is DATEX II's probabilityOfOccurrence of an event's verification.
var probability = map[string]string{"confirmed": "certain", "unverified": "probable", "disputed": "riskOf"}

// renderDATEX writes a situation publication of the SRTI profile: one situation per event,
// holding one record of the class its type maps to, located by datexLocation. A sandbox event
// is marked as test information.
func renderDATEX(events []event.EventPublic, p Publisher) ([]byte, int, error) {
	pub := datexPublication{
		Lang: "en", PublicationTime: p.Now.UTC().Format(time.RFC3339),
		Creator:    datexCreator{Country: p.Country, NationalIdentifier: SourceID},
		Situations: make([]datexSituation, 0, len(events)),
	}
	omitted := 0
	for i := range events {
		ev := &events[i]
		rec, ok := lookup(datexRecords, ev.Type, ev.Subtype)
		if !ok {
			omitted++
			continue
		}
		var kind any = datexValue{rec.Value}
		if rec.List {
			kind = []datexValue{{rec.Value}}
		}
		record := map[string]any{
			"idG": ev.EventID,
			// The Unix second of the last change: it grows with each revision.
			"versionG":                    strconv.FormatInt(parseTime(version(ev)).Unix(), 10),
			"situationRecordCreationTime": seconds(ev.CreatedAt),
			"situationRecordVersionTime":  seconds(version(ev)),
			"probabilityOfOccurrence":     datexValue{probability[ev.Verification]},
			rec.Member:                    kind,
			"validity": map[string]any{
				"validityStatus": datexValue{"definedByValidityTimeSpec"},
				"validityTimeSpecification": map[string]string{
					"overallStartTime": seconds(start(ev)), "overallEndTime": seconds(ev.ExpiresAt),
				},
			},
			"locationReference": datexLocation(ev),
		}
		status := "real"
		if ev.Environment == "sandbox" {
			status = "test"
		}
		pub.Situations = append(pub.Situations, datexSituation{
			ID: ev.EventID, Header: datexHeader{InformationStatus: datexValue{status}},
			Records: []map[string]map[string]any{{"sit" + rec.Class: record}},
		})
	}
	b, err := json.Marshal(datexDocument{Payload: datexPayload{ModelBaseVersion: "3", ProfileName: "SRTI", Publication: pub}})
	return b, omitted, err
}

// datexLocation is a line event's GML line string (posList: "lat lon" pairs, with the event's
// point for display), or a point event's point with its heading as bearing.
func datexLocation(ev *event.EventPublic) map[string]any {
	at := map[string]float64{"latitude": ev.Lat, "longitude": ev.Lon}
	if hasLine(ev) {
		return map[string]any{"locLinearLocation": map[string]any{
			"coordinatesForDisplay": at,
			"gmlLineString":         map[string]any{"srsDimension": 2, "posList": latLonList(line(ev))},
		}}
	}
	point := map[string]any{"pointCoordinates": at}
	if ev.Heading != nil {
		point["bearing"] = *ev.Heading
	}
	return map[string]any{"locPointLocation": map[string]any{"pointByCoordinates": point}}
}
