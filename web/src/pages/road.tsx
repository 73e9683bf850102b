// Road (docs/console.md §5): a live map of the network's events around a point, read as the
// organisation in the environment chosen, with an inspector for one event (every field, the
// tallies, the evidence document) and the organisation's own active events beside it. The area
// is read once, then the stream keeps it current: its snapshot replaces the events, each delta
// changes one, and an event leaves at its expires_at. Owners close and revise the
// organisation's own events from the inspector; members read. The state rules are in
// ../road/state.ts, the stream's in ../road/live.ts, and the map is ../road/leafletmap.ts,
// loaded with the page.
import { Fragment } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import {
  type AreaQuery,
  type Basemap,
  type Environment,
  type EventEvidence,
  type EventPublic,
  type EvidenceStep,
  type Organisation,
  type RevisionDraft,
  type Severity,
  type StreamDelta,
  eventTypes,
} from '../api';
import { useApp } from '../context';
import { startLive, type LiveStatus, type OpenSource } from '../road/live';
import { RoadMap, createLeafletMap, type CreateMap, type MapHandle, type MapView } from '../road/mapview';
import {
  countsByType,
  distanceM,
  dropExpired,
  formatPercent,
  formatRelative,
  isLive,
  nextExpiry,
  patchOwn,
  reduce,
  shiftGeometry,
  sortEvents,
  typeColour,
  type Events,
  type RoadAction,
  type SortKey,
} from '../road/state';
import { roadCentre } from '../state';
import { Confirm, Field, FormError, Notice, formErrors, formatNumber, formatTime, showProblems, useForm, useLoad } from '../ui';
import { EnvSwitch } from './overview';
import { formatDistance, typeLabel, typeNames, typesSummary } from './alertrules';

/** RoadDeps are what the page is given from outside the console: the map, and the stream. */
export interface RoadDeps {
  createMap: CreateMap;
  /** openSource opens a stream; null where the browser has no EventSource. */
  openSource: OpenSource | null;
}

const defaultDeps: RoadDeps = {
  createMap: createLeafletMap,
  openSource: typeof EventSource === 'function' ? (url) => new EventSource(url) : null,
};

/** DEFAULT_RADIUS is the area's radius until one is chosen, in metres (within max_query_radius_m). */
export const DEFAULT_RADIUS = 5000;
/** FALLBACK_VIEW is where a page with no remembered centre and no own event opens: central Europe, wide. */
export const FALLBACK_VIEW: MapView = { lat: 50, lon: 10, zoom: 5 };
/** OWN_EVENT_ZOOM is the zoom of a page opened on the organisation's newest event. */
const OWN_EVENT_ZOOM = 13;
/** OWN_READ_DELAY is how long after a created delta the own events are read again, in ms: a burst reads once. */
export const OWN_READ_DELAY = 1000;
const controlFields = ['radius', 'min_confidence', 'type'];

/** useNow is the time, renewed every period ms, for texts such as "in 5 min". */
function useNow(period = 15000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), period);
    return () => clearInterval(t);
  }, [period]);
  return now;
}

/** round6 keeps 6 decimals of a coordinate (about 0.1 m). */
const round6 = (v: number) => Math.round(v * 1e6) / 1e6;

