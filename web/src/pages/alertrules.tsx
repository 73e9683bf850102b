// Alert rules (docs/webhooks.md §5), a section of the Webhooks page: each names an area (a circle,
// or a GeoJSON polygon of up to 256 points), an environment, the event types heard and a minimum
// confidence; any network event that comes to match a rule, changes while it matches, or stops
// matching is delivered as alert.created, alert.updated or alert.ended to the organisation's
// endpoints subscribed to those kinds. Owners make rules, edit them (only what changed is sent),
// disable and enable them, and delete them (asks first); members read them.
import { useEffect, useRef, useState } from 'preact/hooks';
import { eventTypes, type AlertArea, type AlertRuleDraft, type AlertRulePublic, type AlertRuleUpdate, type Environment, type EventType, type Organisation } from '../api';
import { useApp } from '../context';
import { Confirm, Field, formatTime, FormError, Loading, Notice, showProblems, type FormState, type Locate, useForm, useLoad, useRowActions, useRowEditor } from '../ui';

/** typeNames are the event types in words (docs/api.md §2.1). */
export const typeNames: Record<EventType, string> = {
  accident: 'Accident',
  stopped_vehicle: 'Stopped vehicle',
  object_on_road: 'Object on road',
  weather_hazard: 'Weather hazard',
  congestion: 'Congestion',
  wrong_way_vehicle: 'Wrong-way vehicle',
  road_damage: 'Road damage',
  people_on_road: 'People on road',
  police_check: 'Police check',
  speed_camera: 'Speed camera',
  road_closure: 'Road closure',
  infrastructure_fault: 'Infrastructure fault',
  roadworks: 'Roadworks',
};

/** Limits of a rule (docs/webhooks.md §5). */
const MAX_RULES = 50;
const MAX_NAME = 100;
const MIN_RADIUS_M = 10;
const MAX_RADIUS_M = 100_000;
/** MAX_POSITIONS is the most positions a polygon's ring has: 256 points, and the first again. */
const MAX_POSITIONS = 257;

/** typeLabel is a type in words, or the type itself when the console does not know it. */
export function typeLabel(t: string): string {
  return typeNames[t as EventType] ?? t;
}

/** typesSummary says which types a rule hears: "every type" when it names none. */
export function typesSummary(types: string[]): string {
  return types.length === 0 ? 'every type' : types.map(typeLabel).join(', ');
}

/** formatDistance says a radius: "500 m", "2.5 km". */
export function formatDistance(m: number): string {
  return m < 1000 ? `${Math.round(m)} m` : `${+(m / 1000).toFixed(2)} km`;
}

/** areaSummary says where a rule listens: "Circle 2.5 km around 48.1000, 11.5000", "Polygon, 5 points". */
export function areaSummary(a: AlertArea): string {
  if (a.type === 'Circle') return `Circle ${formatDistance(a.radius_m)} around ${a.lat.toFixed(4)}, ${a.lon.toFixed(4)}`;
  const points = Math.max(0, (a.coordinates[0]?.length ?? 1) - 1);
  return `Polygon, ${points} point${points === 1 ? '' : 's'}`;
}

/** formatConfidence says a rule's minimum confidence as a percentage: "60%", or "0% (any)". */
export function formatConfidence(c: number): string {
  return c > 0 ? `${Math.round(c * 100)}%` : '0% (any)';
}

const polygonExample = '{"type": "Polygon", "coordinates": [[[11.50, 48.10], [11.60, 48.10], [11.60, 48.20], [11.50, 48.10]]]}';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isPosition(v: unknown): boolean {
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number');
}

/**
 * parsePolygon reads the polygon input: a GeoJSON Polygon object (or a Feature of one), or just
 * its coordinates, [[[lon, lat], …]] (a bare ring, [[lon, lat], …], too). It returns the
 * coordinates to send, or what is wrong with the text; the service has the last word on the
 * shape (a ring that crosses itself, one too wide).
 */
