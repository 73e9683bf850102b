import { h, render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import { ApiError, type Client, type Me } from './api';
import { AppContext, type Ctx } from './context';
import { Account } from './pages/account';
import { click, mountPoint, settle } from './testing';

const mount = mountPoint();
const me = { user_id: 'usr_1', email: 'ada@example.com', display_name: null, locale: 'en', totp_enabled: false, created_at: '2040-01-01T00:00:00Z' } as unknown as Me;

async function renderAccount(client: Partial<Client>) {
  const ctx = { client: client as Client, me, setMe: () => {} } as unknown as Ctx;
  await act(async () => {
    render(h(AppContext.Provider, { value: ctx }, h(Account, {})), mount.el);
  });
  await settle();
}

const button = (name: string) => [...mount.el.querySelectorAll('button')].find((b) => b.textContent?.trim() === name);

describe('your data', () => {
  // docs/privacy.md §5: the Account page downloads the person's data as one JSON file.
  it('downloads the export as a JSON file', async () => {
    const data = { account: { email: 'ada@example.com' }, sessions: [], memberships: [], audit_entries: [] };
    const exportMe = vi.fn().mockResolvedValue(data);
    const blobs: Blob[] = [];
    const created = vi.spyOn(URL, 'createObjectURL').mockImplementation((b) => {
      blobs.push(b as Blob);
      return 'blob:export';
    });
    const clicked = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      expect(this.download).toBe('roadevents-my-data.json');
    });
    await renderAccount({ exportMe, recoveryStatus: vi.fn().mockResolvedValue({ remaining: 0, total: 0 }) } as Partial<Client>);
    await click(button('Download my data'));
    expect(exportMe).toHaveBeenCalledOnce();
    expect(clicked).toHaveBeenCalledOnce();
    expect(JSON.parse(await blobs[0].text())).toEqual(data);
    expect(mount.el.textContent).toContain('Your data is downloaded.');
    created.mockRestore();
    clicked.mockRestore();
  });

  it('says why the export failed', async () => {
    const exportMe = vi.fn().mockRejectedValue(new ApiError(503, 'The storage cannot answer right now', []));
    await renderAccount({ exportMe, recoveryStatus: vi.fn().mockResolvedValue({ remaining: 0, total: 0 }) } as Partial<Client>);
    await click(button('Download my data'));
    expect(mount.el.textContent).toContain('The storage cannot answer right now');
  });
});
