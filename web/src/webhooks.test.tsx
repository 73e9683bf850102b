import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import {
  ApiError,
  Client,
  type AlertRuleDraft,
  type AlertRulePublic,
  type AlertRuleUpdate,
  type WebhookDelivery,
  type WebhookEndpointDraft,
  type WebhookEndpointPublic,
} from './api';
import { formatCoordinates, parsePolygon } from './pages/alertrules';
import { Webhooks } from './pages/webhooks';
import { click, mountPoint, pageHelpers } from './testing';

function endpoint(over: Partial<WebhookEndpointPublic> & { endpoint_id: string }): WebhookEndpointPublic {
  return {
    url: 'https://hooks.example.org/roadevents',
    description: '',
    kinds: ['event.confirmed', 'event.denied', 'event.merged', 'event.ended'],
    enabled: true,
    disabled_reason: null,
    created_at: '2026-11-20T10:00:00Z',
    created_by_email: 'ann@example.com',
    updated_at: '2026-11-20T10:00:00Z',
    rotated_at: null,
    previous_secret_until: null,
    ...over,
  };
}

const hook = endpoint({ endpoint_id: 'we_1', description: 'Dispatch', kinds: ['event.confirmed', 'event.ended'] });
const gone = endpoint({
  endpoint_id: 'we_2',
  url: 'https://old.example.net/hook',
  enabled: false,
  disabled_reason: 'the receiver answered 410 Gone at 2026-11-21T08:00:00Z',
  rotated_at: '2026-11-21T07:00:00Z',
  previous_secret_until: '2026-11-22T07:00:00Z',
});

function delivery(over: Partial<WebhookDelivery> & { delivery_id: string }): WebhookDelivery {
  return {
    endpoint_id: 'we_1',
    kind: 'event.confirmed',
    created_at: '2026-11-21T09:00:00Z',
    state: 'delivered',
    reason: null,
    next_attempt_at: null,
    attempts: [],
    body: { id: over.delivery_id, kind: over.kind ?? 'event.confirmed', created_at: '2026-11-21T09:00:00Z', environment: 'live', data: { event: { event_id: 'ev_1' } } },
    ...over,
  };
}

const failed = delivery({
  delivery_id: 'dl_failed',
  kind: 'event.ended',
  state: 'failed',
  reason: 'no attempt succeeded within 24h0m0s',
  attempts: [
    { at: '2026-11-20T09:00:00Z', status: 500, latency_ms: 40 },
    { at: '2026-11-20T09:00:30Z', status: 503, latency_ms: 35 },
    { at: '2026-11-21T09:00:00Z', status: 0, error: 'dial tcp 203.0.113.5:443: connect: connection refused', latency_ms: 12 },
  ],
});
const pending = delivery({
  delivery_id: 'dl_pending',
  state: 'pending',
  next_attempt_at: '2026-11-21T09:01:00Z',
  attempts: [{ at: '2026-11-21T09:00:30Z', status: 503, latency_ms: 80 }],
});
const delivered = delivery({
  delivery_id: 'dl_ok',
  kind: 'event.merged',
  attempts: [{ at: '2026-11-21T08:00:00Z', status: 200, latency_ms: 25 }],
});

const mount = mountPoint();
const { renderPage, button, testid, type, submit } = pageHelpers(mount);

/** show renders the page; the organisation has no alert rules unless client says otherwise. */
async function show(role: 'owner' | 'member', client: Partial<Client>) {
  await renderPage((org) => <Webhooks org={org} />, role, { alertRules: async () => [], ...client });
}

function row(endpointId: string): HTMLElement {
  return mount.el.querySelector(`[data-testid="webhook-${endpointId}"]`) as HTMLElement;
}

const allKinds = ['event.confirmed', 'event.denied', 'event.merged', 'event.ended', 'event.expired', 'alert.created', 'alert.updated', 'alert.ended'];

function checkbox(kind: string): HTMLInputElement {
  return mount.el.querySelector(`input[name="kinds"][value="${kind}"]`) as HTMLInputElement;
}

function secretRegion(): HTMLElement | null {
  return mount.el.querySelector('[role="region"][aria-label="New signing secret"]');
}

