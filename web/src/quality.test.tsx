import { describe, expect, it } from 'vitest';
import type { ReputationReport } from './api';
import { Quality } from './pages/quality';
import { mountPoint, pageHelpers } from './testing';

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
const { renderPage } = pageHelpers(mount);

async function show(r: ReputationReport) {
  await renderPage((org) => <Quality org={org} />, 'member', { reputation: async () => r });
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
