// Plans and billing (docs/api.md §4.4): the summary for every member; checkout and portal for
// owners, which redirect the browser to the payment provider's hosted page. Unconfigured billing
// (503, billing_configured false) and a member's read-only view are said plainly.
import { useState } from 'preact/hooks';
import type { Organisation, Plan } from '../api';
import { useApp } from '../context';
import { Loading, Notice, formatNumber, useLoad } from '../ui';
import { Totals } from './overview';

function price(p: Plan): string {
  if (p.monthly_price_cents === null) return 'Contact sales';
  if (p.monthly_price_cents === 0) return 'Free';
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency: p.currency.toUpperCase() }).format(p.monthly_price_cents / 100) + ' a month';
  } catch {
    return `${(p.monthly_price_cents / 100).toFixed(2)} ${p.currency} a month`;
  }
}
function cap(v: number | null): string {
  return v === null ? 'Unlimited' : formatNumber(v);
}

/** Billing shows the plan, this month's live usage and the billing actions. */
export function Billing({ org }: { org: Organisation }) {
  const { client } = useApp();
  const summary = useLoad(() => client.billing(org.org_id), [org.org_id]);
  const plans = useLoad(() => client.plans(), []);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const owner = org.role === 'owner';

  const go = async (fn: () => Promise<{ url: string }>) => {
    setError(null);
    setBusy(true);
    try {
      const s = await fn();
      location.assign(s.url);
    } catch (e) {
      const err = e as { status?: number; message: string };
      setError(
        err.status === 503
          ? 'Billing is not set up on this deployment, so plans cannot be bought here.'
          : err.status === 403
            ? 'Only owners can change the plan or open the billing portal.'
            : err.message,
      );
      setBusy(false);
    }
  };

  return (
    <>
      <h2>Plan and billing</h2>
      {error && <Notice kind="error">{error}</Notice>}
      <Loading load={summary}>
        {(b) => (
          <>
            {!b.billing_configured && <Notice>Billing is not set up on this deployment: plans are shown for reference and cannot be bought here.</Notice>}
            {!owner && <Notice>You are a member: only owners can change the plan or manage payment.</Notice>}
            <p>
              Current plan: <strong>{b.plan.name}</strong> ({price(b.plan)}){b.subscription_active && ' · subscription active'}
            </p>
            <h3>
              This month's live usage ({b.period_start} to {b.period_end})
            </h3>
            <Totals totals={b.totals} label="Live usage this month" />
            {b.included_reads !== null && (
              <p>
                Reads included in the plan: {formatNumber(b.included_reads)} a month ({formatNumber(b.totals.reads)} used). No request is refused over the
                plan.
              </p>
            )}
            {owner && b.billing_configured && b.subscription_active && (
              <button type="button" onClick={() => go(() => client.portal(org.org_id))} disabled={busy}>
                Manage payment and invoices
              </button>
            )}
            <h3>Plans</h3>
            <Loading load={plans}>
              {(list) => (
                <ul class="plans">
                  {list.map((p) => (
                    <li key={p.plan_id} class={'card plan' + (p.plan_id === b.plan.plan_id ? ' current' : '')}>
                      <h4>{p.name}</h4>
                      <p class="price">{price(p)}</p>
                      <ul class="small">
                        <li>Included reads: {cap(p.included_reads)} a month</li>
                        <li>Live keys: {cap(p.live_key_cap)}</li>
                        <li>Seats: {cap(p.seat_cap)}</li>
                      </ul>
                      {p.plan_id === b.plan.plan_id ? (
                        <p>
                          <strong>Your plan</strong>
                        </p>
                      ) : p.self_serve && b.billing_configured ? (
                        owner && b.subscription_active ? (
                          <button type="button" onClick={() => go(() => client.portal(org.org_id))} disabled={busy}>
                            Change in the billing portal
                          </button>
                        ) : owner ? (
                          <button type="button" class="primary" onClick={() => go(() => client.checkout(org.org_id, p.plan_id))} disabled={busy}>
                            Choose {p.name}
                          </button>
                        ) : (
                          <p class="muted small">An owner can choose this plan.</p>
                        )
                      ) : p.monthly_price_cents === null ? (
                        <p class="muted small">Sales-led: contact us.</p>
                      ) : !b.billing_configured ? (
                        <p class="muted small">Not available here while billing is off.</p>
                      ) : null}
                    </li>
                  ))}
                </ul>
              )}
            </Loading>
          </>
        )}
      </Loading>
    </>
  );
}
