// The signed-in shell reads the user's organisations from GET /console/orgs (docs/console.md §1), not from what this browser remembers: these tests run the whole App against
// a fake service behind fetch, in a browser whose storage holds only the session.
import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Organisation } from './api';
import { App } from './app';
import { publishCommand, queryCommand } from './firstcall';
import { BASE, navigate } from './router';
import { mountPoint, pageHelpers } from './testing';

const ME = { user_id: 'usr_1', email: 'ann@example.com', display_name: null, locale: 'en', totp_enabled: false };
const zero = { reads: 0, publishes: 0, signals: 0, stream_connects: 0, tickets: 0 };
/** ISSUED is the raw key the fake service issues. */
const ISSUED = 'svc_' + 'Zz9'.repeat(14) + 'Q';

function org(org_id: string, name: string, role: 'owner' | 'member' = 'owner'): Organisation {
  return { org_id, name, plan: 'free', created_at: '2026-11-20T10:00:00Z', role };
}

/**
 * FakeService answers the console routes the shell and the overview and members pages use.
 * member holds the organisations the user belongs to; calls records "METHOD path" of each request.
 */
class FakeService {
  member: Organisation[];
  keys: unknown[] = [];
  calls: string[] = [];
  listStatus = 200;

  constructor(member: Organisation[]) {
    this.member = member;
  }

  fetch = async (input: string, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input, location.origin);
    const method = init.method ?? 'GET';
    const path = url.pathname;
    this.calls.push(`${method} ${path}`);
    const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
    if (method === 'DELETE' && path === '/console/auth/me') {
      this.member = [];
      return json(200, { ok: true });
    }
    if (path === '/console/auth/me') return json(200, { token: 'ses_new', expires_at: '2026-12-20T10:00:00Z', user: ME });
    if (method === 'GET' && path === '/console/orgs') {
      if (this.listStatus !== 200) return json(this.listStatus, { detail: 'The service is failing.' });
      // The server's order: by name, then org_id.
      const sorted = [...this.member].sort((a, b) => a.name.localeCompare(b.name) || a.org_id.localeCompare(b.org_id));
      return json(200, sorted);
    }
    const m = /^\/console\/orgs\/([^/]+)(?:\/(.*))?$/.exec(path);
    const o = m && this.member.find((x) => x.org_id === m[1]);
    if (!m || !o) return json(404, { detail: 'Not found.' });
    const rest = m[2] ?? '';
    if (method === 'GET' && rest === '') return json(200, o);
    if (method === 'DELETE' && rest === '') {
      this.member = this.member.filter((x) => x.org_id !== o.org_id);
      return json(200, { ok: true });
    }
    if (method === 'GET' && rest === 'vitality') {
      return json(200, { environment: url.searchParams.get('environment'), has_traffic: false, last_used_at: null, last_used_key_id: null, today: zero, keys: [] });
    }
    if (method === 'GET' && rest === 'members') {
      return json(200, { members: [{ user_id: ME.user_id, email: ME.email, role: o.role, joined_at: null }], invitations: [] });
    }
    if (method === 'GET' && rest === 'keys') return json(200, this.keys);
    if (method === 'POST' && rest === 'keys') {
      const { label, environment } = JSON.parse(String(init.body));
      const apiKey = { key_id: 'key_1', label, environment, prefix: ISSUED.slice(0, 12), created_at: '2026-11-20T10:00:00Z' };
      this.keys.push(apiKey);
      return json(201, { key: ISSUED, api_key: apiKey });
    }
    if (method === 'POST' && rest === 'leave') {
      this.member = this.member.filter((x) => x.org_id !== o.org_id);
      return json(200, { ok: true });
    }
    return json(404, { detail: 'Not found.' });
  };
}

let service: FakeService;

beforeEach(() => {
  sessionStorage.clear();
  localStorage.clear();
  sessionStorage.setItem('roadevents.session', 'ses_old');
});
afterEach(() => {
  vi.unstubAllGlobals();
});
const mount = mountPoint();
const { button, type } = pageHelpers(mount);

/** start opens the console at path (under /app/) against service and waits for it to settle. */
async function start(path: string, member: Organisation[]) {
  service = new FakeService(member);
  vi.stubGlobal('fetch', service.fetch);
  history.replaceState(null, '', BASE + path);
  await act(async () => {
    render(<App apiBase="" />, mount.el);
  });
}

