import { describe, expect, it, vi } from 'vitest';
import { ApiError, Client, type WebhookDelivery, type WebhookEndpointDraft, type WebhookEndpointPublic } from './api';
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

async function show(role: 'owner' | 'member', client: Partial<Client>) {
  await renderPage((org) => <Webhooks org={org} />, role, client);
}

function row(endpointId: string): HTMLElement {
  return mount.el.querySelector(`[data-testid="webhook-${endpointId}"]`) as HTMLElement;
}

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
    // No endpoint yet: the form is open, with every kind checked.
    expect(mount.el.querySelector('details')?.open).toBe(true);
    expect(mount.el.textContent).toContain('No endpoints yet.');
    for (const k of ['event.confirmed', 'event.denied', 'event.merged', 'event.ended', 'event.expired']) expect(checkbox(k).checked).toBe(true);

    await type('url', 'https://hooks.example.org/roadevents');
    await type('description', 'Dispatch');
    await click(checkbox('event.denied'));
    await click(checkbox('event.expired'));
    await submit();

    expect(createWebhookEndpoint).toHaveBeenCalledTimes(1);
    const [orgId, sent] = createWebhookEndpoint.mock.calls[0];
    expect(orgId).toBe('org_1');
    expect(sent).toStrictEqual({ url: 'https://hooks.example.org/roadevents', kinds: ['event.confirmed', 'event.merged', 'event.ended'], description: 'Dispatch' });

    const region = secretRegion()!;
    expect(region).not.toBeNull();
    expect(testid('webhook-secret')?.textContent).toBe('whsec_s3cr3t');
    expect(region.querySelector('.alert.warning')?.textContent).toContain('Copy this secret now');
    expect(button('Copy secret', region)).toBeDefined();
    expect(region.textContent).toContain('docs/webhooks.md §2');
    expect(mount.el.querySelector('.alert.success')?.textContent).toContain('“Dispatch” is added');
    // The list is read again and shows the new endpoint.
    expect(webhookEndpoints).toHaveBeenCalledTimes(2);
    expect(testid('kinds-we_new')?.textContent).toBe('Confirmed, Merged, Ended');
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
    for (const k of ['event.confirmed', 'event.denied', 'event.merged', 'event.ended', 'event.expired']) await click(checkbox(k));
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
    const o = 'https://api.example/console/orgs/org_1/webhooks';
    expect(calls).toEqual([
      { method: 'GET', url: o, body: undefined },
      { method: 'POST', url: o, body: { url: 'https://h.example/x', kinds: ['event.confirmed'], description: 'd' } },
      { method: 'PATCH', url: o + '/we%2F1', body: { enabled: false } },
      { method: 'DELETE', url: o + '/we_1', body: undefined },
      { method: 'POST', url: o + '/we_1/rotate', body: undefined },
      { method: 'GET', url: o + '/we_1/deliveries?limit=50', body: undefined },
      { method: 'POST', url: o + '/we_1/deliveries/dl_1/redeliver', body: undefined },
    ]);
  });
});
