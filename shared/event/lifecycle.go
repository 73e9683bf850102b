package event

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Errors of the lifecycle. Match them with errors.Is.
var (
	// ErrOver is returned by Revise and Signal for an event that is expired (by time or by
	// deny quorum), invalidated or merged (docs/api.md §3, §7: 409). A late denial of an event
	// the quorum already cleared gets it too.
	ErrOver = errors.New("event: the event is no longer active")
	// ErrUnknownAction is returned by Signal for an action other than confirm or deny, which
	// validation (SignalInSchema) should have refused first.
	ErrUnknownAction = errors.New("event: unknown signal action")
	// ErrVoteMismatch is returned by Signal when the previous vote handed in belongs to
	// another reporter: a caller bug that would corrupt the tallies.
	ErrVoteMismatch = errors.New("event: previous vote belongs to another reporter")
)

// Revise applies a revision by the publisher at now (docs/api.md §3, §10.2) and returns the
// extent the event had before, which the area index and the stream's "updated" delta need
// (docs/api.md §10.2: a delta reaches subscribers of the old or the new extent).
//
// The revision is applied, not merged: lat and lon are replaced, and geometry, severity and
// subtype take the payload's values, an omitted one clearing the field (an omitted geometry
// collapses the event to its point). Type, created_at, client_event_id and the network-owned
// fields (tallies, status) do not change. expires_at goes to a full TTL capped at the
// ceiling, except for wrong_way_vehicle, which a publisher cannot extend (docs/api.md §3 table).
//
// Errors: ErrOver for an over state; schema.Errors (422) when the payload breaks a rule,
// the subtype under the stored type included. On error e is unchanged.
func (e *Event) Revise(in RevisionIn, now time.Time) (previous []geo.Point, err error) {
	if e.IsOver(now) {
		return nil, fmt.Errorf("revise %s: %w", e.ID, ErrOver)
	}
	if err := in.Validate(e.Type); err != nil {
		return nil, err
	}
	previous = e.Extent()
	in = in.Normalize()
	now = now.UTC()
	e.Lat, e.Lon = in.Lat, in.Lon
	e.Geometry = in.Geometry
	e.Severity = in.Severity
	e.Subtype = in.Subtype
	if taxonomy.ExtendsOnRevision(e.Type) {
		e.ExpiresAt = taxonomy.RevisedExpiry(e.Type, e.CreatedAt, now).UTC()
	}
	e.UpdatedAt = &now
	e.Version++
	return previous, nil
}

// Reporter returns the identity a signal counts under (docs/api.md §4.1 rule 6): the reporter_token
// when given, otherwise the organisation as a whole ("without it the whole organisation
// counts as one reporter"). The token is qualified by the organisation, so equal tokens of
// two organisations are two reporters. The form is org + "/" + token, or org + "/" for the
// organisation itself; a token never contains "/" (TokenPattern) and is never empty, so no
// two (org, token) pairs share an identity. The storage layer may use it as a key.
func Reporter(org string, token *string) string {
	if token == nil {
		return org + "/"
	}
	return org + "/" + *token
}

// ReporterOrg returns the organisation of a reporter identity (Reporter).
func ReporterOrg(reporter string) string {
	org, _, _ := strings.Cut(reporter, "/")
	return org
}

// Vote is one reporter's standing signal on one event (one per reporter, latest wins).
type Vote struct {
	// Reporter is the identity of Reporter.
	Reporter string `json:"reporter"`
	// Action is the reporter's latest action, ActionConfirm or ActionDeny.
	Action string `json:"action"`
	// Confirmed records that this reporter has confirmed the event at least once, so only a
	// reporter's first confirmation ever extends expiry (docs/api.md §2.1, §3), however often it
	// switches between deny and confirm.
	Confirmed bool `json:"confirmed"`
	// At is when Action was given. Where the reporter was is not kept: the history entry keeps
	// its distance from the event (docs/privacy.md §2).
	At time.Time `json:"at"`
}

// Outcome says what a signal did, for the storage layer (what to write) and the stream
// (which delta to send, docs/api.md §10.2).
type Outcome int

const (
	// Unchanged: the reporter repeated its standing action; nothing changes and nothing is
	// written (docs/api.md §3: "200, nothing changes").
	Unchanged Outcome = iota
	// Counted: the tallies changed, and expiry too for a first confirmation from a new
	// reporter; the stream sends a "signal" delta.
	Counted
	// Ended: the signal reached the deny quorum and the event is now expired; the stream
	// sends an "ended" delta.
	Ended
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Unchanged:
		return "unchanged"
	case Counted:
		return "counted"
	case Ended:
		return "ended"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Signal applies action (ActionConfirm or ActionDeny) from reporter (see Reporter) at now.
// prev is that reporter's standing vote on this event, nil if it never signalled it;
// position is the reporter's position, or nil. It returns the reporter's vote to store and
// what happened (docs/api.md §3, §10.2):
//
//   - an over event refuses the signal with ErrOver (409);
//   - the same action again changes nothing (Unchanged, prev returned as it was);
//   - a changed action moves the reporter from one tally to the other;
//   - a reporter's first confirmation ever extends expires_at to at least now + the type's
//     extension, capped at created_at + ceiling;
//   - a confirmation from a reporter of another organisation corroborates the event
//     (Corroborated, docs/network.md §2);
//   - when deny_count >= 3 and deny_count > confirm_count the event becomes expired with
//     expires_at = now (Ended); a signal never makes an event invalidated.
//
// On error e is unchanged.
func (e *Event) Signal(reporter string, prev *Vote, action string, now time.Time) (Vote, Outcome, error) {
	if action != ActionConfirm && action != ActionDeny {
		return Vote{}, Unchanged, fmt.Errorf("signal %s: %w %q", e.ID, ErrUnknownAction, action)
	}
	if prev != nil && prev.Reporter != reporter {
		return Vote{}, Unchanged, fmt.Errorf("signal %s by %s: %w (%s)", e.ID, reporter, ErrVoteMismatch, prev.Reporter)
	}
	if e.IsOver(now) {
		return Vote{}, Unchanged, fmt.Errorf("signal %s: %w", e.ID, ErrOver)
	}
	if prev != nil && prev.Action == action {
		return *prev, Unchanged, nil
	}
	now = now.UTC()
	vote := Vote{Reporter: reporter, Action: action, At: now}
	if prev != nil {
		vote.Confirmed = prev.Confirmed
		e.untally(prev.Action)
	}
	switch action {
	case ActionConfirm:
		e.ConfirmCount++
		if ReporterOrg(reporter) != e.Org {
			e.Corroborated = true
		}
		if !vote.Confirmed {
			vote.Confirmed = true
			e.ExpiresAt = taxonomy.ExtendedExpiry(e.Type, e.CreatedAt, e.ExpiresAt, now).UTC()
		}
	case ActionDeny:
		e.DenyCount++
	}
	e.Version++
	if e.DenyCount >= DenyQuorum && e.DenyCount > e.ConfirmCount {
		e.Status = StatusExpired
		e.ExpiresAt = now
		return vote, Ended, nil
	}
	return vote, Counted, nil
}

// untally withdraws a reporter's earlier action; a count never goes below zero, even if the
// stored tallies and votes disagree.
func (e *Event) untally(action string) {
	switch action {
	case ActionConfirm:
		e.ConfirmCount = max(0, e.ConfirmCount-1)
	case ActionDeny:
		e.DenyCount = max(0, e.DenyCount-1)
	}
}
