import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import { ApiError, type Client, type FeedDraft, type FeedPublic, type FeedUpdate, type Organisation } from './api';
import { AppContext, type Ctx } from './context';
import { Feeds } from './pages/feeds';
import { mountPoint } from './testing';

const idle = { last_poll_at: null, last_success_at: null, last_error: null, last_error_at: null, last_poll: null, active_records: 0, imported_total: 0, skipped_total: 0, ended_total: 0 };

function feed(over: Partial<FeedPublic> & { feed_id: string }): FeedPublic {
  return {
    name: '',
    url: 'https://data.example.org/feed.json',
    format: 'wzdx',
    environment: 'sandbox',
    license: '',
    poll_interval_s: 300,
    paused: false,
    created_at: '2026-11-20T10:00:00Z',
    created_by_email: 'ann@example.com',
    updated_at: '2026-11-20T10:00:00Z',
    next_poll_at: '2026-11-20T10:05:00Z',
    health: idle,
    ...over,
  };
}

const healthy = feed({
  feed_id: 'fd_ok',
  name: 'City roadworks',
  url: 'https://opendata.example.org/wzdx.json',
  environment: 'live',
  health: {
    ...idle,
    last_poll_at: '2026-11-20T10:00:00Z',
    last_success_at: '2026-11-20T10:00:00Z',
    last_poll: { not_modified: false, created: 2, revised: 1, unchanged: 5, skipped: 3, ended: 1 },
    active_records: 8,
    imported_total: 40,
    skipped_total: 3,
    ended_total: 12,
  },
});
const failing = feed({
  feed_id: 'fd_bad',
  url: 'https://incidents.example.net/tdx?token=x',
  format: 'tdx',
  poll_interval_s: 3600,
  health: {
    ...idle,
    last_poll_at: '2026-11-20T10:01:00Z',
    last_error: 'upstream answered 502 Bad Gateway',
    last_error_at: '2026-11-20T10:01:00Z',
  },
});

const mount = mountPoint();

async function settle() {
  await act(async () => {
    await new Promise((r) => setTimeout(r, 0));
  });
}

async function show(role: 'owner' | 'member', client: Partial<Client>) {
  const org: Organisation = { org_id: 'org_1', name: 'Acme', plan: 'free', role };
  const ctx = { client: client as Client } as Ctx;
  await act(async () => {
    render(
      <AppContext.Provider value={ctx}>
        <Feeds org={org} />
      </AppContext.Provider>,
      mount.el,
    );
  });
  await settle();
}

function button(name: string, within: ParentNode = mount.el): HTMLButtonElement | undefined {
  return [...within.querySelectorAll('button')].find((b) => b.textContent === name);
}

function row(feedId: string): HTMLElement {
  return mount.el.querySelector(`[data-testid="feed-${feedId}"]`) as HTMLElement;
}

