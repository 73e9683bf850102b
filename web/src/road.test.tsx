import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, Client, type AreaQuery, type EventEvidence, type EventPublic, type RevisionDraft, type StreamDelta } from './api';
import { startLive, type LiveStatus, type SourceLike } from './road/live';
import type { CreateMap, MapHandle, MapOptions, MapView } from './road/mapview';
import { countsByType, distanceToEventM, reduce, shiftGeometry, sortEvents, type Events } from './road/state';
import { leafletMap } from './road/leafletmap';
import { FALLBACK_VIEW, OWN_READ_DELAY, OwnEvents, Road, type RoadDeps } from './pages/road';
import { click, mountPoint, pageHelpers, settle } from './testing';

// Every event is built relative to the clock when it is built (a test with fake timers builds
// them after setting the clock).
const at = (s: number) => new Date(Date.now() + s * 1000).toISOString();

function ev(over: Partial<EventPublic> & { event_id: string }): EventPublic {
  return {
    schema_version: 1,
    type: 'accident',
    lat: 48.1,
    lon: 11.5,
    geometry: null,
    heading: null,
    road_ref: null,
    severity: null,
    description: null,
    occurred_at: null,
    created_at: at(-600),
    expires_at: at(3600),
    source_kind: 'publisher',
    feed_id: null,
    license: null,
    upstream_updated_at: null,
    fetched_at: null,
    status: 'active',
    verification: 'unverified',
    confidence: 0.667,
    confirm_count: 0,
    deny_count: 0,
    updated_at: null,
    merged_into: null,
    environment: 'live',
    subtype: null,
    ...over,
  };
}

const area: AreaQuery = { lat: 48.1, lon: 11.5, radius: 5000, types: [], min_confidence: 0 };
const delta = (kind: string, event: EventPublic): StreamDelta => ({ kind, event, at: at(0) });

describe('road state', () => {
  it('a read or a snapshot replaces the events, leaving out what has expired', () => {
    const now = Date.now();
    let s: Events = reduce({}, { kind: 'replace', events: [ev({ event_id: 'ev_a' }), ev({ event_id: 'ev_old', expires_at: at(-1) })] }, area, now);
    expect(Object.keys(s)).toEqual(['ev_a']);
    s = reduce(s, { kind: 'replace', events: [ev({ event_id: 'ev_b' })] }, area, now);
    expect(Object.keys(s)).toEqual(['ev_b']);
  });

  it('created, signal and updated deltas upsert; ended removes', () => {
    const now = Date.now();
    let s: Events = {};
    s = reduce(s, { kind: 'delta', delta: delta('created', ev({ event_id: 'ev_a' })) }, area, now);
    expect(s.ev_a.confidence).toBe(0.667);
    s = reduce(s, { kind: 'delta', delta: delta('signal', ev({ event_id: 'ev_a', confidence: 0.75, confirm_count: 1 })) }, area, now);
    expect(s.ev_a.confidence).toBe(0.75);
    s = reduce(s, { kind: 'delta', delta: delta('updated', ev({ event_id: 'ev_a', lat: 48.11, severity: 'high' })) }, area, now);
    expect(s.ev_a).toMatchObject({ lat: 48.11, severity: 'high', confidence: 0.667 });
    // A delta for an event not in the state yet (the stream saw it before we did) adds it.
    s = reduce(s, { kind: 'delta', delta: delta('signal', ev({ event_id: 'ev_b' })) }, area, now);
    expect(Object.keys(s).sort()).toEqual(['ev_a', 'ev_b']);
    s = reduce(s, { kind: 'delta', delta: delta('ended', ev({ event_id: 'ev_a', status: 'expired' })) }, area, now);
    expect(Object.keys(s)).toEqual(['ev_b']);
    // An ended delta of an event not shown changes nothing.
    expect(reduce(s, { kind: 'delta', delta: delta('ended', ev({ event_id: 'ev_x' })) }, area, now)).toBe(s);
  });

  it('a delta that takes an event out of the filter removes it', () => {
    const now = Date.now();
    const s: Events = reduce({}, { kind: 'replace', events: [ev({ event_id: 'ev_a' })] }, area, now);
    // Moved 11 km north, beyond the 5 km radius.
    expect(reduce(s, { kind: 'delta', delta: delta('updated', ev({ event_id: 'ev_a', lat: 48.2 })) }, area, now)).toEqual({});
    // Below the minimum confidence, or of a type not asked for.
    const strict = { ...area, min_confidence: 0.6, types: ['accident'] };
    expect(reduce(s, { kind: 'delta', delta: delta('signal', ev({ event_id: 'ev_a', confidence: 0.5, deny_count: 2 })) }, strict, now)).toEqual({});
    expect(reduce({}, { kind: 'delta', delta: delta('created', ev({ event_id: 'ev_c', type: 'roadworks' })) }, strict, now)).toEqual({});
    expect(Object.keys(reduce({}, { kind: 'delta', delta: delta('created', ev({ event_id: 'ev_d' })) }, strict, now))).toEqual(['ev_d']);
    // A line whose point is far away but which passes through the circle stays.
    const line = ev({ event_id: 'ev_l', lat: 48.2, lon: 11.5, geometry: { type: 'LineString', coordinates: [[11.5, 48.2], [11.5, 48.0]] } });
    expect(distanceToEventM(48.1, 11.5, line)).toBeLessThan(1);
    expect(Object.keys(reduce({}, { kind: 'delta', delta: delta('created', line) }, area, now))).toEqual(['ev_l']);
  });

  it('expire removes the events whose expires_at has passed', () => {
    const now = Date.now();
    const s: Events = reduce({}, { kind: 'replace', events: [ev({ event_id: 'ev_soon', expires_at: at(30) }), ev({ event_id: 'ev_later' })] }, area, now);
    expect(reduce(s, { kind: 'expire' }, area, now + 29_000)).toBe(s);
    expect(Object.keys(reduce(s, { kind: 'expire' }, area, now + 30_000))).toEqual(['ev_later']);
  });

  it('sorts and counts', () => {
    const list = [
      ev({ event_id: 'ev_1', type: 'roadworks', confidence: 0.5, created_at: at(-300), expires_at: at(600) }),
      ev({ event_id: 'ev_2', type: 'accident', confidence: 0.9, created_at: at(-100), expires_at: at(1200) }),
      ev({ event_id: 'ev_3', type: 'roadworks', confidence: 0.7, created_at: at(-200), expires_at: at(300) }),
    ];
    const ids = (l: EventPublic[]) => l.map((e) => e.event_id);
    expect(ids(sortEvents(list, 'newest'))).toEqual(['ev_2', 'ev_3', 'ev_1']);
    expect(ids(sortEvents(list, 'type'))).toEqual(['ev_2', 'ev_3', 'ev_1']);
    expect(ids(sortEvents(list, 'confidence'))).toEqual(['ev_2', 'ev_3', 'ev_1']);
    expect(ids(sortEvents(list, 'expiry'))).toEqual(['ev_3', 'ev_1', 'ev_2']);
    expect(countsByType(list)).toEqual([
      ['roadworks', 2],
      ['accident', 1],
    ]);
  });

  it('shifts a line with its first position', () => {
    const g = shiftGeometry({ type: 'LineString', coordinates: [[11.5, 48.1], [11.51, 48.11]] }, 48.2, 11.6);
    expect(g).toEqual({ type: 'LineString', coordinates: [[11.6, 48.2], [11.61, 48.21]] });
  });
});

