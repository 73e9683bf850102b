// The Road page's state, without a map or a network (docs/console.md §5): the active events of
// an area as its read and its stream tell them (a snapshot replaces them, deltas change one),
// dropped at their expires_at since natural expiry sends nothing (docs/api.md §3); the
// organisation's own events kept in step with the same deltas; and the list's order and counts.
import type { AreaQuery, EventPublic, LineStringGeometry, StreamDelta } from '../api';
import { typeLabel } from '../pages/alertrules';

/** Events are the area's active events by id. */
export type Events = Readonly<Record<string, EventPublic>>;

/** RoadAction is what changes the area's events. */
export type RoadAction =
  /** An area read or a stream's snapshot: the full truth for the area. */
  | { kind: 'replace'; events: EventPublic[] }
  /** One frame of the stream. */
  | { kind: 'delta'; delta: StreamDelta }
  /** The event as an answer (close, revise) returned it. */
  | { kind: 'upsert'; event: EventPublic }
  /** The clock moved: drop what has expired. */
  | { kind: 'expire' };

/** expiresAt is when an event leaves the map, in ms since the epoch (NaN when unreadable). */
export function expiresAt(e: Pick<EventPublic, 'expires_at'>): number {
  return Date.parse(e.expires_at);
}

/** isLive says whether an event is still on the map at now: active, and not past its expires_at. */
export function isLive(e: EventPublic, now: number): boolean {
  if (e.status !== 'active') return false;
  const t = expiresAt(e);
  return Number.isNaN(t) || t > now;
}

const EARTH_M = 6_371_008.8;
const rad = (d: number) => (d * Math.PI) / 180;

/** distanceM is the great-circle distance between two points, in metres. */
export function distanceM(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = rad(lat2 - lat1);
  const dLon = rad(lon2 - lon1);
  const a = Math.sin(dLat / 2) ** 2 + Math.cos(rad(lat1)) * Math.cos(rad(lat2)) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_M * Math.asin(Math.min(1, Math.sqrt(a)));
}

/**
 * distanceToEventM is how far an event's full extent (its point, and its line when it has one)
 * lies from a point, in metres: the distance a stream's filter measures. Each segment is
 * measured on a local flat projection, which is exact enough at the radii of an area.
 */
export function distanceToEventM(lat: number, lon: number, e: Pick<EventPublic, 'lat' | 'lon' | 'geometry'>): number {
  let best = distanceM(lat, lon, e.lat, e.lon);
  const pts = e.geometry?.coordinates ?? [];
  const k = Math.cos(rad(lat));
  // Positions in metres east and north of the point.
  const xy = pts.map(([x, y]) => [rad(x - lon) * k * EARTH_M, rad(y - lat) * EARTH_M] as const);
  for (let i = 0; i < xy.length; i++) {
    const [ax, ay] = xy[i];
    best = Math.min(best, Math.hypot(ax, ay));
    if (i + 1 < xy.length) {
      const [bx, by] = xy[i + 1];
      const dx = bx - ax;
      const dy = by - ay;
      const len = dx * dx + dy * dy;
      const t = len === 0 ? 0 : Math.max(0, Math.min(1, -(ax * dx + ay * dy) / len));
      best = Math.min(best, Math.hypot(ax + t * dx, ay + t * dy));
    }
  }
  return best;
}

/**
 * matches says whether an event belongs on the map of an area at now: live, of a type asked
 * for (none asked: every type), at least as confident as asked, and within the radius.
 */
export function matches(e: EventPublic, a: AreaQuery, now: number): boolean {
  if (!isLive(e, now)) return false;
  if (a.types.length > 0 && !a.types.includes(e.type)) return false;
  if (e.confidence < a.min_confidence) return false;
  return distanceToEventM(a.lat, a.lon, e) <= a.radius;
}

/**
 * reduce applies an action to the area's events. A replace is the truth and is kept whole
 * (only what has already expired is left out); a delta or an answer puts the event in when it
 * still matches the area and takes it out when it does not (a delta reaches a stream whose
 * filter matched the event before or after the change, so one that moved away, lost
 * confidence or ended is removed); expire drops what reached its expires_at.
 */
export function reduce(events: Events, action: RoadAction, area: AreaQuery, now: number): Events {
  switch (action.kind) {
    case 'replace': {
      const out: Record<string, EventPublic> = {};
      for (const e of action.events) if (isLive(e, now)) out[e.event_id] = e;
      return out;
    }
    case 'delta':
    case 'upsert': {
      const e = action.kind === 'delta' ? action.delta.event : action.event;
      const ended = action.kind === 'delta' && action.delta.kind === 'ended';
      if (!ended && matches(e, area, now)) return { ...events, [e.event_id]: e };
      if (!(e.event_id in events)) return events;
      const out = { ...events };
      delete out[e.event_id];
      return out;
    }
    case 'expire': {
      const gone = Object.values(events).filter((e) => !isLive(e, now));
      if (gone.length === 0) return events;
      const out = { ...events };
      for (const e of gone) delete out[e.event_id];
      return out;
    }
  }
}

