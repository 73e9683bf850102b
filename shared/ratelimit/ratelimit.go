// Package ratelimit counts requests in fixed time windows on the table and refuses those past
// a limit. Its first rule is the signal ceiling of docs/api.md §8, the only rate limit on /v1: 3000
// signals per organisation per hour, within one side of the live/sandbox line, counted in
// fixed UTC clock-hour windows (docs/api.md §10.2). The console caps of docs/api.md §10.3 (code
// requests, TOTP attempts, invitations, key issuance) are the same kind of rule with other windows.
//
// # How it counts
//
// Each (rule, subject, window) is one item, pk "ratelimit#<rule>#<subject>#<window start>",
// sk "window", holding count and a TTL a little past the window's end (docs/architecture.md
// §2: counters for rate limits per window, expiring by TTL). Allow makes one atomic conditional
// Add per call: count + 1 if count < limit or the item is absent. The table decides, so every
// process and every Lambda shares one budget, exactly; a second key of the organisation gives
// no second budget (docs/api.md §8 rule 1) because the subject is the organisation, not the key.
//
// Each window has its own partition key, so windows and subjects spread over the table. A
// refused call costs a refused write; to keep a client hammering past its ceiling from
// loading the item, a process that saw a window full refuses the rest of that window itself,
// without a table call (counts only grow within a window, so this never refuses wrongly).
//
// A call under several rules (an invitation: per actor and per recipient) goes through
// AdmitAll, which counts it in every window in one transaction, or in none when one is full.
//
// # Metering
//
// A refused signal is still counted by the meter (docs/api.md §8 rule 3): the caller counts every
// signal with package metering before or regardless of calling Allow; this package only
// decides.
package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// SignalCeiling is the signal ceiling of docs/api.md §8: 3000 per organisation and environment per
// UTC clock hour (docs/api.md §10.2).
var SignalCeiling = Rule{Name: "signals", Limit: 3000, Window: time.Hour}

// ttlMargin keeps a window's item past the window's end, so that a process whose clock runs
// a little behind still finds the count of the window it believes current.
const ttlMargin = 10 * time.Minute

// maxExhausted bounds the in-memory list of full windows; past it, ended windows are dropped.
const maxExhausted = 4096

// ErrInvalid is returned for a rule or a subject the limiter cannot count: an empty name or
// subject, a limit below 1, a window that does not divide a day.
var ErrInvalid = errors.New("ratelimit: invalid rule or subject")

// ErrLimited is a call a rule refused, past its limit in the current window: the 429 of
// docs/api.md §8, §10.2 and §10.3. errors.As with *LimitedError gives the rule and the
// Retry-After. The console packages (consoleauth, orgs) name it as their own ErrLimited, so a
// cap of one package met through another (a TOTP attempt during key issuance) is the same error.
var ErrLimited = errors.New("ratelimit: too many requests")

// LimitedError is a call refused by a rule, with the time left in its window (the Retry-After,
// httpapi.TooManyRequests). It unwraps to ErrLimited.
type LimitedError struct {
	// Rule is the refusing rule's Name, which tells the caller's public message apart.
	Rule string
	// RetryAfter is the time left in the window, whole seconds, at least one (docs/api.md §10.2).
	RetryAfter time.Duration
}

// Error describes the cap for logs.
func (e *LimitedError) Error() string {
	return fmt.Sprintf("%s: %s, retry after %s", ErrLimited, e.Rule, e.RetryAfter)
}

// Unwrap makes errors.Is(err, ErrLimited) true.
func (e *LimitedError) Unwrap() error { return ErrLimited }

// Is makes errors.Is(err, rule.Refusal()) true for a refusal by rule, so that an error table
// can give each rule its own sentence.
func (e *LimitedError) Is(target error) bool {
	r, ok := target.(refusal)
	return ok && string(r) == e.Rule
}

// RetryIn is the time left in the window (httpapi.Retrier): the Retry-After of the answer.
func (e *LimitedError) RetryIn() time.Duration { return e.RetryAfter }

// refusal is the sentinel of one rule's refusals (Rule.Refusal).
type refusal string

func (r refusal) Error() string { return "ratelimit: refused by " + string(r) }

// Refusal returns the error that errors.Is matches against the *LimitedError of r alone.
func (r Rule) Refusal() error { return refusal(r.Name) }

