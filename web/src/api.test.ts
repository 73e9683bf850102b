import { describe, expect, it, vi } from 'vitest';
import { ApiError, Client, formatWait, parseRetryAfter } from './api';

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });
}

function client(res: Response | (() => Promise<Response>), token: string | null = 'ses_abc') {
  const calls: { url: string; init: RequestInit }[] = [];
  const onUnauthorized = vi.fn();
  const c = new Client({
    base: 'https://api.example',
    token: () => token,
    onUnauthorized,
    fetch: (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return typeof res === 'function' ? res() : res;
    }) as typeof fetch,
  });
  return { c, calls, onUnauthorized };
}

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('the call succeeded; want an ApiError');
}

describe('Client requests', () => {
  it('sends the session as a bearer token, never in the URL', async () => {
    const { c, calls } = client(json(200, []));
    await c.keys('org_1');
    expect(calls[0].url).toBe('https://api.example/console/orgs/org_1/keys?include_revoked=true');
    expect((calls[0].init.headers as Record<string, string>).Authorization).toBe('Bearer ses_abc');
    expect(calls[0].url).not.toContain('ses_abc');
  });

  it('lists the user\'s organisations with GET /console/orgs, in the server\'s order', async () => {
    const list = [
      { org_id: 'org_b', name: 'Alpha', plan: 'free', created_at: '2026-11-20T10:00:00Z', role: 'owner' },
      { org_id: 'org_a', name: 'Bravo', plan: 'team', created_at: '2026-11-19T10:00:00Z', role: 'member' },
    ];
    const { c, calls } = client(json(200, list));
    const got = await c.orgs();
    expect(calls[0].url).toBe('https://api.example/console/orgs');
    expect(calls[0].init.method).toBe('GET');
    expect((calls[0].init.headers as Record<string, string>).Authorization).toBe('Bearer ses_abc');
    expect(got).toEqual(list);
  });

  it('signs out when the organisation list answers 401', async () => {
    const { c, onUnauthorized } = client(json(401, { detail: 'Session expired.' }));
    const err = await failure(c.orgs());
    expect(err.status).toBe(401);
    expect(onUnauthorized).toHaveBeenCalledTimes(1);
  });

  it('sends JSON bodies and query parameters', async () => {
    const { c, calls } = client(json(201, { key: 'svc_x', api_key: {} }));
    await c.issueKey('org 1', 'Fleet app', 'sandbox', '123456');
    expect(calls[0].url).toBe('https://api.example/console/orgs/org%201/keys');
    expect(calls[0].init.method).toBe('POST');
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ label: 'Fleet app', environment: 'sandbox', totp_code: '123456' });
  });

  it('deletes the account and an organisation with DELETE and a JSON body, the code only when given', async () => {
    const { c, calls } = client(async () => json(200, { ok: true }));
    await c.deleteMe('123456');
    await c.deleteMe();
    await c.deleteOrg('org 1', '654321');
    await c.deleteOrg('org_2');
    expect(calls.map((x) => `${x.init.method} ${x.url}`)).toEqual([
      'DELETE https://api.example/console/auth/me',
      'DELETE https://api.example/console/auth/me',
      'DELETE https://api.example/console/orgs/org%201',
      'DELETE https://api.example/console/orgs/org_2',
    ]);
    expect(calls.map((x) => JSON.parse(x.init.body as string))).toEqual([{ totp_code: '123456' }, {}, { totp_code: '654321' }, {}]);
    for (const x of calls) expect((x.init.headers as Record<string, string>)['Content-Type']).toBe('application/json');
  });

  it('sends the temp token instead of the session on verify-totp', async () => {
    const { c, calls } = client(json(200, { token: 'ses_new', expires_at: '', user: {} }));
    await c.verifyTotp('tmp_xyz', '123456');
    expect((calls[0].init.headers as Record<string, string>).Authorization).toBe('Bearer tmp_xyz');
  });

  it('sends no session on request-code', async () => {
    const { c, calls } = client(json(200, { method: 'email' }));
    await c.requestCode('a@example.com');
    expect((calls[0].init.headers as Record<string, string>).Authorization).toBeUndefined();
  });
});

