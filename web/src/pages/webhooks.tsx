// Webhooks (docs/webhooks.md §1–§4): the HTTPS endpoints the service tells of what happens to
// the organisation's events, with the kinds each receives, its state and its deliveries (every
// attempt, and the body sent). Owners add endpoints, whose signing secret is shown once as a
// new API key is; they enable and disable them, rotate their secret (asks first: the old one
// keeps signing for 24 hours), delete them (asks first) and redeliver; members read. Below
// them, the organisation's alert rules (alertrules.tsx, §5), whose alerts the endpoints
// subscribed to the alert kinds receive.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Organisation, WebhookDelivery, WebhookDeliveryState, WebhookEndpointPublic, WebhookKind } from '../api';
import { useApp } from '../context';
import { AlertRules } from './alertrules';
import { Confirm, CopyButton, Field, FormError, Loading, Notice, formatNumber, formatTime, showProblems, useForm, useLoad, useRowActions } from '../ui';

/** kindNames are the kinds of delivery in words (docs/webhooks.md §1, §5). */
export const kindNames: Record<WebhookKind, { label: string; words: string }> = {
  'event.confirmed': { label: 'Confirmed', words: 'a new reporter confirmed one of our events' },
  'event.denied': { label: 'Denied', words: 'a reporter denied one of our events' },
  'event.merged': { label: 'Merged', words: "another source's report was merged into one of our events, or ours into another's" },
  'event.ended': { label: 'Ended', words: 'one of our events ended (closed, invalidated, or denied by a quorum)' },
  'event.expired': { label: 'Expired', words: 'one of our events reached its expiry while active' },
  'alert.created': { label: 'Alert: event entered a rule', words: 'a network event came to match one of our alert rules' },
  'alert.updated': { label: 'Alert: event changed', words: 'a network event that matches one of our alert rules changed' },
  'alert.ended': { label: 'Alert: event left a rule', words: 'a network event stopped matching one of our alert rules: it ended, left the area, or fell below the confidence' },
};
/** allKinds are the kinds an endpoint may subscribe to: a new one subscribes to them all unless unchecked. */
const allKinds = Object.keys(kindNames) as WebhookKind[];

/** isAlertKind says whether a kind is of the alert rules (docs/webhooks.md §5). */
function isAlertKind(kind: string): boolean {
  return kind.startsWith('alert.');
}

/** reasonNames say why an alert.ended came (docs/webhooks.md §5). */
const reasonNames: Record<string, string> = {
  not_active: 'the event is no longer active',
  left_area: 'the event left the area',
  below_confidence: "the event's confidence fell below the rule's minimum",
};

/** alertOf says which rule an alert delivery is of, and why an alert.ended came; null for other kinds. */
export function alertOf(d: Pick<WebhookDelivery, 'kind' | 'body'>): string | null {
  if (!isAlertKind(d.kind)) return null;
  const data = d.body.data as { rule?: { rule_id?: string; name?: string }; reason?: string } | undefined;
  const rule = data?.rule;
  const name = rule?.name ? `“${rule.name}”` : (rule?.rule_id ?? 'unknown');
  const reason = data?.reason ? `: ${reasonNames[data.reason] ?? data.reason}` : '';
  return `Rule ${name}${reason}`;
}

/** MAX_ENDPOINTS is how many endpoints an organisation may have. */
const MAX_ENDPOINTS = 10;
const MAX_DESCRIPTION = 200;
/** DELIVERIES is how many of an endpoint's deliveries the panel reads, newest first. */
const DELIVERIES = 50;

/** kindLabel is a kind's short label ("Confirmed"), or the kind itself when the console does not know it. */
export function kindLabel(kind: string): string {
  return kindNames[kind as WebhookKind]?.label ?? kind;
}

/** endpointTitle names an endpoint in messages: its description, else its URL's host and path. */
export function endpointTitle(ep: Pick<WebhookEndpointPublic, 'description' | 'url'>): string {
  if (ep.description.trim() !== '') return ep.description.trim();
  try {
    const u = new URL(ep.url);
    return u.host + (u.pathname === '/' ? '' : u.pathname);
  } catch {
    return ep.url;
  }
}

