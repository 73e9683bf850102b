import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import { ApiError, type Client, type FeedDraft, type FeedPublic, type FeedUpdate } from './api';
import { Feeds } from './pages/feeds';
import { click, mountPoint, pageHelpers, settle } from './testing';

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
const { renderPage, button, type, submit } = pageHelpers(mount);

async function show(role: 'owner' | 'member', client: Partial<Client>) {
  await renderPage((org) => <Feeds org={org} />, role, client);
}

function row(feedId: string): HTMLElement {
  return mount.el.querySelector(`[data-testid="feed-${feedId}"]`) as HTMLElement;
}

async function choose(selector: string, value: string, within: ParentNode = mount.el) {
  const el = within.querySelector(selector) as HTMLSelectElement;
  await act(async () => {
    el.value = value;
    el.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

/** editPanel is the open edit form's section, or null. */
function editPanel(): HTMLElement | null {
  return mount.el.querySelector('#feed-edit');
}

/** hintOf is the text of an input's hint, found through its aria-describedby. */
function hintOf(el: Element): string {
  const id = el.getAttribute('aria-describedby')!.split(' ').find((id) => id.endsWith('-hint'))!;
  return document.getElementById(id)?.textContent ?? '';
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

  it('lets an owner edit a feed, filled with its settings, sending only what changed', async () => {
    let current = healthy;
    const feeds = vi.fn(async () => [current, failing]);
    const updateFeed = vi.fn(async (_org: string, _id: string, u: FeedUpdate) => {
      current = { ...current, ...u };
      return current;
    });
    await show('owner', { feeds, updateFeed });
    expect(editPanel()).toBeNull();
    await click(button('Edit', row('fd_ok')));

    const panel = editPanel()!;
    expect(panel.querySelector('h3')?.textContent).toBe('Edit “City roadworks”');
    expect(document.activeElement).toBe(panel.querySelector('h3'));
    expect(button('Edit', row('fd_ok'))!.getAttribute('aria-expanded')).toBe('true');
    const input = (name: string) => panel.querySelector(`[name="${name}"]`) as HTMLInputElement | HTMLSelectElement;
    expect(input('name').value).toBe('City roadworks');
    expect(input('url').value).toBe('https://opendata.example.org/wzdx.json');
    expect(input('format').value).toBe('wzdx');
    expect(input('license').value).toBe('');
    expect(input('poll_interval_s').value).toBe('5');
    expect(input('interval_unit').value).toBe('min');
    // The environment is shown, not offered.
    expect(input('environment')).toBeNull();
    expect(panel.querySelector('.env.live')?.textContent).toBe('live');
    expect(panel.textContent).toContain('Fixed once registered.');
    expect(hintOf(input('url'))).toContain('Records missing from the new document end their events.');
    expect(hintOf(input('format'))).toBe('Records missing from the new document end their events.');

    await type('name', 'City roadworks (north)', panel);
    await type('poll_interval_s', '10', panel);
    await submit(panel);

    expect(updateFeed).toHaveBeenCalledTimes(1);
    const [orgId, feedId, sent] = updateFeed.mock.calls[0];
    expect([orgId, feedId]).toEqual(['org_1', 'fd_ok']);
    // Exactly the two settings that changed, the interval in seconds: no other key, not even undefined.
    expect(sent).toStrictEqual({ name: 'City roadworks (north)', poll_interval_s: 600 });
    expect(feeds).toHaveBeenCalledTimes(2);
    expect(row('fd_ok').textContent).toContain('City roadworks (north)');
    expect(row('fd_ok').textContent).toContain('every 10 min');
    expect(mount.el.querySelector('.alert.success')?.textContent).toBe('“City roadworks (north)” is saved. It is polled at once.');
    expect(editPanel()).toBeNull();
    expect(document.activeElement).toBe(button('Edit', row('fd_ok')));
  });

  it('sends nothing when nothing changed, and Cancel closes the form', async () => {
    const feeds = vi.fn(async () => [healthy, failing]);
    const updateFeed = vi.fn();
    await show('owner', { feeds, updateFeed });
    // One form at a time: editing another feed replaces it.
    await click(button('Edit', row('fd_ok')));
    await click(button('Edit', row('fd_bad')));
    expect(mount.el.querySelectorAll('#feed-edit')).toHaveLength(1);
    let panel = editPanel()!;
    expect(panel.querySelector('h3')?.textContent).toBe('Edit “incidents.example.net”');
    expect((panel.querySelector('input[name="poll_interval_s"]') as HTMLInputElement).value).toBe('60');

    await click(button('Edit', row('fd_ok')));
    panel = editPanel()!;
    // Spaces around a name are not a change; neither is the same interval in other units.
    await type('name', ' City roadworks ', panel);
    await choose('select[name="interval_unit"]', 's', panel);
    await type('poll_interval_s', '300', panel);
    await submit(panel);
    expect(updateFeed).not.toHaveBeenCalled();
    expect(panel.textContent).toContain('Nothing to change');
    expect(feeds).toHaveBeenCalledTimes(1);

    await click(button('Cancel', panel));
    expect(editPanel()).toBeNull();
    expect(updateFeed).not.toHaveBeenCalled();
    expect(document.activeElement).toBe(button('Edit', row('fd_ok')));
  });

  it('checks an edited URL, and shows the service\'s refusal next to the edit form\'s URL field', async () => {
    const updateFeed = vi.fn(async () => {
      throw new ApiError(422, 'Please correct the highlighted fields.', [
        { type: 'value_error', loc: ['body', 'url'], msg: 'The URL must be an absolute http or https URL without credentials' },
      ]);
    });
    await show('owner', { feeds: async () => [healthy], updateFeed });
    await click(button('Edit', row('fd_ok')));
    const panel = editPanel()!;
    const url = panel.querySelector('input[name="url"]') as HTMLInputElement;

    await type('url', 'https://ann:secret@opendata.example.org/wzdx.json', panel);
    await submit(panel);
    expect(updateFeed).not.toHaveBeenCalled();
    expect(url.getAttribute('aria-invalid')).toBe('true');
    expect(panel.textContent).toContain('Leave the user name and password out of the URL');

    await type('url', 'https://opendata.example.org/v2/wzdx.json', panel);
    await submit(panel);
    expect(updateFeed).toHaveBeenCalledWith('org_1', 'fd_ok', { url: 'https://opendata.example.org/v2/wzdx.json' });
    expect(url.getAttribute('aria-invalid')).toBe('true');
    const errorId = url.getAttribute('aria-describedby')!.split(' ').find((id) => id.endsWith('-error'))!;
    expect(panel.querySelector('#' + errorId)?.textContent).toBe('The URL must be an absolute http or https URL without credentials');
    // At the edit form's field, not the register form's, and with no form-level banner; the form stays open.
    expect(mount.el.querySelector('details input[name="url"]')!.getAttribute('aria-invalid')).toBeNull();
    expect(mount.el.querySelector('.alert.error')).toBeNull();
    expect(mount.el.querySelector('.alert.success')).toBeNull();
    expect(editPanel()).not.toBeNull();
  });

  it('shows members no Edit button', async () => {
    await show('member', { feeds: async () => [healthy, failing] });
    expect(row('fd_ok')).not.toBeNull();
    expect(button('Edit')).toBeUndefined();
    expect(editPanel()).toBeNull();
  });
});