export function parsePolygon(text: string): { coordinates: [number, number][][] } | { problem: string } {
  const t = text.trim();
  if (t === '') return { problem: 'Paste a GeoJSON Polygon, or its coordinates: [[[longitude, latitude], …]].' };
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    return { problem: `This is not JSON. Paste a GeoJSON Polygon, such as ${polygonExample}, or just its coordinates.` };
  }
  if (isObject(v) && v.type === 'Feature') v = v.geometry;
  if (isObject(v)) {
    if (v.type !== 'Polygon') {
      return { problem: `This is ${typeof v.type === 'string' ? 'a GeoJSON ' + v.type : 'an object without a GeoJSON type'}, not a Polygon.` };
    }
    v = v.coordinates;
  }
  const shape = 'This is not a Polygon’s coordinates: expected one ring of [longitude, latitude] positions, [[[lon, lat], …]].';
  if (!Array.isArray(v) || v.length === 0) return { problem: shape };
  // A bare ring is the coordinates without their outer brackets.
  const rings: unknown[] = v.every(isPosition) ? [v] : v;
  if (!rings.every(Array.isArray)) return { problem: shape };
  if (rings.length > 1) return { problem: `One ring only: this polygon has ${rings.length} (holes are not supported).` };
  const ring = rings[0] as unknown[];
  for (let i = 0; i < ring.length; i++) {
    const p = ring[i];
    if (!Array.isArray(p) || p.length !== 2 || !p.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      return { problem: `Position ${i} must be [longitude, latitude]: two numbers.` };
    }
    if (p[0] < -180 || p[0] > 180 || p[1] < -90 || p[1] > 90) {
      return { problem: `Position ${i} is out of range: longitude -180 to 180, then latitude -90 to 90.` };
    }
  }
  const pos = ring as [number, number][];
  if (pos.length < 4 || pos.length > MAX_POSITIONS) {
    return { problem: `A polygon has 4 to ${MAX_POSITIONS} positions, the last repeating the first; this one has ${pos.length}.` };
  }
  const first = pos[0];
  const last = pos[pos.length - 1];
  if (first[0] !== last[0] || first[1] !== last[1]) {
    return { problem: `The ring must end where it starts: repeat position 0, [${first[0]}, ${first[1]}], at the end.` };
  }
  return { coordinates: [pos] };
}

/** formatCoordinates writes a polygon's coordinates for its input, a position a line. */
export function formatCoordinates(coordinates: [number, number][][]): string {
  return '[[\n' + (coordinates[0] ?? []).map(([lon, lat]) => `  [${lon}, ${lat}]`).join(',\n') + '\n]]';
}

/** AreaPreview draws a polygon's outline, a little, north up; a circle needs no drawing. */
export function AreaPreview({ area }: { area: AlertArea }) {
  if (area.type !== 'Polygon') return null;
  const ring = area.coordinates[0] ?? [];
  if (ring.length < 2) return null;
  const size = 48;
  const pad = 3;
  // Longitude shrinks with latitude: scale it by the cosine of the middle latitude.
  const lats = ring.map((p) => p[1]);
  const k = Math.cos((((Math.min(...lats) + Math.max(...lats)) / 2) * Math.PI) / 180);
  const xs = ring.map((p) => p[0] * k);
  const ys = ring.map((p) => -p[1]);
  const minX = Math.min(...xs);
  const minY = Math.min(...ys);
  const w = Math.max(...xs) - minX;
  const h = Math.max(...ys) - minY;
  const scale = (size - 2 * pad) / Math.max(w, h, 1e-9);
  const dx = pad + (size - 2 * pad - w * scale) / 2;
  const dy = pad + (size - 2 * pad - h * scale) / 2;
  const points = xs.map((x, i) => `${(dx + (x - minX) * scale).toFixed(1)},${(dy + (ys[i] - minY) * scale).toFixed(1)}`).join(' ');
  return (
    <svg class="area-preview" viewBox={`0 0 ${size} ${size}`} width={size} height={size} aria-hidden="true" focusable="false">
      <polygon points={points} />
    </svg>
  );
}