describe('road client', () => {
  it('sends the area as query parameters, a type per type, and closes without a body', async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    const fetch = vi.fn(async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return new Response('[]', { status: 200, headers: { 'Content-Type': 'application/json' } });
    });
    const c = new Client({ base: 'https://api.example.org/', token: () => 'ses_1', onUnauthorized: () => {}, fetch: fetch as unknown as typeof globalThis.fetch });
    await c.areaEvents('org_1', 'sandbox', { lat: 48.1, lon: 11.5, radius: 2500, types: ['accident', 'roadworks'], min_confidence: 0.5 });
    expect(calls[0].url).toBe(
      'https://api.example.org/console/orgs/org_1/events?environment=sandbox&lat=48.1&lon=11.5&radius=2500&type=accident&type=roadworks&min_confidence=0.5',
    );
    await c.areaEvents('org_1', 'live', area);
    expect(calls[1].url).toBe('https://api.example.org/console/orgs/org_1/events?environment=live&lat=48.1&lon=11.5&radius=5000');
    await c.closeEvent('org_1', 'live', 'ev_1');
    expect(calls[2].url).toBe('https://api.example.org/console/orgs/org_1/events/ev_1/close?environment=live');
    expect(calls[2].init).toMatchObject({ method: 'POST', body: undefined });
    await c.reviseEvent('org_1', 'sandbox', 'ev_1', { lat: 1, lon: 2, severity: 'low' });
    expect(calls[3].url).toBe('https://api.example.org/console/orgs/org_1/events/ev_1/revisions?environment=sandbox');
    expect(JSON.parse(String(calls[3].init.body))).toEqual({ lat: 1, lon: 2, severity: 'low' });
    await c.basemap();
    expect(calls[4].url).toBe('https://api.example.org/v1/meta/basemap');
    expect((calls[4].init.headers as Record<string, string>).Authorization).toBeUndefined();
    expect(c.streamUrl(area, 'svc_st_x')).toBe('https://api.example.org/v1/stream?lat=48.1&lon=11.5&radius=5000&ticket=svc_st_x');
  });
});

/** FakeSource stands in for EventSource. */
class FakeSource implements SourceLike {
  static all: FakeSource[] = [];
  url: string;
  closed = false;
  listeners: Record<string, ((e: Event) => void)[]> = {};
  constructor(url: string) {
    this.url = url;
    FakeSource.all.push(this);
  }
  addEventListener(type: string, l: (e: Event) => void) {
    (this.listeners[type] ??= []).push(l);
  }
  close() {
    this.closed = true;
  }
  fire(type: string, data?: unknown) {
    const e = { type, data: data === undefined ? undefined : JSON.stringify(data) } as unknown as Event;
    for (const l of this.listeners[type] ?? []) l(e);
  }
  /** emit fires a frame inside act, then lets the page settle. */
  async emit(type: string, data?: unknown) {
    await act(async () => this.fire(type, data));
    await settle();
  }
  static last(): FakeSource {
    return FakeSource.all[FakeSource.all.length - 1];
  }
}