describe('Client errors', () => {
  const cases: { name: string; res: () => Response; status: number; message: RegExp }[] = [
    { name: 'handler detail is the message', res: () => json(409, { detail: 'The live key cap of the free plan is reached.' }), status: 409, message: /live key cap/ },
    { name: 'no body gets a plain message', res: () => new Response(null, { status: 404 }), status: 404, message: /not found/i },
    { name: 'validation body asks to correct fields', res: () => json(422, { detail: [{ type: 'missing', loc: ['body', 'label'], msg: 'Field required' }] }), status: 422, message: /correct/ },
    { name: 'unknown status still says something', res: () => new Response('oops', { status: 502 }), status: 502, message: /502/ },
  ];
  for (const tc of cases) {
    it(tc.name, async () => {
      const { c } = client(tc.res());
      const err = await failure(c.org('org_1'));
      expect(err.status).toBe(tc.status);
      expect(err.message).toMatch(tc.message);
    });
  }

  it('maps 422 locs to fields', async () => {
    const { c } = client(
      json(422, {
        detail: [
          { type: 'string_too_long', loc: ['body', 'label'], msg: 'String should have at most 120 characters' },
          { type: 'enum', loc: ['body', 'environment'], msg: "Input should be 'live' or 'sandbox'" },
          { type: 'enum', loc: ['query', 'window'], msg: 'bad window' },
        ],
      }),
    );
    const err = await failure(c.issueKey('org_1', 'x'.repeat(121), 'live', null));
    expect(err.fieldErrors()).toEqual({
      label: 'String should have at most 120 characters',
      environment: "Input should be 'live' or 'sandbox'",
    });
    expect(err.fieldErrors('query')).toEqual({ window: 'bad window' });
  });

  it('reads the wait of a 429 from Retry-After', async () => {
    const { c } = client(json(429, { detail: 'Too many code requests.' }, { 'Retry-After': '120' }));
    const err = await failure(c.requestCode('a@example.com'));
    expect(err.status).toBe(429);
    expect(err.retryAfter).toBe(120);
    expect(err.message).toBe('Too many attempts. Try again in 2 minutes.');
  });

  it('says try later on a 429 without Retry-After', async () => {
    const { c } = client(json(429, { detail: 'x' }));
    const err = await failure(c.createOrg('Acme'));
    expect(err.retryAfter).toBeNull();
    expect(err.message).toMatch(/later/);
  });

  it('signs out on a session 401', async () => {
    const { c, onUnauthorized } = client(json(401, { detail: 'Session expired.' }));
    const err = await failure(c.me());
    expect(err.status).toBe(401);
    expect(onUnauthorized).toHaveBeenCalledTimes(1);
  });

  it('does not sign out on a 401 of the TOTP step (a stale temp token)', async () => {
    const { c, onUnauthorized } = client(json(401, { detail: 'The sign-in step has expired.' }));
    await failure(c.verifyTotp('tmp_old', '123456'));
    expect(onUnauthorized).not.toHaveBeenCalled();
  });

  it('does not sign out on other errors', async () => {
    const { c, onUnauthorized } = client(json(403, { detail: 'Owners only.' }));
    await failure(c.revokeKey('org_1', 'key_1'));
    expect(onUnauthorized).not.toHaveBeenCalled();
  });

  it('turns a network failure into status 0', async () => {
    const { c } = client(() => Promise.reject(new TypeError('Failed to fetch')));
    const err = await failure(c.plans());
    expect(err.status).toBe(0);
    expect(err.message).toMatch(/cannot be reached/);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-21T10:00:00Z');
  const cases: [string, string | null, number | null][] = [
    ['seconds', '30', 30],
    ['zero waits at least a second', '0', 1],
    ['HTTP date', 'Sat, 21 Nov 2026 10:01:30 GMT', 90],
    ['past date', 'Sat, 21 Nov 2026 09:00:00 GMT', 1],
    ['missing', null, null],
    ['garbage', 'soon', null],
  ];
  for (const [name, v, want] of cases) {
    it(name, () => expect(parseRetryAfter(v, now)).toBe(want));
  }
  it('formats waits', () => {
    expect(formatWait(1)).toBe('1 second');
    expect(formatWait(45)).toBe('45 seconds');
    expect(formatWait(61)).toBe('2 minutes');
    expect(formatWait(3600)).toBe('1 hour');
    expect(formatWait(5400)).toBe('2 hours');
  });
});
