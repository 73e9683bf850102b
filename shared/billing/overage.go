package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/store"
)

// Overage reporting (docs/console.md §3; docs/api.md §8: no request is refused
// for exceeding a plan, the excess is charged). ReportOverage is one pass of the hourly job: for
// every organisation with an active subscription it sets the usage of the subscription's metered
// item to the period's reads beyond included_reads, in units of ReadsPerUnit.

// ReadsPerUnit is how many reads one unit of a metered price stands for.
const ReadsPerUnit = 1000

// ReportInterval is how often the job runs: hourly, so that the first run of a new month
// comes before Stripe finalises the closed period's draft invoice (about an hour).
const ReportInterval = time.Hour

// closingWindow is how long after a period ends its final total is still sent: Stripe
// refuses usage for a period whose invoice is finalised, so later attempts would only fail.
const closingWindow = 24 * time.Hour

// periodFormat names a period (a calendar month, UTC) in keys and attributes.
const periodFormat = "2006-01"

// Report is the last usage report of one period.
type Report struct {
	// ItemID is the subscription item the report was for.
	ItemID string
	// Quantity is the total Stripe holds for the period, in units: the last value sent, or
	// 0 when none was needed (Stripe's total without a record).
	Quantity int64
	// Final is set once the closed period's final total has been reported.
	Final bool
	// PendingKey and PendingAt are a send started and not known to have succeeded: a retry
	// of the same value repeats it exactly (same Idempotency-Key, same timestamp), as Stripe
	// requires of a reused key.
	PendingKey string
	PendingAt  time.Time
}

const overagePrefix = "overage_"

func overageAttr(period, suffix string) string { return overagePrefix + period + suffix }

// reportsFromItem reads the overage_<period>[...] attributes of a state item.
func reportsFromItem(it store.Item) map[string]Report {
	var out map[string]Report
	for name := range it {
		rest, ok := strings.CutPrefix(name, overagePrefix)
		if !ok || len(rest) < len(periodFormat) {
			continue
		}
		period := rest[:len(periodFormat)]
		if _, err := time.Parse(periodFormat, period); err != nil {
			continue
		}
		if out == nil {
			out = map[string]Report{}
		}
		r := out[period]
		switch rest[len(periodFormat):] {
		case "":
			r.Quantity = it.Int(name)
		case "_item":
			r.ItemID = it.String(name)
		case "_final":
			r.Final = it.Int(name) == 1
		case "_pending":
			r.PendingKey = it.String(name)
		case "_pending_at":
			r.PendingAt = time.Unix(it.Int(name), 0).UTC()
		}
		out[period] = r
	}
	return out
}

// sent reports whether a report for the period was ever stored (a value, not only a pending
// send).
func (r Report) sent() bool { return r.ItemID != "" }

// OverageUnits is what a period's reads cost beyond included, in units of ReadsPerUnit,
// rounded up: max(0, reads − included) / 1000.
func OverageUnits(reads, included int64) int64 {
	over := reads - included
	if over <= 0 {
		return 0
	}
	return (over + ReadsPerUnit - 1) / ReadsPerUnit
}

// ReportOverage runs one pass of the overage job at the clock's time. For each organisation
// of the subscribed index:
//
//   - right after a period ends (within closingWindow), the closed period is reported once
//     more, with its final total, on the item its reports were made for, timestamped at its
//     last second;
//   - for the current period, an organisation without an active subscription, without a
//     metered item, or on a plan without published included reads is skipped; otherwise
//     its live reads so far (the billing summary's meter read) give the units, sent when they
//     differ from the last value sent for the period.
//
// Every send is a usage record with action=set and Idempotency-Key <item>-<period>-<value>,
// so a retry, a second job or a late rerun never adds. A failure of one organisation is
// logged and does not stop the others; the joined errors are returned. Billing off: nothing.
func (s *Service) ReportOverage(ctx context.Context) error {
	if s.provider == nil {
		return nil
	}
	now := s.clock.Now().UTC()
	items, err := s.table.Query(ctx, store.Query{PK: pkSubscribed})
	if err != nil {
		return fmt.Errorf("billing: list subscribed organisations: %w", err)
	}
	var errs []error
	for _, it := range items {
		org := it.String("org_id")
		if err := s.reportOrg(ctx, org, now); err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "billing: overage not reported",
				slog.String("org_id", org), slog.String("error", err.Error()))
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Service) reportOrg(ctx context.Context, org string, now time.Time) error {
	st, err := s.State(ctx, org)
	if err != nil {
		return err
	}
	first, _ := Period(now)
	prevFirst := first.AddDate(0, -1, 0)
	prev := prevFirst.Format(periodFormat)
	// The closed period, once more: the counts flushed since its last hourly report.
	if r, ok := st.Reported[prev]; ok && r.sent() && !r.Final && now.Sub(first) < closingWindow {
		if err := s.reportPeriod(ctx, st, prev, r.ItemID, r, prevFirst, first.Add(-time.Second), true); err != nil {
			return err
		}
	}
	if !st.Active() || st.MeteredItemID == "" {
		return nil
	}
	cur := first.Format(periodFormat)
	return s.reportPeriod(ctx, st, cur, st.MeteredItemID, st.Reported[cur], first, now, false)
}

