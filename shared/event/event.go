// Package event is the domain of road events, pure and without I/O: the payloads and their
// validation (docs/api.md §2.2-§2.5, §10.1 and §10.2), the stored event and how it is shown
// (docs/api.md §2.3), its lifecycle (docs/api.md §3: expiry, extension by confirmation, deny
// quorum, revision), confidence and verification, and event ids.
//
// Storage, HTTP and streaming sit on top of it: a handler validates a payload
// (ValidateEventIn or EventIn.Validate), builds or loads an Event, calls New, Revise or
// Signal with the clock's now, writes the result conditioned on Version, and answers with
// Public(now).
package event

import (
	"math"
	"time"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// SchemaVersion is the schema_version of every EventPublic (docs/api.md §10.2, §9 rule 2).
const SchemaVersion = 1

// Status values (docs/api.md §10.2). Only StatusActive is served by area queries and streams; the
// others are over states, still readable by id (docs/api.md §3).
const (
	StatusActive      = "active"
	StatusExpired     = "expired"
	StatusInvalidated = "invalidated"
	StatusMerged      = "merged"
)

// Verification values (docs/api.md §10.2).
const (
	// VerificationUnverified: no signal yet.
	VerificationUnverified = "unverified"
	// VerificationConfirmed: more confirmations than denials.
	VerificationConfirmed = "confirmed"
	// VerificationDisputed: at least one denial and no more confirmations than denials.
	VerificationDisputed = "disputed"
)

// Source kinds (docs/api.md §10.2).
const (
	// SourcePublisher is an event published through POST /v1/events.
	SourcePublisher = "publisher"
	// SourceFeed is an event imported from an upstream open-data feed.
	SourceFeed = "feed"
)

// Environments (docs/api.md §1): every credential, and so every event, belongs to one.
const (
	EnvironmentLive    = "live"
	EnvironmentSandbox = "sandbox"
)

// DenyQuorum is the number of denials that, when they also outnumber the confirmations,
// end an event (docs/api.md §10.2).
const DenyQuorum = 3

// Event is everything stored about one event. The JSON tags are its stored form (the
// storage layer may map them onto its own attributes); the public form is Public.
// Timestamps are kept in UTC.
type Event struct {
	ID          string `json:"event_id"`
	Org         string `json:"org_id"`      // the publishing organisation, from its credential (docs/api.md §1)
	Environment string `json:"environment"` // inherited from the publishing credential (docs/api.md §1)
	SourceKind  string `json:"source_kind"`

	Type          string      `json:"type"`
	Subtype       *string     `json:"subtype,omitempty"`
	Lat           float64     `json:"lat"`
	Lon           float64     `json:"lon"`
	Geometry      *LineString `json:"geometry,omitempty"`
	Heading       *int        `json:"heading,omitempty"`
	RoadRef       *string     `json:"road_ref,omitempty"`
	Severity      *string     `json:"severity,omitempty"`
	Description   *string     `json:"description,omitempty"`
	OccurredAt    *time.Time  `json:"occurred_at,omitempty"`
	ClientEventID *string     `json:"client_event_id,omitempty"`
	ReporterToken *string     `json:"reporter_token,omitempty"`

	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"` // the last revision (docs/api.md §2.3)

	// Status is the stored status; StatusAt(now) is the one to show (an active event whose
	// expiry has passed is expired without any sweeper).
	Status       string  `json:"status"`
	ConfirmCount int     `json:"confirm_count"`
	DenyCount    int     `json:"deny_count"`
	MergedInto   *string `json:"merged_into,omitempty"`
	// Corroborated records that a reporter of another organisation confirmed the event, or
	// that another source's report was merged into it: it counts for its publisher's
	// reputation (docs/network.md §2).
	Corroborated bool `json:"corroborated,omitempty"`
	// SealedReporters: the votes on the event are keyed by sealed reporter tokens (set by New;
	// events of versions before have none under a token as sent, docs/privacy.md §2).
	SealedReporters bool `json:"sealed_reporters,omitempty"`

	// Feed provenance, set only for SourceFeed events (docs/api.md §10.2).
	FeedID            *string    `json:"feed_id,omitempty"`
	License           *string    `json:"license,omitempty"`
	UpstreamUpdatedAt *time.Time `json:"upstream_updated_at,omitempty"`
	FetchedAt         *time.Time `json:"fetched_at,omitempty"`

	// Published is the content as first published, normalised. An idempotent replay is
	// compared with it, not with the current fields: after a revision, resending the
	// original publication is still the 200 path the retry rules of docs/api.md §7 promise.
	Published *EventIn `json:"published,omitempty"`

	// Version counts the changes made through New, Revise and Signal, for optimistic
	// concurrency: the storage layer writes a change on condition that the stored Version
	// is the one it read.
	Version int64 `json:"version"`
}

// New builds the event published as in by organisation org in environment env, with id
// (NewID or DerivedID) at now. in must have passed Validate; New normalises it (docs/api.md §2.2).
// Expiry is the type's default TTL (docs/api.md §2.1).
func New(in EventIn, org, env, id string, now time.Time) Event {
	in = in.Normalize()
	now = now.UTC()
	published := in.Normalize() // a second copy, sharing no memory with the live fields
	return Event{
		ID:              id,
		Org:             org,
		Environment:     env,
		SourceKind:      SourcePublisher,
		Type:            in.Type,
		Subtype:         in.Subtype,
		Lat:             in.Lat,
		Lon:             in.Lon,
		Geometry:        in.Geometry,
		Heading:         in.Heading,
		RoadRef:         in.RoadRef,
		Severity:        in.Severity,
		Description:     in.Description,
		OccurredAt:      in.OccurredAt,
		ClientEventID:   in.ClientEventID,
		ReporterToken:   in.ReporterToken,
		CreatedAt:       now,
		ExpiresAt:       taxonomy.InitialExpiry(in.Type, now).UTC(),
		Status:          StatusActive,
		Published:       &published,
		Version:         1,
		SealedReporters: true,
	}
}

// StatusAt is the status to show at now: an event stored as active whose expires_at has been
// reached is expired (docs/api.md §3: "expires_at reached"), whether or not a sweeper has run.
func (e Event) StatusAt(now time.Time) string {
	if e.Status == StatusActive && !now.Before(e.ExpiresAt) {
		return StatusExpired
	}
	return e.Status
}

// IsOver reports whether the event is in an over state at now (expired, by time or by deny
// quorum, invalidated or merged), in which signals and revisions are refused with 409
// (docs/api.md §3).
func (e Event) IsOver(now time.Time) bool { return e.StatusAt(now) != StatusActive }

// Extent returns the points an event covers: its geometry's positions, or its point alone.
// Distances (docs/api.md §4.1) and the area index are computed on it.
func (e Event) Extent() []geo.Point { return extent(e.Lat, e.Lon, e.Geometry) }

func extent(lat, lon float64, g *LineString) []geo.Point {
	if g == nil || len(g.Coordinates) == 0 {
		return []geo.Point{{Lat: lat, Lon: lon}}
	}
	pts := make([]geo.Point, len(g.Coordinates))
	for i, c := range g.Coordinates {
		pts[i] = geo.Point{Lat: c[1], Lon: c[0]}
	}
	return pts
}

// Confidence is the trust score of docs/api.md §10.2: (confirm + 2) / (confirm + deny + 3),
// rounded to 3 decimals; a fresh event has 0.667.
func Confidence(confirm, deny int) float64 {
	c := float64(confirm+2) / float64(confirm+deny+3)
	return math.Round(c*1000) / 1000
}

// Verification names the state of the tallies (docs/api.md §10.2).
func Verification(confirm, deny int) string {
	switch {
	case confirm == 0 && deny == 0:
		return VerificationUnverified
	case confirm > deny:
		return VerificationConfirmed
	default:
		return VerificationDisputed
	}
}

// Public returns the event as served at now (docs/api.md §2.3). The network-owned fields (status,
// verification, confidence, tallies) are computed here, so they cannot be set by anyone.
func (e Event) Public(now time.Time) EventPublic {
	env := e.Environment
	if env == "" {
		env = EnvironmentLive // docs/api.md §2.3: environment defaults to live
	}
	source := e.SourceKind
	if source == "" {
		source = SourcePublisher
	}
	return EventPublic{
		EventID:           e.ID,
		SchemaVersion:     SchemaVersion,
		Type:              e.Type,
		Lat:               e.Lat,
		Lon:               e.Lon,
		Geometry:          e.Geometry.clone(),
		Heading:           clonePtr(e.Heading),
		RoadRef:           clonePtr(e.RoadRef),
		Severity:          clonePtr(e.Severity),
		Description:       clonePtr(e.Description),
		OccurredAt:        formatTimePtr(e.OccurredAt),
		CreatedAt:         FormatTime(e.CreatedAt),
		ExpiresAt:         FormatTime(e.ExpiresAt),
		SourceKind:        source,
		FeedID:            clonePtr(e.FeedID),
		License:           clonePtr(e.License),
		UpstreamUpdatedAt: formatTimePtr(e.UpstreamUpdatedAt),
		FetchedAt:         formatTimePtr(e.FetchedAt),
		Status:            e.StatusAt(now),
		Verification:      Verification(e.ConfirmCount, e.DenyCount),
		Confidence:        Confidence(e.ConfirmCount, e.DenyCount),
		ConfirmCount:      e.ConfirmCount,
		DenyCount:         e.DenyCount,
		UpdatedAt:         formatTimePtr(e.UpdatedAt),
		MergedInto:        clonePtr(e.MergedInto),
		Environment:       env,
		Subtype:           clonePtr(e.Subtype),
	}
}
