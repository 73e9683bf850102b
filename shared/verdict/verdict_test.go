package verdict_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/verdict"
)

// call is one InvalidateOrg call.
type call struct {
	org, env string
	since    time.Time
	reason   string
}

// events stands in for the events store: it counts the calls and answers active events
// invalidated, or fail.
type events struct {
	mu     sync.Mutex
	calls  []call
	active int
	fail   error
}

func (e *events) InvalidateOrg(_ context.Context, org, env string, since time.Time, reason string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, call{org, env, since, reason})
	return e.active, e.fail
}

func (e *events) Calls() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]call(nil), e.calls...)
}

// owners stands in for the organisations: org_a, owned by ada and bob.
type owners struct{}

func (owners) Owners(_ context.Context, org string) (orgs.Organisation, []string, error) {
	if org != "org_a" {
		return orgs.Organisation{}, nil, orgs.ErrNotFound
	}
	return orgs.Organisation{OrgID: org, Name: "Ada Fleet"}, []string{"ada@example.com", "bob@example.com"}, nil
}

// court is a Judge on one table: the real ledger and audit log, fake events and owners.
type court struct {
	tab    tables.Table
	judge  *verdict.Judge
	events *events
	inbox  *consoletest.Inbox
	audit  *audit.Log
}

func newCourt(t *testing.T, tab tables.Table) *court {
	t.Helper()
	c := &court{tab: tab, events: &events{active: 3}, inbox: &consoletest.Inbox{}, audit: audit.New(tab, audit.Options{Clock: tab.Clock})}
	c.judge = c.newJudge(t, c.inbox)
	return c
}