type AreaKind = AlertArea['type'];

/** RuleValues are a rule's settings as its form holds them while they are typed. */
interface RuleValues {
  name: string;
  environment: Environment;
  kind: AreaKind;
  lat: string;
  lon: string;
  radius_m: string;
  polygon: string;
  types: string[];
  min_confidence: string;
  enabled: boolean;
}

const blankRule: RuleValues = { name: '', environment: 'live', kind: 'Circle', lat: '', lon: '', radius_m: '', polygon: '', types: [], min_confidence: '0', enabled: true };

/** ruleValues fills a form with a rule's settings. */
function ruleValues(r: AlertRulePublic): RuleValues {
  const a = r.area;
  return {
    name: r.name,
    environment: r.environment,
    kind: a.type,
    lat: a.type === 'Circle' ? String(a.lat) : '',
    lon: a.type === 'Circle' ? String(a.lon) : '',
    radius_m: a.type === 'Circle' ? String(a.radius_m) : '',
    polygon: a.type === 'Polygon' ? formatCoordinates(a.coordinates) : '',
    types: r.types,
    min_confidence: String(r.min_confidence),
    enabled: r.enabled,
  };
}

/** ruleFields are the fields of the rule forms: the body's, and the circle's and polygon's inputs. */
const ruleFields = ['name', 'environment', 'area', 'lat', 'lon', 'radius_m', 'polygon', 'types', 'min_confidence', 'enabled'];

/**
 * locateRule places the service's errors about the area (docs/api.md §7): a circle's at its
 * input; a polygon's at the polygon's input, with the position at fault
 * (["body","area","coordinates",0,5] says "At position 5"); the rest of the area's at the
 * polygon's input, or the area's choice for a circle.
 */
function locateRule(kind: AreaKind): Locate {
  return (v) => {
    const [where, field, ...rest] = v.loc;
    if (where !== 'body' || field !== 'area') return null;
    if (rest[0] === 'coordinates') {
      const i = rest[2];
      return { field: 'polygon', msg: typeof i === 'number' ? `At position ${i}: ${v.msg}` : v.msg };
    }
    if (rest.length === 1 && (rest[0] === 'lat' || rest[0] === 'lon' || rest[0] === 'radius_m')) return { field: rest[0], msg: v.msg };
    return { field: kind === 'Polygon' ? 'polygon' : 'area', msg: v.msg };
  };
}

/** readNumber reads a number input: NaN when it is empty or not a number. */
function readNumber(s: string): number {
  return s.trim() === '' ? NaN : Number(s.trim());
}

/**
 * readRule checks a form's values before they are sent: it returns each field's problem (null
 * when none), and the rule to send when there is none.
 */
function readRule(v: RuleValues): { problems: Record<string, string | null>; draft: AlertRuleDraft | null } {
  const name = v.name.trim();
  const problems: Record<string, string | null> = {
    name: name === '' ? 'Enter a name, for example “Depot north”.' : [...name].length > MAX_NAME ? `At most ${MAX_NAME} characters.` : null,
  };
  let area: AlertArea | null = null;
  if (v.kind === 'Circle') {
    const lat = readNumber(v.lat);
    const lon = readNumber(v.lon);
    const radius = readNumber(v.radius_m);
    problems.lat = lat >= -90 && lat <= 90 ? null : 'Enter a latitude from -90 to 90, in decimal degrees.';
    problems.lon = lon >= -180 && lon <= 180 ? null : 'Enter a longitude from -180 to 180, in decimal degrees.';
    problems.radius_m = radius >= MIN_RADIUS_M && radius <= MAX_RADIUS_M ? null : 'Enter a radius from 10 to 100 000 metres.';
    if (!problems.lat && !problems.lon && !problems.radius_m) area = { type: 'Circle', lat, lon, radius_m: radius };
  } else {
    const p = parsePolygon(v.polygon);
    if ('problem' in p) problems.polygon = p.problem;
    else area = { type: 'Polygon', coordinates: p.coordinates };
  }
  const confidence = readNumber(v.min_confidence);
  problems.min_confidence = confidence >= 0 && confidence <= 1 ? null : 'Enter a confidence from 0 to 1, such as 0.6.';
  const bad = Object.values(problems).some((p) => p !== null);
  return {
    problems,
    draft: bad || !area ? null : { name, environment: v.environment, area, types: eventTypes.filter((t) => v.types.includes(t)), min_confidence: confidence },
  };
}

