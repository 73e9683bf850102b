// Feeds (docs/interop.md §11-§13): the open-data feeds the organisation imports, with each
// feed's health (last poll, what it did, the last error) and totals. Owners register feeds,
// edit their settings, and pause, resume, poll now or delete them (delete asks first); members
// read them.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Environment, FeedFormat, FeedPollCounts, FeedPublic, FeedUpdate, Organisation } from '../api';
import { useApp } from '../context';
import { Confirm, Field, formatNumber, formatTime, FormError, Loading, Notice, showProblems, type FormState, useForm, useLoad, useRowActions, useRowEditor } from '../ui';

/** formatNames are the formats' names for people (docs/interop.md §1). */
export const formatNames: Record<FeedFormat, string> = {
  cifs: 'Waze CIFS',
  wzdx: 'WZDx work zones',
  tdx: 'TDx incidents',
  datex2: 'DATEX II SRTI',
};

/** Poll intervals the service accepts, in seconds (docs/interop.md §13). */
const MIN_INTERVAL_S = 60;
const MAX_INTERVAL_S = 86400;
/** MAX_FEEDS is how many feeds an organisation may have (docs/interop.md §13). */
const MAX_FEEDS = 20;

/** feedTitle is the feed's name, or its URL's host when it has none. */
export function feedTitle(f: Pick<FeedPublic, 'name' | 'url'>): string {
  if (f.name.trim() !== '') return f.name;
  try {
    return new URL(f.url).host || f.url;
  } catch {
    return f.url;
  }
}

/** formatInterval says how often a feed is polled: "every 5 min". */
export function formatInterval(seconds: number): string {
  if (seconds % 3600 === 0) return `every ${seconds / 3600} h`;
  if (seconds % 60 === 0) return `every ${seconds / 60} min`;
  return `every ${formatNumber(seconds)} s`;
}

/** formatCounts says what one poll did: "2 new, 1 updated, 5 unchanged, 1 ended, 3 skipped". */
export function formatCounts(c: FeedPollCounts | null): string {
  if (!c) return '—';
  if (c.not_modified) return 'unchanged since last poll';
  const parts: [number, string][] = [
    [c.created, 'new'],
    [c.revised, 'updated'],
    [c.unchanged, 'unchanged'],
    [c.ended, 'ended'],
    [c.skipped, 'skipped'],
  ];
  const said = parts.filter(([n]) => n > 0).map(([n, what]) => `${formatNumber(n)} ${what}`);
  return said.length > 0 ? said.join(', ') : 'no records';
}

/** urlProblem says what is wrong with a feed URL before it is sent, or null. */
function urlProblem(v: string): string | null {
  if (v === '') return 'Enter the address of the feed document.';
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return 'Enter an absolute http or https URL, such as https://example.org/feed.json.';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'Enter an absolute http or https URL, such as https://example.org/feed.json.';
  if (u.username !== '' || u.password !== '') return 'Leave the user name and password out of the URL: the service refuses them.';
  return null;
}

type Unit = 'min' | 's';

/** intervalSeconds reads the interval input (a number and a unit) as seconds: NaN when it is not a whole number. */
function intervalSeconds(every: string, unit: Unit): number {
  const n = Number(every.trim());
  return Number.isInteger(n) && every.trim() !== '' ? n * (unit === 'min' ? 60 : 1) : NaN;
}

/** intervalProblem says what is wrong with a poll interval in seconds before it is sent, or null. */
function intervalProblem(seconds: number): string | null {
  return seconds >= MIN_INTERVAL_S && seconds <= MAX_INTERVAL_S ? null : 'Poll from every minute to every 24 hours (60 to 86 400 seconds), in whole numbers.';
}

/** feedFields are the fields of the register and edit forms, whose errors the service reports at ["body", field]. */
const feedFields = ['name', 'url', 'format', 'environment', 'license', 'poll_interval_s'];

/** FeedValues are a feed's settings as its form holds them while they are typed. */
interface FeedValues {
  name: string;
  url: string;
  format: FeedFormat | '';
  license: string;
  every: string;
  unit: Unit;
}