async function type(name: string, value: string) {
  const el = mount.el.querySelector(`input[name="${name}"]`) as HTMLInputElement;
  await act(async () => {
    el.value = value;
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

async function choose(selector: string, value: string) {
  const el = mount.el.querySelector(selector) as HTMLSelectElement;
  await act(async () => {
    el.value = value;
    el.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

async function submit() {
  await act(async () => {
    mount.el.querySelector('form')!.dispatchEvent(new Event('submit', { cancelable: true, bubbles: true }));
  });
  await settle();
}

describe('feeds page', () => {
  it('shows members each feed\'s health, counts and error, read-only', async () => {
    await show('member', { feeds: async () => [healthy, failing] });
    const ok = row('fd_ok');
    expect(ok.textContent).toContain('City roadworks');
    expect(ok.textContent).toContain('WZDx work zones');
    expect(ok.querySelector('.env.live')?.textContent).toBe('live');
    expect(ok.textContent).toContain('every 5 min');
    expect(mount.el.querySelector('[data-testid="health-fd_ok"] .health')?.textContent).toBe('OK');
    expect(mount.el.querySelector('[data-testid="last-poll-fd_ok"]')?.textContent).toContain('2 new, 1 updated, 5 unchanged, 1 ended, 3 skipped');
    expect(mount.el.querySelector('[data-testid="active-fd_ok"]')?.textContent).toBe('8');

    // A feed without a name goes by its URL's host; its error is shown as it came.
    const bad = row('fd_bad');
    expect(bad.querySelector('th')?.firstChild?.textContent).toBe('incidents.example.net');
    expect(bad.textContent).toContain('TDx incidents');
    expect(bad.textContent).toContain('every 1 h');
    const health = mount.el.querySelector('[data-testid="health-fd_bad"]')!;
    expect(health.querySelector('.health.bad')?.textContent).toBe('Error');
    expect(health.textContent).toContain('upstream answered 502 Bad Gateway');

    expect(mount.el.textContent).toContain('Only owners can register, change and delete feeds');
    expect(mount.el.querySelector('form')).toBeNull();
    expect(button('Pause')).toBeUndefined();
    expect(button('Poll now')).toBeUndefined();
    expect(button('Delete')).toBeUndefined();
  });

  it('lets an owner register a feed, sending the interval in seconds, then reads the list again', async () => {
    const list: FeedPublic[] = [];
    const feeds = vi.fn(async () => [...list]);
    const createFeed = vi.fn(async (_org: string, d: FeedDraft) => {
      const f = feed({ feed_id: 'fd_new', name: d.name ?? '', url: d.url, format: d.format, environment: d.environment ?? 'sandbox', poll_interval_s: d.poll_interval_s ?? 300 });
      list.push(f);
      return f;
    });
    await show('owner', { feeds, createFeed });
    // An empty list opens the form.
    expect(mount.el.querySelector('details')?.open).toBe(true);
    expect(mount.el.textContent).toContain('No feeds yet.');

    await type('name', 'Motorway works');
    await type('url', 'https://opendata.example.org/datex.json');
    await choose('select[name="format"]', 'datex2');
    await act(async () => {
      (mount.el.querySelector('input[name="environment"][value="live"]') as HTMLInputElement).click();
    });
    await type('poll_interval_s', '2');
    await type('license', 'CC BY 4.0');
    await submit();

    expect(createFeed).toHaveBeenCalledWith('org_1', {
      name: 'Motorway works',
      url: 'https://opendata.example.org/datex.json',
      format: 'datex2',
      environment: 'live',
      license: 'CC BY 4.0',
      poll_interval_s: 120,
    });
    expect(feeds).toHaveBeenCalledTimes(2);
    const r = row('fd_new');
    expect(r.textContent).toContain('Motorway works');
    expect(r.textContent).toContain('DATEX II SRTI');
    expect(r.textContent).toContain('every 2 min');
    expect(mount.el.querySelector('[data-testid="health-fd_new"]')?.textContent).toContain('Never polled yet');
    expect(mount.el.querySelector('[role="status"].alert')?.textContent).toContain('“Motorway works” is registered');
  });

  it('checks the URL and format before sending', async () => {
    const createFeed = vi.fn();
    await show('owner', { feeds: async () => [], createFeed });
    await type('url', 'ftp://example.org/feed.json');
    await submit();
    expect(createFeed).not.toHaveBeenCalled();
    const url = mount.el.querySelector('input[name="url"]') as HTMLInputElement;
    expect(url.getAttribute('aria-invalid')).toBe('true');
    expect(mount.el.textContent).toContain('Enter an absolute http or https URL');
    expect(mount.el.textContent).toContain('Choose the format of the feed document.');
  });

  it('lets an owner pause a feed, and says so', async () => {
    let current = healthy;
    const feeds = vi.fn(async () => [current]);
    const updateFeed = vi.fn(async (_org: string, _id: string, u: FeedUpdate) => {
      current = { ...current, ...u, next_poll_at: null };
      return current;
    });
    await show('owner', { feeds, updateFeed });
    await act(async () => {
      button('Pause', row('fd_ok'))!.click();
    });
    await settle();
    expect(updateFeed).toHaveBeenCalledWith('org_1', 'fd_ok', { paused: true });
    expect(mount.el.querySelector('.alert.success')?.textContent).toContain('“City roadworks” is paused');
    expect(mount.el.querySelector('[data-testid="health-fd_ok"] .health')?.textContent).toBe('Paused');
    expect(button('Resume', row('fd_ok'))).toBeDefined();
    expect(button('Poll now', row('fd_ok'))).toBeUndefined();
  });

  it('asks before deleting a feed', async () => {
    let list = [healthy, failing];
    const deleteFeed = vi.fn(async (_org: string, id: string) => {
      list = list.filter((f) => f.feed_id !== id);
      return { ok: true as const };
    });
    await show('owner', { feeds: async () => list, deleteFeed });
    await act(async () => {
      button('Delete', row('fd_ok'))!.click();
    });
    expect(deleteFeed).not.toHaveBeenCalled();
    expect(row('fd_ok').textContent).toContain('Delete “City roadworks”? Its events end at the next poll.');
    await act(async () => {
      button('Yes, delete', row('fd_ok'))!.click();
    });
    await settle();
    expect(deleteFeed).toHaveBeenCalledWith('org_1', 'fd_ok');
    expect(row('fd_ok')).toBeNull();
    expect(mount.el.querySelector('.alert.success')?.textContent).toContain('is deleted');
  });

  it('shows the service\'s refusal of a URL next to the URL field', async () => {
    const createFeed = vi.fn(async () => {
      throw new ApiError(422, 'Please correct the highlighted fields.', [
        { type: 'value_error', loc: ['body', 'url'], msg: 'The URL must be an absolute http or https URL without credentials' },
      ]);
    });
    await show('owner', { feeds: async () => [], createFeed });
    await type('url', 'https://opendata.example.org/wzdx.json');
    await choose('select[name="format"]', 'wzdx');
    await submit();
    expect(createFeed).toHaveBeenCalledTimes(1);
    const url = mount.el.querySelector('input[name="url"]') as HTMLInputElement;
    expect(url.getAttribute('aria-invalid')).toBe('true');
    const errorId = url.getAttribute('aria-describedby')!.split(' ').find((id) => id.endsWith('-error'))!;
    expect(document.getElementById(errorId)?.textContent).toBe('The URL must be an absolute http or https URL without credentials');
    // A field error alone needs no form-level banner.
    expect(mount.el.querySelector('.alert.error')).toBeNull();
  });
});
