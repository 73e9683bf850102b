package event

import (
	"time"

	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// TokenPattern is the rule for subtype, client_event_id and reporter_token (docs/api.md §2.2, §8:
// 1..64 characters of [A-Za-z0-9_.:-]).
const TokenPattern = `^[A-Za-z0-9_.:-]{1,64}$`

// Limits of docs/api.md §2.2 and §8.
const (
	// MaxDescription is the longest description, in characters.
	MaxDescription = 280
	// MaxRoadRef is the longest road_ref, in characters.
	MaxRoadRef = 32
	// MinPoints and MaxPoints bound the positions of a LineString.
	MinPoints, MaxPoints = 2, 512
	// FutureSlack is how far ahead of the server's clock occurred_at may lie.
	FutureSlack = 300 * time.Second
)

// Severity values (docs/api.md §2.2); the publisher's own assessment, not part of the trust score.
const (
	SeverityLow    = "low"
	SeverityMedium = "medium"
	SeverityHigh   = "high"
)

// Signal actions (docs/api.md §2.5).
const (
	ActionConfirm = "confirm"
	ActionDeny    = "deny"
)

// GeometryType is the only geometry the service accepts (docs/api.md §2.2).
const GeometryType = "LineString"

// LineString is an event's extent beyond its point (docs/api.md §2.2). Coordinates are GeoJSON
// positions, [longitude, latitude]: the reverse of lat/lon everywhere else.
type LineString struct {
	Type        string       `json:"type"`
	Coordinates [][2]float64 `json:"coordinates"`
}

// EventIn is an event as published with POST /v1/events (docs/api.md §2.2). Optional fields are nil
// when absent or null; the two are the same thing on input.
type EventIn struct {
	Type          string      `json:"type"`
	Subtype       *string     `json:"subtype"`
	Lat           float64     `json:"lat"`
	Lon           float64     `json:"lon"`
	Geometry      *LineString `json:"geometry"`
	Heading       *int        `json:"heading"`
	RoadRef       *string     `json:"road_ref"`
	Severity      *string     `json:"severity"`
	Description   *string     `json:"description"`
	OccurredAt    *time.Time  `json:"occurred_at"`
	ClientEventID *string     `json:"client_event_id"`
	ReporterToken *string     `json:"reporter_token"`
}

// RevisionIn is the body of POST /v1/events/{event_id}/revisions (docs/api.md §2.4, §10.2): the
// five restatable fields. It is applied, not merged: an omitted optional field is cleared.
type RevisionIn struct {
	Lat      float64     `json:"lat"`
	Lon      float64     `json:"lon"`
	Geometry *LineString `json:"geometry"`
	Severity *string     `json:"severity"`
	Subtype  *string     `json:"subtype"`
}

// SignalIn is the body of POST /v1/events/{event_id}/signals (docs/api.md §2.5, §10.2). Lat and
// Lon are the reporter's position, both or neither.
type SignalIn struct {
	Action        string   `json:"action"`
	ReporterToken *string  `json:"reporter_token"`
	Lat           *float64 `json:"lat"`
	Lon           *float64 `json:"lon"`
}

// EventPublic is an event as returned (docs/api.md §2.3), fields in the documented order.
// Timestamps are already formatted (FormatTime) so every response carries the one format of
// docs/api.md §10.1. Nullable fields have no omitempty: an absent value is sent as null, as
// the documented "X or null" says.
type EventPublic struct {
	EventID           string      `json:"event_id"`
	SchemaVersion     int         `json:"schema_version"`
	Type              string      `json:"type"`
	Lat               float64     `json:"lat"`
	Lon               float64     `json:"lon"`
	Geometry          *LineString `json:"geometry"`
	Heading           *int        `json:"heading"`
	RoadRef           *string     `json:"road_ref"`
	Severity          *string     `json:"severity"`
	Description       *string     `json:"description"`
	OccurredAt        *string     `json:"occurred_at"`
	CreatedAt         string      `json:"created_at"`
	ExpiresAt         string      `json:"expires_at"`
	SourceKind        string      `json:"source_kind"`
	FeedID            *string     `json:"feed_id"`
	License           *string     `json:"license"`
	UpstreamUpdatedAt *string     `json:"upstream_updated_at"`
	FetchedAt         *string     `json:"fetched_at"`
	Status            string      `json:"status"`
	Verification      string      `json:"verification"`
	Confidence        float64     `json:"confidence"`
	ConfirmCount      int         `json:"confirm_count"`
	DenyCount         int         `json:"deny_count"`
	UpdatedAt         *string     `json:"updated_at"`
	MergedInto        *string     `json:"merged_into"`
	Environment       string      `json:"environment"`
	Subtype           *string     `json:"subtype"`
}

// Field schemas shared by several payloads.
var (
	token = func() *schema.Schema { return schema.String().Match(TokenPattern) }

	latitude  = func() *schema.Schema { return schema.Number().Range(-90, 90) }
	longitude = func() *schema.Schema { return schema.Number().Range(-180, 180) }

	// positionLatitude is the rule for the second member of a position. The schema package
	// has no tuple (prefixItems), so a position's members share one item schema with the
	// wider longitude bound, and the latitude bound is applied by this package's validation
	// (checkPositionLatitudes) with the same error type and loc Pydantic gives a
	// Tuple[Longitude, Latitude].
	positionLatitude = latitude()

	position = schema.Array(longitude()).Count(2, 2).Describe(
		"A GeoJSON position [longitude, latitude]: longitude -180..180, latitude -90..90.")

	severity = func() *schema.Schema {
		return schema.Enum(SeverityLow, SeverityMedium, SeverityHigh)
	}
)

// LineStringSchema declares LineString (docs/api.md §2.2): type constant "LineString" (the
// default), 2 to 512 positions.
var LineStringSchema = schema.Object(
	schema.Prop("type", schema.Const(GeometryType).WithDefault(GeometryType)),
	schema.Req("coordinates", schema.Array(position).Count(MinPoints, MaxPoints).Describe(
		"2 to 512 positions, each [longitude, latitude] (GeoJSON order, the reverse of lat/lon elsewhere).")),
).Named("LineString").Describe("A GeoJSON LineString: the event's extent beyond its point.")

// EventInSchema declares EventIn (docs/api.md §2.2). Unknown fields are rejected, environment
// included. The cross-field rules (geometry start, occurred_at slack, subtype under its type)
// are not expressible here; ValidateEventIn adds them.
var EventInSchema = schema.Object(
	schema.Req("type", schema.Enum(taxonomy.IDs()...).Describe("One of the event types of GET /v1/meta/event-types.")),
	schema.Prop("subtype", token().OrNull().Describe("A finer type; must belong to type (GET /v1/meta/taxonomy).")),
	schema.Req("lat", latitude().Describe("Latitude in decimal degrees; rounded to 5 decimals on write.")),
	schema.Req("lon", longitude().Describe("Longitude in decimal degrees; rounded to 5 decimals on write.")),
	// The extent; when present its first point must equal lat/lon. (A named schema is a $ref
	// where it is used, so a description here would only make a second "LineString".)
	schema.Prop("geometry", LineStringSchema.OrNull()),
	schema.Prop("heading", schema.Integer().Range(0, 359).OrNull().Describe(
		"Direction of travel of the drivers at risk, degrees 0..359 (for a wrong-way vehicle: of the oncoming traffic).")),
	schema.Prop("road_ref", schema.String().MaxLen(MaxRoadRef).OrNull().Describe("Road reference, for example A9.")),
	schema.Prop("severity", severity().OrNull().Describe("The publisher's own assessment.")),
	schema.Prop("description", schema.String().MaxLen(MaxDescription).OrNull().Describe("Free text; an aid only.")),
	schema.Prop("occurred_at", schema.DateTime().OrNull().Describe(
		"When it happened; must carry a time zone and lie at most 300 s in the future.")),
	schema.Prop("client_event_id", token().OrNull().Describe(
		"Idempotency key: the same key from the same organisation always names the same event.")),
	schema.Prop("reporter_token", token().OrNull().Describe("Identifies the reporting vehicle.")),
).Named("EventIn").Describe("A road event as published.")

// RevisionInSchema declares RevisionIn (docs/api.md §2.4, §10.2).
var RevisionInSchema = schema.Object(
	schema.Req("lat", latitude().Describe("Latitude in decimal degrees.")),
	schema.Req("lon", longitude().Describe("Longitude in decimal degrees.")),
	// The new extent; omitted or null collapses the event to its point. Its first point must
	// equal lat/lon. (Not a Describe: see EventInSchema's geometry.)
	schema.Prop("geometry", LineStringSchema.OrNull()),
	schema.Prop("severity", severity().OrNull().Describe("Omitted or null clears it.")),
	schema.Prop("subtype", token().OrNull().Describe("Must belong to the event's stored type; omitted or null clears it.")),
).Named("RevisionIn").Describe("A restatement of an event by its publisher; omitted fields are cleared.")

// SignalInSchema declares SignalIn (docs/api.md §2.5, §10.2).
var SignalInSchema = schema.Object(
	schema.Req("action", schema.Enum(ActionConfirm, ActionDeny)),
	schema.Prop("reporter_token", token().OrNull().Describe(
		"Identifies one vehicle; without it the whole organisation counts as one reporter.")),
	schema.Prop("lat", latitude().OrNull().Describe("Reporter latitude; give lat and lon together or neither.")),
	schema.Prop("lon", longitude().OrNull().Describe("Reporter longitude; give lat and lon together or neither.")),
).Named("SignalIn").Describe("A confirmation or denial of an event by a vehicle.")

// EventPublicSchema declares EventPublic (docs/api.md §2.3). Vocabularies that grow (type, subtype,
// status, verification, source_kind) are plain strings, not enums: EventPublic is additive
// forever (docs/api.md §9 rule 2) and a client must meet an unknown value without failing.
var EventPublicSchema = schema.Object(
	schema.Req("event_id", schema.String().Describe("ev_ followed by 26 characters of lower-case base32.")),
	schema.Req("schema_version", schema.Integer().Describe("1.")),
	schema.Req("type", schema.String().Describe("Open vocabulary: a client treats an unknown type as opaque.")),
	schema.Req("lat", schema.Number()),
	schema.Req("lon", schema.Number()),
	schema.Prop("geometry", LineStringSchema.OrNull()),
	schema.Prop("heading", schema.Integer().OrNull()),
	schema.Prop("road_ref", schema.String().OrNull()),
	schema.Prop("severity", schema.String().OrNull().Describe("low, medium or high.")),
	schema.Prop("description", schema.String().OrNull()),
	schema.Prop("occurred_at", schema.DateTime().OrNull()),
	schema.Req("created_at", schema.DateTime()),
	schema.Req("expires_at", schema.DateTime()),
	schema.Req("source_kind", schema.String().Describe("publisher or feed.")),
	schema.Prop("feed_id", schema.String().OrNull()),
	schema.Prop("license", schema.String().OrNull()),
	schema.Prop("upstream_updated_at", schema.DateTime().OrNull()),
	schema.Prop("fetched_at", schema.DateTime().OrNull()),
	schema.Req("status", schema.String().Describe("active, expired, invalidated or merged.")),
	schema.Req("verification", schema.String().Describe("unverified, confirmed or disputed.")),
	schema.Req("confidence", schema.Number().Range(0, 1).Describe("(confirm_count + 2) / (confirm_count + deny_count + 3), 3 decimals.")),
	schema.Req("confirm_count", schema.Integer().Min(0)),
	schema.Req("deny_count", schema.Integer().Min(0)),
	schema.Prop("updated_at", schema.DateTime().OrNull().Describe("When the publisher last revised the event.")),
	schema.Prop("merged_into", schema.String().OrNull()),
	schema.Prop("environment", schema.String().WithDefault(EnvironmentLive).Describe("live or sandbox.")),
	schema.Prop("subtype", schema.String().OrNull()),
).Named("EventPublic").Describe("A road event as returned.")
