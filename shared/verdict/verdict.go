// Package verdict ends the active events of a publisher on a verdict about it
// (docs/network.md §2): the invalidated status of docs/api.md §3, which no signal produces. A
// verdict comes one of two ways:
//
//   - an operator's, through `roadevents invalidate` (Operator): no threshold, the operator's
//     reason;
//   - the reputation rule's (Judge): told by the events store of every event ended by deny
//     quorum, the Judge reads its publisher's standing, and while it is poor invalidates the
//     publisher's active events in that environment. The publisher's owners are e-mailed when
//     it falls into poor, not at every later deny end while it stays there.
//
// Either way the organisation's audit log gets an ActionEventsInvalidated entry.
package verdict

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/audit"
)

// ActionEventsInvalidated is the audit action of a verdict: detail holds the environment, the
// count of events invalidated, the reason and the since time (null for every active event).
const ActionEventsInvalidated = "events.invalidated"

// The actors a verdict's audit entry names as actor_user_id: no user of the console makes one.
const (
	// ActorOperator is the operator's command.
	ActorOperator = "operator"
	// ActorSystem is the service itself, applying the reputation rule.
	ActorSystem = "system"
)

// MaxReasonLen is the longest reason, in characters: it is kept in each event's history and
// the audit log.
const MaxReasonLen = 300

// ErrInvalid is returned for a verdict that cannot be carried out as asked: no organisation,
// an unknown environment, a reason empty, too long or holding control characters.
var ErrInvalid = errors.New("verdict: invalid verdict")

// Invalidator ends a publisher's active events: every one org published in env at or after
// since (the zero time: every one), with reason; it returns how many it ended, also when it
// fails part way. The events store is one.
type Invalidator interface {
	InvalidateOrg(ctx context.Context, org, env string, since time.Time, reason string) (int, error)
}

// Recorder writes in an organisation's audit log; *audit.Log is one.
type Recorder interface {
	Record(ctx context.Context, orgID, action, actorUserID, actorEmail, target string, detail map[string]any) error
}

var _ Recorder = (*audit.Log)(nil)

// Operator carries out an operator's verdict: no threshold, no e-mail. Both fields are
// required.
type Operator struct {
	Events Invalidator
	Audit  Recorder
}

// Invalidate invalidates the active events of org in env created at or after since (the
// zero time: every one) for reason, records it in the organisation's audit log (actor
// ActorOperator), even when nothing was active, and returns how many events it invalidated.
// A call that fails part way records what it did.
func (o Operator) Invalidate(ctx context.Context, org, env string, since time.Time, reason string) (int, error) {
	if err := Check(org, env, reason); err != nil {
		return 0, err
	}
	n, err := o.Events.InvalidateOrg(ctx, org, env, since, reason)
	if err != nil {
		err = fmt.Errorf("verdict: invalidate the events of %s in %s (%d invalidated before the failure): %w", org, env, n, err)
		if n == 0 {
			return 0, err
		}
	}
	if aerr := recordEntry(ctx, o.Audit, ActorOperator, org, env, n, since, reason, nil); aerr != nil {
		err = errors.Join(err, aerr)
	}
	return n, err
}

// Check refuses a verdict that cannot be carried out (ErrInvalid), before anything is
// changed.
func Check(org, env, reason string) error {
	switch {
	case org == "":
		return fmt.Errorf("%w: no organisation", ErrInvalid)
	case !apikey.ValidEnvironment(env):
		return fmt.Errorf("%w: environment %q, want %s or %s", ErrInvalid, env, apikey.Live, apikey.Sandbox)
	case strings.TrimSpace(reason) == "":
		return fmt.Errorf("%w: no reason", ErrInvalid)
	case utf8.RuneCountInString(reason) > MaxReasonLen:
		return fmt.Errorf("%w: a reason of %d characters, want at most %d", ErrInvalid, utf8.RuneCountInString(reason), MaxReasonLen)
	case strings.IndexFunc(reason, unicode.IsControl) >= 0 || !utf8.ValidString(reason):
		return fmt.Errorf("%w: the reason holds control characters", ErrInvalid)
	}
	return nil
}

// recordEntry writes the audit entry of a verdict that invalidated n events of org in env;
// extra adds to the entry's detail.
func recordEntry(ctx context.Context, log Recorder, actor, org, env string, n int, since time.Time, reason string, extra map[string]any) error {
	detail := map[string]any{"environment": env, "count": n, "reason": reason, "since": nil}
	if !since.IsZero() {
		detail["since"] = since.UTC().Format(time.RFC3339)
	}
	for k, v := range extra {
		detail[k] = v
	}
	if err := log.Record(ctx, org, ActionEventsInvalidated, actor, "", "", detail); err != nil {
		return fmt.Errorf("verdict: record the invalidation of %d events of %s in %s: %w", n, org, env, err)
	}
	return nil
}
