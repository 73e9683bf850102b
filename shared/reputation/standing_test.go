package reputation_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

var rules = config.DefaultReputation // 20 decided, 80 % against, 30 days

func newLedger(t *testing.T, tab tables.Table) *reputation.Ledger {
	t.Helper()
	l, err := reputation.New(tab, reputation.Options{Clock: tab.Clock, Rules: rules})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return l
}

// count stores t for org in env at at, as the events store does when it decides outcomes.
func count(t *testing.T, tab tables.Table, org, env string, tally reputation.Tally, at time.Time) {
	t.Helper()
	if err := tab.TransactWrite(context.Background(), []store.Op{reputation.CountOp(org, env, tally, at)}); err != nil {
		t.Fatalf("TransactWrite(CountOp) = %v", err)
	}
}

func standing(t *testing.T, l *reputation.Ledger, org, env string) reputation.Standing {
	t.Helper()
	s, err := l.Standing(context.Background(), org, env)
	if err != nil {
		t.Fatalf("Standing(%s, %s) = %v", org, env, err)
	}
	return s
}

// docs/network.md §2: a standing sums the counts of the window's UTC days, today and the 29
// before it; a day leaves the window when the clock passes its 30th day.
func TestStandingSumsTheWindow(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		l := newLedger(t, tab)
		// The clock at 23:30 UTC: the window is the days, not the last 720 hours.
		tab.Clock.Set(tables.Start.Add(40*24*time.Hour + 23*time.Hour + 30*time.Minute))
		now := tab.Clock.Now()
		day := func(back int) time.Time { return now.AddDate(0, 0, -back) }
		count(t, tab, "org_a", "live", reputation.Tally{For: 100}, day(30)) // just outside
		count(t, tab, "org_a", "live", reputation.Tally{For: 1}, day(29).Truncate(24*time.Hour))
		count(t, tab, "org_a", "live", reputation.Tally{Against: 2}, day(10))
		count(t, tab, "org_a", "live", reputation.Tally{For: 4, Against: 1}, now)
		// Other publishers' counts stay theirs.
		count(t, tab, "org_a", "sandbox", reputation.Tally{Against: 50}, now)
		count(t, tab, "org_b", "live", reputation.Tally{Against: 50}, now)

		got := standing(t, l, "org_a", "live")
		if got.For != 5 || got.Against != 3 || got.Decided != 8 {
			t.Errorf("standing = %+v; want for 5, against 3, decided 8 (the 30th day back excluded)", got)
		}
		if got.Score == nil || *got.Score != 5.0/8 {
			t.Errorf("score = %v; want 0.625", got.Score)
		}
		// Half an hour later it is the next UTC day: the oldest day of the window leaves it.
		tab.Clock.Advance(30 * time.Minute)
		if got := standing(t, l, "org_a", "live"); got.For != 4 || got.Against != 3 {
			t.Errorf("standing a day later = %+v; want for 4, against 3", got)
		}
		if got := standing(t, l, "org_c", "live"); got.Decided != 0 || got.Score != nil || got.Band != reputation.BandNew {
			t.Errorf("standing without counts = %+v; want nothing decided, no score, band new", got)
		}
	})
}

