import { h, render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import { ApiError, type Client, type Me } from './api';
import { AppContext, type Ctx } from './context';
import { Account } from './pages/account';
import { BASE } from './router';
import { click, mountPoint, pageHelpers, settle } from './testing';

const mount = mountPoint();
const { type } = pageHelpers(mount);
const me = { user_id: 'usr_1', email: 'ada@example.com', display_name: null, locale: 'en', totp_enabled: false, created_at: '2040-01-01T00:00:00Z' } as unknown as Me;

async function renderAccount(client: Partial<Client>, extra: Partial<Ctx> = {}) {
  const ctx = { client: client as Client, me, setMe: () => {}, ...extra } as unknown as Ctx;
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

describe('deleting the account', () => {
  const input = (name: string) => mount.el.querySelector<HTMLInputElement>(`input[name="${name}"]`);
  const labelOf = (el: HTMLInputElement | null) => (el ? mount.el.querySelector(`label[for="${el.id}"]`)?.textContent : undefined);
  const yes = () => button('Yes, delete my account');
  const accountClient = (deleteMe: Client['deleteMe']) =>
    ({ deleteMe, recoveryStatus: vi.fn().mockResolvedValue({ remaining: 10, total: 10 }) }) as Partial<Client>;

  it('asks for the address, whatever its case and spaces, before the final button works, and then signs out', async () => {
    const deleteMe = vi.fn().mockResolvedValue({ ok: true });
    const signOut = vi.fn();
    localStorage.setItem('roadevents.current-org.usr_1', 'org_1');
    history.replaceState(null, '', BASE + 'account');
    await renderAccount(accountClient(deleteMe), { signOut });
    expect(yes()).toBeUndefined();
    await click(button('Delete my account'));
    expect(mount.el.textContent).toContain('Organisations where you are the only member are deleted with your account.');
    const typed = input('confirm');
    expect(labelOf(typed)).toBe('Type your e-mail address to confirm');
    expect(document.activeElement).toBe(typed);
    // No TOTP, no code asked.
    expect(input('totp_code')).toBeNull();
    expect(yes()!.disabled).toBe(true);
    await type('confirm', 'ada@example.org');
    expect(yes()!.disabled).toBe(true);
    await type('confirm', '  ADA@Example.com ');
    expect(yes()!.disabled).toBe(false);
    await click(yes());
    expect(deleteMe).toHaveBeenCalledExactlyOnceWith(undefined);
    expect(signOut).toHaveBeenCalledExactlyOnceWith('Your account is deleted.');
    expect(location.pathname).toBe(BASE);
    expect(localStorage.getItem('roadevents.current-org.usr_1')).toBeNull();
  });

  it('asks for an authenticator code when TOTP is on, and sends it', async () => {
    const deleteMe = vi.fn().mockResolvedValue({ ok: true });
    const signOut = vi.fn();
    await renderAccount(accountClient(deleteMe), { me: { ...me, totp_enabled: true }, signOut });
    await click(button('Delete my account'));
    expect(labelOf(input('totp_code'))).toBe('Authenticator code');
    await type('confirm', 'ada@example.com');
    await click(yes());
    expect(mount.el.textContent).toContain('Enter the code from your authenticator app.');
    expect(deleteMe).not.toHaveBeenCalled();
    await type('totp_code', ' 123456 ');
    await click(yes());
    expect(deleteMe).toHaveBeenCalledExactlyOnceWith('123456');
    expect(signOut).toHaveBeenCalledOnce();
  });

  it('shows why the service refused, and stays signed in', async () => {
    const detail = 'You are the last owner of "Acme" (org_1), which has other members: make another member an owner, or delete the organisation, first';
    const deleteMe = vi.fn().mockRejectedValue(new ApiError(409, detail));
    const signOut = vi.fn();
    await renderAccount(accountClient(deleteMe), { signOut });
    await click(button('Delete my account'));
    await type('confirm', 'ada@example.com');
    await click(yes());
    expect(mount.el.querySelector('.alert.error')?.textContent).toBe(detail);
    expect(signOut).not.toHaveBeenCalled();
    expect(yes()).toBeDefined();
  });

  it('closes the step on Cancel and gives the keyboard back to its button', async () => {
    await renderAccount(accountClient(vi.fn()));
    await click(button('Delete my account'));
    await type('confirm', 'ada@example.com');
    await click(button('Cancel'));
    expect(input('confirm')).toBeNull();
    expect(document.activeElement).toBe(button('Delete my account'));
  });
});
