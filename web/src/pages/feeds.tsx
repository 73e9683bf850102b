// Feeds (docs/interop.md §11-§13): the open-data feeds the organisation imports, with each
// feed's health (last poll, what it did, the last error) and totals. Owners register feeds and
// pause, resume, poll now or delete them (delete asks first); members read them.
import { useState } from 'preact/hooks';
import type { Environment, FeedFormat, FeedPollCounts, FeedPublic, Organisation } from '../api';
import { useApp } from '../context';
import { Confirm, Field, FormError, Loading, Notice, formatNumber, formatTime, useForm, useLoad } from '../ui';

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

type Msg = { kind: 'success' | 'error'; text: string };

/** Feeds lists the organisation's feeds with their health, and lets owners manage them. */
export function Feeds({ org }: { org: Organisation }) {
  const { client } = useApp();
  const feeds = useLoad(() => client.feeds(org.org_id), [org.org_id]);
  const owner = org.role === 'owner';
  const [msg, setMsg] = useState<Msg | null>(null);
  const [busyId, setBusyId] = useState<string | null>(null);

  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [format, setFormat] = useState<FeedFormat | ''>('');
  const [env, setEnv] = useState<Environment>('sandbox');
  const [license, setLicense] = useState('');
  const [every, setEvery] = useState('5');
  const [unit, setUnit] = useState<'min' | 's'>('min');
  const form = useForm(['name', 'url', 'format', 'environment', 'license', 'poll_interval_s']);

  const register = async (e: Event) => {
    e.preventDefault();
    setMsg(null);
    const u = url.trim();
    const bad = urlProblem(u);
    const n = Number(every.trim());
    const seconds = Number.isInteger(n) && every.trim() !== '' ? n * (unit === 'min' ? 60 : 1) : NaN;
    const badInterval = !(seconds >= MIN_INTERVAL_S && seconds <= MAX_INTERVAL_S);
    // Each check sets its field's message or clears the one an earlier submit left.
    form.setError(null, null);
    form.setError('url', bad);
    form.setError('format', format === '' ? 'Choose the format of the feed document.' : null);
    form.setError('poll_interval_s', badInterval ? 'Poll from every minute to every 24 hours (60 to 86 400 seconds), in whole numbers.' : null);
    if (bad || format === '' || badInterval) return;
    const created = await form.run(() =>
      client.createFeed(org.org_id, {
        name: name.trim(),
        url: u,
        format: format as FeedFormat,
        environment: env,
        license: license.trim(),
        poll_interval_s: seconds,
      }),
    );
    if (created) {
      setMsg({ kind: 'success', text: `“${feedTitle(created)}” is registered: it is polled at once, then ${formatInterval(created.poll_interval_s)}.` });
      setName('');
      setUrl('');
      setFormat('');
      setLicense('');
      feeds.reload();
    }
  };

  /** act runs one row action, says how it went, and reads the list again. */
  const act = async (f: FeedPublic, fn: () => Promise<unknown>, done: string) => {
    setMsg(null);
    setBusyId(f.feed_id);
    try {
      await fn();
      setMsg({ kind: 'success', text: done });
    } catch (e) {
      setMsg({ kind: 'error', text: `“${feedTitle(f)}”: ${(e as Error).message}` });
    }
    setBusyId(null);
    feeds.reload();
  };
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

  const intervalError = form.fields.poll_interval_s;
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
            <Field label="Name (optional)" name="name" value={name} onInput={setName} form={form} hint="For people, for example “City roadworks”." input={{ maxLength: 100 }} />
            <Field
              label="URL"
              name="url"
              value={url}
              onInput={setUrl}
              form={form}
              hint="The address of the feed document: http or https, without a user name or password. Every member can read it."
              input={{ type: 'url', maxLength: 2048, autocomplete: 'off', spellcheck: false }}
            />
            <div class="field">
              <label for="feed-format">Format</label>
              <select
                id="feed-format"
                name="format"
                value={format}
                aria-invalid={form.fields.format ? 'true' : undefined}
                aria-describedby={form.fields.format ? 'feed-format-error' : undefined}
                onChange={(e) => setFormat((e.currentTarget as HTMLSelectElement).value as FeedFormat | '')}
              >
                <option value="">Choose a format…</option>
                {(Object.keys(formatNames) as FeedFormat[]).map((k) => (
                  <option key={k} value={k}>
                    {formatNames[k]}
                  </option>
                ))}
              </select>
              {form.fields.format && (
                <p class="field-error" id="feed-format-error" role="alert">
                  {form.fields.format}
                </p>
              )}
            </div>
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
            <Field label="Licence (optional)" name="license" value={license} onInput={setLicense} form={form} hint="As the feed's publisher states it, for example “CC BY 4.0, City of Example”; each event carries it." input={{ maxLength: 500 }} />
            <div class="field">
              <label for="feed-interval">Poll every</label>
              <div class="interval">
                <input
                  id="feed-interval"
                  name="poll_interval_s"
                  type="number"
                  inputMode="numeric"
                  min={unit === 'min' ? 1 : MIN_INTERVAL_S}
                  max={unit === 'min' ? MAX_INTERVAL_S / 60 : MAX_INTERVAL_S}
                  value={every}
                  aria-invalid={intervalError ? 'true' : undefined}
                  aria-describedby={'feed-interval-hint' + (intervalError ? ' feed-interval-error' : '')}
                  onInput={(e) => setEvery((e.currentTarget as HTMLInputElement).value)}
                />
                <select aria-label="Unit" name="interval_unit" value={unit} onChange={(e) => setUnit((e.currentTarget as HTMLSelectElement).value as 'min' | 's')}>
                  <option value="min">minutes</option>
                  <option value="s">seconds</option>
                </select>
              </div>
              <p class="hint" id="feed-interval-hint">
                From 1 minute to 24 hours.
              </p>
              {intervalError && (
                <p class="field-error" id="feed-interval-error" role="alert">
                  {intervalError}
                </p>
              )}
            </div>
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
    </>
  );
}