/** urlProblem says what is wrong with an endpoint URL before it is sent, or null; the service has the last word on http. */
function urlProblem(v: string): string | null {
  if (v === '') return 'Enter the address your receiver listens on.';
  const absolute = 'Enter an absolute https URL, such as https://example.org/roadevents/webhook.';
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return absolute;
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.host === '') return absolute;
  if (u.username !== '' || u.password !== '') return 'Leave the user name and password out of the URL: deliveries are signed instead.';
  return null;
}

/** webhookFields are the fields of the add form, whose errors the service reports at ["body", field]. */
const webhookFields = ['url', 'kinds', 'description', 'enabled'];

interface Draft {
  url: string;
  kinds: WebhookKind[];
  description: string;
}

const blankDraft: Draft = { url: '', kinds: allKinds, description: '' };

/** Issued is a secret to show once: a new endpoint's, or a rotated one's. */
type Issued = { secret: string; endpoint: WebhookEndpointPublic; rotated: boolean };

/** Secret shows a signing secret once, with how to check a delivery with it. */
function Secret({ issued, onDone }: { issued: Issued; onDone: () => void }) {
  const region = useRef<HTMLDivElement>(null);
  useEffect(() => region.current?.focus(), [issued]);
  const ep = issued.endpoint;
  return (
    <div class="once" role="region" aria-label="New signing secret" tabIndex={-1} ref={region}>
      <Notice kind="warning">
        Copy this secret now. It is shown only once: the service keeps it sealed and never shows it again. Your receiver needs it
        to check that each delivery comes from the service.
      </Notice>
      <p>
        {issued.rotated ? 'The new secret of ' : 'The secret of '}
        <span class="webhook-url">{ep.url}</span>
      </p>
      <p class="secret">
        <code data-testid="webhook-secret">{issued.secret}</code>
      </p>
      <CopyButton text={issued.secret} label="Copy secret" />{' '}
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
      {issued.rotated && ep.previous_secret_until && (
        <p class="hint">
          The previous secret still signs deliveries until {formatTime(ep.previous_secret_until)}: until then each delivery carries a
          signature with each secret, so give your receiver the new one before.
        </p>
      )}
      <p class="hint">
        To check a delivery, compute the HMAC-SHA256 of its <code>Roadevents-Signature</code> header's <code>t</code>, a full stop
        and the raw body, with this whole secret as the key; accept it when a <code>v1</code> of the header equals it and{' '}
        <code>t</code> is within 5 minutes of your clock (docs/webhooks.md §2).
      </p>
    </div>
  );
}

const stateNames: Record<WebhookDeliveryState, { label: string; cls: string }> = {
  pending: { label: 'Pending', cls: '' },
  delivered: { label: 'Delivered', cls: ' ok' },
  failed: { label: 'Failed', cls: ' bad' },
  dropped: { label: 'Dropped', cls: '' },
};

/** Attempts says how many attempts a delivery had, and what the last one got: a status, or why none came. */
function Attempts({ d }: { d: WebhookDelivery }) {
  const n = d.attempts.length;
  if (n === 0) return <>No attempt yet</>;
  const a = d.attempts[n - 1];
  const ok = a.status >= 200 && a.status < 300;
  const got = a.status !== 0 ? `HTTP ${a.status}` + (a.error ? ` (${a.error})` : '') : a.error || 'no answer';
  return (
    <>
      <div>{n === 1 ? '1 attempt' : `${formatNumber(n)} attempts`}</div>
      <div class={'small' + (ok ? '' : ' health-error')}>
        Last: {got} · {formatNumber(a.latency_ms)} ms
      </div>
      <div class="muted small">{formatTime(a.at)}</div>
    </>
  );
}

/**
 * Deliveries lists one endpoint's newest deliveries, each with its attempts and the body sent;
 * owners redeliver the ones no longer pending. refreshes changes when the page's Refresh is used.
 */
