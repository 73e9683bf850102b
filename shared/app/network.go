package app

import (
	"context"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/verdict"
)

// newLedger builds the publishers' reputation ledger (docs/network.md §2) on the
// configuration's rules; a Deps built in code without them gets config.DefaultReputation.
func newLedger(d Deps) (*reputation.Ledger, error) {
	rules := d.Config.Reputation
	if rules == (config.Reputation{}) {
		rules = config.DefaultReputation
	}
	l, err := reputation.New(d.Table, reputation.Options{Clock: d.Clock, Rules: rules})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return l, nil
}

// newJudge builds the reputation rule's judge: it reads ledger, invalidates through events,
// writes in the organisations' audit log and e-mails their owners. Without a mailer the
// verdicts are carried out and their e-mails fail (logged).
func newJudge(d Deps, ledger *reputation.Ledger, og *orgs.Service, events verdict.Invalidator) (*verdict.Judge, error) {
	mailer := d.Mailer
	if mailer == nil {
		mailer = noMailer{}
	}
	j, err := verdict.New(verdict.Deps{
		Events: events, Audit: og.Audit(), Standings: ledger, Owners: og, Mailer: mailer,
		ConsoleURL: d.Config.ConsoleURL, Logger: d.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return j, nil
}

// invalidateFunc is a function as a verdict.Invalidator: the judge is built before the events
// store it invalidates through, since the store is built with the judge.
type invalidateFunc func(ctx context.Context, org, env string, since time.Time, reason string) (int, error)

// InvalidateOrg calls f.
func (f invalidateFunc) InvalidateOrg(ctx context.Context, org, env string, since time.Time, reason string) (int, error) {
	return f(ctx, org, env, since, reason)
}
