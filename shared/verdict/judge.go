package verdict

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
)

// Standings reads publishers' standings and keeps which are poor; *reputation.Ledger is one.
type Standings interface {
	Standing(ctx context.Context, org, env string) (reputation.Standing, error)
	// Record keeps whether s is poor and reports whether org just fell into poor.
	Record(ctx context.Context, org, env string, s reputation.Standing) (crossed bool, err error)
	Rules() config.Reputation
}

// Owners finds an organisation and its owners' addresses; *orgs.Service is one.
type Owners interface {
	Owners(ctx context.Context, orgID string) (orgs.Organisation, []string, error)
}

var (
	_ Standings = (*reputation.Ledger)(nil)
	_ Owners    = (*orgs.Service)(nil)
)

// Deps is what a Judge is built from.
type Deps struct {
	// Events, Audit, Standings, Owners and Mailer are required.
	Events    Invalidator
	Audit     Recorder
	Standings Standings
	Owners    Owners
	Mailer    mail.Mailer
	// ConsoleURL is where the console is served, ending in "/"; the e-mail links to the
	// organisation's quality panel under it. No link when empty.
	ConsoleURL string
	// Issuer names the service in e-mails; consoleauth.DefaultIssuer when empty.
	Issuer string
	// Logger receives what Denied cannot return: failures, and each verdict. slog.Default()
	// when nil.
	Logger *slog.Logger
}

// Judge applies the reputation rule (docs/network.md §2). It is the events store's Judge:
// Denied runs after each deny-quorum end is stored. It is safe for concurrent use.
type Judge struct {
	d Deps
}

// New returns the judge of d.
func New(d Deps) (*Judge, error) {
	if d.Events == nil || d.Audit == nil || d.Standings == nil || d.Owners == nil || d.Mailer == nil {
		return nil, fmt.Errorf("%w: Events, Audit, Standings, Owners and Mailer are required", ErrInvalid)
	}
	if d.Issuer == "" {
		d.Issuer = consoleauth.DefaultIssuer
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Judge{d: d}, nil
}

// Denied judges org in env after one of its events was ended by deny quorum. While its
// standing is poor, every active event it has in env is invalidated, at this deny end and at
// each later one; its owners are e-mailed when it falls into poor. It reports failures to the
// log: the deny end is stored whatever happens here, and the next one judges again.
//
// The verdict runs to its end even if the caller's request is cancelled (the signalling
// client hanging up): a verdict half done would leave some of the publisher's events standing
// until the next deny end.
func (j *Judge) Denied(ctx context.Context, org, env string) {
	ctx = context.WithoutCancel(ctx)
	log := j.d.Logger.With("org_id", org, "environment", env)
	s, err := j.d.Standings.Standing(ctx, org, env)
	if err != nil {
		log.Error("verdict: read the publisher's standing", "error", err.Error())
		return
	}
	if s.Band != reputation.BandPoor {
		// Not poor (any more): the next fall is news again.
		if _, err := j.d.Standings.Record(ctx, org, env, s); err != nil {
			log.Error("verdict: record the publisher's standing", "error", err.Error())
		}
		return
	}
	rules := j.d.Standings.Rules()
	reason := fmt.Sprintf("reputation: %d of the %d decided events of the last %d days were ended by deny quorum (verdict at %d %%)",
		s.Against, s.Decided, rules.WindowDays, rules.VerdictPercent)
	// The mark is written after the invalidation succeeded, so a failed one is tried again,
	// with its e-mail, at the next deny end.
	n, err := j.d.Events.InvalidateOrg(ctx, org, env, time.Time{}, reason)
	if err != nil {
		log.Error("verdict: invalidate the publisher's events", "invalidated", n, "error", err.Error())
		j.record(ctx, log, org, env, n, reason, s, rules, false)
		return
	}
	crossed, err := j.d.Standings.Record(ctx, org, env, s)
	if err != nil {
		log.Error("verdict: mark the publisher poor", "error", err.Error())
	}
	j.record(ctx, log, org, env, n, reason, s, rules, crossed)
	log.Info("verdict: invalidated a publisher's events", "invalidated", n, "fell", crossed,
		"for", s.For, "against", s.Against)
	if crossed {
		j.notify(ctx, log, org, env, n, s, rules)
	}
}

// record writes the audit entry of a verdict that invalidated events or is a fall.
func (j *Judge) record(ctx context.Context, log *slog.Logger, org, env string, n int, reason string,
	s reputation.Standing, rules config.Reputation, fell bool) {
	if n == 0 && !fell {
		return
	}
	err := recordEntry(ctx, j.d.Audit, ActorSystem, org, env, n, time.Time{}, reason, map[string]any{
		"for": s.For, "against": s.Against, "decided": s.Decided,
		"window_days": rules.WindowDays, "verdict_percent": rules.VerdictPercent,
	})
	if err != nil {
		log.Error("verdict: record the invalidation", "invalidated", n, "error", err.Error())
	}
}

// notify e-mails the organisation's owners that it fell into poor. Failures are logged.
func (j *Judge) notify(ctx context.Context, log *slog.Logger, org, env string, n int, s reputation.Standing, rules config.Reputation) {
	o, owners, err := j.d.Owners.Owners(ctx, org)
	if err != nil {
		log.Error("verdict: find the owners to notify", "error", err.Error())
		return
	}
	text := fmt.Sprintf("The road events of your organisation %q in the %s environment are no longer accepted on %s.\n\n"+
		"Of its %d events of the last %d days whose outcome the network decided, %d were ended because "+
		"other reporters denied them, and %d were confirmed by other organisations. The threshold is %d %%.\n\n"+
		"%d active events of the organisation in %s were invalidated. While its standing stays at this level, "+
		"each further event of it that other reporters deny invalidates its active events in %s again.\n\n"+
		"The standing recovers as the events ended by denial leave the %d-day window and as other organisations "+
		"confirm its events.\n",
		o.Name, env, j.d.Issuer, s.Decided, rules.WindowDays, s.Against, s.For, rules.VerdictPercent, n, env, env, rules.WindowDays)
	if j.d.ConsoleURL != "" {
		text += fmt.Sprintf("\nThe quality panel of the console shows the standing:\n\n    %sorgs/%s/quality\n", j.d.ConsoleURL, url.PathEscape(org))
	}
	// The subject never holds the organisation's name (free text, and subjects are logged).
	subject := fmt.Sprintf("Your %s events were invalidated on %s", env, j.d.Issuer)
	for _, addr := range owners {
		if err := j.d.Mailer.Send(ctx, mail.Message{To: addr, Subject: subject, Text: text}); err != nil {
			log.Error("verdict: notify an owner", "error", err.Error())
		}
	}
}