// newJudge returns a judge of the court's table, events and audit log that sends its e-mails
// through mailer.
func (c *court) newJudge(t *testing.T, mailer mail.Mailer) *verdict.Judge {
	t.Helper()
	ledger, err := reputation.New(c.tab, reputation.Options{Clock: c.tab.Clock, Rules: config.DefaultReputation})
	if err != nil {
		t.Fatal(err)
	}
	j, err := verdict.New(verdict.Deps{
		Events: c.events, Audit: c.audit, Standings: ledger, Owners: owners{}, Mailer: mailer,
		ConsoleURL: "http://console.test/app/", Issuer: "Road Events",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// count adds outcomes of org_a in env today.
func (c *court) count(t *testing.T, env string, tally reputation.Tally) {
	t.Helper()
	if err := c.tab.TransactWrite(context.Background(), []store.Op{reputation.CountOp("org_a", env, tally, c.tab.Clock.Now())}); err != nil {
		t.Fatal(err)
	}
}

// entries returns org_a's audit entries, newest first.
func (c *court) entries(t *testing.T) []audit.Entry {
	t.Helper()
	es, err := c.audit.List(context.Background(), "org_a", audit.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// docs/network.md §2: no verdict below the threshold, nor on too little history, nor for the
// other environment's standing.
func TestDeniedSparesPublishersNotPoor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		env   string
		tally reputation.Tally
	}{
		{"just under the threshold", "live", reputation.Tally{For: 5, Against: 15}},
		{"one event short of the history", "live", reputation.Tally{Against: 19}},
		{"poor in the other environment", "sandbox", reputation.Tally{Against: 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tables.Each(t, func(t *testing.T, tab tables.Table) {
				t.Parallel()
				c := newCourt(t, tab)
				c.count(t, tt.env, tt.tally)
				c.judge.Denied(context.Background(), "org_a", "live")
				if got := c.events.Calls(); len(got) != 0 {
					t.Errorf("InvalidateOrg calls = %+v; want none", got)
				}
				if got := c.entries(t); len(got) != 0 {
					t.Errorf("audit entries = %+v; want none", got)
				}
				if n := c.inbox.Count(); n != 0 {
					t.Errorf("%d e-mails sent; want none", n)
				}
			})
		})
	}
}

// docs/network.md §2: at the threshold (80 % of 20 decided events ended by deny quorum) the
// publisher's active events in that environment are invalidated, the audit log says so with
// actor "system", and each owner gets an e-mail naming the organisation and the numbers.
func TestDeniedAtTheThresholdInvalidatesAndTellsTheOwners(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		c := newCourt(t, tab)
		c.count(t, "live", reputation.Tally{For: 4, Against: 16})
		c.judge.Denied(context.Background(), "org_a", "live")

		calls := c.events.Calls()
		if len(calls) != 1 || calls[0].org != "org_a" || calls[0].env != "live" || !calls[0].since.IsZero() {
			t.Fatalf("InvalidateOrg calls = %+v; want one for org_a live, every active event", calls)
		}
		if !strings.Contains(calls[0].reason, "16 of the 20") {
			t.Errorf("reason = %q; want the numbers", calls[0].reason)
		}
		es := c.entries(t)
		if len(es) != 1 {
			t.Fatalf("audit entries = %+v; want 1", es)
		}
		e := es[0]
		if e.Action != verdict.ActionEventsInvalidated || e.ActorUserID == nil || *e.ActorUserID != verdict.ActorSystem || e.ActorEmail != nil {
			t.Errorf("entry = %+v; want events.invalidated by system", e)
		}
		for k, want := range map[string]any{"environment": "live", "count": 3.0, "against": 16.0, "decided": 20.0, "since": nil, "reason": calls[0].reason} {
			if got := e.Detail[k]; got != want {
				t.Errorf("detail[%s] = %v; want %v", k, got, want)
			}
		}
		msgs := c.inbox.All()
		if len(msgs) != 2 || msgs[0].To != "ada@example.com" || msgs[1].To != "bob@example.com" {
			t.Fatalf("e-mails = %+v; want one to each owner", msgs)
		}
		m := msgs[0]
		if strings.Contains(m.Subject, "Ada Fleet") || !strings.Contains(m.Subject, "live") {
			t.Errorf("subject = %q; want the environment and not the organisation's name", m.Subject)
		}
		for _, want := range []string{`"Ada Fleet"`, "16 were ended", "80 %", "3 active events", "http://console.test/app/orgs/org_a/quality"} {
			if !strings.Contains(m.Text, want) {
				t.Errorf("e-mail text lacks %q:\n%s", want, m.Text)
			}
		}
	})
}

// docs/network.md §2: the owners hear of a fall once; while the publisher stays poor, each
// deny end invalidates again, silently; once it recovered, the next fall is e-mailed again.
func TestDeniedEmailsOncePerFall(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		c := newCourt(t, tab)
		ctx := context.Background()
		c.count(t, "live", reputation.Tally{Against: 20})
		c.judge.Denied(ctx, "org_a", "live")
		c.judge.Denied(ctx, "org_a", "live")
		if n, mails := len(c.events.Calls()), c.inbox.Count(); n != 2 || mails != 2 {
			t.Fatalf("after two deny ends: %d invalidations, %d e-mails; want 2 and 2 (one per owner, once)", n, mails)
		}
		if n := len(c.entries(t)); n != 2 {
			t.Errorf("%d audit entries; want 2, one per invalidation", n)
		}
		// Other organisations confirm enough of its events: fair, no verdict, the mark goes.
		c.count(t, "live", reputation.Tally{For: 20})
		c.judge.Denied(ctx, "org_a", "live")
		if n := len(c.events.Calls()); n != 2 {
			t.Errorf("after recovering: %d invalidations; want still 2", n)
		}
		// It falls again: a new e-mail.
		c.count(t, "live", reputation.Tally{Against: 200})
		c.judge.Denied(ctx, "org_a", "live")
		if n, mails := len(c.events.Calls()), c.inbox.Count(); n != 3 || mails != 4 {
			t.Errorf("after falling again: %d invalidations, %d e-mails; want 3 and 4", n, mails)
		}
	})
}

// A verdict whose invalidation failed sends no e-mail and leaves no mark: the next deny end
// judges the fall again, and e-mails then. What was invalidated before the failure is in the
// audit log.
func TestDeniedRetriesAFailedVerdict(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		c := newCourt(t, tab)
		c.count(t, "live", reputation.Tally{Against: 20})
		c.events.fail = errors.New("table unavailable")
		c.events.active = 1
		c.judge.Denied(context.Background(), "org_a", "live")
		if n := c.inbox.Count(); n != 0 {
			t.Errorf("%d e-mails after a failed invalidation; want none", n)
		}
		if es := c.entries(t); len(es) != 1 || es[0].Detail["count"] != 1.0 {
			t.Errorf("audit entries = %+v; want one recording the 1 event invalidated", es)
		}
		c.events.fail = nil
		c.judge.Denied(context.Background(), "org_a", "live")
		if n := c.inbox.Count(); n != 2 {
			t.Errorf("%d e-mails after the retry; want 2", n)
		}
	})
}