/** Road is the organisation's Road page. deps replaces the map or the stream (tests). */
export function Road({ org, deps }: { org: Organisation; deps?: Partial<RoadDeps> }) {
  const { client } = useApp();
  const d = useMemo(() => ({ ...defaultDeps, ...deps }), [deps]);
  const owner = org.role === 'owner';
  const [env, setEnv] = useState<Environment>('live');
  const basemap = useLoad(() => client.basemap(), []);
  const limits = useLoad(() => client.limits(), []);
  const maxRadius = limits.data?.max_query_radius_m ?? null;
  const now = useNow();

  // The organisation's own active events in the environment, newest first.
  const [own, setOwn] = useState<EventPublic[] | null>(null);
  const [ownError, setOwnError] = useState<string | null>(null);
  const [ownReads, setOwnReads] = useState(0);
  useEffect(() => {
    let live = true;
    client.ownEvents(org.org_id, env).then(
      (list) => {
        if (!live) return;
        setOwn(dropExpired(list, Date.now()));
        setOwnError(null);
      },
      (e) => live && setOwnError(e?.message ?? 'Something went wrong.'),
    );
    return () => {
      live = false;
    };
  }, [client, org.org_id, env, ownReads]);
  // A created delta may be one of ours (an event does not name its publisher): read the list
  // again once a burst of them has passed.
  const ownTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const readOwnSoon = () => {
    if (ownTimer.current) clearTimeout(ownTimer.current);
    ownTimer.current = setTimeout(() => {
      ownTimer.current = null;
      setOwnReads((n) => n + 1);
    }, OWN_READ_DELAY);
  };
  useEffect(
    () => () => {
      if (ownTimer.current) clearTimeout(ownTimer.current);
    },
    [],
  );

  // Where the map opens: the centre last searched in this browser, else the organisation's
  // newest own event, else a wide view of central Europe.
  const [start, setStart] = useState<MapView | null>(() => roadCentre.get(org.org_id));
  useEffect(() => {
    if (start) return;
    if (own && own.length > 0) setStart({ lat: own[0].lat, lon: own[0].lon, zoom: OWN_EVENT_ZOOM });
    else if (own || ownError) setStart(FALLBACK_VIEW);
  }, [start, own, ownError]);

  // The controls as typed, and the area as last searched.
  const [draft, setDraft] = useState({ radius: String(DEFAULT_RADIUS), min_confidence: '0', types: [] as string[] });
  const [area, setArea] = useState<AreaQuery | null>(null);
  const form = useForm(controlFields);
  useEffect(() => {
    if (start && !area) setArea({ lat: round6(start.lat), lon: round6(start.lon), radius: DEFAULT_RADIUS, types: [], min_confidence: 0 });
  }, [start, area]);
  // A deployment whose largest radius is below the default.
  useEffect(() => {
    if (maxRadius !== null && area && area.radius > maxRadius) {
      setArea({ ...area, radius: maxRadius });
      setDraft((x) => ({ ...x, radius: String(maxRadius) }));
    }
  }, [maxRadius, area]);

  // The area's events, the stream's state, and the selection.
  const [events, setEvents] = useState<Events>({});
  const [loadError, setLoadError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [status, setStatus] = useState<LiveStatus | null>(null);
  const [reads, setReads] = useState(0);
  const [selected, setSelected] = useState<string | null>(null);
  const [detail, setDetail] = useState<EventPublic | null>(null);
  const [evidenceReads, setEvidenceReads] = useState(0);
  // moved says whether the map was moved away from the area searched.
  const [moved, setMoved] = useState(false);
  const mapHandle = useRef<MapHandle | null>(null);
  const areaRef = useRef(area);
  areaRef.current = area;
  const selectedRef = useRef(selected);
  selectedRef.current = selected;

  const apply = (a: RoadAction, at = Date.now()) => {
    const ar = areaRef.current;
    if (ar) setEvents((ev) => reduce(ev, a, ar, at));
  };
  /** changed applies a newer state of an event, from a delta or an answer, everywhere it shows. */
  const changed = (e: EventPublic, ended = false) => {
    const at = Date.now();
    setOwn((o) => o && patchOwn(o, e, at, ended));
    if (e.event_id === selectedRef.current) {
      setDetail(e);
      setEvidenceReads((n) => n + 1);
    }
  };
  const onDelta = useRef<(d: StreamDelta) => void>(() => {});
  onDelta.current = (delta) => {
    apply({ kind: 'delta', delta });
    changed(delta.event, delta.kind === 'ended');
    if (delta.kind === 'created') readOwnSoon();
  };

  useEffect(() => {
    if (!area) return;
    let live = true;
    let stop: (() => void) | null = null;
    setLoading(true);
    setLoadError(null);
    setStatus(null);
    client.areaEvents(org.org_id, env, area).then(
      (list) => {
        if (!live) return;
        setLoading(false);
        setEvents(reduce({}, { kind: 'replace', events: list }, area, Date.now()));
        if (!d.openSource) {
          setStatus({ state: 'stopped', why: 'this browser cannot open a live stream' });
          return;
        }
        stop = startLive({
          mint: async () => (await client.streamTicket(org.org_id, env)).ticket,
          url: (ticket) => client.streamUrl(area, ticket),
          open: d.openSource,
          onSnapshot: (s) => setEvents(reduce({}, { kind: 'replace', events: s.events }, area, Date.now())),
          onDelta: (delta) => onDelta.current(delta),
          onStatus: setStatus,
        });
      },
      (e) => {
        if (!live) return;
        setLoading(false);
        setEvents({});
        // A refused radius or confidence (422 ["query", field]) shows at its control.
        const r = formErrors(e, controlFields);
        for (const [f, msg] of Object.entries(r.fields)) form.setError(f, msg);
        setLoadError(r.error);
      },
    );
    return () => {
      live = false;
      stop?.();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [client, org.org_id, env, area, reads, d]);

  // Natural expiry sends nothing (docs/api.md §3): each event leaves at its expires_at.
  useEffect(() => {
    const next = nextExpiry(Object.values(events), own ?? []);
    if (next === null) return;
    const t = setTimeout(
      () => {
        // A timer may fire a little early: the event is due, whatever the clock says.
        const at = Math.max(Date.now(), next);
        apply({ kind: 'expire' }, at);
        setOwn((o) => o && dropExpired(o, at));
      },
      Math.min(Math.max(0, next - Date.now()), 2 ** 31 - 1),
    );
    return () => clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [events, own]);

  // The inspector shows the newest state known of the selected event; one that left the map
  // keeps showing as it left (ended, expired, moved away).
  useEffect(() => {
    if (!selected) return;
    const e = events[selected] ?? own?.find((x) => x.event_id === selected);
    if (e) setDetail(e);
  }, [events, own, selected]);

  const [evidence, setEvidence] = useState<{ id: string; data: EventEvidence | null; error: string | null } | null>(null);
  useEffect(() => {
    if (!selected) {
      setEvidence(null);
      return;
    }
    let live = true;
    client.eventEvidence(org.org_id, env, selected).then(
      (data) => live && setEvidence({ id: selected, data, error: null }),
      (e) => live && setEvidence((prev) => ({ id: selected, data: prev?.id === selected ? prev.data : null, error: e?.message ?? 'Something went wrong.' })),
    );
    return () => {
      live = false;
    };
  }, [client, org.org_id, env, selected, evidenceReads]);

  const select = (id: string, show: boolean) => {
    const e = events[id] ?? own?.find((x) => x.event_id === id) ?? null;
    setSelected(id);
    if (e) {
      setDetail(e);
      if (show) mapHandle.current?.show(e);
    }
  };
  const deselect = () => {
    setSelected(null);
    setDetail(null);
  };

  const chooseEnv = (e: Environment) => {
    if (e === env) return;
    setEnv(e);
    setOwn(null);
    setOwnError(null);
    setEvents({});
    deselect();
  };

  const search = (ev: Event) => {
    ev.preventDefault();
    const radius = Number(draft.radius);
    const min = Number(draft.min_confidence);
    const bad = showProblems(form, controlFields, {
      radius:
        draft.radius.trim() === '' || !Number.isFinite(radius) || radius <= 0
          ? 'Enter a radius in metres.'
          : maxRadius !== null && radius > maxRadius
            ? `At most ${formatNumber(maxRadius)} m.`
            : null,
      min_confidence: draft.min_confidence.trim() === '' || !Number.isFinite(min) || min < 0 || min > 1 ? 'From 0 to 1.' : null,
    });
    if (bad) return;
    const v = mapHandle.current?.view() ?? (area ? { lat: area.lat, lon: area.lon, zoom: start?.zoom ?? FALLBACK_VIEW.zoom } : start);
    if (!v) return;
    const next: AreaQuery = { lat: round6(v.lat), lon: round6(v.lon), radius, types: [...draft.types], min_confidence: min };
    roadCentre.set(org.org_id, { lat: next.lat, lon: next.lon, zoom: v.zoom });
    setArea(next);
    setMoved(false);
    // The same area again reads it again.
    setReads((n) => n + 1);
  };

  const eventList = useMemo(() => Object.values(events), [events]);
  // One of our events chosen in the list stays drawn while it is live, even outside the area.
  const drawn = useMemo(() => {
    const mine = selected && !(selected in events) ? own?.find((x) => x.event_id === selected) : undefined;
    return mine && isLive(mine, Date.now()) ? [...eventList, mine] : eventList;
  }, [eventList, events, own, selected]);
  const isOwn =
    !!detail &&
    (own?.some((x) => x.event_id === detail.event_id) === true ||
      (evidence?.id === detail.event_id && evidence.data?.publisher.by === 'your_organisation'));
  const basemapValue: Basemap | null = basemap.data ?? (basemap.error ? { tiles: null, attribution: '' } : null);

  return (
    <div class="road-page">
      <div class="row">
        <h2>Road</h2>
        <EnvSwitch value={env} onChange={chooseEnv} />
        <LiveBadge status={status} />
      </div>
      <p class="muted small">
        The network's active events around the map's centre, as your organisation reads them in the {env} environment
        {env === 'sandbox' ? ' (live and sandbox events)' : ''}. Changes show as they happen; click an event for its details.
      </p>
      <form class="road-controls" onSubmit={search} noValidate aria-label="Area and filters">
        <Field
          label="Radius (metres)"
          name="radius"
          value={draft.radius}
          onInput={(radius) => setDraft((x) => ({ ...x, radius }))}
          form={form}
          hint={maxRadius !== null ? `Up to ${formatNumber(maxRadius)}.` : undefined}
          input={{ type: 'number', min: 1, max: maxRadius ?? undefined, step: 'any', inputMode: 'decimal' }}
        />
        <Field
          label="Minimum confidence"
          name="min_confidence"
          value={draft.min_confidence}
          onInput={(min_confidence) => setDraft((x) => ({ ...x, min_confidence }))}
          form={form}
          hint="0 (every event) to 1."
          input={{ type: 'number', min: 0, max: 1, step: 0.05, inputMode: 'decimal' }}
        />
        <TypeFilter
          types={draft.types}
          onChange={(types) => setDraft((x) => ({ ...x, types }))}
          error={form.fields.type}
        />
        <button type="submit" class="primary" disabled={!area}>
          Search this area
        </button>
      </form>
      <FormError form={form} />
      {loadError && (
        <Notice kind="error">
          {loadError}{' '}
          <button type="button" onClick={() => setReads((n) => n + 1)}>
            Try again
          </button>
        </Notice>
      )}
      <div class="road-layout">
        <div class="road-main">
          {start && area && basemapValue ? (
            <RoadMap
              create={d.createMap}
              view={start}
              basemap={basemapValue}
              events={drawn}
              selected={selected}
              area={area}
              onSelect={(id) => select(id, false)}
              onMove={(v) => {
                const a = areaRef.current;
                setMoved(!!a && distanceM(v.lat, v.lon, a.lat, a.lon) > a.radius / 10);
              }}
              handle={mapHandle}
            />
          ) : (
            <div class="road-map road-map-waiting" aria-busy="true">
              <p class="muted" role="status">
                Loading the map…
              </p>
            </div>
          )}
          {area && (
            <p class="small road-summary" data-testid="area-summary">
              {loading
                ? 'Reading the area…'
                : `${formatNumber(eventList.length)} active event${eventList.length === 1 ? '' : 's'} within ${formatDistance(area.radius)} of ${area.lat.toFixed(4)}, ${area.lon.toFixed(4)}`}
              {area.types.length > 0 && `, ${typesSummary(area.types)}`}
              {area.min_confidence > 0 && `, at least ${formatPercent(area.min_confidence)} confident`}.{' '}
              {moved ? <strong>The map has moved: search this area to see its events.</strong> : 'Move the map and search again to look elsewhere.'}
            </p>
          )}
          <TypeCounts list={eventList} label="Events on the map by type" testid="area-counts" />
        </div>
        <div class="road-side">
          {detail && (
            <Inspector
              key={detail.event_id}
              org={org}
              env={env}
              event={detail}
              evidence={evidence?.id === detail.event_id ? evidence : null}
              owner={owner}
              own={isOwn}
              now={now}
              onChanged={(e) => {
                apply({ kind: 'upsert', event: e });
                changed(e);
              }}
              onHide={deselect}
            />
          )}
          <OwnEvents list={own} error={ownError} env={env} selected={selected} now={now} onSelect={(id) => select(id, true)} onRetry={() => setOwnReads((n) => n + 1)} />
        </div>
      </div>
    </div>
  );
}

/** LiveBadge says whether the map is live. */
function LiveBadge({ status }: { status: LiveStatus | null }) {
  let text = '';
  let cls = '';
  switch (status?.state) {
    case 'connecting':
      text = 'Connecting…';
      break;
    case 'live':
      text = 'Live';
      cls = ' ok';
      break;
    case 'retrying':
      text = `Reconnecting${status.inMs >= 1000 ? ` in ${Math.round(status.inMs / 1000)} s` : ''}: ${status.why}`;
      cls = ' warn';
      break;
    case 'stopped':
      text = `Not live: ${status.why}`;
      cls = ' bad';
      break;
  }
  return (
    <p class={'live-status' + cls} role="status" data-testid="live-status">
      {text}
    </p>
  );
}

/** TypeFilter chooses the types to show; none chosen shows every type. */
function TypeFilter(props: { types: string[]; onChange: (t: string[]) => void; error?: string }) {
  const set = (t: string, on: boolean) => props.onChange(on ? [...props.types, t] : props.types.filter((x) => x !== t));
  return (
    <details class="road-types">
      <summary>Types: {props.types.length === 0 ? 'all' : `${props.types.length} chosen`}</summary>
      <fieldset>
        <legend class="visually-hidden">Types</legend>
        <div class="type-checks">
          {eventTypes.map((t) => (
            <label class="check" key={t}>
              <input type="checkbox" name="type" value={t} checked={props.types.includes(t)} onChange={(e) => set(t, (e.currentTarget as HTMLInputElement).checked)} />{' '}
              <span class="swatch" style={{ background: typeColour(t) }} aria-hidden="true" /> {typeNames[t]}
            </label>
          ))}
        </div>
        <p class="hint">None checked: every type.</p>
        {props.error && (
          <p class="field-error" role="alert">
            {props.error}
          </p>
        )}
      </fieldset>
    </details>
  );
}

/** TypeCounts counts events by type, each with its colour on the map. */
function TypeCounts({ list, label, testid }: { list: EventPublic[]; label: string; testid: string }) {
  const counts = countsByType(list);
  if (counts.length === 0) return null;
  return (
    <ul class="type-counts" aria-label={label} data-testid={testid}>
      {counts.map(([t, n]) => (
        <li key={t}>
          <span class="swatch" style={{ background: typeColour(t) }} aria-hidden="true" /> {typeLabel(t)} <strong>{formatNumber(n)}</strong>
        </li>
      ))}
    </ul>
  );
}

const sortNames: Record<SortKey, string> = { newest: 'Published', type: 'Type', confidence: 'Confidence', expiry: 'Expires' };

/** OwnEvents lists the organisation's own active events, sortable, with counts by type. */
export function OwnEvents(props: {
  list: EventPublic[] | null;
  error: string | null;
  env: Environment;
  selected: string | null;
  now: number;
  onSelect: (id: string) => void;
  onRetry: () => void;
}) {
  const [sort, setSort] = useState<SortKey>('newest');
  const { list } = props;
  const rows = useMemo(() => (list ? sortEvents(list, sort) : []), [list, sort]);
  const header = (k: SortKey) => (
    <th scope="col" aria-sort={sort === k ? (k === 'newest' || k === 'confidence' ? 'descending' : 'ascending') : undefined}>
      <button type="button" class="link sort" aria-pressed={sort === k} onClick={() => setSort(k)}>
        {sortNames[k]}
      </button>
    </th>
  );
  return (
    <section class="card road-own" aria-labelledby="own-events-title" data-testid="own-events">
      <h3 id="own-events-title">
        Our active events <span class={'env ' + props.env}>{props.env}</span>
      </h3>
      {props.error && !list ? (
        <Notice kind="error">
          {props.error}{' '}
          <button type="button" onClick={props.onRetry}>
            Try again
          </button>
        </Notice>
      ) : !list ? (
        <p class="muted" role="status">
          Loading…
        </p>
      ) : list.length === 0 ? (
        <p class="muted">No active {props.env} events of ours.</p>
      ) : (
        <>
          <TypeCounts list={list} label="Our events by type" testid="own-counts" />
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">Our active {props.env} events; choose one to see it on the map</caption>
              <thead>
                <tr>
                  {header('type')}
                  {header('confidence')}
                  {header('expiry')}
                  {header('newest')}
                </tr>
              </thead>
              <tbody>
                {rows.map((e) => (
                  <tr
                    key={e.event_id}
                    data-testid={'own-event-' + e.event_id}
                    class={props.selected === e.event_id ? 'selected' : undefined}
                    aria-current={props.selected === e.event_id ? 'true' : undefined}
                    onClick={() => props.onSelect(e.event_id)}
                  >
                    <th scope="row">
                      <span class="swatch" style={{ background: typeColour(e.type) }} aria-hidden="true" />{' '}
                      <button type="button" class="link">
                        {typeLabel(e.type)}
                      </button>
                      {e.description && <div class="muted small road-description">{e.description}</div>}
                    </th>
                    <td>{formatPercent(e.confidence)}</td>
                    <td title={formatTime(e.expires_at)}>{formatRelative(e.expires_at, props.now)}</td>
                    <td title={formatTime(e.created_at)}>{formatRelative(e.created_at, props.now)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

const statusNames: Record<string, string> = { active: 'Active', expired: 'Expired', invalidated: 'Invalidated', merged: 'Merged' };
const verificationNames: Record<string, string> = { unverified: 'Unverified', confirmed: 'Confirmed', disputed: 'Disputed' };
const byNames: Record<string, string> = { your_organisation: 'your organisation', another_organisation: 'another organisation' };
const causeNames: Record<string, string> = {
  published: 'published',
  confirmation: 'a first confirmation from a new reporter',
  duplicate_merged: "another source's report merged in",
  revision: 'revised',
  deny_quorum: 'denied by a quorum of reporters',
  merged: 'merged into another event',
  closed: 'closed by the publisher',
  invalidated: 'invalidated',
};

/** Value shows a field's value, or a dash. */
function Value({ v }: { v: unknown }) {
  if (v === null || v === undefined || v === '') return <span class="muted">—</span>;
  if (typeof v === 'object') return <code>{JSON.stringify(v)}</code>;
  return <>{String(v)}</>;
}

/** Time shows a timestamp relative to now, with the absolute time beside it. */
function Time({ at, now }: { at: string | null | undefined; now: number }) {
  if (!at) return <span class="muted">—</span>;
  return (
    <>
      {formatRelative(at, now)} <span class="muted small">({formatTime(at)})</span>
    </>
  );
}

/** shownFields are the EventPublic fields the inspector shows by name; any other one is listed after them. */
const shownFields = new Set([
  'event_id',
  'schema_version',
  'type',
  'subtype',
  'lat',
  'lon',
  'geometry',
  'heading',
  'road_ref',
  'severity',
  'description',
  'occurred_at',
  'created_at',
  'expires_at',
  'source_kind',
  'feed_id',
  'license',
  'upstream_updated_at',
  'fetched_at',
  'status',
  'verification',
  'confidence',
  'confirm_count',
  'deny_count',
  'updated_at',
  'merged_into',
  'environment',
]);

/** stepText says one change of an event's timeline in words. */
function stepText(s: EvidenceStep): string {
  const by = s.by ? ` by ${byNames[s.by] ?? s.by}` : '';
  const away = s.distance_m !== null && s.distance_m !== undefined ? ` (${formatDistance(s.distance_m)} away)` : '';
  switch (s.kind) {
    case 'signal':
      return `${s.action === 'deny' ? 'Denied' : 'Confirmed'}${by}${away}`;
    case 'duplicate':
      return `Report ${s.event_id ?? ''}${by ? ' of' + by.slice(3) : ''} merged in${away}`;
    case 'revision':
      return 'Revised by the publisher';
    case 'merged':
      return `Merged into ${s.event_id ?? 'another event'}`;
    case 'closed':
      return 'Closed by the publisher';
    case 'invalidated':
      return `Invalidated${s.reason ? `: ${s.reason}` : ''}`;
    default:
      return s.kind;
  }
}

/** EvidenceView renders the evidence document: the reporters, the publisher, duplicates, the timeline and the expiry. */
function EvidenceView({ ev }: { ev: EventEvidence }) {
  const r = ev.reporters;
  return (
    <div data-testid="evidence">
      <p>
        {formatNumber(r.confirming)} reporter{r.confirming === 1 ? '' : 's'} confirming, {formatNumber(r.denying)} denying, from{' '}
        {formatNumber(r.organisations)} organisation{r.organisations === 1 ? '' : 's'}. Published by {byNames[ev.publisher.by] ?? ev.publisher.by}{' '}
        (standing: {ev.publisher.reputation}).
      </p>
      <h5>Merged duplicates</h5>
      {ev.duplicates.length === 0 ? (
        <p class="muted small">No other source's report was merged into it.</p>
      ) : (
        <ul class="road-list" data-testid="evidence-duplicates">
          {ev.duplicates.map((x) => (
            <li key={x.event_id}>
              <code>{x.event_id}</code> of {byNames[x.by] ?? x.by}, merged {formatTime(x.merged_at)}
              {x.distance_m !== null && `, ${formatDistance(x.distance_m)} away`}
            </li>
          ))}
        </ul>
      )}
      <h5>Timeline</h5>
      {ev.timeline.length === 0 ? (
        <p class="muted small">No change since it was published.</p>
      ) : (
        <ol class="road-list" data-testid="evidence-timeline">
          {ev.timeline.map((s, i) => (
            <li key={i}>
              <span class="muted small">{formatTime(s.at)}</span> {stepText(s)}
            </li>
          ))}
        </ol>
      )}
      {ev.timeline_truncated && <p class="hint">Only the newest 1000 changes are listed.</p>}
      <h5>Expiry</h5>
      <ol class="road-list" data-testid="evidence-expiry">
        {ev.expiry.map((x, i) => (
          <li key={i}>
            <span class="muted small">{formatTime(x.at)}</span> expires {formatTime(x.expires_at)}: {causeNames[x.cause] ?? x.cause}
          </li>
        ))}
      </ol>
    </div>
  );
}

/**
 * Inspector shows one event: every field, its tallies and confidence, its evidence; owners
 * close and revise the organisation's own active events from it.
 */
export function Inspector(props: {
  org: Organisation;
  env: Environment;
  event: EventPublic;
  evidence: { data: EventEvidence | null; error: string | null } | null;
  owner: boolean;
  own: boolean;
  now: number;
  onChanged: (e: EventPublic) => void;
  onHide: () => void;
}) {
  const { client } = useApp();
  const { event: e, now } = props;
  const [busy, setBusy] = useState(false);
  const [msg, setMsg] = useState<{ kind: 'success' | 'error'; text: string } | null>(null);
  const [revising, setRevising] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  // Opened, the panel takes the focus (and comes into view on a phone, below the map).
  useEffect(() => heading.current?.focus(), []);
  const active = e.status === 'active';

  const close = async () => {
    setMsg(null);
    setBusy(true);
    try {
      const closed = await client.closeEvent(props.org.org_id, props.env, e.event_id);
      props.onChanged(closed);
      setMsg({ kind: 'success', text: 'The event is closed: it has left the map for everyone.' });
    } catch (err) {
      setMsg({ kind: 'error', text: `Close: ${(err as Error).message}` });
    }
    setBusy(false);
  };

  const extra = Object.entries(e).filter(([k]) => !shownFields.has(k));
  const points = e.geometry?.coordinates.length ?? 0;
  return (
    <section class="card inspector" role="region" aria-labelledby="inspector-title" data-testid="inspector">
      <div class="row">
        <h3 id="inspector-title" tabIndex={-1} ref={heading}>
          <span class="swatch" style={{ background: typeColour(e.type) }} aria-hidden="true" /> {typeLabel(e.type)}
          {e.subtype && <span class="muted small"> · {e.subtype}</span>}
        </h3>
        <button type="button" onClick={props.onHide}>
          Hide<span class="visually-hidden"> the event's details</span>
        </button>
      </div>
      <dl class="road-fields">
        <dt>Confidence</dt>
        <dd>
          <strong data-testid="inspector-confidence">{formatPercent(e.confidence)}</strong>{' '}
          <meter min={0} max={1} value={e.confidence} aria-hidden="true" />
        </dd>
        <dt>Tallies</dt>
        <dd data-testid="inspector-tallies">
          {formatNumber(e.confirm_count)} confirm · {formatNumber(e.deny_count)} deny
        </dd>
        <dt>Verification</dt>
        <dd data-testid="inspector-verification">{verificationNames[e.verification] ?? e.verification}</dd>
        <dt>Status</dt>
        <dd data-testid="inspector-status">
          {statusNames[e.status] ?? e.status}
          {e.merged_into && (
            <>
              {' '}
              into <code>{e.merged_into}</code>
            </>
          )}
        </dd>
        <dt>Expires</dt>
        <dd data-testid="inspector-expires">
          <Time at={e.expires_at} now={now} />
        </dd>
        <dt>Severity</dt>
        <dd>
          <Value v={e.severity} />
        </dd>
        <dt>Description</dt>
        <dd>
          <Value v={e.description} />
        </dd>
        <dt>Road</dt>
        <dd>
          <Value v={e.road_ref} />
        </dd>
        <dt>Heading</dt>
        <dd>{e.heading === null || e.heading === undefined ? <Value v={null} /> : `${e.heading}°`}</dd>
        <dt>Position</dt>
        <dd>
          {e.lat.toFixed(6)}, {e.lon.toFixed(6)}
        </dd>
        <dt>Line</dt>
        <dd>
          {points === 0 ? (
            <span class="muted">None: a point</span>
          ) : (
            <details>
              <summary>{points} points</summary>
              <code class="road-coordinates">{JSON.stringify(e.geometry!.coordinates)}</code>
            </details>
          )}
        </dd>
        <dt>Published</dt>
        <dd>
          <Time at={e.created_at} now={now} />
        </dd>
        <dt>Occurred</dt>
        <dd>
          <Time at={e.occurred_at} now={now} />
        </dd>
        <dt>Revised</dt>
        <dd>
          <Time at={e.updated_at} now={now} />
        </dd>
        <dt>Source</dt>
        <dd>
          {e.source_kind === 'feed' ? 'A feed' : e.source_kind === 'publisher' ? 'A publisher' : e.source_kind}
          {e.feed_id && (
            <>
              {' '}
              <code>{e.feed_id}</code>
            </>
          )}
        </dd>
        {e.source_kind === 'feed' && (
          <>
            <dt>Licence</dt>
            <dd>
              <Value v={e.license} />
            </dd>
            <dt>Upstream updated</dt>
            <dd>
              <Time at={e.upstream_updated_at} now={now} />
            </dd>
            <dt>Fetched</dt>
            <dd>
              <Time at={e.fetched_at} now={now} />
            </dd>
          </>
        )}
        <dt>Environment</dt>
        <dd>
          <Value v={e.environment} />
        </dd>
        <dt>Event id</dt>
        <dd>
          <code>{e.event_id}</code>
        </dd>
        <dt>Schema version</dt>
        <dd>
          <Value v={e.schema_version} />
        </dd>
        {extra.map(([k, v]) => (
          <Fragment key={k}>
            <dt>
              <code>{k}</code>
            </dt>
            <dd>
              <Value v={v} />
            </dd>
          </Fragment>
        ))}
      </dl>

      {msg && <Notice kind={msg.kind}>{msg.text}</Notice>}
      {props.own && active && (
        props.owner ? (
          <div class="actions">
            <Confirm
              label="Close event"
              question="Close this event? It ends now, for everyone who sees it."
              confirmLabel="Yes, close it"
              disabled={busy}
              onConfirm={close}
            />
            <button type="button" aria-expanded={revising} disabled={busy} onClick={() => setRevising(!revising)}>
              Revise
            </button>
          </div>
        ) : (
          <p class="hint">This is one of your organisation's events: owners can close and revise it.</p>
        )
      )}
      {revising && props.owner && props.own && active && (
        <Revise
          org={props.org}
          env={props.env}
          event={e}
          onSaved={(r) => {
            setRevising(false);
            props.onChanged(r);
            setMsg({ kind: 'success', text: 'The event is revised.' });
          }}
          onCancel={() => setRevising(false)}
        />
      )}

      <h4>Evidence</h4>
      {!props.evidence ? (
        <p class="muted small" role="status">
          Loading the evidence…
        </p>
      ) : (
        <>
          {props.evidence.error && <Notice kind="error">{props.evidence.error}</Notice>}
          {props.evidence.data && <EvidenceView ev={props.evidence.data} />}
        </>
      )}
    </section>
  );
}

const reviseFields = ['lat', 'lon', 'severity'];

/**
 * Revise restates an event: its position and severity. A revision's fields are applied, not
 * merged (docs/api.md §4.1 rule 5), so what the form does not change is sent as it was: the
 * subtype, the severity, and the line, which moves with its start.
 */
export function Revise(props: { org: Organisation; env: Environment; event: EventPublic; onSaved: (e: EventPublic) => void; onCancel: () => void }) {
  const { client } = useApp();
  const e = props.event;
  const [v, setV] = useState({ lat: String(e.lat), lon: String(e.lon), severity: e.severity ?? '' });
  const form = useForm(reviseFields);
  const line = e.geometry && e.geometry.coordinates.length >= 2 ? e.geometry : null;

  const save = async (ev: Event) => {
    ev.preventDefault();
    const lat = Number(v.lat);
    const lon = Number(v.lon);
    const bad = showProblems(form, reviseFields, {
      lat: v.lat.trim() === '' || !Number.isFinite(lat) || Math.abs(lat) > 90 ? 'A latitude, -90 to 90.' : null,
      lon: v.lon.trim() === '' || !Number.isFinite(lon) || Math.abs(lon) > 180 ? 'A longitude, -180 to 180.' : null,
    });
    if (bad) return;
    const body: RevisionDraft = { lat, lon };
    if (line) {
      body.geometry =
        lat === e.lat && lon === e.lon ? { type: 'LineString', coordinates: line.coordinates } : shiftGeometry(line, lat, lon);
    }
    if (v.severity) body.severity = v.severity as Severity;
    if (e.subtype) body.subtype = e.subtype;
    const r = await form.run(() => client.reviseEvent(props.org.org_id, props.env, e.event_id, body));
    if (r) props.onSaved(r);
  };

  return (
    <form class="road-revise" onSubmit={save} noValidate aria-label="Revise the event">
      <FormError form={form} />
      <div class="road-revise-fields">
        <Field label="Latitude" name="lat" value={v.lat} onInput={(lat) => setV((x) => ({ ...x, lat }))} form={form} input={{ inputMode: 'decimal', autocomplete: 'off' }} />
        <Field label="Longitude" name="lon" value={v.lon} onInput={(lon) => setV((x) => ({ ...x, lon }))} form={form} input={{ inputMode: 'decimal', autocomplete: 'off' }} />
        <div class="field">
          <label for="revise-severity">Severity</label>
          <select
            id="revise-severity"
            name="severity"
            value={v.severity}
            aria-invalid={form.fields.severity ? 'true' : undefined}
            onChange={(x) => setV((y) => ({ ...y, severity: (x.currentTarget as HTMLSelectElement).value }))}
          >
            <option value="">None</option>
            <option value="low">Low</option>
            <option value="medium">Medium</option>
            <option value="high">High</option>
          </select>
          {form.fields.severity && (
            <p class="field-error" role="alert">
              {form.fields.severity}
            </p>
          )}
        </div>
      </div>
      <p class="hint">
        {line
          ? `This event is a line of ${line.coordinates.length} points that starts at its position: a new position moves the whole line by the same offset. `
          : ''}
        {e.subtype ? `Its subtype (${e.subtype}) is kept. ` : ''}A revision usually gives the event a full lifetime again.
      </p>
      <div class="actions">
        <button type="submit" class="primary" disabled={form.busy}>
          {form.busy ? 'Saving…' : 'Save revision'}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