/** sameArea says whether two areas are the same. */
function sameArea(a: AlertArea, b: AlertArea): boolean {
  if (a.type === 'Circle' && b.type === 'Circle') return a.lat === b.lat && a.lon === b.lon && a.radius_m === b.radius_m;
  if (a.type === 'Polygon' && b.type === 'Polygon') return JSON.stringify(a.coordinates) === JSON.stringify(b.coordinates);
  return false;
}

/**
 * RuleFields are the settings the new and edit forms share. ids prefixes the ids of the inputs
 * that are not Fields, unique in the page; the edit form leaves enabled to the row's action.
 */
function RuleFields(props: { values: RuleValues; set: (change: Partial<RuleValues>) => void; form: FormState; ids: string; edit?: boolean }) {
  const { values: v, set, form, ids, edit } = props;
  const err = form.fields;
  const polygon = v.kind === 'Polygon' ? parsePolygon(v.polygon) : null;
  const setType = (t: EventType, on: boolean) => set({ types: eventTypes.filter((k) => (k === t ? on : v.types.includes(k))) });
  const describedBy = (...parts: (string | false)[]) => parts.filter(Boolean).join(' ') || undefined;
  return (
    <>
      <Field label="Name" name="name" value={v.name} onInput={(name) => set({ name })} form={form} hint="For people, for example “Depot north”; deliveries carry it." input={{ maxLength: MAX_NAME }} />
      <div class="field">
        <label for={ids + '-env'}>Environment</label>
        <select
          id={ids + '-env'}
          name="environment"
          value={v.environment}
          aria-invalid={err.environment ? 'true' : undefined}
          aria-describedby={describedBy(ids + '-env-hint', !!err.environment && ids + '-env-error')}
          onChange={(e) => set({ environment: (e.currentTarget as HTMLSelectElement).value as Environment })}
        >
          <option value="live">Live</option>
          <option value="sandbox">Sandbox</option>
        </select>
        <p class="hint" id={ids + '-env-hint'}>
          Live hears live events; sandbox hears live and sandbox events, as a sandbox key reads them.
        </p>
        {err.environment && (
          <p class="field-error" id={ids + '-env-error'} role="alert">
            {err.environment}
          </p>
        )}
      </div>
      <fieldset aria-describedby={err.area ? ids + '-area-error' : undefined}>
        <legend>Area</legend>
        <label class="radio">
          <input type="radio" name="area_kind" value="Circle" checked={v.kind === 'Circle'} onChange={() => set({ kind: 'Circle' })} /> Circle: within a distance of a
          point
        </label>
        <label class="radio">
          <input type="radio" name="area_kind" value="Polygon" checked={v.kind === 'Polygon'} onChange={() => set({ kind: 'Polygon' })} /> Polygon: inside a
          GeoJSON polygon of up to 256 points
        </label>
        {err.area && (
          <p class="field-error" id={ids + '-area-error'} role="alert">
            {err.area}
          </p>
        )}
        {v.kind === 'Circle' ? (
          <div class="area-circle">
            <Field label="Latitude" name="lat" value={v.lat} onInput={(lat) => set({ lat })} form={form} hint="Decimal degrees, -90 to 90." input={{ inputMode: 'decimal', autocomplete: 'off' }} />
            <Field label="Longitude" name="lon" value={v.lon} onInput={(lon) => set({ lon })} form={form} hint="Decimal degrees, -180 to 180." input={{ inputMode: 'decimal', autocomplete: 'off' }} />
            <Field
              label="Radius (metres)"
              name="radius_m"
              value={v.radius_m}
              onInput={(radius_m) => set({ radius_m })}
              form={form}
              hint="10 to 100 000, to the nearest point of an event's line."
              input={{ type: 'number', min: MIN_RADIUS_M, max: MAX_RADIUS_M, step: 'any', inputMode: 'decimal' }}
            />
          </div>
        ) : (
          <div class="field">
            <label for={ids + '-polygon'}>Polygon (GeoJSON)</label>
            <div class="area-polygon">
              <textarea
                id={ids + '-polygon'}
                name="polygon"
                rows={8}
                spellcheck={false}
                autocomplete="off"
                value={v.polygon}
                aria-invalid={err.polygon ? 'true' : undefined}
                aria-describedby={describedBy(ids + '-polygon-hint', !!err.polygon && ids + '-polygon-error')}
                onInput={(e) => set({ polygon: (e.currentTarget as HTMLTextAreaElement).value })}
              />
              {polygon && 'coordinates' in polygon && <AreaPreview area={{ type: 'Polygon', coordinates: polygon.coordinates }} />}
            </div>
            <p class="hint" id={ids + '-polygon-hint'}>
              A GeoJSON Polygon object, or just its coordinates: one ring of [longitude, latitude] positions, 4 to {MAX_POSITIONS}, the last
              repeating the first, for example <code>{polygonExample}</code>. Positions are counted from 0.
            </p>
            {err.polygon && (
              <p class="field-error" id={ids + '-polygon-error'} role="alert">
                {err.polygon}
              </p>
            )}
          </div>
        )}
      </fieldset>
      <fieldset aria-describedby={err.types ? ids + '-types-error' : undefined}>
        <legend>Types</legend>
        <div class="type-checks">
          {eventTypes.map((t) => (
            <label class="check" key={t}>
              <input type="checkbox" name="types" value={t} checked={v.types.includes(t)} onChange={(e) => setType(t, (e.currentTarget as HTMLInputElement).checked)} />{' '}
              {typeNames[t]}
            </label>
          ))}
        </div>
        <p class="hint">None checked: every type.</p>
        {err.types && (
          <p class="field-error" id={ids + '-types-error'} role="alert">
            {err.types}
          </p>
        )}
      </fieldset>
      <Field
        label="Minimum confidence"
        name="min_confidence"
        value={v.min_confidence}
        onInput={(min_confidence) => set({ min_confidence })}
        form={form}
        hint="From 0 (every event) to 1: the least confidence (docs/api.md §10.2) an event needs to match; 0.6 hears events at least 60% sure."
        input={{ type: 'number', min: 0, max: 1, step: 0.05, inputMode: 'decimal' }}
      />
      {!edit && (
        <div class="field">
          <label class="check">
            <input type="checkbox" name="enabled" checked={v.enabled} onChange={(e) => set({ enabled: (e.currentTarget as HTMLInputElement).checked })} /> Enabled:
            announce events from now on
          </label>
          {err.enabled && (
            <p class="field-error" role="alert">
              {err.enabled}
            </p>
          )}
        </div>
      )}
    </>
  );
}