describe('live stream', () => {
  beforeEach(() => {
    FakeSource.all = [];
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('mints a fresh ticket for each connection, and reconnects after an error and a bye', async () => {
    let n = 0;
    const mint = vi.fn(async () => `svc_st_${++n}`);
    const statuses: LiveStatus[] = [];
    const snapshots: unknown[] = [];
    const deltas: StreamDelta[] = [];
    const stop = startLive({
      mint,
      url: (t) => `/v1/stream?ticket=${t}`,
      open: (u) => new FakeSource(u),
      onSnapshot: (s) => snapshots.push(s),
      onDelta: (d) => deltas.push(d),
      onStatus: (s) => statuses.push(s),
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(FakeSource.all.map((s) => s.url)).toEqual(['/v1/stream?ticket=svc_st_1']);
    const first = FakeSource.last();
    first.fire('snapshot', { events: [], max_seconds: 3300, at: at(0) });
    first.fire('event', delta('created', ev({ event_id: 'ev_a' })));
    first.fire('event', 'not json {');
    expect(snapshots).toHaveLength(1);
    expect(deltas.map((d) => d.event.event_id)).toEqual(['ev_a']);
    expect(statuses.at(-1)).toEqual({ state: 'live', dropped: 0 });

    // An error: the browser's own retry (with the same ticket) is cut short; a new ticket after 1 s.
    first.fire('error');
    expect(first.closed).toBe(true);
    expect(statuses.at(-1)).toMatchObject({ state: 'retrying', inMs: 1000 });
    await vi.advanceTimersByTimeAsync(999);
    expect(FakeSource.all).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(FakeSource.last().url).toBe('/v1/stream?ticket=svc_st_2');
    // A second failure before any snapshot waits longer.
    FakeSource.last().fire('error');
    expect(statuses.at(-1)).toMatchObject({ state: 'retrying', inMs: 2000 });
    await vi.advanceTimersByTimeAsync(2000);
    const third = FakeSource.last();
    expect(third.url).toBe('/v1/stream?ticket=svc_st_3');
    // A snapshot resets the wait; a bye that says reconnect reconnects at once.
    third.fire('snapshot', { events: [], max_seconds: 3300, at: at(0) });
    third.fire('bye', { reason: 'max_connection_age', reconnect: true });
    expect(third.closed).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(FakeSource.last().url).toBe('/v1/stream?ticket=svc_st_4');
    // Dropped deltas: reconnect for a new snapshot.
    const fourth = FakeSource.last();
    fourth.fire('snapshot', { events: [], max_seconds: 3300, at: at(0) });
    fourth.fire('keepalive', { dropped: 0, at: at(0) });
    expect(fourth.closed).toBe(false);
    fourth.fire('keepalive', { dropped: 3, at: at(0) });
    expect(fourth.closed).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(mint).toHaveBeenCalledTimes(5);

    stop();
    expect(FakeSource.last().closed).toBe(true);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(mint).toHaveBeenCalledTimes(5);
  });

  it('stops on a bye that says not to reconnect, and on a ticket refused for good', async () => {
    const statuses: LiveStatus[] = [];
    const opts = { url: (t: string) => t, open: (u: string) => new FakeSource(u), onSnapshot: () => {}, onDelta: () => {}, onStatus: (s: LiveStatus) => statuses.push(s) };
    startLive({ ...opts, mint: async () => 't' });
    await vi.advanceTimersByTimeAsync(0);
    FakeSource.last().fire('bye', { reason: 'credential_revoked', reconnect: false });
    expect(statuses.at(-1)).toEqual({ state: 'stopped', why: 'the service ended the stream (credential_revoked)' });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(FakeSource.all).toHaveLength(1);

    startLive({ ...opts, mint: async () => Promise.reject(new ApiError(403, 'You do not have permission to do this.')) });
    await vi.advanceTimersByTimeAsync(0);
    expect(statuses.at(-1)).toEqual({ state: 'stopped', why: 'You do not have permission to do this.' });
    // A failing service is tried again.
    startLive({ ...opts, mint: async () => Promise.reject(new ApiError(503, 'down')) });
    await vi.advanceTimersByTimeAsync(0);
    expect(statuses.at(-1)).toMatchObject({ state: 'retrying', inMs: 1000, why: 'down' });
  });
});

/** FakeMap stands in for the Leaflet map: it records what the page hands it. */
class FakeMap implements MapHandle {
  events: EventPublic[] = [];
  selected: string | null = null;
  area: { lat: number; lon: number; radius: number } | null = null;
  shown: string[] = [];
  destroyed = false;
  current: MapView;
  opts: MapOptions;
  constructor(o: MapOptions) {
    this.opts = o;
    this.current = o.view;
  }
  setEvents(e: EventPublic[], s: string | null) {
    this.events = e;
    this.selected = s;
  }
  setArea(a: { lat: number; lon: number; radius: number }) {
    this.area = { lat: a.lat, lon: a.lon, radius: a.radius };
  }
  show(e: EventPublic) {
    this.shown.push(e.event_id);
  }
  view() {
    return this.current;
  }
  destroy() {
    this.destroyed = true;
  }
  ids() {
    return this.events.map((e) => e.event_id).sort();
  }
  /** click is a click on an event's shape. */
  async click(id: string) {
    await act(async () => this.opts.onSelect(id));
    await settle();
  }
}

const mount = mountPoint();
const { renderPage, button, testid, type, submit } = pageHelpers(mount);

let maps: FakeMap[];
const createMap: CreateMap = async (_el, o) => {
  const m = new FakeMap(o);
  maps.push(m);
  return m;
};
const map = () => maps[maps.length - 1];
const deps: Partial<RoadDeps> = { createMap, openSource: (url) => new FakeSource(url) };
const realClient = new Client({ base: '', token: () => null, onUnauthorized: () => {} });

function evidence(over: Partial<EventEvidence> = {}): EventEvidence {
  return {
    event_id: 'ev_own',
    status: 'active',
    confidence: 0.75,
    verification: 'confirmed',
    reporters: { confirming: 1, denying: 0, organisations: 1 },
    timeline: [{ at: at(-60), kind: 'signal', action: 'confirm', by: 'another_organisation', distance_m: 120 }],
    timeline_truncated: false,
    duplicates: [{ event_id: 'ev_dup', merged_at: at(-30), distance_m: 40, by: 'another_organisation' }],
    expiry: [
      { at: at(-600), expires_at: at(3000), cause: 'published' },
      { at: at(-60), expires_at: at(3600), cause: 'confirmation' },
    ],
    publisher: { by: 'your_organisation', reputation: 'good' },
    ...over,
  };
}

/**
 * service fakes the Road routes: own are the organisation's events, around the area's; the
 * stream tickets count up.
 */
function service(o: { own?: EventPublic[]; around?: EventPublic[]; evidence?: EventEvidence } = {}) {
  let tickets = 0;
  return {
    basemap: vi.fn(async () => ({ tiles: null, attribution: '' })),
    limits: vi.fn(async () => ({ max_query_radius_m: 9780, query_level: 7, note: '' })),
    ownEvents: vi.fn(async () => [...(o.own ?? [])]),
    areaEvents: vi.fn(async (_org: string, _env: string, _a: AreaQuery) => [...(o.around ?? [])]),
    streamTicket: vi.fn(async () => ({ ticket: `svc_st_${++tickets}`, expires_at: at(300), expires_in: 300 })),
    streamUrl: (a: AreaQuery, t: string) => realClient.streamUrl(a, t),
    eventEvidence: vi.fn(async (_o: string, _e: string, id: string) => ({ ...(o.evidence ?? evidence()), event_id: id })),
    closeEvent: vi.fn(async (_o: string, _e: string, id: string) => ({ ...(o.own ?? []).find((x) => x.event_id === id)!, status: 'expired', expires_at: at(0) })),
    reviseEvent: vi.fn(async (_o: string, _e: string, id: string, d: RevisionDraft) => ({
      ...(o.own ?? []).find((x) => x.event_id === id)!,
      lat: d.lat,
      lon: d.lon,
      geometry: d.geometry ?? null,
      severity: d.severity ?? null,
      subtype: d.subtype ?? null,
      updated_at: at(0),
    })),
  };
}

async function show(role: 'owner' | 'member', client: ReturnType<typeof service>) {
  await renderPage((org) => <Road org={org} deps={deps} />, role, client as unknown as Partial<Client>);
  // The map is made once the page knows where and on what; then the area is read and the
  // stream opened: a few rounds of promises and effects.
  for (let i = 0; i < 3; i++) await settle();
}

function rows(): string[] {
  return [...mount.el.querySelectorAll<HTMLElement>('[data-testid^="own-event-"]')].map((r) => r.dataset.testid!.slice('own-event-'.length));
}
function inspector(): HTMLElement | null {
  return testid('inspector');
}

const CENTRE = 'roadevents.road-centre.org_1';

describe('road page', () => {
  beforeEach(() => {
    maps = [];
    FakeSource.all = [];
    localStorage.clear();
    localStorage.setItem(CENTRE, JSON.stringify({ lat: 48.1, lon: 11.5, zoom: 13 }));
  });

  it('reads the basemap, limits, own events and the area, then opens the stream with a ticket', async () => {
    const own = ev({ event_id: 'ev_own', type: 'roadworks' });
    const other = ev({ event_id: 'ev_other', lat: 48.12 });
    const s = service({ own: [own], around: [own, other] });
    await show('member', s);
    expect(s.basemap).toHaveBeenCalled();
    expect(s.limits).toHaveBeenCalled();
    expect(s.ownEvents).toHaveBeenCalledWith('org_1', 'live');
    expect(s.areaEvents).toHaveBeenCalledWith('org_1', 'live', { lat: 48.1, lon: 11.5, radius: 5000, types: [], min_confidence: 0 });
    expect(s.streamTicket).toHaveBeenCalledWith('org_1', 'live');
    expect(FakeSource.all.map((x) => x.url)).toEqual(['/v1/stream?lat=48.1&lon=11.5&radius=5000&ticket=svc_st_1']);
    expect(map().opts.view).toEqual({ lat: 48.1, lon: 11.5, zoom: 13 });
    expect(map().opts.basemap.tiles).toBeNull();
    expect(map().area).toEqual({ lat: 48.1, lon: 11.5, radius: 5000 });
    expect(map().ids()).toEqual(['ev_other', 'ev_own']);
    expect(testid('live-status')?.textContent).toBe('Connecting…');
    expect(testid('area-summary')?.textContent).toContain('2 active events within 5 km of 48.1000, 11.5000');

    // The snapshot is the truth; deltas change it, live.
    const src = FakeSource.last();
    await src.emit('snapshot', { events: [own], max_seconds: 3300, at: at(0) });
    expect(testid('live-status')?.textContent).toBe('Live');
    expect(map().ids()).toEqual(['ev_own']);
    await src.emit('event', delta('created', ev({ event_id: 'ev_new', lat: 48.101 })));
    expect(map().ids()).toEqual(['ev_new', 'ev_own']);
    await src.emit('event', delta('ended', { ...own, status: 'expired' }));
    expect(map().ids()).toEqual(['ev_new']);
    // The own list follows the deltas of its events without a read.
    expect(rows()).toEqual([]);
    expect(testid('own-events')?.textContent).toContain('No active live events of ours.');

    // A bye that says reconnect: a new ticket, a new stream.
    await src.emit('bye', { reason: 'max_connection_age', reconnect: true });
    await settle();
    expect(src.closed).toBe(true);
    expect(s.streamTicket).toHaveBeenCalledTimes(2);
    expect(FakeSource.last().url).toContain('ticket=svc_st_2');

    // Leaving the page closes the stream and the map.
    await act(async () => render(null, mount.el));
    expect(FakeSource.last().closed).toBe(true);
    expect(map().destroyed).toBe(true);
  });

  it('searches the area at the map centre with the filters, remembers it, and reopens the stream', async () => {
    const s = service();
    await show('member', s);
    const first = FakeSource.last();
    map().current = { lat: 52.52, lon: 13.405, zoom: 12 };
    await act(async () => map().opts.onMove(map().current));
    expect(testid('area-summary')?.textContent).toContain('The map has moved: search this area');
    await type('radius', '2500');
    await type('min_confidence', '0.5');
    await click(mount.el.querySelector<HTMLInputElement>('input[name="type"][value="accident"]')!);
    await click(mount.el.querySelector<HTMLInputElement>('input[name="type"][value="roadworks"]')!);
    await submit();
    await settle();
    const want = { lat: 52.52, lon: 13.405, radius: 2500, types: ['accident', 'roadworks'], min_confidence: 0.5 };
    expect(s.areaEvents).toHaveBeenLastCalledWith('org_1', 'live', want);
    expect(JSON.parse(localStorage.getItem(CENTRE)!)).toEqual({ lat: 52.52, lon: 13.405, zoom: 12 });
    expect(first.closed).toBe(true);
    expect(FakeSource.last().url).toBe('/v1/stream?lat=52.52&lon=13.405&radius=2500&type=accident&type=roadworks&min_confidence=0.5&ticket=svc_st_2');
    expect(map().area).toEqual({ lat: 52.52, lon: 13.405, radius: 2500 });
    expect(testid('area-summary')?.textContent).not.toContain('The map has moved');

    // The radius is bounded by max_query_radius_m before anything is sent.
    await type('radius', '20000');
    await submit();
    expect(mount.el.querySelector('input[name="radius"]')?.getAttribute('aria-invalid')).toBe('true');
    expect(s.areaEvents).toHaveBeenCalledTimes(2);
  });

  it('opens on the newest own event when no centre is remembered, else on a wide default', async () => {
    localStorage.clear();
    const s = service({ own: [ev({ event_id: 'ev_new', lat: 52.5, lon: 13.4 }), ev({ event_id: 'ev_old', created_at: at(-9000) })] });
    await show('member', s);
    expect(map().opts.view).toEqual({ lat: 52.5, lon: 13.4, zoom: 13 });
    expect(s.areaEvents.mock.calls[0][2]).toMatchObject({ lat: 52.5, lon: 13.4 });
    await act(async () => render(null, mount.el));

    await show('member', service());
    expect(map().opts.view).toEqual(FALLBACK_VIEW);
  });

  it('switching the environment reads both lists again and opens a stream with a ticket of that environment', async () => {
    const s = service();
    await show('member', s);
    const first = FakeSource.last();
    await click(button('Sandbox'));
    await settle();
    expect(first.closed).toBe(true);
    expect(s.ownEvents).toHaveBeenLastCalledWith('org_1', 'sandbox');
    expect(s.areaEvents).toHaveBeenLastCalledWith('org_1', 'sandbox', expect.objectContaining({ lat: 48.1 }));
    expect(s.streamTicket).toHaveBeenLastCalledWith('org_1', 'sandbox');
  });

  it('removes events at their expires_at', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      const soon = ev({ event_id: 'ev_soon', expires_at: at(30) });
      const later = ev({ event_id: 'ev_later', expires_at: at(3600) });
      const s = service({ own: [soon, later], around: [soon, later] });
      await show('member', s);
      expect(map().ids()).toEqual(['ev_later', 'ev_soon']);
      expect(rows().sort()).toEqual(['ev_later', 'ev_soon']);
      await act(async () => {
        await vi.advanceTimersByTimeAsync(30_000);
      });
      await settle();
      expect(map().ids()).toEqual(['ev_later']);
      expect(rows()).toEqual(['ev_later']);
      // Nothing was read again to find out.
      expect(s.areaEvents).toHaveBeenCalledTimes(1);
      expect(s.ownEvents).toHaveBeenCalledTimes(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('reads the own events again after a created delta, once per burst', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      const s = service();
      await show('member', s);
      const src = FakeSource.last();
      await src.emit('snapshot', { events: [], max_seconds: 3300, at: at(0) });
      await src.emit('event', delta('created', ev({ event_id: 'ev_1' })));
      await src.emit('event', delta('created', ev({ event_id: 'ev_2' })));
      expect(s.ownEvents).toHaveBeenCalledTimes(1);
      await act(async () => {
        await vi.advanceTimersByTimeAsync(OWN_READ_DELAY);
      });
      await settle();
      expect(s.ownEvents).toHaveBeenCalledTimes(2);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('own events list', () => {
  const list = [
    ev({ event_id: 'ev_1', type: 'roadworks', confidence: 0.5, created_at: at(-300), expires_at: at(600) }),
    ev({ event_id: 'ev_2', type: 'accident', confidence: 0.9, created_at: at(-100), expires_at: at(1200) }),
    ev({ event_id: 'ev_3', type: 'roadworks', confidence: 0.7, created_at: at(-200), expires_at: at(300) }),
  ];

  it('sorts by newest, type, confidence and expiry, and counts by type', async () => {
    await renderPage(
      () => <OwnEvents list={list} error={null} env="live" selected={null} now={Date.now()} onSelect={() => {}} onRetry={() => {}} />,
      'member',
      {},
    );
    const table = mount.el.querySelector('table')!;
    expect([...table.querySelectorAll('thead th')].map((th) => th.getAttribute('scope'))).toEqual(['col', 'col', 'col', 'col']);
    expect(rows()).toEqual(['ev_2', 'ev_3', 'ev_1']);
    expect(button('Published')?.closest('th')?.getAttribute('aria-sort')).toBe('descending');
    await click(button('Expires'));
    expect(rows()).toEqual(['ev_3', 'ev_1', 'ev_2']);
    expect(button('Expires')?.closest('th')?.getAttribute('aria-sort')).toBe('ascending');
    await click(button('Confidence'));
    expect(rows()).toEqual(['ev_2', 'ev_3', 'ev_1']);
    await click(button('Type'));
    expect(rows()).toEqual(['ev_2', 'ev_3', 'ev_1']);
    await click(button('Published'));
    expect(rows()).toEqual(['ev_2', 'ev_3', 'ev_1']);
    const counts = testid('own-counts')!;
    expect([...counts.querySelectorAll('li')].map((li) => li.textContent?.trim())).toEqual(['Roadworks 2', 'Accident 1']);
    const row = testid('own-event-ev_1')!;
    expect(row.querySelector('th[scope="row"]')?.textContent).toContain('Roadworks');
    expect(row.textContent).toContain('50%');
    expect(row.textContent).toContain('in 10 min');
  });

  it('choosing a row selects the event on the map and opens the inspector', async () => {
    const s = service({ own: list, around: [list[0]] });
    await show('member', s);
    await click(testid('own-event-ev_3')!.querySelector('button')!);
    expect(map().shown).toEqual(['ev_3']);
    expect(map().selected).toBe('ev_3');
    expect(testid('own-event-ev_3')?.getAttribute('aria-current')).toBe('true');
    expect(inspector()?.querySelector('h3')?.textContent).toContain('Roadworks');
    // Outside the area, the chosen event is drawn while chosen.
    expect(map().ids()).toEqual(['ev_1', 'ev_3']);
    expect(s.eventEvidence).toHaveBeenCalledWith('org_1', 'live', 'ev_3');
  });
});

describe('inspector', () => {
  const own = ev({
    event_id: 'ev_own',
    type: 'accident',
    subtype: 'multi_vehicle',
    severity: 'high',
    description: 'Two cars, right lane',
    road_ref: 'A9',
    heading: 180,
    lat: 48.1,
    lon: 11.5,
    geometry: { type: 'LineString', coordinates: [[11.5, 48.1], [11.51, 48.11]] },
    confirm_count: 1,
    confidence: 0.75,
    verification: 'confirmed',
    expires_at: at(3600),
  });
  const theirs = ev({ event_id: 'ev_theirs', type: 'roadworks', lat: 48.101 });

  beforeEach(() => {
    maps = [];
    FakeSource.all = [];
    localStorage.clear();
    localStorage.setItem(CENTRE, JSON.stringify({ lat: 48.1, lon: 11.5, zoom: 13 }));
  });

  it('shows every field, the tallies, the expiry and the evidence, and updates with a delta', async () => {
    const s = service({ own: [own], around: [own, theirs] });
    await show('member', s);
    await map().click('ev_own');
    const panel = inspector()!;
    expect(panel.getAttribute('role')).toBe('region');
    expect(panel.querySelector('#inspector-title')?.textContent).toContain('Accident');
    expect(panel.getAttribute('aria-labelledby')).toBe('inspector-title');
    expect(testid('inspector-confidence')?.textContent).toBe('75%');
    expect(testid('inspector-tallies')?.textContent).toBe('1 confirm · 0 deny');
    expect(testid('inspector-verification')?.textContent).toBe('Confirmed');
    expect(testid('inspector-status')?.textContent).toBe('Active');
    expect(testid('inspector-expires')?.textContent).toMatch(/^in 60 min \(.+\)$/);
    for (const text of ['multi_vehicle', 'high', 'Two cars, right lane', 'A9', '180°', '48.100000, 11.500000', '2 points', 'ev_own', 'A publisher']) {
      expect(panel.textContent).toContain(text);
    }
    const ev1 = testid('evidence')!;
    expect(ev1.textContent).toContain('1 reporter confirming, 0 denying, from 1 organisation. Published by your organisation (standing: good).');
    expect(testid('evidence-timeline')?.textContent).toContain('Confirmed by another organisation (120 m away)');
    expect(testid('evidence-duplicates')?.textContent).toContain('ev_dup of another organisation');
    expect(testid('evidence-expiry')?.textContent).toContain('a first confirmation from a new reporter');
    // A member sees no owner action.
    expect(button('Close event')).toBeUndefined();
    expect(button('Revise')).toBeUndefined();
    expect(panel.textContent).toContain('owners can close and revise it');

    // A confirmation elsewhere: the panel follows, and the evidence is read again.
    expect(s.eventEvidence).toHaveBeenCalledTimes(1);
    await FakeSource.last().emit('event', delta('signal', { ...own, confirm_count: 2, confidence: 0.8 }));
    expect(testid('inspector-confidence')?.textContent).toBe('80%');
    expect(testid('inspector-tallies')?.textContent).toBe('2 confirm · 0 deny');
    expect(s.eventEvidence).toHaveBeenCalledTimes(2);
    expect(testid('own-event-ev_own')?.textContent).toContain('80%');

    // Another organisation's event offers no action, even to an owner.
    await map().click('ev_theirs');
    expect(inspector()?.querySelector('#inspector-title')?.textContent).toContain('Roadworks');
  });

  it('another organisation\'s event has no owner actions', async () => {
    const s = service({ own: [own], around: [own, theirs], evidence: evidence({ publisher: { by: 'another_organisation', reputation: 'new' } }) });
    await show('owner', s);
    await map().click('ev_theirs');
    expect(button('Close event')).toBeUndefined();
    expect(button('Revise')).toBeUndefined();
  });

  it('an owner closes an own event after a confirmation: it leaves the map and the list', async () => {
    const s = service({ own: [own], around: [own, theirs] });
    await show('owner', s);
    await map().click('ev_own');
    await click(button('Close event'));
    expect(s.closeEvent).not.toHaveBeenCalled();
    await click(button('Cancel'));
    expect(s.closeEvent).not.toHaveBeenCalled();
    await click(button('Close event'));
    await click(button('Yes, close it'));
    expect(s.closeEvent).toHaveBeenCalledWith('org_1', 'live', 'ev_own');
    expect(map().ids()).toEqual(['ev_theirs']);
    expect(rows()).toEqual([]);
    expect(testid('inspector-status')?.textContent).toBe('Expired');
    expect(inspector()?.textContent).toContain('The event is closed');
    expect(button('Close event')).toBeUndefined();
  });

  it('shows why a close was refused', async () => {
    const s = service({ own: [own], around: [own] });
    s.closeEvent.mockRejectedValueOnce(new ApiError(403, 'You do not have permission to do this.'));
    await show('owner', s);
    await map().click('ev_own');
    await click(button('Close event'));
    await click(button('Yes, close it'));
    expect(inspector()?.querySelector('.alert.error')?.textContent).toBe('Close: You do not have permission to do this.');
    expect(map().ids()).toEqual(['ev_own']);
  });

  it('an owner revises: what is not changed is sent back, and a new position moves the whole line', async () => {
    const s = service({ own: [own], around: [own] });
    await show('owner', s);
    await map().click('ev_own');
    await click(button('Revise'));
    const form = mount.el.querySelector<HTMLFormElement>('form.road-revise')!;
    expect(form.textContent).toContain('a new position moves the whole line');
    // Nothing changed: the same event, restated whole.
    await submit(inspector()!);
    expect(s.reviseEvent).toHaveBeenLastCalledWith('org_1', 'live', 'ev_own', {
      lat: 48.1,
      lon: 11.5,
      geometry: { type: 'LineString', coordinates: [[11.5, 48.1], [11.51, 48.11]] },
      severity: 'high',
      subtype: 'multi_vehicle',
    });
    expect(inspector()?.textContent).toContain('The event is revised.');

    await click(button('Revise'));
    const again = mount.el.querySelector<HTMLFormElement>('form.road-revise')!;
    await type('lat', '48.2', again);
    await submit(inspector()!);
    expect(s.reviseEvent).toHaveBeenLastCalledWith('org_1', 'live', 'ev_own', {
      lat: 48.2,
      lon: 11.5,
      geometry: { type: 'LineString', coordinates: [[11.5, 48.2], [11.51, 48.21]] },
      severity: 'high',
      subtype: 'multi_vehicle',
    });
    // Moved 11 km away: off the 5 km area, still in the panel and the list, and drawn while chosen.
    expect(testid('area-summary')?.textContent).toContain('0 active events within 5 km');
    expect(map().ids()).toEqual(['ev_own']);
    expect(inspector()?.textContent).toContain('48.200000, 11.500000');
    expect(rows()).toEqual(['ev_own']);
  });

  it('a revision refused by the service shows its error at the field', async () => {
    const point = { ...own, geometry: null, severity: null, subtype: null };
    const s = service({ own: [point], around: [point] });
    s.reviseEvent.mockRejectedValueOnce(new ApiError(422, 'Please correct the highlighted fields.', [{ type: 'value_error', loc: ['body', 'lat'], msg: 'Too far north.' }]));
    await show('owner', s);
    await map().click('ev_own');
    await click(button('Revise'));
    const form = mount.el.querySelector<HTMLFormElement>('form.road-revise')!;
    expect(form.textContent).not.toContain('whole line');
    const select = form.querySelector<HTMLSelectElement>('select[name="severity"]')!;
    await act(async () => {
      select.value = 'low';
      select.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await submit(inspector()!);
    // A point event: no geometry, no subtype; the severity chosen.
    expect(s.reviseEvent).toHaveBeenLastCalledWith('org_1', 'live', 'ev_own', { lat: 48.1, lon: 11.5, severity: 'low' });
    expect(form.querySelector('input[name="lat"]')?.getAttribute('aria-invalid')).toBe('true');
    expect(form.textContent).toContain('Too far north.');
  });
});

describe('leaflet map', () => {
  it('draws each event as a vector shape that names it, and chooses it on click or Enter', () => {
    const el = document.createElement('div');
    document.body.appendChild(el);
    const chosen: string[] = [];
    const m = leafletMap(el, {
      view: { lat: 48.1, lon: 11.5, zoom: 13 },
      basemap: { tiles: null, attribution: '' },
      label: 'Map of road events',
      onSelect: (id) => chosen.push(id),
      onMove: () => {},
      onTilesFailed: () => {},
    });
    try {
      const point = ev({ event_id: 'ev_pt', confidence: 0.9 });
      const line = ev({ event_id: 'ev_ln', type: 'roadworks', confidence: 0.4, geometry: { type: 'LineString', coordinates: [[11.5, 48.1], [11.51, 48.11]] } });
      m.setEvents([point, line], 'ev_pt');
      m.setArea({ lat: 48.1, lon: 11.5, radius: 1000 });
      // No tiles: nothing is fetched, the events are drawn on the container's plain background.
      expect(el.querySelectorAll('.leaflet-tile').length).toBe(0);
      const p = el.querySelector<SVGElement>('path.road-event.ev-ev_pt')!;
      expect(p.getAttribute('data-event-id')).toBe('ev_pt');
      expect(p.getAttribute('class')).toContain('selected');
      expect(p.getAttribute('aria-label')).toBe('Accident, 90% confidence');
      expect(p.getAttribute('fill')).toBe('#dc2626');
      // More confident, more opaque.
      expect(Number(p.getAttribute('fill-opacity'))).toBeGreaterThan(0.8);
      const l = el.querySelector<SVGElement>('path.ev-ev_ln')!;
      expect(l.getAttribute('fill')).toBe('none');
      expect(l.getAttribute('stroke')).toBe('#ca8a04');
      p.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      l.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
      expect(chosen).toEqual(['ev_pt', 'ev_ln']);
      // Drawn again: gone events leave, the others stay.
      m.setEvents([line], null);
      expect(el.querySelector('.ev-ev_pt')).toBeNull();
      expect(el.querySelector('.ev-ev_ln')).not.toBeNull();
      expect(m.view()).toEqual({ lat: 48.1, lon: 11.5, zoom: 13 });
    } finally {
      m.destroy();
      el.remove();
    }
  });
});
