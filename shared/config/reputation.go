package config

import (
	"fmt"
	"strconv"
)

// Reputation holds the deployment values of the publisher reputation rule (package
// reputation, docs/network.md §2): how much history a publisher needs before its score
// counts, the share of deny-quorum ends that brings a verdict, and the window the counts are
// summed over.
type Reputation struct {
	// MinHistory is how many decided events (corroborated or ended by deny quorum) within the
	// window a publisher needs before it is judged (ROADEVENTS_REPUTATION_MIN_HISTORY).
	MinHistory int
	// VerdictPercent is the share of decided events ended by deny quorum, in percent, at or
	// above which a publisher's events are invalidated (ROADEVENTS_REPUTATION_VERDICT_PERCENT).
	VerdictPercent int
	// WindowDays is how many UTC days, today included, the counts are summed over
	// (ROADEVENTS_REPUTATION_WINDOW_DAYS).
	WindowDays int
}

// DefaultReputation judges a publisher once it has 20 decided events in 30 days, when 80 % of
// them were ended by deny quorum.
var DefaultReputation = Reputation{MinHistory: 20, VerdictPercent: 80, WindowDays: 30}

// Bounds of the reputation values.
const (
	// MinVerdictPercent keeps a verdict for publishers most of whose decided events the network
	// refused: below half, the network would be upholding more of its events than it ends.
	MinVerdictPercent = 50
	// MaxReputationWindowDays is the longest window; package reputation keeps the daily counts
	// a margin longer.
	MaxReputationWindowDays = 90
	// MaxMinHistory bounds MinHistory to a history a publisher can reach.
	MaxMinHistory = 100_000
)

// readReputation applies the reputation variables of getenv; Validate checks the ranges.
func (c *Config) readReputation(getenv func(string) string) error {
	for _, v := range []struct {
		name string
		dst  *int
	}{
		{"ROADEVENTS_REPUTATION_MIN_HISTORY", &c.Reputation.MinHistory},
		{"ROADEVENTS_REPUTATION_VERDICT_PERCENT", &c.Reputation.VerdictPercent},
		{"ROADEVENTS_REPUTATION_WINDOW_DAYS", &c.Reputation.WindowDays},
	} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("config: %s=%q: want a whole number", v.name, s)
		}
		*v.dst = n
	}
	return nil
}

// Validate reports reputation values the rule cannot work with.
func (r Reputation) Validate() error {
	switch {
	case r.MinHistory < 1 || r.MinHistory > MaxMinHistory:
		return fmt.Errorf("config: ROADEVENTS_REPUTATION_MIN_HISTORY=%d: want 1 to %d decided events", r.MinHistory, MaxMinHistory)
	case r.VerdictPercent < MinVerdictPercent || r.VerdictPercent > 100:
		return fmt.Errorf("config: ROADEVENTS_REPUTATION_VERDICT_PERCENT=%d: want %d to 100", r.VerdictPercent, MinVerdictPercent)
	case r.WindowDays < 1 || r.WindowDays > MaxReputationWindowDays:
		return fmt.Errorf("config: ROADEVENTS_REPUTATION_WINDOW_DAYS=%d: want 1 to %d days", r.WindowDays, MaxReputationWindowDays)
	}
	return nil
}