/**
 * EditRule is the form that changes one rule's settings, filled with them. It sends only the
 * settings that changed (none: it says so and sends nothing); enabled is the row's action.
 */
function EditRule(props: { org: Organisation; rule: AlertRulePublic; onSaved: (r: AlertRulePublic) => void; onCancel: () => void }) {
  const { client } = useApp();
  const { rule } = props;
  const [values, setValues] = useState(() => ruleValues(rule));
  const [unchanged, setUnchanged] = useState(false);
  const form = useForm(ruleFields, locateRule(values.kind));
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const set = (change: Partial<RuleValues>) => {
    setUnchanged(false);
    setValues((v) => ({ ...v, ...change }));
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setUnchanged(false);
    const { problems, draft: d } = readRule(values);
    if (showProblems(form, ruleFields, problems) || !d) return;
    const changes: AlertRuleUpdate = {};
    if (d.name !== rule.name.trim()) changes.name = d.name;
    if (d.environment !== rule.environment) changes.environment = d.environment;
    if (!sameArea(d.area, rule.area)) changes.area = d.area;
    const types = d.types ?? [];
    if (types.length !== rule.types.length || types.some((t) => !rule.types.includes(t))) changes.types = types;
    if (d.min_confidence !== rule.min_confidence) changes.min_confidence = d.min_confidence;
    if (Object.keys(changes).length === 0) {
      setUnchanged(true);
      return;
    }
    const saved = await form.run(() => client.updateAlertRule(props.org.org_id, rule.rule_id, changes));
    if (saved) props.onSaved(saved);
  };

  return (
    <section class="card rule-edit" id="rule-edit" aria-labelledby="rule-edit-title">
      <h4 id="rule-edit-title" tabIndex={-1} ref={heading}>
        Edit “{rule.name}”
      </h4>
      <FormError form={form} />
      <form onSubmit={save} noValidate aria-labelledby="rule-edit-title">
        <RuleFields values={values} set={set} form={form} ids="rule-edit" edit />
        {unchanged && <Notice>Nothing to change: the settings are as they were.</Notice>}
        <div class="actions">
          <button type="submit" class="primary" disabled={form.busy}>
            {form.busy ? 'Saving…' : 'Save changes'}
          </button>
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
        <p class="hint">The rule as changed applies to changes of events from then on.</p>
      </form>
    </section>
  );
}