const blankFeed: FeedValues = { name: '', url: '', format: '', license: '', every: '5', unit: 'min' };

/** feedValues fills a form with a feed's settings: its interval in minutes when it is whole minutes. */
function feedValues(f: FeedPublic): FeedValues {
  const minutes = f.poll_interval_s % 60 === 0;
  return {
    name: f.name,
    url: f.url,
    format: f.format,
    license: f.license,
    every: String(minutes ? f.poll_interval_s / 60 : f.poll_interval_s),
    unit: minutes ? 'min' : 's',
  };
}

const endsEvents = 'Records missing from the new document end their events.';

/**
 * FeedFields are the settings the register and edit forms share: name, URL, format, licence
 * and interval, with the environment (which differs) between format and licence. ids prefixes
 * the ids of the format and interval inputs, unique in the page; edit adds what a change does.
 */
function FeedFields(props: {
  values: FeedValues;
  set: (change: Partial<FeedValues>) => void;
  form: FormState;
  ids: string;
  edit?: boolean;
  environment: ComponentChildren;
}) {
  const { values: v, set, form, ids, edit } = props;
  const formatError = form.fields.format;
  const intervalError = form.fields.poll_interval_s;
  return (
    <>
      <Field label="Name (optional)" name="name" value={v.name} onInput={(name) => set({ name })} form={form} hint="For people, for example “City roadworks”." input={{ maxLength: 100 }} />
      <Field
        label="URL"
        name="url"
        value={v.url}
        onInput={(url) => set({ url })}
        form={form}
        hint={'The address of the feed document: http or https, without a user name or password. Every member can read it.' + (edit ? ' ' + endsEvents : '')}
        input={{ type: 'url', maxLength: 2048, autocomplete: 'off', spellcheck: false }}
      />
      <div class="field">
        <label for={ids + '-format'}>Format</label>
        <select
          id={ids + '-format'}
          name="format"
          value={v.format}
          aria-invalid={formatError ? 'true' : undefined}
          aria-describedby={[edit ? ids + '-format-hint' : '', formatError ? ids + '-format-error' : ''].filter(Boolean).join(' ') || undefined}
          onChange={(e) => set({ format: (e.currentTarget as HTMLSelectElement).value as FeedFormat | '' })}
        >
          {!edit && <option value="">Choose a format…</option>}
          {(Object.keys(formatNames) as FeedFormat[]).map((k) => (
            <option key={k} value={k}>
              {formatNames[k]}
            </option>
          ))}
        </select>
        {edit && (
          <p class="hint" id={ids + '-format-hint'}>
            {endsEvents}
          </p>
        )}
        {formatError && (
          <p class="field-error" id={ids + '-format-error'} role="alert">
            {formatError}
          </p>
        )}
      </div>
      {props.environment}
      <Field label="Licence (optional)" name="license" value={v.license} onInput={(license) => set({ license })} form={form} hint="As the feed's publisher states it, for example “CC BY 4.0, City of Example”; each event carries it." input={{ maxLength: 500 }} />
      <div class="field">
        <label for={ids + '-interval'}>Poll every</label>
        <div class="interval">
          <input
            id={ids + '-interval'}
            name="poll_interval_s"
            type="number"
            inputMode="numeric"
            min={v.unit === 'min' ? 1 : MIN_INTERVAL_S}
            max={v.unit === 'min' ? MAX_INTERVAL_S / 60 : MAX_INTERVAL_S}
            value={v.every}
            aria-invalid={intervalError ? 'true' : undefined}
            aria-describedby={ids + '-interval-hint' + (intervalError ? ` ${ids}-interval-error` : '')}
            onInput={(e) => set({ every: (e.currentTarget as HTMLInputElement).value })}
          />
          <select aria-label="Unit" name="interval_unit" value={v.unit} onChange={(e) => set({ unit: (e.currentTarget as HTMLSelectElement).value as Unit })}>
            <option value="min">minutes</option>
            <option value="s">seconds</option>
          </select>
        </div>
        <p class="hint" id={ids + '-interval-hint'}>
          From 1 minute to 24 hours.
        </p>
        {intervalError && (
          <p class="field-error" id={ids + '-interval-error'} role="alert">
            {intervalError}
          </p>
        )}
      </div>
    </>
  );
}

