import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Client, Organisation, ReputationReport } from './api';
import { AppContext, type Ctx } from './context';
import { Quality } from './pages/quality';

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

let root: HTMLElement;
beforeEach(() => {
  root = document.createElement('div');
  document.body.appendChild(root);
});
afterEach(() => {
  render(null, root);
  root.remove();
});

async function show(r: ReputationReport) {
  const org: Organisation = { org_id: 'org_1', name: 'Acme', plan: 'free', role: 'member' };
  const ctx = { client: { reputation: async () => r } as Partial<Client> as Client } as Ctx;
  await act(async () => {
    render(
      <AppContext.Provider value={ctx}>
        <Quality org={org} />
      </AppContext.Provider>,
      root,
    );
  });
  await act(async () => {
    await new Promise((res) => setTimeout(res, 0));
  });
}

describe('quality page', () => {
  it('shows each environment\'s band and numbers, and says what a poor standing does', async () => {
    await show(report);
    expect(root.querySelector('[data-testid="band-live"]')?.textContent).toBe('Poor');
    expect(root.querySelector('[data-testid="standing-live"]')?.textContent).toContain('20 %');
    expect(root.querySelector('[role="alert"]')?.textContent).toContain('Your active live events are invalidated');
    expect(root.querySelector('[data-testid="band-sandbox"]')?.textContent).toBe('New');
    expect(root.querySelector('[data-testid="standing-sandbox"]')?.textContent).toContain('—');
    expect(root.textContent).toContain('0 of the 20 decided events needed');
  });
});
