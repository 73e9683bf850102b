// Package reputation is a publisher's standing in the network (docs/network.md §2): per
// organisation and environment, how many of its events the network corroborated and how many
// it ended by deny quorum, the score and band drawn from them, and the rule that turns a poor
// score into a verdict.
//
// # Storage layout
//
//	pk "reputation#<org_id>#<environment>"  sk "day#<YYYY-MM-DD>"
//	    for, against (counters), ttl
//	pk "reputation#<org_id>#<environment>"  sk "poor"
//	    since: present while the publisher's last recorded standing was poor
//
// One item per UTC day keeps the counts of that day's outcomes; a score sums the days of its
// window. The events store adds to them in the very transaction that decides an outcome
// (CountOp), so an outcome is counted exactly when it is stored.
//
// The "poor" item is how a verdict tells a fall from a publisher that stays poor
// (Ledger.Record): it is written under the condition that it is absent, so of concurrent
// verdicts exactly one sees the fall, and deleted once a standing is no longer poor.
package reputation

import (
	"time"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/store"
)

const (
	pkPrefix  = "reputation#"
	skPrefix  = "day#"
	dayLayout = "2006-01-02"

	skPoor = "poor"

	attrFor     = "for"
	attrAgainst = "against"
	attrSince   = "since"
)

// keepDays is how long a day's counts are kept (120 days): the longest window a deployment
// may choose, with a margin, so that every window New accepts is whole.
const keepDays = config.MaxReputationWindowDays + 30

// Tally is a change of a publisher's counts: For corroborated events, Against events ended by
// deny quorum. A corroborated event that the deny quorum later ends moves from one to the
// other (For -1, Against +1).
type Tally struct {
	For, Against int64
}

// CountOp is the operation adding t to the counts of org in env on the UTC day of at, for the
// transaction that stores the outcome.
func CountOp(org, env string, t Tally, at time.Time) store.Op {
	day := at.UTC().Truncate(24 * time.Hour)
	return store.UpdateOp(dayKey(org, env, day), store.Update{
		Add: map[string]int64{attrFor: t.For, attrAgainst: t.Against},
		Set: map[string]any{store.AttrTTL: day.AddDate(0, 0, keepDays).Unix()},
	}, store.Condition{})
}

func partition(org, env string) string { return pkPrefix + org + "#" + env }

func dayKey(org, env string, day time.Time) store.Key {
	return store.Key{PK: partition(org, env), SK: skPrefix + day.Format(dayLayout)}
}