// unreachableMailer refuses every message, as a mail server that cannot be reached does.
type unreachableMailer struct{ tries atomic.Int32 }

func (m *unreachableMailer) Send(context.Context, mail.Message) error {
	m.tries.Add(1)
	return errors.New("mail server unreachable")
}

// docs/network.md §2 (the e-mail): a failed send is logged and the verdict stands: the
// publisher's events are invalidated and the audit entry written all the same.
func TestDeniedStandsWhenTheEmailFails(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		c := newCourt(t, tab)
		mailer := &unreachableMailer{}
		judge := c.newJudge(t, mailer)
		c.count(t, "live", reputation.Tally{Against: 20})
		judge.Denied(context.Background(), "org_a", "live")
		if n := mailer.tries.Load(); n != 2 {
			t.Errorf("%d sends tried; want 2, one per owner", n)
		}
		if got := c.events.Calls(); len(got) != 1 {
			t.Errorf("InvalidateOrg calls = %+v; want one", got)
		}
		if es := c.entries(t); len(es) != 1 || es[0].Detail["count"] != 3.0 {
			t.Errorf("audit entries = %+v; want one recording the 3 events invalidated", es)
		}
	})
}

// docs/network.md §2: the operator's verdict needs no threshold; it passes since and the
// reason on, and the audit log records it with actor "operator", also when nothing was
// active.
func TestOperatorInvalidates(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ev := &events{active: 7}
		log := audit.New(tab, audit.Options{Clock: tab.Clock})
		op := verdict.Operator{Events: ev, Audit: log}
		since := time.Date(2040, 1, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
		n, err := op.Invalidate(context.Background(), "org_a", "sandbox", since, "spam from a stolen key")
		if err != nil || n != 7 {
			t.Fatalf("Invalidate = %d, %v; want 7, nil", n, err)
		}
		if got := ev.Calls(); len(got) != 1 || got[0] != (call{"org_a", "sandbox", since, "spam from a stolen key"}) {
			t.Errorf("InvalidateOrg calls = %+v", got)
		}
		ev.active = 0
		if n, err := op.Invalidate(context.Background(), "org_a", "live", time.Time{}, "again"); err != nil || n != 0 {
			t.Errorf("Invalidate with nothing active = %d, %v; want 0, nil", n, err)
		}
		es, err := log.List(context.Background(), "org_a", 10)
		if err != nil || len(es) != 2 {
			t.Fatalf("audit = %+v, %v; want 2 entries", es, err)
		}
		first := es[1]
		if first.Action != verdict.ActionEventsInvalidated || first.ActorUserID == nil || *first.ActorUserID != verdict.ActorOperator {
			t.Errorf("entry = %+v; want events.invalidated by operator", first)
		}
		for k, want := range map[string]any{"environment": "sandbox", "count": 7.0, "reason": "spam from a stolen key", "since": "2040-01-01T11:00:00Z"} {
			if got := first.Detail[k]; got != want {
				t.Errorf("detail[%s] = %v; want %v", k, got, want)
			}
		}
		if got := es[0].Detail; got["count"] != 0.0 || got["since"] != nil {
			t.Errorf("detail of the empty verdict = %v; want count 0, since null", got)
		}
	})
}

// docs/network.md §2, operator verdict: an organisation, live or sandbox, and a reason of 1 to
// 300 characters without line breaks are required; a refused verdict touches no event.
func TestOperatorRefusesBadVerdicts(t *testing.T) {
	t.Parallel()
	ev := &events{}
	op := verdict.Operator{Events: ev, Audit: audit.New(tables.Embedded(t), audit.Options{})}
	for _, tt := range []struct{ name, org, env, reason string }{
		{"no organisation", "", "live", "x"},
		{"unknown environment", "org_a", "prod", "x"},
		{"no reason", "org_a", "live", "  "},
		{"reason too long", "org_a", "live", strings.Repeat("é", verdict.MaxReasonLen+1)},
		{"control characters", "org_a", "live", "line\nbreak"},
	} {
		if _, err := op.Invalidate(context.Background(), tt.org, tt.env, time.Time{}, tt.reason); !errors.Is(err, verdict.ErrInvalid) {
			t.Errorf("%s: Invalidate = %v; want ErrInvalid", tt.name, err)
		}
	}
	if got := ev.Calls(); len(got) != 0 {
		t.Errorf("InvalidateOrg calls = %+v; want none for refused verdicts", got)
	}
}
