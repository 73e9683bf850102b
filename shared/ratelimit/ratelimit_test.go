package ratelimit_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// hour is a UTC clock hour after tables.Start (so DynamoDB Local's own TTL never interferes).
var hour = time.Date(2040, 3, 1, 14, 0, 0, 0, time.UTC)

// TestSignalCeilingRace: docs/api.md §8 and §10.2: 3000 signals per organisation per clock
// hour, exactly, however many processes and requests race for them; the next hour allows
// again. Two limiters on one table stand for two processes (a second key, or a second Lambda,
// gives no second budget: docs/api.md §8 rule 1).
func TestSignalCeilingRace(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		tab.Clock.Set(hour)
		processes := []*ratelimit.Signals{ratelimit.NewSignals(tab), ratelimit.NewSignals(tab)}
		now := hour.Add(20 * time.Minute) // inside the 14:00 window, 40 minutes left

		const calls = 3100
		// DynamoDB Local serialises writes to one item behind a lock and times out (500) where
		// DynamoDB would not; fewer workers still race, without drowning the emulator.
		workers := 48
		if tab.Adapter == tables.AdapterDynamoDB {
			workers = 8
		}
		var next, allowed, refused atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				p := processes[w%len(processes)]
				for next.Add(1) <= calls {
					ok, retry, err := p.Allow(t.Context(), "org_busy", "live", now)
					switch {
					case err != nil:
						errs <- err
						return
					case ok:
						allowed.Add(1)
					case retry != 40*time.Minute:
						t.Errorf("refused with Retry-After %v; want %v, the rest of the window", retry, 40*time.Minute)
						refused.Add(1)
					default:
						refused.Add(1)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("Allow = %v; want nil", err)
		}
		if allowed.Load() != 3000 || refused.Load() != 100 {
			t.Fatalf("%d racing signals in one hour: %d allowed, %d refused; want 3000 and 100", calls, allowed.Load(), refused.Load())
		}

		// The rest of the hour stays closed, for a fresh process too.
		fresh := ratelimit.NewSignals(tab)
		if ok, retry, err := fresh.Allow(t.Context(), "org_busy", "live", hour.Add(59*time.Minute+59*time.Second)); ok || err != nil || retry != time.Second {
			t.Errorf("Allow at 14:59:59 = %v, %v, %v; want refused, Retry-After 1s", ok, retry, err)
		}
		// The other side of the live/sandbox line and other organisations have their own budget.
		for _, tc := range []struct{ org, env string }{{"org_busy", "sandbox"}, {"org_quiet", "live"}} {
			if ok, _, err := fresh.Allow(t.Context(), tc.org, tc.env, now); !ok || err != nil {
				t.Errorf("Allow(%s, %s) in the full hour of org_busy live = %v, %v; want allowed", tc.org, tc.env, ok, err)
			}
		}
		// The next clock hour allows again, in every process.
		tab.Clock.Set(hour.Add(time.Hour))
		for i, p := range append(processes, fresh) {
			if ok, _, err := p.Allow(t.Context(), "org_busy", "live", hour.Add(time.Hour)); !ok || err != nil {
				t.Errorf("process %d: Allow at 15:00:00 = %v, %v; want allowed in the new window", i, ok, err)
			}
		}
	})
}

// TestRetryAfter: docs/api.md §10.2: Retry-After is the whole seconds left in the window, at least
// 1 (rounded up, so a client that waits that long lands in the next window).
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	tab.Clock.Set(hour)
	l, err := ratelimit.New(tab, ratelimit.Rule{Name: "test", Limit: 1, Window: time.Hour})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	if ok, _, err := l.Allow(t.Context(), "s", hour); !ok || err != nil {
		t.Fatalf("first Allow = %v, %v; want allowed", ok, err)
	}
	cases := []struct {
		name string
		at   time.Duration // after 14:00
		want time.Duration
	}{
		{"WindowStart", 0, time.Hour},
		{"HalfWay", 30 * time.Minute, 30 * time.Minute},
		{"FractionRoundsUp", 30*time.Minute + 500*time.Millisecond, 30 * time.Minute}, // 29:59.5 left
		{"LastSecond", time.Hour - time.Second, time.Second},
		{"LastMillisecond", time.Hour - time.Millisecond, time.Second},
	}
	for _, tc := range cases {
		ok, got, err := l.Allow(t.Context(), "s", hour.Add(tc.at))
		if ok || err != nil || got != tc.want {
			t.Errorf("%s: Allow at 14:00+%v = %v, %v, %v; want refused, Retry-After %v", tc.name, tc.at, ok, got, err, tc.want)
		}
	}
}

