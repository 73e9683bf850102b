// Deleting an organisation from its settings (DELETE /console/orgs/{org_id}, docs/privacy.md §6):
// owners only, once its exact name is typed and, with TOTP, an authenticator code is given.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, type Client, type Me, type Organisation, type Role } from './api';
import type { Ctx } from './context';
import { OrgSettings } from './pages/orgs';
import { BASE } from './router';
import { click, mountPoint, pageHelpers } from './testing';

const mount = mountPoint();
const { renderPage, button, type } = pageHelpers(mount);
const me = { user_id: 'usr_1', email: 'ada@example.com', display_name: null, locale: 'en', totp_enabled: false } as Me;
const bravo: Organisation = { org_id: 'org_2', name: 'Bravo', plan: 'free', role: 'member' };

const input = (name: string) => mount.el.querySelector<HTMLInputElement>(`input[name="${name}"]`);
const labelOf = (el: HTMLInputElement | null) => (el ? mount.el.querySelector(`label[for="${el.id}"]`)?.textContent : undefined);
const yes = () => button('Yes, delete the organisation');

/** renderSettings renders Acme's settings; after a deletion the server's list is left. */
async function renderSettings(role: Role, client: Partial<Client>, ctx: Partial<Ctx> = {}, left: Organisation[] = [bravo]) {
  const c = { me, refreshOrgs: vi.fn().mockResolvedValue(left), flash: vi.fn(), ...ctx };
  await renderPage((org) => <OrgSettings org={org} onChange={() => {}} />, role, client, c);
  return c;
}

beforeEach(() => {
  localStorage.clear();
  history.replaceState(null, '', BASE + 'orgs/org_1/settings');
});

describe('deleting an organisation', () => {
  it('is not offered to a member', async () => {
    await renderSettings('member', {});
    expect(button('Delete organisation')).toBeUndefined();
    expect(mount.el.textContent).not.toContain('Delete this organisation');
  });

  it('asks for the exact name before the final button works, then opens another organisation and says so', async () => {
    localStorage.setItem('roadevents.current-org.usr_1', 'org_1');
    const deleteOrg = vi.fn().mockResolvedValue({ ok: true });
    const ctx = await renderSettings('owner', { deleteOrg });
    expect(yes()).toBeUndefined();
    await click(button('Delete organisation'));
    expect(mount.el.textContent).toContain('Every API key of Acme is revoked at once, its subscription is cancelled');
    const typed = input('confirm');
    expect(labelOf(typed)).toBe("Type the organisation's name to confirm");
    expect(document.activeElement).toBe(typed);
    // No TOTP, no code asked.
    expect(input('totp_code')).toBeNull();
    expect(yes()!.disabled).toBe(true);
    for (const wrong of ['acme', 'Acme ', 'Acm']) {
      await type('confirm', wrong);
      expect(yes()!.disabled, wrong).toBe(true);
    }
    await type('confirm', 'Acme');
    expect(yes()!.disabled).toBe(false);
    await click(yes());
    expect(deleteOrg).toHaveBeenCalledExactlyOnceWith('org_1', undefined);
    expect(ctx.refreshOrgs).toHaveBeenCalledOnce();
    expect(ctx.flash).toHaveBeenCalledExactlyOnceWith('The organisation Acme is deleted.', 'orgs/org_2/overview');
    expect(location.pathname).toBe(BASE + 'orgs/org_2/overview');
    expect(localStorage.getItem('roadevents.current-org.usr_1')).toBeNull();
  });

  it('asks for an authenticator code when the account has TOTP, sends it, and offers to create an organisation when none is left', async () => {
    const deleteOrg = vi.fn().mockResolvedValue({ ok: true });
    const ctx = await renderSettings('owner', { deleteOrg }, { me: { ...me, totp_enabled: true } }, []);
    await click(button('Delete organisation'));
    expect(labelOf(input('totp_code'))).toBe('Authenticator code');
    await type('confirm', 'Acme');
    await click(yes());
    expect(mount.el.textContent).toContain('Enter the code from your authenticator app.');
    expect(deleteOrg).not.toHaveBeenCalled();
    await type('totp_code', '123456');
    await click(yes());
    expect(deleteOrg).toHaveBeenCalledExactlyOnceWith('org_1', '123456');
    expect(ctx.flash).toHaveBeenCalledWith('The organisation Acme is deleted.', 'orgs/new');
    expect(location.pathname).toBe(BASE + 'orgs/new');
  });

  it('shows why the service refused, and nothing leaves', async () => {
    const detail = 'The payment provider could not cancel the subscription; nothing was deleted. Try again later.';
    const deleteOrg = vi.fn().mockRejectedValue(new ApiError(502, detail));
    const ctx = await renderSettings('owner', { deleteOrg });
    await click(button('Delete organisation'));
    await type('confirm', 'Acme');
    await click(yes());
    expect(mount.el.querySelector('.alert.error')?.textContent).toBe(detail);
    expect(ctx.refreshOrgs).not.toHaveBeenCalled();
    expect(ctx.flash).not.toHaveBeenCalled();
    expect(location.pathname).toBe(BASE + 'orgs/org_1/settings');
  });
});
