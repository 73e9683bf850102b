import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, type BillingSummary, type Client, type Plan } from './api';
import { Billing } from './pages/billing';
import { mountPoint, pageHelpers, settle } from './testing';

const plans: Plan[] = [
  { plan_id: 'free', name: 'Free', monthly_price_cents: 0, currency: 'usd', included_reads: 100000, live_key_cap: 1, seat_cap: 3, self_serve: false },
  { plan_id: 'team', name: 'Team', monthly_price_cents: 4900, currency: 'usd', included_reads: 1000000, live_key_cap: 5, seat_cap: 10, self_serve: true },
  { plan_id: 'enterprise', name: 'Enterprise', monthly_price_cents: null, currency: 'usd', included_reads: null, live_key_cap: null, seat_cap: null, self_serve: false },
];
const zero = { reads: 0, publishes: 0, signals: 0, stream_connects: 0, tickets: 0 };
function summary(over: Partial<BillingSummary> = {}): BillingSummary {
  return { org_id: 'org_1', plan: plans[0], period_start: '2026-11-01', period_end: '2026-11-30', totals: zero, included_reads: 100000, billing_configured: true, subscription_active: false, ...over };
}

afterEach(() => {
  vi.restoreAllMocks();
});
const mount = mountPoint();
const { renderPage, button } = pageHelpers(mount);

async function show(role: 'owner' | 'member', client: Partial<Client>) {
  await renderPage((org) => <Billing org={org} />, role, { plans: async () => plans, ...client });
}

describe('billing page', () => {
  it('says plainly when billing is off, and offers no checkout', async () => {
    await show('owner', { billing: async () => summary({ billing_configured: false, plan: plans[0] }) });
    expect(mount.el.textContent).toContain('Billing is not set up on this deployment');
    expect(button('Choose Team')).toBeUndefined();
    expect(mount.el.textContent).toContain('Sales-led: contact us.');
  });

  it('explains a 503 from checkout', async () => {
    const checkout = vi.fn(async () => {
      throw new ApiError(503, 'Billing is not configured.');
    });
    await show('owner', { billing: async () => summary(), checkout });
    await act(async () => {
      button('Choose Team')!.click();
    });
    await settle();
    expect(checkout).toHaveBeenCalledWith('org_1', 'team');
    expect(mount.el.querySelector('[role="alert"]')?.textContent).toBe('Billing is not set up on this deployment, so plans cannot be bought here.');
  });

  it('gives members a read-only view', async () => {
    const checkout = vi.fn();
    await show('member', { billing: async () => summary(), checkout });
    expect(mount.el.textContent).toContain('You are a member: only owners can change the plan');
    expect(button('Choose Team')).toBeUndefined();
    expect(mount.el.textContent).toContain('An owner can choose this plan.');
  });

  it('offers the portal to a subscribed organisation instead of checkout', async () => {
    await show('owner', { billing: async () => summary({ subscription_active: true, plan: plans[1] }) });
    expect(button('Manage payment and invoices')).toBeDefined();
    expect(button('Choose Team')).toBeUndefined();
  });
});
