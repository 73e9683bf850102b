import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it } from 'vitest';
import type { Client, Organisation, ReputationReport } from './api';
import { AppContext, type Ctx } from './context';
import { Quality } from './pages/quality';
import { mountPoint } from './testing';

const report: ReputationReport = {
  org_id: 'org_1',
  window_days: 30,
  min_history: 20,
  verdict_percent: 80,
  good_percent: 80,
  environments: [
    { environment: 'live', for: 4, against: 16, decided: 20, score: 0.2, band: 'poor' },
    { environment: 'sandbox', for: 0, against: 0, decided: 0, band: 'new' },
  ],
};

const mount = mountPoint();

async function show(r: ReputationReport) {
  const org: Organisation = { org_id: 'org_1', name: 'Acme', plan: 'free', role: 'member' };
  const ctx = { client: { reputation: async () => r } as Partial<Client> as Client } as Ctx;
  await act(async () => {
    render(
      <AppContext.Provider value={ctx}>
        <Quality org={org} />
      </AppContext.Provider>,
      mount.el,
    );
  });
  await act(async () => {
    await new Promise((res) => setTimeout(res, 0));
  });
}

describe('quality page', () => {
  it('shows each environment\'s band and numbers, and says what a poor standing does', async () => {
    await show(report);
    expect(mount.el.querySelector('[data-testid="band-live"]')?.textContent).toBe('Poor');
    expect(mount.el.querySelector('[data-testid="standing-live"]')?.textContent).toContain('20 %');
    expect(mount.el.querySelector('[role="alert"]')?.textContent).toContain('Your active live events are invalidated');
    expect(mount.el.querySelector('[data-testid="band-sandbox"]')?.textContent).toBe('New');
    expect(mount.el.querySelector('[data-testid="standing-sandbox"]')?.textContent).toContain('—');
    expect(mount.el.textContent).toContain('0 of the 20 decided events needed');
  });
});
