package reputation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/store"
)

// Bands of a standing (docs/network.md §2), from the deployment's rules.
const (
	// BandNew is a publisher with fewer decided events in the window than the minimum history:
	// too little to judge.
	BandNew = "new"
	// BandGood is a score of at least GoodPercent.
	BandGood = "good"
	// BandFair is between good and poor.
	BandFair = "fair"
	// BandPoor is a share of deny-quorum ends at or above the verdict threshold: the band of a
	// publisher whose active events are invalidated.
	BandPoor = "poor"
)

// Bands lists the bands, best first.
var Bands = []string{BandGood, BandFair, BandPoor, BandNew}

// GoodPercent is the score, in percent of decided events corroborated, from which a standing
// is good. The verdict threshold is at least config.MinVerdictPercent of deny-quorum ends, a
// score of at most 50 %, so good and poor never meet.
const GoodPercent = 80

// ErrInvalid is returned for a request the ledger cannot answer: no organisation, an unknown
// environment, or rules outside config's bounds.
var ErrInvalid = errors.New("reputation: invalid request")

// Standing is a publisher's record in one environment over the window.
type Standing struct {
	// For counts its corroborated events, Against those ended by deny quorum.
	For     int64 `json:"for"`
	Against int64 `json:"against"`
	// Decided is For + Against: the events whose outcome the network decided.
	Decided int64 `json:"decided"`
	// Score is the share of decided events corroborated, 0..1; nil when none was decided.
	Score *float64 `json:"score,omitempty"`
	Band  string   `json:"band"`
}

// Assess draws the standing from a publisher's counts under rules. The comparisons are made
// in whole numbers, so a share exactly at the threshold is poor.
func Assess(t Tally, rules config.Reputation) Standing {
	s := Standing{For: max(0, t.For), Against: max(0, t.Against)}
	s.Decided = s.For + s.Against
	if s.Decided > 0 {
		score := float64(s.For) / float64(s.Decided)
		s.Score = &score
	}
	switch {
	case s.Decided < int64(rules.MinHistory):
		s.Band = BandNew
	case s.Against*100 >= int64(rules.VerdictPercent)*s.Decided:
		s.Band = BandPoor
	case s.For*100 >= GoodPercent*s.Decided:
		s.Band = BandGood
	default:
		s.Band = BandFair
	}
	return s
}

// Options configure a Ledger.
type Options struct {
	// Clock decides which days the window holds; clock.System when nil. Give the table's.
	Clock clock.Clock
	// Rules are the deployment's thresholds (config.Reputation); they must pass its Validate.
	Rules config.Reputation
}

// Ledger reads publishers' standings from the daily counts, and keeps which publishers are
// poor, so that a verdict's notice goes out once per fall (Record). It is safe for
// concurrent use.
type Ledger struct {
	table store.Table
	clock clock.Clock
	rules config.Reputation
}

// New returns the ledger on table.
func New(table store.Table, opts Options) (*Ledger, error) {
	if table == nil {
		return nil, fmt.Errorf("%w: no table", ErrInvalid)
	}
	if err := opts.Rules.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	return &Ledger{table: table, clock: opts.Clock, rules: opts.Rules}, nil
}

// Rules returns the thresholds the ledger assesses with.
func (l *Ledger) Rules() config.Reputation { return l.rules }

// Standing returns the standing of org in env over the window: the counts of the last
// WindowDays UTC days, today included.
func (l *Ledger) Standing(ctx context.Context, org, env string) (Standing, error) {
	if err := checkPublisher(org, env); err != nil {
		return Standing{}, err
	}
	today := l.clock.Now().UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -(l.rules.WindowDays - 1))
	items, err := l.table.Query(ctx, store.Query{
		PK:   partition(org, env),
		From: dayKey(org, env, first).SK,
		To:   dayKey(org, env, today).SK,
	})
	if err != nil {
		return Standing{}, fmt.Errorf("reputation: read the counts of %s in %s: %w", org, env, err)
	}
	var t Tally
	for _, it := range items {
		t.For += it.Int(attrFor)
		t.Against += it.Int(attrAgainst)
	}
	return Assess(t, l.rules), nil
}

// Band returns the band of org in env (the evidence document's publisher band).
func (l *Ledger) Band(ctx context.Context, org, env string) (string, error) {
	s, err := l.Standing(ctx, org, env)
	if err != nil {
		return "", err
	}
	return s.Band, nil
}

// Record keeps whether s, the current standing of org in env, is poor, and reports whether it
// crossed into poor since the previous Record: true for the first poor standing, and again
// only after a standing that was not. Of concurrent calls that see the same fall, exactly
// one reports it.
func (l *Ledger) Record(ctx context.Context, org, env string, s Standing) (crossed bool, err error) {
	if err := checkPublisher(org, env); err != nil {
		return false, err
	}
	k := store.Key{PK: partition(org, env), SK: skPoor}
	if s.Band != BandPoor {
		if err := l.table.Delete(ctx, k, store.Condition{}); err != nil {
			return false, fmt.Errorf("reputation: clear the poor mark of %s in %s: %w", org, env, err)
		}
		return false, nil
	}
	it := store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK, attrSince: store.FormatTime(l.clock.Now())}
	err = l.table.Put(ctx, it, store.IfNotExists())
	switch {
	case errors.Is(err, store.ErrConditionFailed):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reputation: mark %s in %s poor: %w", org, env, err)
	}
	return true, nil
}

// checkPublisher refuses a standing no publisher can have: one is kept per organisation and
// API key environment.
func checkPublisher(org, env string) error {
	if org == "" || !apikey.ValidEnvironment(env) {
		return fmt.Errorf("%w: organisation %q, environment %q", ErrInvalid, org, env)
	}
	return nil
}