// TestWindows: windows are fixed and aligned to UTC, not sliding from the first call.
func TestWindows(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		tab.Clock.Set(hour)
		l, err := ratelimit.New(tab, ratelimit.Rule{Name: "quarter", Limit: 2, Window: 15 * time.Minute})
		if err != nil {
			t.Fatalf("New = %v", err)
		}
		steps := []struct {
			at   time.Duration
			want bool
		}{
			{14 * time.Minute, true},
			{14*time.Minute + 59*time.Second, true},
			{14*time.Minute + 59*time.Second, false}, // window 14:00-14:15 is full
			{15 * time.Minute, true},                 // a new window, although 1 s later
			{16 * time.Minute, true},
			{29 * time.Minute, false},
			{3 * time.Hour, true},
		}
		for i, s := range steps {
			tab.Clock.Set(hour.Add(s.at))
			ok, _, err := l.Allow(t.Context(), "s", hour.Add(s.at))
			if err != nil || ok != s.want {
				t.Errorf("step %d: Allow at 14:00+%v = %v, %v; want %v", i, s.at, ok, err, s.want)
			}
		}
	})
}

// TestAdmit: Admit answers a refusal as a *LimitedError naming the rule, with the Retry-After
// the console's 429 sends (docs/api.md §10.3), and unwrapping to ErrLimited.
func TestAdmit(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	tab.Clock.Set(hour)
	l, err := ratelimit.New(tab, ratelimit.Rule{Name: "console-test", Limit: 1, Window: 15 * time.Minute})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	if err := l.Admit(t.Context(), "s", hour); err != nil {
		t.Fatalf("first Admit = %v; want nil", err)
	}
	err = l.Admit(t.Context(), "s", hour.Add(5*time.Minute))
	var limited *ratelimit.LimitedError
	if !errors.As(err, &limited) || !errors.Is(err, ratelimit.ErrLimited) {
		t.Fatalf("second Admit = %v; want a *LimitedError, ErrLimited", err)
	}
	if limited.Rule != "console-test" || limited.RetryAfter != 10*time.Minute {
		t.Errorf("second Admit refused by %q, Retry-After %v; want console-test, 10m0s", limited.Rule, limited.RetryAfter)
	}
	if err := l.Admit(t.Context(), "other", hour.Add(5*time.Minute)); err != nil {
		t.Errorf("Admit of another subject = %v; want nil", err)
	}
	if err := l.Admit(t.Context(), "", hour); !errors.Is(err, ratelimit.ErrInvalid) || errors.Is(err, ratelimit.ErrLimited) {
		t.Errorf("Admit of an empty subject = %v; want ErrInvalid, not ErrLimited", err)
	}
}