// docs/network.md §2: the bands. New below the minimum history; poor at or above the verdict
// threshold of deny-quorum ends; good from GoodPercent corroborated; fair between.
func TestAssessBands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		tally        reputation.Tally
		want         string
		wantDecided  int64
		wantNilScore bool
	}{
		{"nothing decided", reputation.Tally{}, reputation.BandNew, 0, true},
		{"one short of the history, all denied", reputation.Tally{Against: 19}, reputation.BandNew, 19, false},
		{"exactly the threshold", reputation.Tally{For: 4, Against: 16}, reputation.BandPoor, 20, false},
		{"just under the threshold", reputation.Tally{For: 5, Against: 15}, reputation.BandFair, 20, false},
		{"all denied", reputation.Tally{Against: 20}, reputation.BandPoor, 20, false},
		{"exactly good", reputation.Tally{For: 16, Against: 4}, reputation.BandGood, 20, false},
		{"just under good", reputation.Tally{For: 79, Against: 21}, reputation.BandFair, 100, false},
		{"all corroborated", reputation.Tally{For: 20}, reputation.BandGood, 20, false},
		// A corroborated event denied on a later day moves its count (For-1 that day): with its
		// first day out of the window the sum may go below zero, which counts as none.
		{"more moved than counted", reputation.Tally{For: -2, Against: 25}, reputation.BandPoor, 25, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := reputation.Assess(tt.tally, rules)
			if got.Band != tt.want || got.Decided != tt.wantDecided || (got.Score == nil) != tt.wantNilScore {
				t.Errorf("Assess(%+v) = %+v; want band %s, decided %d, nil score %v", tt.tally, got, tt.want, tt.wantDecided, tt.wantNilScore)
			}
		})
	}
	// The threshold is the deployment's.
	strict := config.Reputation{MinHistory: 5, VerdictPercent: 100, WindowDays: 7}
	if got := reputation.Assess(reputation.Tally{For: 1, Against: 9}, strict); got.Band != reputation.BandFair {
		t.Errorf("Assess(1 for, 9 against) at 100 %% = %s; want fair", got.Band)
	}
	if got := reputation.Assess(reputation.Tally{Against: 5}, strict); got.Band != reputation.BandPoor {
		t.Errorf("Assess(5 against) at 100 %%, history 5 = %s; want poor", got.Band)
	}
}

// docs/network.md §2: a publisher's owners hear of a verdict once per fall. Record reports the
// first poor standing, not the next ones, and again after the standing recovered; of
// concurrent calls seeing one fall, exactly one reports it.
func TestRecordReportsEachFallOnce(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		l := newLedger(t, tab)
		ctx := context.Background()
		poor := reputation.Assess(reputation.Tally{Against: 20}, rules)
		fair := reputation.Assess(reputation.Tally{For: 10, Against: 10}, rules)
		for i, step := range []struct {
			s    reputation.Standing
			want bool
		}{{poor, true}, {poor, false}, {fair, false}, {fair, false}, {poor, true}, {poor, false}} {
			got, err := l.Record(ctx, "org_a", "live", step.s)
			if err != nil || got != step.want {
				t.Errorf("step %d: Record(%s) = %v, %v; want %v, nil", i, step.s.Band, got, err, step.want)
			}
		}
		// Each environment falls on its own.
		if got, err := l.Record(ctx, "org_a", "sandbox", poor); err != nil || !got {
			t.Errorf("Record(poor) in sandbox = %v, %v; want true, nil", got, err)
		}

		var crossed atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ok, err := l.Record(ctx, "org_b", "live", poor)
				if err != nil {
					t.Errorf("concurrent Record = %v", err)
				}
				if ok {
					crossed.Add(1)
				}
			})
		}
		wg.Wait()
		if n := crossed.Load(); n != 1 {
			t.Errorf("%d of 8 concurrent Records reported the fall; want exactly 1", n)
		}
	})
}

func TestLedgerRefusesWhatNoPublisherHas(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	l := newLedger(t, tab)
	for _, c := range []struct{ org, env string }{{"", "live"}, {"org_a", "prod"}, {"org_a", ""}} {
		if _, err := l.Standing(context.Background(), c.org, c.env); !errors.Is(err, reputation.ErrInvalid) {
			t.Errorf("Standing(%q, %q) = %v; want ErrInvalid", c.org, c.env, err)
		}
	}
	if _, err := reputation.New(tab, reputation.Options{Rules: config.Reputation{}}); !errors.Is(err, reputation.ErrInvalid) {
		t.Errorf("New with zero rules = %v; want ErrInvalid", err)
	}
}