// Rule is a limit per subject per fixed window. Windows are aligned to UTC: a Window of an
// hour starts at every clock hour, of a day at midnight UTC.
type Rule struct {
	// Name tells the rule's items apart from other rules' in the table.
	Name string
	// Limit is how many calls a window allows.
	Limit int64
	// Window is the length of a window; it must divide 24 hours.
	Window time.Duration
}

func (r Rule) validate() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("%w: rule without a name", ErrInvalid)
	case r.Limit < 1:
		return fmt.Errorf("%w: rule %s limit %d", ErrInvalid, r.Name, r.Limit)
	case r.Window < time.Second || (24*time.Hour)%r.Window != 0:
		return fmt.Errorf("%w: rule %s window %v does not divide a day", ErrInvalid, r.Name, r.Window)
	}
	return nil
}

// Limiter applies one Rule on one table. It is safe for concurrent use.
type Limiter struct {
	table store.Table
	rule  Rule

	mu        sync.Mutex
	exhausted map[string]time.Time // item pk -> end of its full window
}

// New returns a limiter of rule on table; it fails for an invalid rule.
func New(table store.Table, rule Rule) (*Limiter, error) {
	if err := rule.validate(); err != nil {
		return nil, err
	}
	return &Limiter{table: table, rule: rule, exhausted: map[string]time.Time{}}, nil
}

// Allow counts one call of subject at now and tells whether the window still allowed it.
// When it did not, retryAfter is the time left in the window in whole seconds, rounded up and
// at least one (docs/api.md §10.2: the Retry-After of the 429). A refused call is not counted.
func (l *Limiter) Allow(ctx context.Context, subject string, now time.Time) (ok bool, retryAfter time.Duration, err error) {
	w, err := l.window(subject, now)
	if err != nil {
		return false, 0, err
	}
	if l.isExhausted(w.pk, now) {
		return false, w.retryAfter, nil
	}
	op := w.op()
	_, err = l.table.Update(ctx, op.Key, op.Update, op.Cond)
	switch {
	case errors.Is(err, store.ErrConditionFailed):
		l.markExhausted(w.pk, w.end, now)
		return false, w.retryAfter, nil
	case err != nil:
		return false, 0, fmt.Errorf("ratelimit: count a call under %s: %w", l.rule.Name, err) // not the subject: it can be an address
	}
	return true, 0, nil
}

// window is the current window of one subject under one rule.
type window struct {
	l          *Limiter
	pk         string
	end        time.Time
	retryAfter time.Duration
}

func (l *Limiter) window(subject string, now time.Time) (window, error) {
	if subject == "" {
		return window{}, fmt.Errorf("%w: empty subject for rule %s", ErrInvalid, l.rule.Name)
	}
	now = now.UTC()
	start := now.Truncate(l.rule.Window)
	end := start.Add(l.rule.Window)
	return window{
		l:          l,
		pk:         "ratelimit#" + l.rule.Name + "#" + subject + "#" + start.Format("20060102T150405Z"),
		end:        end,
		retryAfter: wholeSeconds(end.Sub(now)),
	}, nil
}

// AddressSubject is the subject under which a cap counts an e-mail address: a SHA-256 of it,
// so that no window's key, which the table keeps a day at the most, spells out an address
// (docs/privacy.md §1).
func AddressSubject(address string) string {
	sum := sha256.Sum256([]byte("address:" + address))
	return hex.EncodeToString(sum[:16])
}

// Forget deletes the windows of subject under the rule that may still be stored at now (the
// current one, and the earlier ones kept until a margin past their end): the items' keys name
// the subject, an e-mail address for some rules, which an erasure removes (docs/privacy.md §6).
func (l *Limiter) Forget(ctx context.Context, subject string, now time.Time) error {
	for at := now; !at.Before(now.Add(-l.rule.Window - ttlMargin)); at = at.Add(-l.rule.Window) {
		w, err := l.window(subject, at)
		if err != nil {
			return err
		}
		if err := l.table.Delete(ctx, store.Key{PK: w.pk, SK: "window"}, store.Condition{}); err != nil {
			return fmt.Errorf("ratelimit: forget %s of a subject: %w", l.rule.Name, err)
		}
	}
	return nil
}

