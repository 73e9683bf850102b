// The privacy notice (docs/privacy.md): linked from the footer of every page, signed in or not,
// and shown at /app/privacy from the repository's file.
import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { App } from './app';
import { renderMarkdown } from './privacydoc';
import { BASE } from './router';
import { mountPoint } from './testing';

const ME = { user_id: 'usr_1', email: 'ann@example.com', display_name: null, locale: 'en', totp_enabled: false };

const mount = mountPoint();

beforeEach(() => {
  sessionStorage.clear();
  localStorage.clear();
});
afterEach(() => {
  vi.unstubAllGlobals();
});

/** start opens the console at path, signed in when a session is stored, against a service that knows the session and no organisation. */
async function start(path: string) {
  const json = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });
  vi.stubGlobal('fetch', async (input: string) => {
    const p = new URL(input, location.origin).pathname;
    if (p === '/console/auth/me') return json({ token: 'ses_new', expires_at: '2026-12-20T10:00:00Z', user: ME });
    if (p === '/console/orgs') return json([]);
    return new Response('{}', { status: 404 });
  });
  history.replaceState(null, '', BASE + path);
  await act(async () => {
    render(<App apiBase="" />, mount.el);
  });
}

const h1 = () => mount.el.querySelector('h1')?.textContent;
const footerLink = () => [...mount.el.querySelectorAll('footer a')].find((a) => a.textContent === 'Privacy') as HTMLAnchorElement | undefined;

async function follow(a: HTMLAnchorElement | undefined) {
  expect(a).toBeDefined();
  await act(async () => {
    a!.click();
  });
}

/** expectNotice waits for the privacy notice: its H1, its §6 heading and its tables. */
async function expectNotice() {
  await vi.waitFor(() => expect(h1()).toMatch(/^Privacy: what the service keeps/));
  const h2s = [...mount.el.querySelectorAll('article.doc h2')].map((h) => h.textContent);
  expect(h2s).toContain('§6 Erasing an account, deleting an organisation');
  const th = [...mount.el.querySelectorAll('article.doc table th')].map((t) => t.textContent);
  expect(th).toEqual(expect.arrayContaining(['Datum', 'Why', 'Kept', 'Erased']));
  expect(mount.el.querySelector('article.doc code')?.textContent).toBe('docs/privacy.md §N');
}

describe('the privacy notice', () => {
  it('is linked from the sign-in page, and opens without a session', async () => {
    await start('');
    await vi.waitFor(() => expect(h1()).toBe('Sign in to the road events console'));
    expect(footerLink()?.getAttribute('href')).toBe(BASE + 'privacy');
    await follow(footerLink());
    expect(location.pathname).toBe(BASE + 'privacy');
    await expectNotice();
    // The footer stays, and a link leads back to sign-in.
    expect(footerLink()).toBeDefined();
    await follow([...mount.el.querySelectorAll('main a')].find((a) => a.textContent === 'Sign in') as HTMLAnchorElement);
    await vi.waitFor(() => expect(h1()).toBe('Sign in to the road events console'));
  });

  it('is linked from a signed-in page, and opens inside the console', async () => {
    sessionStorage.setItem('roadevents.session', 'ses_old');
    await start('account');
    await vi.waitFor(() => expect(h1()).toBe('Your account'));
    await follow(footerLink());
    expect(location.pathname).toBe(BASE + 'privacy');
    await expectNotice();
    expect(mount.el.querySelector('header.top')).not.toBeNull();
  });
});

describe('renderMarkdown', () => {
  it('escapes raw HTML and keeps only the text of relative links', () => {
    const html = renderMarkdown('<script>alert(1)</script>\n\nSee <b>this</b>, [the API](docs/api.md) and [Stripe](https://stripe.com).');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<b>');
    expect(html).toContain('&#60;b&#62;this&#60;/b&#62;');
    expect(html).toContain('the API');
    expect(html).not.toContain('docs/api.md');
    expect(html).toContain('<a href="https://stripe.com">Stripe</a>');
  });
});