/** Health shows a feed's state: paused, never polled, OK or the last error. */
function Health({ f }: { f: FeedPublic }) {
  const h = f.health;
  const error = h.last_error !== null && (
    <>
      <div class="health bad">Error</div>
      <div class="health-error">{h.last_error}</div>
      <div class="muted small">
        {formatTime(h.last_error_at)}
        {h.last_success_at ? ` · last success ${formatTime(h.last_success_at)}` : ' · never read yet'}
      </div>
    </>
  );
  if (f.paused) {
    return (
      <>
        <div class="health">Paused</div>
        {error}
        {!error && h.last_poll_at && <div class="muted small">last polled {formatTime(h.last_poll_at)}</div>}
      </>
    );
  }
  if (error) return error;
  if (h.last_poll_at === null) {
    return (
      <>
        <div class="health">Never polled yet</div>
        {f.next_poll_at && <div class="muted small">due {formatTime(f.next_poll_at)}</div>}
      </>
    );
  }
  return (
    <>
      <div class="health ok">OK</div>
      <div class="muted small">last success {formatTime(h.last_success_at)}</div>
      {f.next_poll_at && <div class="muted small">next {formatTime(f.next_poll_at)}</div>}
    </>
  );
}

/**
 * EditFeed is the form that changes one feed's settings, filled with them. It sends only the
 * settings that changed (none: it says so and sends nothing); the environment is fixed.
 * onSaved gets the feed as saved and whether the change makes it due at once.
 */
function EditFeed(props: { org: Organisation; feed: FeedPublic; onSaved: (f: FeedPublic, due: boolean) => void; onCancel: () => void }) {
  const { client } = useApp();
  const { feed } = props;
  const [values, setValues] = useState(() => feedValues(feed));
  const [unchanged, setUnchanged] = useState(false);
  const form = useForm(feedFields);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const set = (change: Partial<FeedValues>) => {
    setUnchanged(false);
    setValues((v) => ({ ...v, ...change }));
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setUnchanged(false);
    const v = values;
    const seconds = intervalSeconds(v.every, v.unit);
    const changes: FeedUpdate = {};
    if (v.name.trim() !== feed.name.trim()) changes.name = v.name.trim();
    if (v.url.trim() !== feed.url) changes.url = v.url.trim();
    if (v.format !== '' && v.format !== feed.format) changes.format = v.format;
    if (v.license.trim() !== feed.license.trim()) changes.license = v.license.trim();
    if (seconds !== feed.poll_interval_s) changes.poll_interval_s = seconds;
    // Only what changed is checked, as only that is sent.
    const bad = showProblems(form, feedFields, {
      url: changes.url !== undefined ? urlProblem(changes.url) : null,
      poll_interval_s: changes.poll_interval_s !== undefined ? intervalProblem(seconds) : null,
    });
    if (bad) return;
    if (Object.keys(changes).length === 0) {
      setUnchanged(true);
      return;
    }
    const saved = await form.run(() => client.updateFeed(props.org.org_id, feed.feed_id, changes));
    if (saved) props.onSaved(saved, changes.url !== undefined || changes.format !== undefined || changes.poll_interval_s !== undefined);
  };

  return (
    <section class="card feed-edit" id="feed-edit" aria-labelledby="feed-edit-title">
      <h3 id="feed-edit-title" tabIndex={-1} ref={heading}>
        Edit “{feedTitle(feed)}”
      </h3>
      <FormError form={form} />
      <form onSubmit={save} noValidate aria-labelledby="feed-edit-title">
        <FeedFields
          values={values}
          set={set}
          form={form}
          ids="feed-edit"
          edit
          environment={
            <div class="field">
              <div class="field-label">Environment</div>
              <span class={'env ' + feed.environment}>{feed.environment}</span>{' '}
              <span class="hint">Fixed once registered.</span>
            </div>
          }
        />
        {unchanged && <Notice>Nothing to change: the settings are as they were.</Notice>}
        <div class="actions">
          <button type="submit" class="primary" disabled={form.busy}>
            {form.busy ? 'Saving…' : 'Save changes'}
          </button>
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
        <p class="hint">A new URL, format or interval makes the feed due at once.</p>
      </form>
    </section>
  );
}