describe('webhooks page', () => {
  it('lets an owner add an endpoint with the kinds checked, and shows its secret once', async () => {
    const list: WebhookEndpointPublic[] = [];
    const webhookEndpoints = vi.fn(async () => [...list]);
    const createWebhookEndpoint = vi.fn(async (_org: string, d: WebhookEndpointDraft) => {
      const ep = endpoint({ endpoint_id: 'we_new', url: d.url, kinds: d.kinds, description: d.description ?? '' });
      list.push(ep);
      return { secret: 'whsec_s3cr3t', endpoint: ep };
    });
    await show('owner', { webhookEndpoints, createWebhookEndpoint });
    // No endpoint yet: the form is open, with every kind checked, the alert rules' too.
    expect(mount.el.querySelector('details')?.open).toBe(true);
    expect(mount.el.textContent).toContain('No endpoints yet.');
    for (const k of allKinds) expect(checkbox(k).checked).toBe(true);
    expect(checkbox('alert.ended').closest('label')?.textContent).toContain('Alert: event left a rule');

    await type('url', 'https://hooks.example.org/roadevents');
    await type('description', 'Dispatch');
    await click(checkbox('event.denied'));
    await click(checkbox('event.expired'));
    await click(checkbox('alert.updated'));
    await submit();

    expect(createWebhookEndpoint).toHaveBeenCalledTimes(1);
    const [orgId, sent] = createWebhookEndpoint.mock.calls[0];
    expect(orgId).toBe('org_1');
    expect(sent).toStrictEqual({
      url: 'https://hooks.example.org/roadevents',
      kinds: ['event.confirmed', 'event.merged', 'event.ended', 'alert.created', 'alert.ended'],
      description: 'Dispatch',
    });

    const region = secretRegion()!;
    expect(region).not.toBeNull();
    expect(testid('webhook-secret')?.textContent).toBe('whsec_s3cr3t');
    expect(region.querySelector('.alert.warning')?.textContent).toContain('Copy this secret now');
    expect(button('Copy secret', region)).toBeDefined();
    expect(region.textContent).toContain('docs/webhooks.md §2');
    expect(mount.el.querySelector('.alert.success')?.textContent).toContain('“Dispatch” is added');
    // The list is read again and shows the new endpoint.
    expect(webhookEndpoints).toHaveBeenCalledTimes(2);
    expect(testid('kinds-we_new')?.textContent).toBe('Confirmed, Merged, Ended, Alert: event entered a rule, Alert: event left a rule');
    expect((mount.el.querySelector('input[name="url"]') as HTMLInputElement).value).toBe('');

    await click(button('I have copied it', region));
    expect(secretRegion()).toBeNull();
    expect(testid('webhook-secret')).toBeNull();
    expect(mount.el.textContent).not.toContain('whsec_s3cr3t');
  });

  it('checks the URL and the kinds before sending', async () => {
    const createWebhookEndpoint = vi.fn();
    await show('owner', { webhookEndpoints: async () => [], createWebhookEndpoint });
    await type('url', 'ftp://hooks.example.org/');
    for (const k of allKinds) await click(checkbox(k));
    await submit();
    expect(createWebhookEndpoint).not.toHaveBeenCalled();
    expect((mount.el.querySelector('input[name="url"]') as HTMLInputElement).getAttribute('aria-invalid')).toBe('true');
    expect(mount.el.textContent).toContain('Enter an absolute https URL');
    expect(mount.el.querySelector('#webhook-kinds-error')?.textContent).toBe('Choose at least one kind of delivery.');
  });

  it('shows at the top of the form why the deployment refuses webhooks (503)', async () => {
    const detail = 'Webhook deliveries do not run on this deployment yet (docs/webhooks.md)';
    const createWebhookEndpoint = vi.fn(async () => {
      throw new ApiError(503, detail);
    });
    await show('owner', { webhookEndpoints: async () => [], createWebhookEndpoint });
    await type('url', 'https://hooks.example.org/roadevents');
    await submit();
    expect(createWebhookEndpoint).toHaveBeenCalledTimes(1);
    const details = mount.el.querySelector('details')!;
    const alert = details.querySelector('.alert.error')!;
    expect(alert?.textContent).toBe(detail);
    expect(alert.getAttribute('role')).toBe('alert');
    // Above the form's fields, not under one of them.
    expect(alert.compareDocumentPosition(details.querySelector('form')!) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(alert.closest('form')).toBeNull();
    expect(details.querySelector('input[aria-invalid="true"]')).toBeNull();
    expect(secretRegion()).toBeNull();
  });

  it('shows an endpoint\'s deliveries with the last error and the next attempt, and redelivers a failed one', async () => {
    let list = [pending, failed, delivered];
    const webhookDeliveries = vi.fn(async () => list);
    const redeliverWebhook = vi.fn(async (_org: string, _ep: string, id: string) => {
      const again = { ...failed, state: 'pending' as const, reason: null, next_attempt_at: '2026-11-21T10:00:00Z' };
      list = list.map((d) => (d.delivery_id === id ? again : d));
      return again;
    });
    await show('owner', { webhookEndpoints: async () => [hook, gone], webhookDeliveries, redeliverWebhook });
    expect(webhookDeliveries).not.toHaveBeenCalled();
    const open = button('Deliveries', row('we_1'));
    await click(open);
    expect(webhookDeliveries).toHaveBeenCalledWith('org_1', 'we_1', 50);
    expect(open!.getAttribute('aria-expanded')).toBe('true');
    const panel = mount.el.querySelector('#webhook-deliveries') as HTMLElement;
    expect(panel.querySelector('h3')?.textContent).toBe('Deliveries to “Dispatch”');
    expect(document.activeElement).toBe(panel.querySelector('h3'));

    // The failed one: its reason, its attempts and the last one's error.
    expect(testid('delivery-state-dl_failed')?.textContent).toContain('Failed');
    expect(testid('delivery-state-dl_failed')?.textContent).toContain('no attempt succeeded within 24h0m0s');
    const attempts = testid('attempts-dl_failed')!.textContent!;
    expect(attempts).toContain('3 attempts');
    expect(attempts).toContain('dial tcp 203.0.113.5:443: connect: connection refused');
    expect(attempts).toContain('12 ms');
    expect(testid('next-dl_failed')?.textContent).toBe('—');
    // The pending one: the last status and when it is tried next; it cannot be redelivered.
    expect(testid('attempts-dl_pending')?.textContent).toContain('HTTP 503');
    expect(testid('next-dl_pending')?.textContent).toBe(new Date('2026-11-21T09:01:00Z').toLocaleString());
    expect(button('Redeliver', testid('delivery-dl_pending')!)).toBeUndefined();
    expect(button('Redeliver', testid('delivery-dl_ok')!)).toBeDefined();
    // The body as sent, pretty-printed.
    const pre = testid('delivery-dl_ok')!.querySelector('details pre')!;
    expect(pre.textContent).toBe(JSON.stringify(delivered.body, null, 2));
    expect(pre.textContent).toContain('\n  "kind": "event.merged"');

    await click(button('Redeliver', testid('delivery-dl_failed')!));
    expect(redeliverWebhook).toHaveBeenCalledTimes(1);
    expect(redeliverWebhook).toHaveBeenCalledWith('org_1', 'we_1', 'dl_failed');
    expect(panel.querySelector('.alert.success')?.textContent).toContain('dl_failed is pending again');
    expect(webhookDeliveries).toHaveBeenCalledTimes(2);
    expect(testid('delivery-state-dl_failed')?.textContent).toBe('Pending');
    expect(button('Redeliver', testid('delivery-dl_failed')!)).toBeUndefined();

    await click(button('Close', panel));
    expect(mount.el.querySelector('#webhook-deliveries')).toBeNull();
    expect(document.activeElement).toBe(open);
  });

  it('shows members everything read-only: no form and no action buttons', async () => {
    const webhookDeliveries = vi.fn(async () => [failed, delivered]);
    await show('member', { webhookEndpoints: async () => [hook, gone], webhookDeliveries });
    expect(mount.el.textContent).toContain('Only owners can add, change and delete webhook endpoints');
    expect(mount.el.querySelector('form')).toBeNull();
    expect(mount.el.querySelector('details')).toBeNull();

    expect(row('we_1').textContent).toContain('https://hooks.example.org/roadevents');
    expect(row('we_1').textContent).toContain('Dispatch');
    expect(testid('kinds-we_1')?.textContent).toBe('Confirmed, Ended');
    expect(testid('state-we_1')?.textContent).toBe('Enabled');
    expect(testid('state-we_2')?.textContent).toContain('Disabled');
    expect(testid('state-we_2')?.textContent).toContain('By the service: the receiver answered 410 Gone');
    expect(testid('created-we_2')?.textContent).toContain(
      `Secret rotated ${new Date('2026-11-21T07:00:00Z').toLocaleString()} (the previous one signs until ${new Date('2026-11-22T07:00:00Z').toLocaleString()})`,
    );
    expect(testid('created-we_1')?.textContent).not.toContain('rotated');

    for (const name of ['Disable', 'Enable', 'Rotate secret', 'Delete', 'Add endpoint']) expect(button(name)).toBeUndefined();
    // They read the deliveries, without Redeliver.
    await click(button('Deliveries', row('we_1')));
    expect(webhookDeliveries).toHaveBeenCalledWith('org_1', 'we_1', 50);
    expect(testid('attempts-dl_failed')?.textContent).toContain('connection refused');
    expect(button('Redeliver')).toBeUndefined();
  });

  it('asks before rotating a secret, then shows the new one once', async () => {
    let current = hook;
    const webhookEndpoints = vi.fn(async () => [current]);
    const rotateWebhookSecret = vi.fn(async () => {
      current = { ...hook, rotated_at: '2026-11-21T10:00:00Z', previous_secret_until: '2026-11-22T10:00:00Z' };
      return { secret: 'whsec_n3w', endpoint: current };
    });
    await show('owner', { webhookEndpoints, rotateWebhookSecret });
    await click(button('Rotate secret', row('we_1')));
    expect(rotateWebhookSecret).not.toHaveBeenCalled();
    expect(row('we_1').textContent).toContain('The new secret is shown once; the old one keeps signing for 24 hours.');
    expect(secretRegion()).toBeNull();

    await click(button('Yes, rotate', row('we_1')));
    expect(rotateWebhookSecret).toHaveBeenCalledTimes(1);
    expect(rotateWebhookSecret).toHaveBeenCalledWith('org_1', 'we_1');
    const region = secretRegion()!;
    expect(region).not.toBeNull();
    expect(testid('webhook-secret')?.textContent).toBe('whsec_n3w');
    expect(region.textContent).toContain('Copy this secret now');
    expect(region.textContent).toContain(`The previous secret still signs deliveries until ${new Date('2026-11-22T10:00:00Z').toLocaleString()}`);
    expect(webhookEndpoints).toHaveBeenCalledTimes(2);
    expect(testid('created-we_1')?.textContent).toContain('the previous one signs until');

    await click(button('I have copied it', region));
    expect(secretRegion()).toBeNull();
    expect(mount.el.textContent).not.toContain('whsec_n3w');
  });

  it('lets an owner disable an endpoint, and asks before deleting one', async () => {
    let list = [hook, gone];
    const updateWebhookEndpoint = vi.fn(async (_org: string, id: string, u: { enabled?: boolean }) => {
      list = list.map((e) => (e.endpoint_id === id ? { ...e, ...u } : e));
      return list.find((e) => e.endpoint_id === id)!;
    });
    const deleteWebhookEndpoint = vi.fn(async (_org: string, id: string) => {
      list = list.filter((e) => e.endpoint_id !== id);
      return { ok: true as const };
    });
    await show('owner', { webhookEndpoints: async () => list, updateWebhookEndpoint, deleteWebhookEndpoint });
    expect(button('Enable', row('we_2'))).toBeDefined();

    await click(button('Disable', row('we_1')));
    expect(updateWebhookEndpoint).toHaveBeenCalledWith('org_1', 'we_1', { enabled: false });
    expect(mount.el.querySelector('.alert.success')?.textContent).toContain('“Dispatch” is disabled');
    expect(testid('state-we_1')?.textContent).toBe('Disabled');
    expect(button('Enable', row('we_1'))).toBeDefined();

    await click(button('Delete', row('we_2')));
    expect(deleteWebhookEndpoint).not.toHaveBeenCalled();
    expect(row('we_2').textContent).toContain('Its pending deliveries are dropped.');
    await click(button('Yes, delete', row('we_2')));
    expect(deleteWebhookEndpoint).toHaveBeenCalledWith('org_1', 'we_2');
    expect(row('we_2')).toBeNull();
    expect(mount.el.querySelector('.alert.success')?.textContent).toContain('“old.example.net/hook” is deleted');
  });
});

function rule(over: Partial<AlertRulePublic> & { rule_id: string }): AlertRulePublic {
  return {
    name: 'Depot',
    environment: 'live',
    area: { type: 'Circle', lat: 48.1, lon: 11.5, radius_m: 2500 },
    types: [],
    min_confidence: 0,
    enabled: true,
    created_at: '2026-11-20T10:00:00Z',
    created_by_email: 'ann@example.com',
    updated_at: '2026-11-20T10:00:00Z',
    ...over,
  };
}

/** A ring of 5 points, closed. */
const ring: [number, number][] = [
  [11.5, 48.1],
  [11.6, 48.1],
  [11.65, 48.15],
  [11.6, 48.2],
  [11.5, 48.2],
  [11.5, 48.1],
];
const depot = rule({ rule_id: 'ar_1', name: 'Depot north', min_confidence: 0.6 });
const city = rule({
  rule_id: 'ar_2',
  name: 'City centre',
  environment: 'sandbox',
  area: { type: 'Polygon', coordinates: [ring] },
  types: ['accident', 'road_closure'],
  enabled: false,
  created_by_email: null,
});

/** rules is the alert rules' section of the page. */
function rules(): HTMLElement {
  return mount.el.querySelector('#alert-rules') as HTMLElement;
}

function ruleRow(ruleId: string): HTMLElement {
  return mount.el.querySelector(`[data-testid="rule-${ruleId}"]`) as HTMLElement;
}

/** editRule is the open rule edit form's section, or null. */
function editRule(): HTMLElement | null {
  return mount.el.querySelector('#rule-edit');
}

/** typeText sets the text of the textarea named name, as if typed. */
async function typeText(name: string, value: string, within: ParentNode) {
  const el = within.querySelector(`textarea[name="${name}"]`) as HTMLTextAreaElement;
  await act(async () => {
    el.value = value;
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

async function choose(selector: string, value: string, within: ParentNode) {
  const el = within.querySelector(selector) as HTMLSelectElement;
  await act(async () => {
    el.value = value;
    el.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

function typeBox(within: ParentNode, t: string): HTMLInputElement {
  return within.querySelector(`input[name="types"][value="${t}"]`) as HTMLInputElement;
}

/** errorOf is the text of the field error an input is described by, or null. */
function errorOf(el: Element): string | null {
  const id = el.getAttribute('aria-describedby')?.split(' ').find((id) => id.endsWith('-error'));
  return id ? (document.getElementById(id)?.textContent ?? null) : null;
}

describe('alert rules', () => {
  it('lists the rules with their environment, area, types, minimum confidence and state', async () => {
    await show('owner', { webhookEndpoints: async () => [hook], alertRules: async () => [depot, city] });
    expect(rules().querySelector('h3')?.textContent).toBe('Alert rules');
    const r1 = ruleRow('ar_1');
    expect(r1.querySelector('th')?.textContent).toContain('Depot north');
    expect(r1.textContent).toContain('by ann@example.com');
    expect(r1.querySelector('.env.live')?.textContent).toBe('live');
    expect(testid('rule-area-ar_1')?.textContent).toBe('Circle 2.5 km around 48.1000, 11.5000');
    expect(testid('rule-types-ar_1')?.textContent).toBe('every type');
    expect(testid('rule-confidence-ar_1')?.textContent).toBe('60%');
    expect(testid('rule-state-ar_1')?.textContent).toBe('Enabled');
    // A circle has no drawing; a polygon's outline is drawn, one point a position.
    expect(r1.querySelector('svg')).toBeNull();

    const r2 = ruleRow('ar_2');
    expect(r2.querySelector('.env.sandbox')?.textContent).toBe('sandbox');
    expect(testid('rule-area-ar_2')?.textContent).toBe('Polygon, 5 points');
    expect(testid('rule-types-ar_2')?.textContent).toBe('Accident, Road closure');
    expect(testid('rule-confidence-ar_2')?.textContent).toBe('0% (any)');
    expect(testid('rule-state-ar_2')?.textContent).toBe('Disabled');
    expect(r2.querySelector('svg polygon')?.getAttribute('points')?.split(' ')).toHaveLength(6);
    expect(button('Enable', r2)).toBeDefined();
    // The endpoint receives every kind but the alerts: the rules' alerts reach no one.
    expect(rules().querySelector('.alert.warning')?.textContent).toContain('No enabled endpoint receives the alert kinds');
  });

  it('says what a rule does when there is none, and warns of nothing only when an endpoint hears alerts', async () => {
    await show('member', { webhookEndpoints: async () => [endpoint({ endpoint_id: 'we_a', kinds: ['alert.created'] })] });
    expect(rules().textContent).toContain(
      'No alert rules yet. An alert rule announces any network event inside an area to your endpoints subscribed to alert kinds.',
    );
    expect(rules().querySelector('table')).toBeNull();
    expect(rules().querySelector('.alert.warning')).toBeNull();
  });

  it('lets an owner make a circle rule, sending exactly what the form holds', async () => {
    const list: AlertRulePublic[] = [];
    const alertRules = vi.fn(async () => [...list]);
    const createAlertRule = vi.fn(async (_org: string, d: AlertRuleDraft) => {
      const r = rule({ rule_id: 'ar_new', ...d });
      list.push(r);
      return r;
    });
    await show('owner', { webhookEndpoints: async () => [], alertRules, createAlertRule });
    const section = rules();
    expect(section.querySelector('details summary')?.textContent).toBe('New alert rule');
    // Defaults: live, a circle, every type, any confidence, enabled.
    expect((section.querySelector('select[name="environment"]') as HTMLSelectElement).value).toBe('live');
    expect((section.querySelector('input[name="area_kind"][value="Circle"]') as HTMLInputElement).checked).toBe(true);
    expect(section.querySelectorAll('input[name="types"]:checked')).toHaveLength(0);
    expect(section.querySelectorAll('input[name="types"]')).toHaveLength(13);
    expect((section.querySelector('input[name="min_confidence"]') as HTMLInputElement).value).toBe('0');
    expect((section.querySelector('input[name="enabled"]') as HTMLInputElement).checked).toBe(true);
    expect(section.querySelector('textarea')).toBeNull();

    await type('name', ' Depot north ', section);
    await type('lat', '48.1', section);
    await type('lon', '11.5', section);
    await type('radius_m', '2500', section);
    // Checked in any order, sent in the order of the list of types.
    await click(typeBox(section, 'congestion'));
    await click(typeBox(section, 'accident'));
    await type('min_confidence', '0.6', section);
    await submit(section);

    expect(createAlertRule).toHaveBeenCalledTimes(1);
    const [orgId, sent] = createAlertRule.mock.calls[0];
    expect(orgId).toBe('org_1');
    expect(sent).toStrictEqual({
      name: 'Depot north',
      environment: 'live',
      area: { type: 'Circle', lat: 48.1, lon: 11.5, radius_m: 2500 },
      types: ['accident', 'congestion'],
      min_confidence: 0.6,
      enabled: true,
    });
    expect(alertRules).toHaveBeenCalledTimes(2);
    expect(testid('rule-area-ar_new')?.textContent).toBe('Circle 2.5 km around 48.1000, 11.5000');
    expect(testid('rule-types-ar_new')?.textContent).toBe('Accident, Congestion');
    expect(section.querySelector('.alert.success')?.textContent).toContain('“Depot north” is made');
    // The form is blank again.
    expect((section.querySelector('input[name="name"]') as HTMLInputElement).value).toBe('');
    expect(section.querySelectorAll('input[name="types"]:checked')).toHaveLength(0);
  });

  it('checks a circle before sending', async () => {
    const createAlertRule = vi.fn();
    await show('owner', { webhookEndpoints: async () => [], createAlertRule });
    const section = rules();
    await type('lat', '91', section);
    await type('lon', 'east', section);
    await type('radius_m', '5', section);
    await type('min_confidence', '60', section);
    await submit(section);
    expect(createAlertRule).not.toHaveBeenCalled();
    const input = (name: string) => section.querySelector(`input[name="${name}"]`) as HTMLInputElement;
    expect(errorOf(input('name'))).toBe('Enter a name, for example “Depot north”.');
    expect(errorOf(input('lat'))).toBe('Enter a latitude from -90 to 90, in decimal degrees.');
    expect(errorOf(input('lon'))).toBe('Enter a longitude from -180 to 180, in decimal degrees.');
    expect(errorOf(input('radius_m'))).toBe('Enter a radius from 10 to 100 000 metres.');
    expect(errorOf(input('min_confidence'))).toBe('Enter a confidence from 0 to 1, such as 0.6.');
  });

  it('sends a polygon pasted as a GeoJSON object as a Polygon, and draws it first', async () => {
    const createAlertRule = vi.fn(async (_org: string, d: AlertRuleDraft) => rule({ rule_id: 'ar_p', ...d }));
    await show('owner', { webhookEndpoints: async () => [], createAlertRule });
    const section = rules();
    await type('name', 'City centre', section);
    await choose('select[name="environment"]', 'sandbox', section);
    await click(section.querySelector('input[name="area_kind"][value="Polygon"]') as HTMLElement);
    expect(section.querySelector('input[name="lat"]')).toBeNull();
    expect(section.querySelector('form svg')).toBeNull();
    await typeText('polygon', JSON.stringify({ type: 'Polygon', coordinates: [ring] }, null, 2), section);
    expect(section.querySelector('form svg polygon')).not.toBeNull();
    await click(section.querySelector('input[name="enabled"]') as HTMLElement);
    await submit(section);

    expect(createAlertRule).toHaveBeenCalledTimes(1);
    expect(createAlertRule.mock.calls[0][1]).toStrictEqual({
      name: 'City centre',
      environment: 'sandbox',
      area: { type: 'Polygon', coordinates: [ring] },
      types: [],
      min_confidence: 0,
      enabled: false,
    });
    expect(section.querySelector('.alert.success')?.textContent).toContain('“City centre” is made, disabled');
  });

  it('shows what is wrong with the polygon text at its input, and sends nothing', async () => {
    const createAlertRule = vi.fn();
    await show('owner', { webhookEndpoints: async () => [], createAlertRule });
    const section = rules();
    await type('name', 'City centre', section);
    await click(section.querySelector('input[name="area_kind"][value="Polygon"]') as HTMLElement);
    const polygon = section.querySelector('textarea[name="polygon"]') as HTMLTextAreaElement;
    const cases: [string, string][] = [
      ['[[[11.5, 48.1], [11.6, 48.1]', 'This is not JSON.'],
      ['{"type": "Point", "coordinates": [11.5, 48.1]}', 'This is a GeoJSON Point, not a Polygon.'],
      ['[[[11.5, 48.1], [11.6, "48.1"], [11.6, 48.2], [11.5, 48.1]]]', 'Position 1 must be [longitude, latitude]: two numbers.'],
      ['[[[11.5, 48.1], [11.6, 48.1], [11.6, 48.2], [11.5, 48.2]]]', 'The ring must end where it starts: repeat position 0, [11.5, 48.1], at the end.'],
    ];
    for (const [text, problem] of cases) {
      await typeText('polygon', text, section);
      await submit(section);
      expect(polygon.getAttribute('aria-invalid')).toBe('true');
      expect(errorOf(polygon)).toContain(problem);
    }
    expect(createAlertRule).not.toHaveBeenCalled();
    expect(section.querySelector('.alert.error')).toBeNull();
  });

  it("shows the service's refusal of a polygon's position at the polygon's input", async () => {
    const createAlertRule = vi.fn(async () => {
      throw new ApiError(422, 'Please correct the highlighted fields.', [
        { type: 'value_error', loc: ['body', 'area', 'coordinates', 0, 2], msg: 'the ring crosses itself: the edge from position 2 meets the edge from position 0' },
      ]);
    });
    await show('owner', { webhookEndpoints: async () => [], createAlertRule });
    const section = rules();
    await type('name', 'Bow tie', section);
    await click(section.querySelector('input[name="area_kind"][value="Polygon"]') as HTMLElement);
    await typeText('polygon', '[[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]', section);
    await submit(section);
    expect(createAlertRule).toHaveBeenCalledTimes(1);
    const polygon = section.querySelector('textarea[name="polygon"]') as HTMLTextAreaElement;
    expect(polygon.getAttribute('aria-invalid')).toBe('true');
    expect(errorOf(polygon)).toBe('At position 2: the ring crosses itself: the edge from position 2 meets the edge from position 0');
    // At the field alone: no banner, and the text stays to be corrected.
    expect(section.querySelector('.alert.error')).toBeNull();
    expect(polygon.value).toBe('[[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]');
  });

  it("shows the service's refusal of a circle at its input, and a refusal of the whole rule above the form", async () => {
    let fail = new ApiError(422, 'Please correct the highlighted fields.', [
      { type: 'less_than_equal', loc: ['body', 'area', 'radius_m'], msg: 'Input should be less than or equal to 100000' },
    ]);
    const createAlertRule = vi.fn(async () => {
      throw fail;
    });
    await show('owner', { webhookEndpoints: async () => [], createAlertRule });
    const section = rules();
    await type('name', 'Depot', section);
    await type('lat', '48.1', section);
    await type('lon', '11.5', section);
    await type('radius_m', '2500', section);
    await submit(section);
    const radius = section.querySelector('input[name="radius_m"]') as HTMLInputElement;
    expect(errorOf(radius)).toBe('Input should be less than or equal to 100000');

    fail = new ApiError(409, 'The organisation has as many alert rules as it may; delete one first');
    await submit(section);
    expect(createAlertRule).toHaveBeenCalledTimes(2);
    expect(section.querySelector('details .alert.error')?.textContent).toBe('The organisation has as many alert rules as it may; delete one first');
    expect(radius.getAttribute('aria-invalid')).toBeNull();
  });

  it('shows members the rules read-only: no form and no row actions', async () => {
    await show('member', { webhookEndpoints: async () => [hook], alertRules: async () => [depot, city] });
    const section = rules();
    expect(section.textContent).toContain('Only owners can make, change and delete alert rules');
    expect(section.querySelector('form')).toBeNull();
    expect(section.querySelector('details')).toBeNull();
    expect(testid('rule-area-ar_2')?.textContent).toBe('Polygon, 5 points');
    for (const name of ['Edit', 'Disable', 'Enable', 'Delete', 'Make rule']) expect(button(name, section)).toBeUndefined();
    expect(ruleRow('ar_1').querySelectorAll('td')).toHaveLength(5);
  });

  it('lets an owner edit a rule, filled with its settings, sending only what changed', async () => {
    let current = depot;
    const alertRules = vi.fn(async () => [current, city]);
    const updateAlertRule = vi.fn(async (_org: string, _id: string, u: AlertRuleUpdate) => {
      current = { ...current, ...u };
      return current;
    });
    await show('owner', { webhookEndpoints: async () => [], alertRules, updateAlertRule });
    await click(button('Edit', ruleRow('ar_1')));
    const panel = editRule()!;
    expect(panel.querySelector('h4')?.textContent).toBe('Edit “Depot north”');
    expect(document.activeElement).toBe(panel.querySelector('h4'));
    const input = (name: string) => panel.querySelector(`[name="${name}"]`) as HTMLInputElement;
    expect(input('name').value).toBe('Depot north');
    expect((panel.querySelector('select[name="environment"]') as HTMLSelectElement).value).toBe('live');
    expect(input('lat').value).toBe('48.1');
    expect(input('lon').value).toBe('11.5');
    expect(input('radius_m').value).toBe('2500');
    expect(input('min_confidence').value).toBe('0.6');
    // Enabled is the row's action, not the form's.
    expect(input('enabled')).toBeNull();

    // The same values, written otherwise, are no change.
    await type('lat', '48.10', panel);
    await submit(panel);
    expect(updateAlertRule).not.toHaveBeenCalled();
    expect(panel.textContent).toContain('Nothing to change');

    await type('name', 'Depot north (wide)', panel);
    await click(typeBox(panel, 'road_closure'));
    await submit(panel);
    expect(updateAlertRule).toHaveBeenCalledTimes(1);
    const [orgId, ruleId, sent] = updateAlertRule.mock.calls[0];
    expect([orgId, ruleId]).toEqual(['org_1', 'ar_1']);
    expect(sent).toStrictEqual({ name: 'Depot north (wide)', types: ['road_closure'] });
    expect(alertRules).toHaveBeenCalledTimes(2);
    expect(ruleRow('ar_1').textContent).toContain('Depot north (wide)');
    expect(testid('rule-types-ar_1')?.textContent).toBe('Road closure');
    expect(rules().querySelector('.alert.success')?.textContent).toBe('“Depot north (wide)” is saved.');
    expect(editRule()).toBeNull();
    expect(document.activeElement).toBe(button('Edit', ruleRow('ar_1')));
  });

  it("fills a polygon rule's edit form with its coordinates, and sends the area alone when it changes", async () => {
    const updateAlertRule = vi.fn(async (_org: string, _id: string, u: AlertRuleUpdate) => ({ ...city, ...u }));
    await show('owner', { webhookEndpoints: async () => [], alertRules: async () => [depot, city], updateAlertRule });
    await click(button('Edit', ruleRow('ar_2')));
    const panel = editRule()!;
    const polygon = panel.querySelector('textarea[name="polygon"]') as HTMLTextAreaElement;
    expect(polygon.value).toBe(formatCoordinates([ring]));
    expect(typeBox(panel, 'accident').checked).toBe(true);
    expect(typeBox(panel, 'road_closure').checked).toBe(true);
    const moved = ring.map(([lon, lat]) => [lon + 0.1, lat] as [number, number]);
    await typeText('polygon', JSON.stringify(moved), panel);
    await submit(panel);
    expect(updateAlertRule).toHaveBeenCalledWith('org_1', 'ar_2', { area: { type: 'Polygon', coordinates: [moved] } });
  });

  it('lets an owner disable a rule, and asks before deleting one', async () => {
    let list = [depot, city];
    const updateAlertRule = vi.fn(async (_org: string, id: string, u: AlertRuleUpdate) => {
      list = list.map((r) => (r.rule_id === id ? { ...r, ...u } : r));
      return list.find((r) => r.rule_id === id)!;
    });
    const deleteAlertRule = vi.fn(async (_org: string, id: string) => {
      list = list.filter((r) => r.rule_id !== id);
      return { ok: true as const };
    });
    await show('owner', { webhookEndpoints: async () => [], alertRules: async () => list, updateAlertRule, deleteAlertRule });

    await click(button('Disable', ruleRow('ar_1')));
    expect(updateAlertRule).toHaveBeenCalledWith('org_1', 'ar_1', { enabled: false });
    expect(testid('rule-state-ar_1')?.textContent).toBe('Disabled');
    expect(rules().querySelector('.alert.success')?.textContent).toContain('“Depot north” is disabled');
    expect(button('Enable', ruleRow('ar_1'))).toBeDefined();

    await click(button('Delete', ruleRow('ar_2')));
    expect(deleteAlertRule).not.toHaveBeenCalled();
    expect(ruleRow('ar_2').textContent).toContain('Delete “City centre”? Events in its area are no longer announced');
    await click(button('Cancel', ruleRow('ar_2')));
    expect(button('Yes, delete', ruleRow('ar_2'))).toBeUndefined();
    await click(button('Delete', ruleRow('ar_2')));
    await click(button('Yes, delete', ruleRow('ar_2')));
    expect(deleteAlertRule).toHaveBeenCalledTimes(1);
    expect(deleteAlertRule).toHaveBeenCalledWith('org_1', 'ar_2');
    expect(ruleRow('ar_2')).toBeNull();
    expect(rules().querySelector('.alert.success')?.textContent).toBe('“City centre” is deleted.');
  });

  it("shows an alert delivery's rule, and why an alert ended", async () => {
    const ended = delivery({
      delivery_id: 'dl_alert',
      kind: 'alert.ended',
      body: { id: 'dl_alert', kind: 'alert.ended', environment: 'live', data: { event: { event_id: 'ev_9' }, rule: { rule_id: 'ar_1', name: 'Depot north' }, reason: 'left_area' } },
    });
    await show('member', { webhookEndpoints: async () => [hook], webhookDeliveries: async () => [ended, delivered] });
    await click(button('Deliveries', row('we_1')));
    const cell = testid('delivery-rule-dl_alert')!;
    expect(cell.textContent).toBe('Rule “Depot north”: the event left the area');
    expect(testid('delivery-dl_alert')?.textContent).toContain('Alert: event left a rule');
    expect(testid('delivery-rule-dl_ok')).toBeNull();
  });

  it('reads a polygon from a GeoJSON object, a Feature, its coordinates or a bare ring', () => {
    const want = { coordinates: [ring] };
    expect(parsePolygon(JSON.stringify({ type: 'Polygon', coordinates: [ring] }))).toStrictEqual(want);
    expect(parsePolygon(JSON.stringify({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } }))).toStrictEqual(want);
    expect(parsePolygon(JSON.stringify([ring]))).toStrictEqual(want);
    expect(parsePolygon(JSON.stringify(ring))).toStrictEqual(want);
    expect(parsePolygon(formatCoordinates([ring]))).toStrictEqual(want);
    expect(parsePolygon(JSON.stringify([ring, ring]))).toStrictEqual({ problem: 'One ring only: this polygon has 2 (holes are not supported).' });
    expect(parsePolygon('[[[0,0],[1,0],[0,0]]]')).toStrictEqual({ problem: 'A polygon has 4 to 257 positions, the last repeating the first; this one has 3.' });
    expect(parsePolygon('[[[0,0],[1,0],[1,95],[0,0]]]')).toStrictEqual({ problem: 'Position 2 is out of range: longitude -180 to 180, then latitude -90 to 90.' });
    expect(parsePolygon('{"coordinates": []}')).toStrictEqual({ problem: 'This is an object without a GeoJSON type, not a Polygon.' });
    expect(parsePolygon('42')).toHaveProperty('problem');
  });
});

describe('webhook client', () => {
  it('calls the console routes with the methods, paths and bodies of each action', async () => {
    const calls: { method: string; url: string; body: unknown }[] = [];
    const c = new Client({
      base: 'https://api.example',
      token: () => 'ses_abc',
      onUnauthorized: () => {},
      fetch: (async (url: string, init: RequestInit) => {
        calls.push({ method: init.method!, url, body: init.body === undefined ? undefined : JSON.parse(init.body as string) });
        return new Response('{}', { status: 200, headers: { 'Content-Type': 'application/json' } });
      }) as typeof fetch,
    });
    await c.webhookEndpoints('org_1');
    await c.createWebhookEndpoint('org_1', { url: 'https://h.example/x', kinds: ['event.confirmed'], description: 'd' });
    await c.updateWebhookEndpoint('org_1', 'we/1', { enabled: false });
    await c.deleteWebhookEndpoint('org_1', 'we_1');
    await c.rotateWebhookSecret('org_1', 'we_1');
    await c.webhookDeliveries('org_1', 'we_1');
    await c.redeliverWebhook('org_1', 'we_1', 'dl_1');
    const area = { type: 'Circle' as const, lat: 48.1, lon: 11.5, radius_m: 500 };
    await c.alertRules('org_1');
    await c.createAlertRule('org_1', { name: 'Depot', environment: 'live', area });
    await c.alertRule('org_1', 'ar/1');
    await c.updateAlertRule('org_1', 'ar_1', { enabled: false });
    await c.deleteAlertRule('org_1', 'ar_1');
    const o = 'https://api.example/console/orgs/org_1/webhooks';
    const a = 'https://api.example/console/orgs/org_1/alert-rules';
    expect(calls).toEqual([
      { method: 'GET', url: o, body: undefined },
      { method: 'POST', url: o, body: { url: 'https://h.example/x', kinds: ['event.confirmed'], description: 'd' } },
      { method: 'PATCH', url: o + '/we%2F1', body: { enabled: false } },
      { method: 'DELETE', url: o + '/we_1', body: undefined },
      { method: 'POST', url: o + '/we_1/rotate', body: undefined },
      { method: 'GET', url: o + '/we_1/deliveries?limit=50', body: undefined },
      { method: 'POST', url: o + '/we_1/deliveries/dl_1/redeliver', body: undefined },
      { method: 'GET', url: a, body: undefined },
      { method: 'POST', url: a, body: { name: 'Depot', environment: 'live', area } },
      { method: 'GET', url: a + '/ar%2F1', body: undefined },
      { method: 'PATCH', url: a + '/ar_1', body: { enabled: false } },
      { method: 'DELETE', url: a + '/ar_1', body: undefined },
    ]);
  });
});
