package event

import (
	"time"

	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// The evidence document (docs/network.md §4) explains an event's confidence to anyone who may
// read the event: who stands behind it, what happened to it and why it expires when it does.
// It never tells a reporter_token, another organisation's id or name, or a position: the
// caller's own organisation is "yours", every other one "another organisation", and
// positions are distances.

// Party values: whose act an entry records, as the caller may know it.
const (
	PartyYours   = "your_organisation"
	PartyAnother = "another_organisation"
)

// Expiry causes of EvidenceExpiry.
const (
	CausePublished    = "published"
	CauseConfirmation = "confirmation"
	CauseDuplicate    = "duplicate_merged"
	CauseRevision     = "revision"
	CauseDenyQuorum   = "deny_quorum"
	CauseMerged       = "merged"
	CauseClosed       = "closed"
	CauseInvalidated  = "invalidated"
)

// Evidence is the body of GET /v1/events/{event_id}/evidence.
type Evidence struct {
	EventID      string            `json:"event_id"`
	Status       string            `json:"status"`
	Confidence   float64           `json:"confidence"`
	Verification string            `json:"verification"`
	Reporters    EvidenceReporters `json:"reporters"`
	Timeline     []EvidenceStep    `json:"timeline"`
	// TimelineTruncated is set when only the newest MaxEvidenceEntries changes are listed.
	TimelineTruncated bool                `json:"timeline_truncated"`
	Duplicates        []EvidenceDuplicate `json:"duplicates"`
	Expiry            []EvidenceExpiry    `json:"expiry"`
	Publisher         EvidencePublisher   `json:"publisher"`
}

// MaxEvidenceEntries bounds the history an evidence document lists.
const MaxEvidenceEntries = 1000

// EvidenceReporters counts the reporters whose standing signals make the tallies.
type EvidenceReporters struct {
	Confirming int `json:"confirming"`
	Denying    int `json:"denying"`
	// Organisations is how many organisations those reporters belong to.
	Organisations int `json:"organisations"`
}

// EvidenceStep is one change of the event, oldest first.
type EvidenceStep struct {
	At     string `json:"at"`
	Kind   string `json:"kind"`
	Action string `json:"action,omitempty"`
	// By is PartyYours or PartyAnother for a signal or a merged duplicate.
	By        string   `json:"by,omitempty"`
	DistanceM *float64 `json:"distance_m"`
	// EventID is the duplicate merged in (kind duplicate), or the event this one was merged
	// into (kind merged).
	EventID string `json:"event_id,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// EvidenceDuplicate is another source's report merged into the event.
type EvidenceDuplicate struct {
	EventID   string   `json:"event_id"`
	MergedAt  string   `json:"merged_at"`
	DistanceM *float64 `json:"distance_m"`
	By        string   `json:"by"`
}

// EvidenceExpiry is one setting of expires_at and its cause, oldest first.
type EvidenceExpiry struct {
	At        string `json:"at"`
	ExpiresAt string `json:"expires_at"`
	Cause     string `json:"cause"`
}

// EvidencePublisher says who published the event, as the caller may know it, and the
// publisher's reputation band.
type EvidencePublisher struct {
	By         string `json:"by"`
	Reputation string `json:"reputation"`
}

// BuildEvidence assembles the evidence document of e for a caller of organisation viewer at
// now, from its standing votes and its history entries (oldest first); truncated says the
// history was cut to its newest entries. band is the publisher's reputation band.
func BuildEvidence(e Event, votes []Vote, history []Entry, truncated bool, viewer, band string, now time.Time) Evidence {
	party := func(org string) string {
		if org == viewer {
			return PartyYours
		}
		return PartyAnother
	}
	out := Evidence{
		EventID:           e.ID,
		Status:            e.StatusAt(now),
		Confidence:        Confidence(e.ConfirmCount, e.DenyCount),
		Verification:      Verification(e.ConfirmCount, e.DenyCount),
		Timeline:          []EvidenceStep{},
		TimelineTruncated: truncated,
		Duplicates:        []EvidenceDuplicate{},
		Expiry:            []EvidenceExpiry{{At: FormatTime(e.CreatedAt), ExpiresAt: FormatTime(taxonomy.InitialExpiry(e.Type, e.CreatedAt)), Cause: CausePublished}},
		Publisher:         EvidencePublisher{By: party(e.Org), Reputation: band},
	}
	orgs := map[string]bool{}
	for _, v := range votes {
		switch v.Action {
		case ActionConfirm:
			out.Reporters.Confirming++
		case ActionDeny:
			out.Reporters.Denying++
		default:
			continue
		}
		orgs[ReporterOrg(v.Reporter)] = true
	}
	out.Reporters.Organisations = len(orgs)
	for _, h := range history {
		step := EvidenceStep{At: FormatTime(h.At), Kind: h.Kind, Action: h.Action, DistanceM: h.Distance,
			EventID: h.Duplicate, Reason: h.Reason}
		if h.Reporter != "" {
			step.By = party(ReporterOrg(h.Reporter))
		}
		out.Timeline = append(out.Timeline, step)
		if h.Kind == EntryDuplicate {
			out.Duplicates = append(out.Duplicates, EvidenceDuplicate{EventID: h.Duplicate, MergedAt: step.At, DistanceM: h.Distance, By: step.By})
		}
		if !h.ExpiresAfter.Equal(h.ExpiresBefore) {
			out.Expiry = append(out.Expiry, EvidenceExpiry{At: step.At, ExpiresAt: FormatTime(h.ExpiresAfter), Cause: cause(h)})
		}
	}
	return out
}

// cause names why an entry moved expires_at.
func cause(h Entry) string {
	switch h.Kind {
	case EntrySignal:
		if h.Ended {
			return CauseDenyQuorum
		}
		return CauseConfirmation
	case EntryDuplicate:
		return CauseDuplicate
	case EntryRevision:
		return CauseRevision
	case EntryMerged:
		return CauseMerged
	case EntryClosed:
		return CauseClosed
	case EntryInvalidated:
		return CauseInvalidated
	}
	return h.Kind
}

// BandUnknown is the publisher's band when its standing cannot be told (no ledger).
const BandUnknown = "unknown"

// EvidenceBands are the bands the evidence document may name: those of the publisher's
// standing (docs/network.md §2, package reputation, which this package does not import; a test
// of eventstore keeps the two lists equal) and BandUnknown.
var EvidenceBands = []string{"new", "good", "fair", "poor", BandUnknown}

// EvidenceSchema describes Evidence in /openapi.json.
var EvidenceSchema = func() *schema.Schema {
	party := schema.Enum(PartyYours, PartyAnother)
	distance := schema.Number().OrNull().Describe("Metres from the reporter's position, or the duplicate's point, to the event; null when no position was given.")
	step := schema.Object(
		schema.Req("at", schema.DateTime()),
		schema.Req("kind", schema.Enum(EntrySignal, EntryDuplicate, EntryRevision, EntryMerged, EntryClosed, EntryInvalidated)),
		schema.Prop("action", schema.Enum(ActionConfirm, ActionDeny).Describe("Signals and merged duplicates.")),
		schema.Prop("by", party.Describe("Whose act: the caller's organisation or another one. Signals and merged duplicates.")),
		schema.Req("distance_m", distance),
		schema.Prop("event_id", schema.String().Describe("The duplicate merged in (duplicate), or the event this one was merged into (merged).")),
		schema.Prop("reason", schema.String().Describe("The verdict's reason (invalidated).")),
	).Named("EvidenceStep")
	return schema.Object(
		schema.Req("event_id", schema.String()),
		schema.Req("status", schema.Enum(StatusActive, StatusExpired, StatusInvalidated, StatusMerged)),
		schema.Req("confidence", schema.Number()),
		schema.Req("verification", schema.Enum(VerificationUnverified, VerificationConfirmed, VerificationDisputed)),
		schema.Req("reporters", schema.Object(
			schema.Req("confirming", schema.Integer().Describe("Distinct reporters whose standing signal is a confirmation.")),
			schema.Req("denying", schema.Integer().Describe("Distinct reporters whose standing signal is a denial.")),
			schema.Req("organisations", schema.Integer().Describe("How many organisations those reporters belong to.")),
		).Named("EvidenceReporters")),
		schema.Req("timeline", schema.Array(step).Describe("Every change of the event after its publication, oldest first.")),
		schema.Req("timeline_truncated", schema.Boolean().Describe("Only the newest 1000 changes are listed.")),
		schema.Req("duplicates", schema.Array(schema.Object(
			schema.Req("event_id", schema.String()),
			schema.Req("merged_at", schema.DateTime()),
			schema.Req("distance_m", distance),
			schema.Req("by", party),
		).Named("EvidenceDuplicate")).Describe("Reports of other sources merged into this event.")),
		schema.Req("expiry", schema.Array(schema.Object(
			schema.Req("at", schema.DateTime()),
			schema.Req("expires_at", schema.DateTime()),
			schema.Req("cause", schema.Enum(CausePublished, CauseConfirmation, CauseDuplicate, CauseRevision,
				CauseDenyQuorum, CauseMerged, CauseClosed, CauseInvalidated)),
		).Named("EvidenceExpiry")).Describe("Each setting of expires_at, oldest first, from publication on.")),
		schema.Req("publisher", schema.Object(
			schema.Req("by", party),
			schema.Req("reputation", schema.Enum(EvidenceBands...).
				Describe("The publisher's reputation band in the event's environment.")),
		).Named("EvidencePublisher")),
	).Named("EvidenceOut")
}()