/** Feeds lists the organisation's feeds with their health, and lets owners manage them. */
export function Feeds({ org }: { org: Organisation }) {
  const { client } = useApp();
  const feeds = useLoad(() => client.feeds(org.org_id), [org.org_id]);
  const owner = org.role === 'owner';
  const { msg, setMsg, busyId, run } = useRowActions(feeds.reload);

  const [draft, setDraft] = useState<FeedValues>(blankFeed);
  const [env, setEnv] = useState<Environment>('sandbox');
  const form = useForm(feedFields);

  const register = async (e: Event) => {
    e.preventDefault();
    setMsg(null);
    const u = draft.url.trim();
    const seconds = intervalSeconds(draft.every, draft.unit);
    const bad = showProblems(form, feedFields, {
      url: urlProblem(u),
      format: draft.format === '' ? 'Choose the format of the feed document.' : null,
      poll_interval_s: intervalProblem(seconds),
    });
    if (bad) return;
    const created = await form.run(() =>
      client.createFeed(org.org_id, {
        name: draft.name.trim(),
        url: u,
        format: draft.format as FeedFormat,
        environment: env,
        license: draft.license.trim(),
        poll_interval_s: seconds,
      }),
    );
    if (created) {
      setMsg({ kind: 'success', text: `“${feedTitle(created)}” is registered: it is polled at once, then ${formatInterval(created.poll_interval_s)}.` });
      // The interval stays as it was, for the next feed.
      setDraft((d) => ({ ...blankFeed, every: d.every, unit: d.unit }));
      feeds.reload();
    }
  };

  // One feed's settings are edited at a time, in a form below the list; closing it gives the
  // focus back to the feed's Edit button.
  const editor = useRowEditor<FeedPublic>((f) => f.feed_id, 'feed-edit', () => setMsg(null));
  const editing = editor.editing;
  const saved = (f: FeedPublic, due: boolean) => {
    const when = !due ? '' : f.paused ? ' It is polled once it is resumed.' : ' It is polled at once.';
    setMsg({ kind: 'success', text: `“${feedTitle(f)}” is saved.${when}` });
    editor.close();
    feeds.reload();
  };

  /** act runs one row action, says how it went (done), and reads the list again. */
  const act = (f: FeedPublic, fn: () => Promise<unknown>, done: string) => run(f.feed_id, `“${feedTitle(f)}”`, fn, () => done);
  const setPaused = (f: FeedPublic, paused: boolean) =>
    act(
      f,
      () => client.updateFeed(org.org_id, f.feed_id, { paused }),
      paused
        ? `“${feedTitle(f)}” is paused: it is not polled, and its events stay until their own expiry.`
        : `“${feedTitle(f)}” is resumed: it is polled at once.`,
    );
  const pollNow = (f: FeedPublic) =>
    act(f, () => client.pollFeed(org.org_id, f.feed_id), `“${feedTitle(f)}” is due now: it is polled within a minute. Refresh to see the result.`);
  const remove = (f: FeedPublic) =>
    act(f, () => client.deleteFeed(org.org_id, f.feed_id), `“${feedTitle(f)}” is deleted: its events end at the next poll.`);

  return (
    <>
      <div class="row">
        <h2>Feeds</h2>
        <button type="button" onClick={feeds.reload}>
          Refresh
        </button>
      </div>
      <p class="muted small">
        Open-data feeds your organisation imports. Each record of a feed becomes an event of your organisation in the feed's
        environment, with <code>source_kind</code> <code>feed</code>, the feed's id and its licence. A record that leaves the
        document, or whose end passes, ends its event. Records that cannot be read are skipped and counted. When a poll fails, the
        feed's events stay until their own expiry and the error shows here.
      </p>

      {owner ? (
        <details class="card" open={feeds.data?.length === 0 || undefined}>
          <summary>Register a feed</summary>
          <FormError form={form} />
          <form onSubmit={register} noValidate>
            <FeedFields
              values={draft}
              set={(change) => setDraft((d) => ({ ...d, ...change }))}
              form={form}
              ids="feed"
              environment={
                <fieldset aria-describedby={form.fields.environment ? 'feed-env-error' : undefined}>
                  <legend>Environment</legend>
                  <label class="radio">
                    <input type="radio" name="environment" value="sandbox" checked={env === 'sandbox'} onChange={() => setEnv('sandbox')} /> Sandbox: to
                    try the feed; its events are sandbox events
                  </label>
                  <label class="radio">
                    <input type="radio" name="environment" value="live" checked={env === 'live'} onChange={() => setEnv('live')} /> Live: its events
                    are live events, read by everyone
                  </label>
                  <p class="hint">Fixed once the feed is registered.</p>
                  {form.fields.environment && (
                    <p class="field-error" id="feed-env-error" role="alert">
                      {form.fields.environment}
                    </p>
                  )}
                </fieldset>
              }
            />
            <button type="submit" class="primary" disabled={form.busy}>
              {form.busy ? 'Registering…' : 'Register feed'}
            </button>
            <p class="hint">The feed is polled at once. An organisation has at most {MAX_FEEDS} feeds.</p>
          </form>
        </details>
      ) : (
        <Notice>Only owners can register, change and delete feeds. You can see them and their health here.</Notice>
      )}

      {msg && <Notice kind={msg.kind}>{msg.text}</Notice>}
      <Loading load={feeds}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No feeds yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Feeds</caption>
                <thead>
                  <tr>
                    <th scope="col">Feed</th>
                    <th scope="col">Format</th>
                    <th scope="col">Environment</th>
                    <th scope="col">Interval</th>
                    <th scope="col">Health</th>
                    <th scope="col">Last poll</th>
                    <th scope="col">Active records</th>
                    <th scope="col">Totals</th>
                    {owner && (
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    )}
                  </tr>
                </thead>
                <tbody>
                  {list.map((f) => (
                    <tr key={f.feed_id} data-testid={'feed-' + f.feed_id}>
                      <th scope="row" class="feed-name">
                        {feedTitle(f)}
                        <div class="muted small feed-url">{f.url}</div>
                        {f.license && <div class="muted small">Licence: {f.license}</div>}
                      </th>
                      <td>{formatNames[f.format] ?? f.format}</td>
                      <td>
                        <span class={'env ' + f.environment}>{f.environment}</span>
                      </td>
                      <td>{formatInterval(f.poll_interval_s)}</td>
                      <td data-testid={'health-' + f.feed_id}>
                        <Health f={f} />
                      </td>
                      <td data-testid={'last-poll-' + f.feed_id}>
                        {formatCounts(f.health.last_poll)}
                        {f.health.last_poll_at && <div class="muted small">{formatTime(f.health.last_poll_at)}</div>}
                      </td>
                      <td data-testid={'active-' + f.feed_id}>{formatNumber(f.health.active_records)}</td>
                      <td class="small">
                        {formatNumber(f.health.imported_total)} imported
                        <br />
                        {formatNumber(f.health.ended_total)} ended
                        <br />
                        {formatNumber(f.health.skipped_total)} skipped
                      </td>
                      {owner && (
                        <td>
                          <div class="actions">
                            <button {...editor.editProps(f)}>Edit</button>
                            <button type="button" disabled={busyId === f.feed_id} onClick={() => setPaused(f, !f.paused)}>
                              {f.paused ? 'Resume' : 'Pause'}
                            </button>
                            {!f.paused && (
                              <button type="button" disabled={busyId === f.feed_id} onClick={() => pollNow(f)}>
                                Poll now
                              </button>
                            )}
                            <Confirm
                              label="Delete"
                              question={`Delete “${feedTitle(f)}”? Its events end at the next poll.`}
                              confirmLabel="Yes, delete"
                              disabled={busyId === f.feed_id}
                              onConfirm={() => remove(f)}
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
      {owner && editing && feeds.data?.some((f) => f.feed_id === editing.feed_id) && (
        <EditFeed key={editing.feed_id} org={org} feed={editing} onSaved={saved} onCancel={editor.close} />
      )}
    </>
  );
}