// reportPeriod reads the live reads of the period starting at first up to at, and sends
// their units on item at at unless item already holds them; stored is the period's report as
// read, final marks the period closed.
func (s *Service) reportPeriod(ctx context.Context, st State, period, item string, stored Report, first, at time.Time, final bool) error {
	included, ok := s.includedReads(st.PlanID)
	if !ok {
		return nil
	}
	days, err := s.meter.Read(ctx, st.OrgID, "live", first, at)
	if err != nil {
		return fmt.Errorf("billing: read usage of %s for %s: %w", st.OrgID, period, err)
	}
	units := OverageUnits(metering.Sum(days).Reads, included)
	key := stateKey(st.OrgID)
	done := store.Update{Set: map[string]any{
		overageAttr(period, ""): units, overageAttr(period, "_item"): item,
	}, Remove: staleReports(st, period)}
	if final {
		done.Set[overageAttr(period, "_final")] = int64(1)
	}
	// The write of a report without a send holds only if the stored report is still the
	// one read; otherwise another run wrote meanwhile, and this one stands down.
	asRead := store.IfAttrNotExists(overageAttr(period, ""))
	if stored.sent() {
		asRead = store.And(store.IfEqual(overageAttr(period, ""), stored.Quantity), store.IfEqual(overageAttr(period, "_item"), stored.ItemID))
	}
	// known: what item holds for the period is what was stored. A new item (a new
	// subscription) holds nothing yet.
	known := stored.sent() && stored.ItemID == item
	switch {
	case known && stored.Quantity == units:
		// Unchanged: nothing to send; a closed period is only marked final.
		if !final {
			return nil
		}
		return s.storeReport(ctx, key, done, store.And(store.IfExists(), asRead))
	case !known && units == 0:
		// Stripe's total without a record is 0: stored without a call, so that the period's
		// later runs, and its final report, know the item.
		return s.storeReport(ctx, key, done, store.And(store.IfExists(), asRead))
	}
	rec := UsageRecord{
		SubscriptionItemID: item, Quantity: units, Timestamp: at,
		IdempotencyKey: fmt.Sprintf("%s-%s-%d", item, period, units),
	}
	if stored.PendingKey == rec.IdempotencyKey && !stored.PendingAt.IsZero() {
		rec.Timestamp = stored.PendingAt // a retry repeats the first attempt exactly
	} else {
		// Kept before the call: if it fails, or its answer is lost, the next run retries
		// with the same key and the same timestamp.
		_, err := s.table.Update(ctx, key, store.Update{Set: map[string]any{
			overageAttr(period, "_pending"): rec.IdempotencyKey, overageAttr(period, "_pending_at"): rec.Timestamp.Unix(),
		}}, store.And(store.IfExists(), store.IfNotEqual(overageAttr(period, "_pending"), rec.IdempotencyKey)))
		if isRace(err) {
			return nil // another run is sending the same value now
		}
		if err != nil {
			return fmt.Errorf("billing: keep overage report of %s for %s: %w", st.OrgID, period, err)
		}
	}
	if err := s.provider.ReportUsage(ctx, rec); err != nil {
		return fmt.Errorf("billing: report overage of %s for %s: %w", st.OrgID, period, err)
	}
	done.Remove = append(done.Remove, overageAttr(period, "_pending"), overageAttr(period, "_pending_at"))
	err = s.storeReport(ctx, key, done, store.And(store.IfExists(), store.IfEqual(overageAttr(period, "_pending"), rec.IdempotencyKey)))
	if err != nil {
		return err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "billing: overage reported", slog.String("org_id", st.OrgID),
		slog.String("period", period), slog.Int64("units", units), slog.Bool("final", final))
	return nil
}

// storeReport writes a report; a failed condition means another run stored one meanwhile.
func (s *Service) storeReport(ctx context.Context, key store.Key, u store.Update, cond store.Condition) error {
	_, err := s.table.Update(ctx, key, u, cond)
	if err != nil && !isRace(err) {
		return fmt.Errorf("billing: store overage report of %s: %w", key.PK, err)
	}
	return nil
}

// staleReports names the attributes of periods older than the one before period: they are
// never read again, and would otherwise grow the state item by a few every month. Newer
// periods are kept (the closed period's final report must not drop the current one's).
func staleReports(st State, period string) []string {
	start, err := time.Parse(periodFormat, period)
	if err != nil {
		return nil
	}
	cutoff := start.AddDate(0, -1, 0).Format(periodFormat)
	var out []string
	for p, r := range st.Reported {
		if p >= cutoff { // "2006-01" sorts as time does
			continue
		}
		out = append(out, overageAttr(p, ""), overageAttr(p, "_item"))
		if r.Final {
			out = append(out, overageAttr(p, "_final"))
		}
		if r.PendingKey != "" {
			out = append(out, overageAttr(p, "_pending"), overageAttr(p, "_pending_at"))
		}
	}
	return out
}

// includedReads is the plan's included reads; false for a plan that publishes none
// (enterprise, by agreement) or that this deployment does not list: no overage is computed.
func (s *Service) includedReads(planID string) (int64, bool) {
	p, ok := s.plans.Get(planID)
	if !ok || p.IncludedReads == nil {
		return 0, false
	}
	return *p.IncludedReads, true
}

// RunOverageReports runs ReportOverage once at start (a restart just after a month ends
// still reports the closed month) and then at every tick, until ctx ends: the scheduler of
// `go run .`, which passes an hourly ticker's channel (docs/console.md §3). A failed pass is logged by ReportOverage and retried at the next tick.
// Billing off: it returns at once.
func (s *Service) RunOverageReports(ctx context.Context, ticks <-chan time.Time) {
	if !s.Configured() {
		return
	}
	for {
		_ = s.ReportOverage(ctx) // each organisation's failure is logged by ReportOverage
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}