/** switcher returns the labels of the organisation switcher's options. */
function switcher(): string[] {
  const select = mount.el.querySelector('label.org-switch select') as HTMLSelectElement | null;
  return select ? [...select.options].map((o) => o.textContent ?? '') : [];
}

function heading(): string | undefined {
  return mount.el.querySelector('h1')?.textContent ?? undefined;
}

async function click(text: string) {
  const b = button(text);
  expect(b, `a button "${text}"`).toBeTruthy();
  await act(async () => {
    b!.click();
  });
}

describe('the organisations come from the server', () => {
  it('shows a returning user on a new browser their organisations, in the server\'s order, and opens the first', async () => {
    await start('', [org('org_c', 'Charlie'), org('org_a', 'Alpha', 'member'), org('org_b', 'Bravo')]);
    await vi.waitFor(() => expect(heading()).toBe('Alpha'));
    expect(location.pathname).toBe(BASE + 'orgs/org_a/overview');
    expect(switcher()).toEqual(['Alpha', 'Bravo', 'Charlie', '+ New organisation']);
    expect(service.calls).toContain('GET /console/orgs');
  });

  it('opens the organisation last opened in this browser when the user still belongs to it', async () => {
    localStorage.setItem('roadevents.current-org.usr_1', 'org_b');
    await start('', [org('org_a', 'Alpha'), org('org_b', 'Bravo')]);
    await vi.waitFor(() => expect(heading()).toBe('Bravo'));
    expect(location.pathname).toBe(BASE + 'orgs/org_b/overview');
  });

  it('ignores a last-opened organisation the user no longer belongs to', async () => {
    localStorage.setItem('roadevents.current-org.usr_1', 'org_gone');
    await start('', [org('org_a', 'Alpha')]);
    await vi.waitFor(() => expect(heading()).toBe('Alpha'));
    expect(service.calls).not.toContain('GET /console/orgs/org_gone');
  });

  it('offers to create an organisation when the user has none', async () => {
    await start('', []);
    await vi.waitFor(() => expect(heading()).toBe('Create an organisation'));
    expect(location.pathname).toBe(BASE + 'orgs/new');
    expect(switcher()).toEqual(['Switch organisation…', '+ New organisation']);
  });

  it('drops the list earlier consoles kept in localStorage and never asks for its ids', async () => {
    localStorage.setItem('roadevents.orgs.usr_1', JSON.stringify(['org_old']));
    await start('', [org('org_a', 'Alpha')]);
    await vi.waitFor(() => expect(heading()).toBe('Alpha'));
    expect(localStorage.getItem('roadevents.orgs.usr_1')).toBeNull();
    expect(service.calls).not.toContain('GET /console/orgs/org_old');
    expect(switcher()).toEqual(['Alpha', '+ New organisation']);
  });

  it('says when the list cannot be read, and reads it again on request', async () => {
    service = new FakeService([org('org_a', 'Alpha')]);
    service.listStatus = 500;
    vi.stubGlobal('fetch', service.fetch);
    history.replaceState(null, '', BASE);
    await act(async () => {
      render(<App apiBase="" />, mount.el);
    });
    await vi.waitFor(() => expect(mount.el.querySelector('.alert.error')?.textContent).toBe('The service is failing.'));
    service.listStatus = 200;
    await click('Try again');
    await vi.waitFor(() => expect(heading()).toBe('Alpha'));
  });
});