// op counts one call in the window, on condition that the window is not full.
func (w window) op() store.Op {
	return store.UpdateOp(store.Key{PK: w.pk, SK: "window"},
		store.Update{
			Add: map[string]int64{"count": 1},
			Set: map[string]any{store.AttrTTL: w.end.Add(ttlMargin).Unix()},
		},
		store.Or(store.IfAttrNotExists("count"), store.IfLess("count", w.l.rule.Limit)))
}

// Check is one limit a call must pass: a limiter and the subject it counts.
type Check struct {
	Limiter *Limiter
	Subject string
}

// AdmitAll counts one call against every check in one transaction: all of them count it, or,
// when a window is full, none does and the error is that rule's *LimitedError. A call refused
// by one cap (an invitation past the recipient's 3 a day) then spends nothing of another (the
// actor's 20 an hour). The checks' limiters must share one table; the transaction runs on it.
func AdmitAll(ctx context.Context, now time.Time, checks ...Check) error {
	if len(checks) == 0 {
		return nil
	}
	table := checks[0].Limiter.table
	windows := make([]window, len(checks))
	ops := make([]store.Op, len(checks))
	for i, c := range checks {
		w, err := c.Limiter.window(c.Subject, now)
		if err != nil {
			return err
		}
		windows[i], ops[i] = w, w.op()
	}
	for _, w := range windows {
		if w.l.isExhausted(w.pk, now) {
			return &LimitedError{Rule: w.l.rule.Name, RetryAfter: w.retryAfter}
		}
	}
	var err error
	for range maxConflictRetries {
		if err = table.TransactWrite(ctx, ops); !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && ce.Op >= 0 && ce.Op < len(windows):
		w := windows[ce.Op]
		w.l.markExhausted(w.pk, w.end, now)
		return &LimitedError{Rule: w.l.rule.Name, RetryAfter: w.retryAfter}
	case err != nil:
		return fmt.Errorf("ratelimit: count a call under %d rules: %w", len(checks), err)
	}
	return nil
}

// maxConflictRetries bounds AdmitAll's attempts when its transaction collides with another
// write of the same windows.
const maxConflictRetries = 4

// Admit is Allow for callers that answer a refusal as an error: nil when the window allowed
// the call, a *LimitedError with the Retry-After when it did not.
func (l *Limiter) Admit(ctx context.Context, subject string, now time.Time) error {
	ok, retry, err := l.Allow(ctx, subject, now)
	if err != nil {
		return err
	}
	if !ok {
		return &LimitedError{Rule: l.rule.Name, RetryAfter: retry}
	}
	return nil
}

func (l *Limiter) isExhausted(pk string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	end, ok := l.exhausted[pk]
	return ok && now.Before(end)
}

func (l *Limiter) markExhausted(pk string, end, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.exhausted) >= maxExhausted {
		for k, e := range l.exhausted {
			if !now.Before(e) {
				delete(l.exhausted, k)
			}
		}
	}
	if len(l.exhausted) < maxExhausted {
		l.exhausted[pk] = end
	}
}

// wholeSeconds rounds d up to whole seconds, at least one.
func wholeSeconds(d time.Duration) time.Duration {
	d = (d + time.Second - 1).Truncate(time.Second)
	return max(d, time.Second)
}

// Signals is the signal ceiling (docs/api.md §8): one budget per organisation and environment.
type Signals struct {
	l *Limiter
}

// NewSignals returns the signal ceiling on table.
func NewSignals(table store.Table) *Signals {
	l, err := New(table, SignalCeiling)
	if err != nil {
		panic(err) // SignalCeiling is a valid rule
	}
	return &Signals{l: l}
}

// Allow counts one signal of organisation org in environment env ("live" or "sandbox") at
// now. When refused, answer 429 with Retry-After retryAfter (httpapi.TooManyRequests); the
// meter counts the signal either way (docs/api.md §8 rule 3).
func (s *Signals) Allow(ctx context.Context, org, env string, now time.Time) (ok bool, retryAfter time.Duration, err error) {
	if org == "" || (env != "live" && env != "sandbox") {
		return false, 0, fmt.Errorf("%w: organisation %q, environment %q", ErrInvalid, org, env)
	}
	return s.l.Allow(ctx, org+"#"+env, now)
}