/**
 * patchOwn applies a change of an event (a delta, or an answer) to the organisation's own
 * events: an event of the list is replaced, or removed once it is no longer live. It returns
 * the list itself when the change concerns none of its events (a created delta cannot be told
 * to be the organisation's: EventPublic does not name its publisher).
 */
export function patchOwn(own: EventPublic[], e: EventPublic, now: number, ended = false): EventPublic[] {
  const i = own.findIndex((x) => x.event_id === e.event_id);
  if (i < 0) return own;
  if (ended || !isLive(e, now)) return own.filter((x) => x.event_id !== e.event_id);
  const out = [...own];
  out[i] = e;
  return out;
}

/** dropExpired leaves out the events no longer live at now; the list itself when none is. */
export function dropExpired(list: EventPublic[], now: number): EventPublic[] {
  return list.every((e) => isLive(e, now)) ? list : list.filter((e) => isLive(e, now));
}

/** nextExpiry is the earliest expires_at of the events, in ms, or null when there is none. */
export function nextExpiry(...lists: Iterable<EventPublic>[]): number | null {
  let next: number | null = null;
  for (const list of lists) {
    for (const e of list) {
      const t = expiresAt(e);
      if (!Number.isNaN(t) && (next === null || t < next)) next = t;
    }
  }
  return next;
}

/** SortKey is how the own events list is ordered. */
export type SortKey = 'newest' | 'type' | 'confidence' | 'expiry';

const newestFirst = (a: EventPublic, b: EventPublic) => Date.parse(b.created_at) - Date.parse(a.created_at) || a.event_id.localeCompare(b.event_id);

/**
 * sortEvents orders events: newest first; by type in words (then newest); most confident first
 * (then newest); or soonest to expire first.
 */
export function sortEvents(list: readonly EventPublic[], key: SortKey): EventPublic[] {
  const out = [...list];
  switch (key) {
    case 'type':
      return out.sort((a, b) => typeLabel(a.type).localeCompare(typeLabel(b.type)) || newestFirst(a, b));
    case 'confidence':
      return out.sort((a, b) => b.confidence - a.confidence || newestFirst(a, b));
    case 'expiry':
      return out.sort((a, b) => expiresAt(a) - expiresAt(b) || newestFirst(a, b));
    default:
      return out.sort(newestFirst);
  }
}

/** countsByType counts events per type: most first, then by type in words. */
export function countsByType(list: Iterable<EventPublic>): [string, number][] {
  const n = new Map<string, number>();
  for (const e of list) n.set(e.type, (n.get(e.type) ?? 0) + 1);
  return [...n].sort((a, b) => b[1] - a[1] || typeLabel(a[0]).localeCompare(typeLabel(b[0])));
}

/** typeColours give each event type its colour on the map, the legend and the list. */
export const typeColours: Record<string, string> = {
  accident: '#dc2626',
  stopped_vehicle: '#ea580c',
  object_on_road: '#d97706',
  weather_hazard: '#0891b2',
  congestion: '#9333ea',
  wrong_way_vehicle: '#be123c',
  road_damage: '#854d0e',
  people_on_road: '#db2777',
  police_check: '#1d4ed8',
  speed_camera: '#4f46e5',
  road_closure: '#111827',
  infrastructure_fault: '#0f766e',
  roadworks: '#ca8a04',
};

/** typeColour is a type's colour; grey for a type the console does not know. */
export function typeColour(t: string): string {
  return typeColours[t] ?? '#6b7280';
}

/** formatPercent says a confidence as a whole percentage: "67%". */
export function formatPercent(c: number): string {
  return `${Math.round(c * 100)}%`;
}

/**
 * formatRelative says how far a time is from now in words: "in 5 min", "2 h ago", "now".
 */
export function formatRelative(at: string, now: number): string {
  const t = Date.parse(at);
  if (Number.isNaN(t)) return at;
  const s = Math.round((t - now) / 1000);
  const a = Math.abs(s);
  let text: string;
  if (a < 45) return 'now';
  if (a < 90 * 60) text = `${Math.round(a / 60)} min`;
  else if (a < 36 * 3600) text = `${Math.round(a / 3600)} h`;
  else text = `${Math.round(a / 86400)} d`;
  return s > 0 ? `in ${text}` : `${text} ago`;
}

/**
 * shiftGeometry moves a line by the offset that takes its first position to lat, lon: a
 * revision's lat/lon must be the first position of the geometry sent, and moving a line event
 * moves all of it. The first position is set exactly; the others are rounded to 1e-7 degrees.
 */
export function shiftGeometry(g: LineStringGeometry, lat: number, lon: number): LineStringGeometry {
  const [x0, y0] = g.coordinates[0];
  const dLon = lon - x0;
  const dLat = lat - y0;
  const r = (v: number) => Math.round(v * 1e7) / 1e7;
  return {
    type: 'LineString',
    coordinates: g.coordinates.map(([x, y], i) => (i === 0 ? [lon, lat] : [r(x + dLon), r(y + dLat)])),
  };
}