describe('the list follows membership changes', () => {
  it('takes an organisation off the switcher after leaving it, and opens another', async () => {
    await start('orgs/org_a/members', [org('org_a', 'Alpha', 'member'), org('org_b', 'Bravo')]);
    await vi.waitFor(() => expect(mount.el.textContent).toContain('(you)'));
    expect(switcher()).toEqual(['Alpha', 'Bravo', '+ New organisation']);
    await click('Leave');
    await click('Yes, leave');
    await vi.waitFor(() => expect(heading()).toBe('Bravo'));
    expect(location.pathname).toBe(BASE + 'orgs/org_b/overview');
    expect(switcher()).toEqual(['Bravo', '+ New organisation']);
    expect(localStorage.getItem('roadevents.current-org.usr_1')).toBe('org_b');
  });

  it('takes an organisation off the switcher when opening it finds the user removed', async () => {
    await start('orgs/org_b/overview', [org('org_a', 'Alpha'), org('org_b', 'Bravo')]);
    await vi.waitFor(() => expect(heading()).toBe('Bravo'));
    expect(switcher()).toEqual(['Alpha', 'Bravo', '+ New organisation']);
    // An owner removes the user from Alpha elsewhere; choosing it in the switcher is a 404.
    service.member = service.member.filter((o) => o.org_id !== 'org_a');
    const select = mount.el.querySelector('label.org-switch select') as HTMLSelectElement;
    await act(async () => {
      select.value = 'org_a';
      select.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await vi.waitFor(() => expect(mount.el.querySelector('.alert.error')?.textContent).toMatch(/not a member/));
    await vi.waitFor(() => expect(switcher()).toEqual(['Switch organisation…', 'Bravo', '+ New organisation']));
  });
});

describe('deletions', () => {
  it('takes a deleted organisation off the switcher, and says so on the one it opens', async () => {
    await start('orgs/org_a/settings', [org('org_a', 'Alpha'), org('org_b', 'Bravo')]);
    await vi.waitFor(() => expect(button('Delete organisation')).toBeTruthy());
    await click('Delete organisation');
    await type('confirm', 'Alpha');
    await click('Yes, delete the organisation');
    await vi.waitFor(() => expect(heading()).toBe('Bravo'));
    expect(service.calls).toContain('DELETE /console/orgs/org_a');
    expect(location.pathname).toBe(BASE + 'orgs/org_b/overview');
    expect(switcher()).toEqual(['Bravo', '+ New organisation']);
    expect(mount.el.querySelector('.alert.success')?.textContent).toBe('The organisation Alpha is deleted.');
    // The notice is for the page it lands on only.
    await act(async () => navigate('orgs/org_b/keys'));
    await vi.waitFor(() => expect(mount.el.textContent).toContain('No keys yet.'));
    expect(mount.el.textContent).not.toContain('is deleted.');
  });

  it('goes back to sign-in once the account is deleted, saying so, and forgets the session', async () => {
    await start('account', [org('org_a', 'Alpha')]);
    await vi.waitFor(() => expect(heading()).toBe('Your account'));
    await click('Delete my account');
    await type('confirm', 'ann@example.com');
    await click('Yes, delete my account');
    await vi.waitFor(() => expect(heading()).toBe('Sign in to the road events console'));
    expect(service.calls).toContain('DELETE /console/auth/me');
    expect(mount.el.textContent).toContain('Your account is deleted.');
    expect(sessionStorage.getItem('roadevents.session')).toBeNull();
    expect(location.pathname).toBe(BASE);
  });
});

describe('a new user\'s first hour', () => {
  it('links the API reference from the header', async () => {
    await start('', [org('org_a', 'Alpha')]);
    await vi.waitFor(() => expect(heading()).toBe('Alpha'));
    const link = [...mount.el.querySelectorAll('header a')].find((a) => a.textContent === 'API reference');
    expect(link?.getAttribute('href')).toBe('/docs');
  });

  it('shows the first calls, with the new key and this origin, once the key is issued', async () => {
    await start('orgs/org_a/keys', [org('org_a', 'Alpha')]);
    await vi.waitFor(() => expect(mount.el.textContent).toContain('No keys yet.'));
    expect(mount.el.querySelector('[data-testid="curl-publish"]')).toBeNull();
    const label = mount.el.querySelector('input[name="label"]') as HTMLInputElement;
    await act(async () => {
      label.value = 'Fleet app';
      label.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await click('Issue key');
    await vi.waitFor(() => expect(mount.el.querySelector('[data-testid="raw-key"]')?.textContent).toBe(ISSUED));
    expect(mount.el.querySelector('[data-testid="curl-publish"]')?.textContent).toBe(publishCommand(location.origin, ISSUED));
    expect(mount.el.querySelector('[data-testid="curl-query"]')?.textContent).toBe(queryCommand(location.origin, ISSUED));
    // The commands go with the key: once the user has copied it, both are gone.
    await click('I have copied it');
    expect(mount.el.querySelector('[data-testid="curl-publish"]')).toBeNull();
  });
});