// TestAdmitAll: a call under two caps (the invitations of docs/api.md §10.3: per actor and per
// recipient) counts against both or neither, and a refusal names the full rule with its
// Retry-After.
func TestAdmitAll(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ctx := t.Context()
		actor, err := ratelimit.New(tab, ratelimit.Rule{Name: "test-actor", Limit: 2, Window: time.Hour})
		if err != nil {
			t.Fatalf("New = %v", err)
		}
		recipient, err := ratelimit.New(tab, ratelimit.Rule{Name: "test-recipient", Limit: 1, Window: 24 * time.Hour})
		if err != nil {
			t.Fatalf("New = %v", err)
		}
		both := func(to string, at time.Time) error {
			return ratelimit.AdmitAll(ctx, at,
				ratelimit.Check{Limiter: actor, Subject: "ada"}, ratelimit.Check{Limiter: recipient, Subject: to})
		}
		if err := both("bob", hour); err != nil {
			t.Fatalf("first call = %v; want nil", err)
		}
		for range 2 { // the second refusal comes from the process's memory of the full window
			err := both("bob", hour.Add(30*time.Minute))
			var limited *ratelimit.LimitedError
			if !errors.As(err, &limited) || limited.Rule != "test-recipient" || limited.RetryAfter != 9*time.Hour+30*time.Minute {
				t.Fatalf("second call to bob = %v; want test-recipient refusing, Retry-After 9h30m (to midnight UTC)", err)
			}
		}
		// The refusals spent nothing of ada's 2: one more call passes, then her cap refuses.
		if err := both("cy", hour.Add(30*time.Minute)); err != nil {
			t.Fatalf("call to cy = %v; want nil (refused calls are not counted)", err)
		}
		err = both("dee", hour.Add(40*time.Minute))
		var limited *ratelimit.LimitedError
		if !errors.As(err, &limited) || limited.Rule != "test-actor" || limited.RetryAfter != 20*time.Minute {
			t.Fatalf("third counted call = %v; want test-actor refusing, Retry-After 20m", err)
		}
		// ...and that refusal spent nothing of dee's: in the next hour she gets her one.
		if err := both("dee", hour.Add(time.Hour)); err != nil {
			t.Errorf("call to dee in the next hour = %v; want nil", err)
		}
		if err := both("", hour); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("empty subject = %v; want ErrInvalid", err)
		}
	})
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	for _, r := range []ratelimit.Rule{
		{Limit: 1, Window: time.Hour},
		{Name: "x", Limit: 0, Window: time.Hour},
		{Name: "x", Limit: 1, Window: 7 * time.Hour},
		{Name: "x", Limit: 1, Window: 0},
	} {
		if _, err := ratelimit.New(tab, r); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("New(%+v) = %v; want ErrInvalid", r, err)
		}
	}
	s := ratelimit.NewSignals(tab)
	for _, tc := range []struct{ org, env string }{{"", "live"}, {"o", ""}, {"o", "production"}} {
		if _, _, err := s.Allow(t.Context(), tc.org, tc.env, hour); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("Signals.Allow(%q, %q) = %v; want ErrInvalid", tc.org, tc.env, err)
		}
	}
}

// BenchmarkSignalsAllow measures one allowed signal on the embedded store: one conditional
// atomic update (a durable write).
func BenchmarkSignalsAllow(b *testing.B) {
	tab := tables.Embedded(b)
	tab.Clock.Set(hour)
	l, err := ratelimit.New(tab, ratelimit.Rule{Name: "bench", Limit: 1 << 40, Window: time.Hour})
	if err != nil {
		b.Fatalf("New = %v", err)
	}
	for b.Loop() {
		if ok, _, err := l.Allow(b.Context(), "org_bench#live", hour); !ok || err != nil {
			b.Fatalf("Allow = %v, %v", ok, err)
		}
	}
}

// An error table tells the rules apart by their refusal sentinels.
func TestLimitedErrorMatchesItsRuleRefusalOnly(t *testing.T) {
	a := ratelimit.Rule{Name: "a", Limit: 1, Window: time.Hour}
	b := ratelimit.Rule{Name: "b", Limit: 1, Window: time.Hour}
	err := fmt.Errorf("invite: %w", &ratelimit.LimitedError{Rule: "a", RetryAfter: 3 * time.Second})
	if !errors.Is(err, a.Refusal()) || errors.Is(err, b.Refusal()) || !errors.Is(err, ratelimit.ErrLimited) {
		t.Errorf("errors.Is(refusal by a): a %v, b %v, ErrLimited %v; want true, false, true",
			errors.Is(err, a.Refusal()), errors.Is(err, b.Refusal()), errors.Is(err, ratelimit.ErrLimited))
	}
}