/**
 * AlertRules lists the organisation's alert rules, and lets owners manage them. listening says
 * whether an enabled endpoint receives an alert kind (null while the endpoints load);
 * refreshes changes when the page's Refresh is used.
 */
export function AlertRules(props: { org: Organisation; listening: boolean | null; refreshes: number }) {
  const { client } = useApp();
  const { org } = props;
  const owner = org.role === 'owner';
  const rules = useLoad(() => client.alertRules(org.org_id), [org.org_id, props.refreshes]);
  const { msg, setMsg, busyId, run } = useRowActions(rules.reload);
  const [draft, setDraft] = useState<RuleValues>(blankRule);
  const form = useForm(ruleFields, locateRule(draft.kind));

  const add = async (e: Event) => {
    e.preventDefault();
    setMsg(null);
    const { problems, draft: d } = readRule(draft);
    if (showProblems(form, ruleFields, problems) || !d) return;
    const created = await form.run(() => client.createAlertRule(org.org_id, { ...d, enabled: draft.enabled }));
    if (created) {
      setMsg({
        kind: 'success',
        text: created.enabled
          ? `“${created.name}” is made: events that come to match it are announced to your endpoints subscribed to alert kinds.`
          : `“${created.name}” is made, disabled: it announces nothing until it is enabled.`,
      });
      setDraft(blankRule);
      rules.reload();
    }
  };

  // One rule is edited at a time, in a form below the list; closing it gives the focus back to
  // the rule's Edit button.
  const editor = useRowEditor<AlertRulePublic>((r) => r.rule_id, 'rule-edit', () => setMsg(null));
  const editing = editor.editing;
  const saved = (r: AlertRulePublic) => {
    setMsg({ kind: 'success', text: `“${r.name}” is saved.` });
    editor.close();
    rules.reload();
  };

  /** act runs one row action, says how it went (done), and reads the list again. */
  const act = (r: AlertRulePublic, fn: () => Promise<unknown>, done: string) => run(r.rule_id, `“${r.name}”`, fn, () => done);
  const setEnabled = (r: AlertRulePublic, enabled: boolean) =>
    act(
      r,
      () => client.updateAlertRule(org.org_id, r.rule_id, { enabled }),
      enabled ? `“${r.name}” is enabled: events that come to match it are announced again.` : `“${r.name}” is disabled: it announces nothing until an owner enables it again.`,
    );
  const remove = (r: AlertRulePublic) => {
    editor.forget(r.rule_id);
    return act(r, () => client.deleteAlertRule(org.org_id, r.rule_id), `“${r.name}” is deleted.`);
  };

  return (
    <section class="alert-rules" id="alert-rules" aria-labelledby="alert-rules-title">
      <h3 id="alert-rules-title">Alert rules</h3>
      <p class="muted small">
        Any network event, whoever published it, inside a rule's area and of its types, at or above its minimum confidence, is
        delivered to your endpoints subscribed to the alert kinds: <code>alert.created</code> when it comes to match the rule,{' '}
        <code>alert.updated</code> when it changes while it matches, <code>alert.ended</code> when it stops matching, with the reason
        (docs/webhooks.md §5).
      </p>
      {props.listening === false && (
        <Notice kind="warning">
          No enabled endpoint receives the alert kinds: the rules' alerts reach no one. Add an endpoint with the “Alert” kinds checked,
          or enable one that has them.
        </Notice>
      )}

      {owner ? (
        <details class="card">
          <summary>New alert rule</summary>
          <FormError form={form} />
          <form onSubmit={add} noValidate aria-label="New alert rule">
            <RuleFields values={draft} set={(change) => setDraft((d) => ({ ...d, ...change }))} form={form} ids="rule" />
            <button type="submit" class="primary" disabled={form.busy}>
              {form.busy ? 'Making…' : 'Make rule'}
            </button>
            <p class="hint">
              A rule applies to what happens once it is made: an event already inside its area is announced when it next changes. An
              organisation has at most {MAX_RULES} alert rules.
            </p>
          </form>
        </details>
      ) : (
        <Notice>Only owners can make, change and delete alert rules. You can see them here.</Notice>
      )}

      {msg && <Notice kind={msg.kind}>{msg.text}</Notice>}
      <Loading load={rules}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No alert rules yet. An alert rule announces any network event inside an area to your endpoints subscribed to alert kinds.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Alert rules</caption>
                <thead>
                  <tr>
                    <th scope="col">Rule</th>
                    <th scope="col">Environment</th>
                    <th scope="col">Area</th>
                    <th scope="col">Types</th>
                    <th scope="col">Minimum confidence</th>
                    <th scope="col">State</th>
                    {owner && (
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    )}
                  </tr>
                </thead>
                <tbody>
                  {list.map((r) => (
                    <tr key={r.rule_id} data-testid={'rule-' + r.rule_id}>
                      <th scope="row" class="feed-name">
                        {r.name}
                        <div class="muted small rule-made">
                          Made {formatTime(r.created_at)}
                          {r.created_by_email && ` by ${r.created_by_email}`}
                        </div>
                      </th>
                      <td>
                        <span class={'env ' + r.environment}>{r.environment}</span>
                      </td>
                      <td>
                        <div class="area-cell">
                          <AreaPreview area={r.area} />
                          <span data-testid={'rule-area-' + r.rule_id}>{areaSummary(r.area)}</span>
                        </div>
                      </td>
                      <td data-testid={'rule-types-' + r.rule_id}>{typesSummary(r.types)}</td>
                      <td data-testid={'rule-confidence-' + r.rule_id}>{formatConfidence(r.min_confidence)}</td>
                      <td data-testid={'rule-state-' + r.rule_id}>{r.enabled ? <div class="health ok">Enabled</div> : <div class="health">Disabled</div>}</td>
                      {owner && (
                        <td>
                          <div class="actions">
                            <button {...editor.editProps(r)}>Edit</button>
                            <button type="button" disabled={busyId === r.rule_id} onClick={() => setEnabled(r, !r.enabled)}>
                              {r.enabled ? 'Disable' : 'Enable'}
                            </button>
                            <Confirm
                              label="Delete"
                              question={`Delete “${r.name}”? Events in its area are no longer announced, and no alert.ended is sent for those it matches now.`}
                              confirmLabel="Yes, delete"
                              disabled={busyId === r.rule_id}
                              onConfirm={() => remove(r)}
                            />
                          </div>
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
      {owner && editing && rules.data?.some((r) => r.rule_id === editing.rule_id) && (
        <EditRule key={editing.rule_id} org={org} rule={editing} onSaved={saved} onCancel={editor.close} />
      )}
    </section>
  );
}