function Deliveries(props: { org: Organisation; endpoint: WebhookEndpointPublic; owner: boolean; refreshes: number; onClose: () => void }) {
  const { client } = useApp();
  const { org, endpoint: ep, owner } = props;
  const deliveries = useLoad(() => client.webhookDeliveries(org.org_id, ep.endpoint_id, DELIVERIES), [org.org_id, ep.endpoint_id, props.refreshes]);
  const { msg, busyId, run } = useRowActions(deliveries.reload);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);

  const redeliver = (d: WebhookDelivery) =>
    run(
      d.delivery_id,
      d.delivery_id,
      () => client.redeliverWebhook(org.org_id, ep.endpoint_id, d.delivery_id),
      () =>
        `The delivery ${d.delivery_id} is pending again, due now.` +
        (ep.enabled ? '' : ' The endpoint is disabled: enable it, or the delivery is dropped.'),
    );

  return (
    <section class="card webhook-deliveries" id="webhook-deliveries" aria-labelledby="webhook-deliveries-title">
      <div class="row">
        <h3 id="webhook-deliveries-title" tabIndex={-1} ref={heading}>
          Deliveries to “{endpointTitle(ep)}”
        </h3>
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
      <p class="muted small">
        The newest {DELIVERIES}, newest first. A delivery is tried until the receiver answers 2xx, for 24 hours from its first
        attempt; then it has failed (docs/webhooks.md §3).
      </p>
      {msg && <Notice kind={msg.kind}>{msg.text}</Notice>}
      <Loading load={deliveries}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No deliveries yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Deliveries to {ep.url}</caption>
                <thead>
                  <tr>
                    <th scope="col">Made</th>
                    <th scope="col">Kind</th>
                    <th scope="col">State</th>
                    <th scope="col">Attempts</th>
                    <th scope="col">Next attempt</th>
                    <th scope="col">Body</th>
                    {owner && (
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    )}
                  </tr>
                </thead>
                <tbody>
                  {list.map((d) => {
                    const state = stateNames[d.state] ?? { label: d.state, cls: '' };
                    return (
                      <tr key={d.delivery_id} data-testid={'delivery-' + d.delivery_id}>
                        <th scope="row">
                          {formatTime(d.created_at)}
                          <div class="muted small">
                            <code>{d.delivery_id}</code>
                          </div>
                        </th>
                        <td>
                          {kindLabel(d.kind)}
                          <div class="muted small">
                            <code>{d.kind}</code>
                          </div>
                          {isAlertKind(d.kind) && (
                            <div class="small" data-testid={'delivery-rule-' + d.delivery_id}>
                              {alertOf(d)}
                            </div>
                          )}
                        </td>
                        <td data-testid={'delivery-state-' + d.delivery_id}>
                          <div class={'health' + state.cls}>{state.label}</div>
                          {d.reason && <div class="muted small">{d.reason}</div>}
                        </td>
                        <td data-testid={'attempts-' + d.delivery_id}>
                          <Attempts d={d} />
                        </td>
                        <td data-testid={'next-' + d.delivery_id}>{d.state === 'pending' ? (d.next_attempt_at ? formatTime(d.next_attempt_at) : 'now') : '—'}</td>
                        <td>
                          <details>
                            <summary>
                              Body<span class="visually-hidden"> of {d.delivery_id}</span>
                            </summary>
                            <pre class="webhook-body">{JSON.stringify(d.body, null, 2)}</pre>
                          </details>
                        </td>
                        {owner && (
                          <td>
                            {d.state !== 'pending' && (
                              <button type="button" disabled={busyId === d.delivery_id} onClick={() => redeliver(d)}>
                                Redeliver
                              </button>
                            )}
                          </td>
                        )}
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
    </section>
  );
}

/** Webhooks lists the organisation's webhook endpoints and their deliveries, and lets owners manage them. */
export function Webhooks({ org }: { org: Organisation }) {
  const { client } = useApp();
  const endpoints = useLoad(() => client.webhookEndpoints(org.org_id), [org.org_id]);
  const owner = org.role === 'owner';
  const { msg, setMsg, busyId, run } = useRowActions(endpoints.reload);
  const [issued, setIssued] = useState<Issued | null>(null);
  const [draft, setDraft] = useState<Draft>(blankDraft);
  const form = useForm(webhookFields);

  // One endpoint's deliveries show at a time, in a panel below the list; closing it gives the
  // focus back to the endpoint's Deliveries button. Refresh reads the panel again too.
  const [viewing, setViewing] = useState<string | null>(null);
  const [refreshes, setRefreshes] = useState(0);
  const deliveryButtons = useRef<Record<string, HTMLButtonElement | null>>({});
  const closeDeliveries = () => {
    if (viewing) deliveryButtons.current[viewing]?.focus();
    setViewing(null);
  };
  const refresh = () => {
    endpoints.reload();
    setRefreshes((n) => n + 1);
  };

  const add = async (e: Event) => {
    e.preventDefault();
    setMsg(null);
    const url = draft.url.trim();
    const bad = showProblems(form, webhookFields, {
      url: urlProblem(url),
      kinds: draft.kinds.length === 0 ? 'Choose at least one kind of delivery.' : null,
    });
    if (bad) return;
    const created = await form.run(() => client.createWebhookEndpoint(org.org_id, { url, kinds: draft.kinds, description: draft.description.trim() }));
    if (created) {
      setIssued({ ...created, rotated: false });
      setMsg({ kind: 'success', text: `“${endpointTitle(created.endpoint)}” is added. It receives: ${created.endpoint.kinds.map(kindLabel).join(', ')}.` });
      setDraft(blankDraft);
      endpoints.reload();
    }
  };

  const setKind = (kind: WebhookKind, on: boolean) =>
    setDraft((d) => ({ ...d, kinds: allKinds.filter((k) => (k === kind ? on : d.kinds.includes(k))) }));

  /** act runs one row action, says how it went (done's text, when it has one), and reads the list again. */
  const act = <T,>(ep: WebhookEndpointPublic, fn: () => Promise<T>, done: (r: T) => string | null) =>
    run(ep.endpoint_id, `“${endpointTitle(ep)}”`, fn, done);
  const setEnabled = (ep: WebhookEndpointPublic, enabled: boolean) =>
    act(
      ep,
      () => client.updateWebhookEndpoint(org.org_id, ep.endpoint_id, { enabled }),
      () =>
        enabled
          ? `“${endpointTitle(ep)}” is enabled: deliveries are sent to it again.`
          : `“${endpointTitle(ep)}” is disabled: nothing is sent to it until an owner enables it again.`,
    );
  const rotate = (ep: WebhookEndpointPublic) =>
    act(
      ep,
      () => client.rotateWebhookSecret(org.org_id, ep.endpoint_id),
      (r) => {
        setIssued({ ...r, rotated: true });
        return null;
      },
    );
  const remove = (ep: WebhookEndpointPublic) =>
    act(
      ep,
      () => client.deleteWebhookEndpoint(org.org_id, ep.endpoint_id),
      () => {
        if (viewing === ep.endpoint_id) setViewing(null);
        return `“${endpointTitle(ep)}” is deleted: its pending deliveries are dropped.`;
      },
    );

  const open = endpoints.data?.find((ep) => ep.endpoint_id === viewing);
  // Whether the rules' alerts reach anyone: unknown until the endpoints are read.
  const listening = endpoints.data ? endpoints.data.some((ep) => ep.enabled && ep.kinds.some(isAlertKind)) : null;

  return (
    <>
      <div class="row">
        <h2>Webhooks</h2>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      <p class="muted small">
        Endpoints the service tells of what happens to your organisation's events: an HTTPS <code>POST</code> with a JSON body
        (docs/webhooks.md §1), signed with the endpoint's secret (§2). A delivery is tried again until the receiver answers 2xx, for
        24 hours; an answer of <code>410 Gone</code> disables the endpoint until an owner enables it again (§3).
      </p>

      {issued && <Secret issued={issued} onDone={() => setIssued(null)} />}

      {owner ? (
        <details class="card" open={endpoints.data?.length === 0 || undefined}>
          <summary>Add an endpoint</summary>
          <FormError form={form} />
          <form onSubmit={add} noValidate>
            <Field
              label="URL"
              name="url"
              value={draft.url}
              onInput={(url) => setDraft((d) => ({ ...d, url }))}
              form={form}
              hint="Where the service sends deliveries: an absolute https URL (plain http only where this deployment allows it), without a user name or password. Every member can read it."
              input={{ type: 'url', maxLength: 2048, autocomplete: 'off', spellcheck: false }}
            />
            <fieldset aria-describedby={form.fields.kinds ? 'webhook-kinds-error' : undefined}>
              <legend>Send</legend>
              {allKinds.map((k, i) => [
                isAlertKind(k) && !isAlertKind(allKinds[i - 1] ?? '') && (
                  <p class="hint kinds-group" key="alerts">
                    Of the alert rules below, for any network event in their areas:
                  </p>
                ),
                <label class="check" key={k}>
                  <input
                    type="checkbox"
                    name="kinds"
                    value={k}
                    checked={draft.kinds.includes(k)}
                    onChange={(e) => setKind(k, (e.currentTarget as HTMLInputElement).checked)}
                  />{' '}
                  <span>
                    <strong>{kindNames[k].label}</strong>: {kindNames[k].words}
                  </span>
                </label>,
              ])}
              <p class="hint">At least one.</p>
              {form.fields.kinds && (
                <p class="field-error" id="webhook-kinds-error" role="alert">
                  {form.fields.kinds}
                </p>
              )}
            </fieldset>
            <Field
              label="Description (optional)"
              name="description"
              value={draft.description}
              onInput={(description) => setDraft((d) => ({ ...d, description }))}
              form={form}
              hint="For people, for example “Dispatch system (staging)”."
              input={{ maxLength: MAX_DESCRIPTION }}
            />
            <button type="submit" class="primary" disabled={form.busy}>
              {form.busy ? 'Adding…' : 'Add endpoint'}
            </button>
            <p class="hint">Its signing secret is shown once, here. An organisation has at most {MAX_ENDPOINTS} endpoints.</p>
          </form>
        </details>
      ) : (
        <Notice>Only owners can add, change and delete webhook endpoints, or redeliver. You can see them and their deliveries here.</Notice>
      )}

      {msg && <Notice kind={msg.kind}>{msg.text}</Notice>}
      <Loading load={endpoints}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No endpoints yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Webhook endpoints</caption>
                <thead>
                  <tr>
                    <th scope="col">Endpoint</th>
                    <th scope="col">Sends</th>
                    <th scope="col">State</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((ep) => (
                    <tr key={ep.endpoint_id} data-testid={'webhook-' + ep.endpoint_id}>
                      <th scope="row" class="feed-name">
                        <div class="webhook-url">{ep.url}</div>
                        {ep.description && <div class="muted small">{ep.description}</div>}
                      </th>
                      <td data-testid={'kinds-' + ep.endpoint_id}>{ep.kinds.map(kindLabel).join(', ')}</td>
                      <td data-testid={'state-' + ep.endpoint_id}>
                        {ep.enabled ? (
                          <div class="health ok">Enabled</div>
                        ) : (
                          <>
                            <div class="health">Disabled</div>
                            {ep.disabled_reason && <div class="small health-error">By the service: {ep.disabled_reason}</div>}
                          </>
                        )}
                      </td>
                      <td data-testid={'created-' + ep.endpoint_id}>
                        {formatTime(ep.created_at)}
                        {ep.created_by_email && <div class="muted small">by {ep.created_by_email}</div>}
                        {ep.rotated_at && (
                          <div class="muted small">
                            Secret rotated {formatTime(ep.rotated_at)}
                            {ep.previous_secret_until && ` (the previous one signs until ${formatTime(ep.previous_secret_until)})`}
                          </div>
                        )}
                      </td>
                      <td>
                        <div class="actions">
                          <button
                            type="button"
                            ref={(el) => {
                              deliveryButtons.current[ep.endpoint_id] = el;
                            }}
                            aria-expanded={viewing === ep.endpoint_id}
                            aria-controls={viewing === ep.endpoint_id ? 'webhook-deliveries' : undefined}
                            onClick={() => setViewing(viewing === ep.endpoint_id ? null : ep.endpoint_id)}
                          >
                            Deliveries
                          </button>
                          {owner && (
                            <>
                              <button type="button" disabled={busyId === ep.endpoint_id} onClick={() => setEnabled(ep, !ep.enabled)}>
                                {ep.enabled ? 'Disable' : 'Enable'}
                              </button>
                              <Confirm
                                label="Rotate secret"
                                question={`Rotate the secret of “${endpointTitle(ep)}”? The new secret is shown once; the old one keeps signing for 24 hours.`}
                                confirmLabel="Yes, rotate"
                                disabled={busyId === ep.endpoint_id}
                                onConfirm={() => rotate(ep)}
                              />
                              <Confirm
                                label="Delete"
                                question={`Delete “${endpointTitle(ep)}”? Its pending deliveries are dropped.`}
                                confirmLabel="Yes, delete"
                                disabled={busyId === ep.endpoint_id}
                                onConfirm={() => remove(ep)}
                              />
                            </>
                          )}
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
      {open && <Deliveries key={open.endpoint_id} org={org} endpoint={open} owner={owner} refreshes={refreshes} onClose={closeDeliveries} />}
      <AlertRules org={org} listening={listening} refreshes={refreshes} />
    </>
  );
}
