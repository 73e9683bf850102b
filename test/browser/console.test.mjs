// The console in a real browser: a new user opens the privacy notice from the sign-in page's
// footer, signs up through the outbox,
// creates an organisation, turns on TOTP with a code computed from the displayed secret, signs
// in again with a recovery code, issues a sandbox key and runs the first call the console shows
// with it (curl, as pasted into a shell), sees usage rise after calls with it,
// invites a colleague who accepts in a second browser context (a phone-sized one),
// follows an event it publishes on the Road page (live on the map, inspected, closed), on a
// desktop and on a phone-sized screen, and revokes the key. The colleague then signs in on a third, fresh browser context and finds the
// organisation through the switcher (the list is the server's, GET /console/orgs), which drops
// it once they are removed, and drops another once they leave it. At the end the owner, refused
// while the last owner of an organisation with other members, deletes the second organisation,
// then the account, whose address then signs up afresh. Apart, the API reference at
// /docs renders the served /openapi.json with nothing fetched from elsewhere. Every main page
// is saved to test/browser/screenshots/.
//
// Run: cd web && npm ci && npm run browser-test (scripts/test.sh does, after go test).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { launch, Outbox, screenshots, startServer, TotpDevice, totp } from './harness.mjs';

const OWNER = 'owner@example.test';
const COLLEAGUE = 'colleague@example.test';
const ORG = 'Northwind Fleet';

let server;
let browser;
let outbox;
// upstream serves a CIFS feed of two hazards on loopback, for the Feeds page.
let upstream;
const CIFS = JSON.stringify({
  incidents: ['h1 48.1000 11.5000', 'h2 48.1100 11.5100'].map((s) => {
    const [id, lat, lon] = s.split(' ');
    return { incident: { id, type: 'HAZARD', subtype: 'HAZARD_ON_ROAD_OBJECT', street: 'B17', polyline: `${lat} ${lon} ${lat}3 ${lon}` } };
  }),
});

before(async () => {
  rmSync(screenshots, { recursive: true, force: true });
  mkdirSync(screenshots, { recursive: true });
  server = await startServer();
  outbox = new Outbox(server.data);
  upstream = createServer((_, res) => res.end(CIFS));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  upstream?.close();
});

/** shot saves a full-page screenshot of a main page. */
async function shot(page, name) {
  await page.screenshot({ path: join(screenshots, name + '.png'), fullPage: true });
}

/**
 * signIn goes through the e-mailed code with the keyboard alone: each step puts the focus in
 * its input and Enter submits. It stops where the code is accepted.
 */
async function signIn(page, email) {
  await typeWhenFocused(page, page.getByLabel('E-mail address'), email);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Check your e-mail' }).waitFor();
  await typeWhenFocused(page, page.getByLabel('Code', { exact: true }), await outbox.code(email));
  await page.keyboard.press('Enter');
}

/**
 * typeWhenFocused types text once the page has put the focus in the input: typing as soon as
 * the input exists lost the first keys when the focus came a moment later.
 */
async function typeWhenFocused(page, input, text) {
  await input.waitFor();
  await page.waitForFunction((el) => el === document.activeElement, await input.elementHandle());
  await page.keyboard.type(text);
}

/** signInStart asks for a code and waits for the code step. */
async function signInStart(page, email) {
  await page.getByLabel('E-mail address').fill(email);
  await page.getByRole('button', { name: 'Send me a code' }).click();
  await page.getByRole('heading', { name: 'Check your e-mail' }).waitFor();
}

/** switcherOptions lists the labels of the organisation switcher, in its order. */
async function switcherOptions(page) {
  return (await page.getByRole('combobox', { name: 'Organisation' }).locator('option').allTextContents()).map((s) => s.trim());
}

/**
 * watchCSP records, in violations, every Content-Security-Policy violation of the context's
 * pages: the browser's securitypolicyviolation events, and its console reports of them.
 */
async function watchCSP(ctx, who, violations) {
  await ctx.exposeBinding('reportCSPViolation', (_, v) => violations.push(`${who}: ${v}`));
  await ctx.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      window.reportCSPViolation(`${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`),
    );
  });
  ctx.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) violations.push(`${who}: ${msg.text()}`);
  });
}

/**
 * runCurl runs a command shown by the console in a shell, as a user pasting it would, and
 * returns the answer's status and body. curl exits non-zero only when no answer came.
 */
function runCurl(cmd) {
  const out = execFileSync('sh', ['-c', `${cmd} -sS -w '\\n%{http_code}'`], { encoding: 'utf8', timeout: 30000 });
  const cut = out.lastIndexOf('\n');
  return { status: Number(out.slice(cut + 1)), body: out.slice(0, cut) };
}

/** v1 calls the public interface with an API key. */
async function v1(method, path, key, body) {
  const res = await fetch(server.base + path, {
    method,
    headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.status;
}

/** v1json calls the public interface with an API key and returns the status and the JSON body. */
async function v1json(method, path, key, body) {
  const res = await fetch(server.base + path, {
    method,
    headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/** percent is a confidence as the Road page's inspector shows it. */
const percent = (c) => `${Math.round(c * 100)}%`;

test('RFC 6238 test vector', () => {
  // Secret "12345678901234567890", T = 59 s: 94287082, whose last six digits are the code.
  assert.equal(totp('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 1), '287082');
});

test('the console, from sign-up to a revoked key', async (t) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.base });
  ctx.setDefaultTimeout(10000);
  const page = await ctx.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // The console runs under a strict Content-Security-Policy (docs/api.md §11.3): nothing it does
  // on any page of this walk may be refused by it.
  const cspViolations = [];
  await watchCSP(ctx, 'owner', cspViolations);
  let device;
  let recovery;
  let rawKey;
  let orgUrl;
  // The colleague's desktop browser, opened fresh after the invitation was accepted on the phone.
  let pageC;
  // The steps build on each other: after a failure the rest are skipped, not failed again.
  let broken = false;
  const step = (name, fn) =>
    t.test(name, { skip: broken && 'an earlier step failed' }, async () => {
      try {
        await fn();
      } catch (e) {
        broken = true;
        await shot(page, 'failed-' + name.replace(/\W+/g, '-').slice(0, 40)).catch(() => {});
        throw e;
      }
    });

  await step('a new user signs up with the code from the outbox', async () => {
    const res = await page.goto(server.base + '/app/');
    const csp = res.headers()['content-security-policy'] ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
      assert.ok(csp.includes(directive), `Content-Security-Policy ${JSON.stringify(csp)} lacks ${directive}`);
    }
    assert.ok(!csp.includes('unsafe-'), `Content-Security-Policy ${JSON.stringify(csp)} allows something unsafe`);
    await page.getByRole('heading', { name: 'Sign in to the road events console' }).waitFor();
    await shot(page, '01-sign-in');
    // The footer of every page, this one included, links the privacy notice (docs/privacy.md),
    // which opens without a session; back, the sign-in goes on.
    await page.getByRole('contentinfo').getByRole('link', { name: 'Privacy' }).click();
    await page.getByRole('heading', { name: '§6 Erasing an account, deleting an organisation', level: 2 }).waitFor();
    await page.locator('article.doc table').first().waitFor();
    assert.equal(new URL(page.url()).pathname, '/app/privacy');
    await shot(page, '01b-privacy');
    await page.goBack();
    await page.getByRole('heading', { name: 'Sign in to the road events console' }).waitFor();
    await page.getByLabel('E-mail address').fill(OWNER);
    await page.getByRole('button', { name: 'Send me a code' }).click();
    await page.getByRole('heading', { name: 'Check your e-mail' }).waitFor();
    // Locally the page says where the code is.
    await page.getByText('./data/outbox').waitFor();
    await shot(page, '02-enter-code');
    // A wrong code is refused next to the form, and the right one then works.
    await page.getByLabel('Code', { exact: true }).fill('000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('.alert.error').waitFor();
    await page.getByLabel('Code', { exact: true }).fill(await outbox.code(OWNER));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Create an organisation' }).waitFor();
    await shot(page, '03-create-organisation');
  });

  await step('a capped code request shows the wait (429 Retry-After)', async () => {
    // docs/api.md §10.3: 5 code requests per address per 15 minutes; the sixth is 429.
    const other = await ctx.newPage();
    await other.goto(server.base + '/app/');
    await signInStart(other, 'capped@example.test');
    for (let i = 0; i < 4; i++) {
      await other.getByRole('button', { name: 'Send a new code' }).click();
      await other.getByText('A new code is on its way.').waitFor();
    }
    await other.getByRole('button', { name: 'Send a new code' }).click();
    await other.getByRole('alert').getByText(/^Too many attempts\. Try again in \d+ (minutes?|seconds?)\.$/).waitFor();
    await shot(other, '03b-code-request-capped');
    await other.close();
  });

  await step('creates an organisation', async () => {
    // An empty name is refused by the form before any request.
    await page.getByRole('button', { name: 'Create organisation' }).click();
    await page.getByText('A name has 1 to 80 characters.').waitFor();
    await page.getByLabel('Organisation name').fill(ORG);
    await page.getByRole('button', { name: 'Create organisation' }).click();
    await page.getByRole('heading', { name: ORG, level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Is our integration alive?' }).waitFor();
    await page.getByText('No live traffic yet').waitFor();
    orgUrl = page.url().replace(/\/overview$/, '');
    assert.match(orgUrl, /\/app\/orgs\/[^/]+$/);
    await shot(page, '04-overview-no-traffic');
  });

  await step('enables TOTP with a code computed from the displayed secret', async () => {
    await page.getByRole('link', { name: OWNER }).click();
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    const secret = (await page.getByTestId('totp-secret').textContent()).trim();
    assert.match(secret, /^[A-Z2-7]+=*$/);
    await page.locator('.qr svg').waitFor();
    await shot(page, '05-totp-setup');
    device = new TotpDevice(secret);
    await page.getByLabel('Code from the app').fill(await device.code());
    await page.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    const codes = page.getByTestId('recovery-codes').locator('li');
    await codes.first().waitFor();
    assert.equal(await codes.count(), 10);
    recovery = (await codes.first().textContent()).trim();
    await page.getByRole('button', { name: 'Copy codes' }).click();
    await page.getByText('Copied').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download codes' }).click()]);
    const saved = await download.path();
    const text = readFileSync(saved, 'utf8');
    assert.ok(text.includes(recovery), 'the downloaded file holds the codes');
    await shot(page, '06-recovery-codes');
    await page.getByRole('button', { name: 'I have saved them' }).click();
    await page.getByText('Recovery codes left:').waitFor();
    assert.equal(await page.getByTestId('recovery-codes').count(), 0, 'the recovery codes are shown once');
  });

  await step('signs in again through the TOTP challenge with a recovery code', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the road events console' }).waitFor();
    await signIn(page, OWNER);
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await page.getByRole('button', { name: 'Use a recovery code instead' }).click();
    await shot(page, '07-totp-challenge');
    await page.getByLabel('Recovery code').fill(recovery);
    await page.getByRole('button', { name: 'Verify' }).click();
    // Back on the page the user was on, then to the organisation last opened.
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await page.getByText('Recovery codes left: 9 of 10.').waitFor();
    await page.getByRole('link', { name: 'Road events console' }).click();
    await page.getByRole('heading', { name: ORG, level: 1 }).waitFor();
  });

  await step('issues a sandbox key with a TOTP step-up, shown once', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByText('No keys yet.').waitFor();
    const details = page.locator('details', { hasText: 'Issue a new key' });
    if (!(await details.evaluate((d) => d.open))) await page.getByText('Issue a new key').click();
    // Without the label the field says so, next to it.
    await page.getByRole('button', { name: 'Issue key' }).click();
    await page.getByText('Give the key a label').waitFor();
    await page.getByLabel('Label').fill('Fleet app (test)');
    await page.getByRole('radio', { name: /Sandbox/ }).check();
    await page.getByLabel('Authenticator code').fill(await device.code());
    await page.getByRole('button', { name: 'Issue key' }).click();
    rawKey = (await page.getByTestId('raw-key').textContent()).trim();
    assert.match(rawKey, /^svc_[A-Za-z0-9]{43}$/);
    await page.getByText('It is shown only once').waitFor();
    const row = page.locator('tbody tr', { hasText: 'Fleet app (test)' });
    await row.waitFor();
    assert.match(await row.textContent(), /sandbox/);
    assert.ok((await row.textContent()).includes(rawKey.slice(0, 8)), 'the list shows the prefix');
    assert.ok(!(await row.textContent()).includes(rawKey), 'the list never shows the raw key');
    await shot(page, '08-key-issued');

    // The first call shown with the key runs as pasted into a shell: the publish command
    // answers 201, and the query command then lists the event it published.
    const publish = (await page.getByTestId('curl-publish').textContent()).trim();
    const query = (await page.getByTestId('curl-query').textContent()).trim();
    for (const cmd of [publish, query]) {
      assert.ok(cmd.includes(rawKey), `the command carries the new key:\n${cmd}`);
      assert.ok(cmd.includes(`'${server.base}/v1/events`), `the command calls this service:\n${cmd}`);
    }
    assert.ok(publish.includes("-H 'Content-Type: application/json'"), `the publish command declares its JSON body:\n${publish}`);
    const published = runCurl(publish);
    assert.equal(published.status, 201, `the publish command answered ${published.status}: ${published.body}`);
    const ev = JSON.parse(published.body);
    const around = runCurl(query);
    assert.equal(around.status, 200, `the query command answered ${around.status}: ${around.body}`);
    assert.ok(JSON.parse(around.body).some((e) => e.event_id === ev.event_id), `the query lists ${ev.event_id}: ${around.body}`);
    // The way to the rest of the interface.
    assert.equal(await page.getByRole('link', { name: 'the API reference' }).getAttribute('href'), '/docs');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await page.getByTestId('raw-key').count(), 0);
  });

  await step('sees usage rise after calls made with the key', async () => {
    const ev = { type: 'object_on_road', lat: 48.85661, lon: 2.35222, description: 'Browser test' };
    assert.equal(await v1('POST', '/v1/events', rawKey, ev), 201);
    for (let i = 0; i < 3; i++) assert.equal(await v1('GET', '/v1/events?lat=48.8566&lon=2.3522&radius=500', rawKey), 200);

    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage', level: 2 }).waitFor();
    await page.getByRole('button', { name: 'Sandbox' }).click();
    await page.getByRole('button', { name: '7 days' }).click();
    // The meter writes its counts every few seconds (shared/metering): refresh until they show.
    const reads = page.getByTestId('total-reads');
    const deadline = Date.now() + 30000;
    for (;;) {
      await page.getByRole('heading', { name: /^Totals, .* \(sandbox\)$/ }).waitFor();
      if (Number((await reads.textContent()).replace(/\D/g, '')) >= 3) break;
      assert.ok(Date.now() < deadline, `sandbox reads still ${await reads.textContent()} after 30 s`);
      await new Promise((r) => setTimeout(r, 1000));
      await page.getByRole('button', { name: 'Refresh' }).click();
    }
    assert.ok(Number((await page.getByTestId('total-publishes').textContent()).replace(/\D/g, '')) >= 1);
    await page.locator('.chart canvas').first().waitFor();
    await shot(page, '09-usage');
    // The other windows hold today's counts too.
    for (const w of ['30 days', '90 days']) {
      await page.getByRole('button', { name: w }).click();
      await page.getByRole('button', { name: w, pressed: true }).waitFor();
      await page.getByRole('heading', { name: /^Totals, .* \(sandbox\)$/ }).waitFor();
      await page.waitForFunction(() => Number(document.querySelector('[data-testid="total-reads"]')?.textContent?.replace(/\D/g, '')) >= 3);
    }

    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('button', { name: 'Sandbox' }).click();
    await page.getByText(/Last call .* with key Fleet app \(test\)/).waitFor();
    await shot(page, '10-vitality');

    // The quality panel (docs/network.md §2): a publisher with no decided events is new.
    await page.getByRole('link', { name: 'Quality' }).click();
    await page.getByRole('heading', { name: 'Publisher quality', level: 2 }).waitFor();
    assert.equal(await page.getByTestId('band-sandbox').textContent(), 'New');
    await shot(page, '10b-quality');
  });

  await step('registers a feed, which the service polls into events', async () => {
    // docs/interop.md §13: an owner registers a CIFS feed; the in-process poller reads it
    // within a tick (15 s), and the page shows what the poll did.
    await page.getByRole('link', { name: 'Feeds' }).click();
    await page.getByRole('heading', { name: 'Feeds', level: 2 }).waitFor();
    await page.getByLabel('Name (optional)').fill('District 7 hazards');
    await page.getByLabel('URL').fill('ftp://127.0.0.1/feed.json');
    await page.getByRole('button', { name: 'Register feed' }).click();
    await page.locator('input[name="url"][aria-invalid="true"]').waitFor();
    await page.getByLabel('URL').fill(`http://127.0.0.1:${upstream.address().port}/hazards.json`);
    await page.getByLabel('Format').selectOption('cifs');
    await page.getByRole('button', { name: 'Register feed' }).click();
    await page.getByText('“District 7 hazards” is registered').waitFor();
    const row = page.locator('tr', { hasText: 'District 7 hazards' });
    const deadline = Date.now() + 40000;
    while (!/2 new/.test((await row.textContent()) ?? '')) {
      assert.ok(Date.now() < deadline, `the feed is still ${await row.textContent()} after 40 s`);
      await new Promise((r) => setTimeout(r, 1000));
      await page.getByRole('button', { name: 'Refresh' }).click();
    }
    assert.match(await row.textContent(), /OK/);
    await shot(page, '10c-feeds');
    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByRole('button', { name: 'Resume' }).waitFor();
  });

  await step('adds a webhook endpoint and sees its secret once', async () => {
    // docs/webhooks.md §4: the signing secret is shown in the answer only.
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 2 }).waitFor();
    await page.getByLabel('URL').fill(`http://127.0.0.1:${upstream.address().port}/hooks`);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = page.getByTestId('webhook-secret');
    await secret.waitFor();
    assert.match(await secret.textContent(), /^whsec_[0-9a-f]{64}$/);
    await shot(page, '10d-webhook-secret');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await secret.waitFor({ state: 'detached' });
    await page.reload();
    await page.getByRole('heading', { name: 'Webhooks', level: 2 }).waitFor();
    assert.ok(!(await page.content()).includes('whsec_'), 'the secret is shown again after a reload');
  });

  await step('makes a circle alert rule, sees it listed and disables it', async () => {
    // docs/webhooks.md §5: below the endpoints; the one added above receives the alert kinds
    // (a new endpoint has every kind checked), so no warning says the alerts reach no one.
    const rules = page.getByRole('region', { name: 'Alert rules' });
    await rules.getByRole('heading', { name: 'Alert rules', level: 3 }).waitFor();
    await rules.getByText('No alert rules yet.').waitFor();
    assert.equal(await rules.locator('.alert.warning').count(), 0, 'an enabled endpoint receives the alert kinds');
    await rules.getByText('New alert rule', { exact: true }).click();
    await rules.getByLabel('Name', { exact: true }).fill('District 7 alerts');
    await rules.getByLabel('Latitude').fill('48.1');
    await rules.getByLabel('Longitude').fill('11.5');
    await rules.getByLabel('Radius (metres)').fill('2500');
    await rules.getByLabel('Object on road').check();
    await rules.getByLabel('Minimum confidence').fill('0.25');
    await rules.getByRole('button', { name: 'Make rule' }).click();
    await rules.getByText('“District 7 alerts” is made').waitFor();
    const row = rules.locator('tbody tr', { hasText: 'District 7 alerts' });
    await row.waitFor();
    assert.match(await row.textContent(), /Circle 2\.5 km around 48\.1000, 11\.5000/);
    assert.match(await row.textContent(), /Object on road/);
    assert.match(await row.textContent(), /25%/);
    await row.getByText('Enabled', { exact: true }).waitFor();
    await row.getByRole('button', { name: 'Disable' }).click();
    await rules.getByText('“District 7 alerts” is disabled').waitFor();
    await row.getByRole('button', { name: 'Enable' }).waitFor();
    await row.getByText('Disabled', { exact: true }).waitFor();
    await shot(page, '10f-alert-rule');
  });

  // The event the Road steps publish, follow and close.
  let roadEvent;

  await step('the Road page: an event published with the key appears live on the map and in our list', async () => {
    // docs/console.md §5: the page reads the area around the centre this browser remembers for
    // the organisation, then the stream keeps it current without a reload.
    const orgId = orgUrl.split('/').pop();
    await page.evaluate(([k, v]) => localStorage.setItem(k, v), [`roadevents.road-centre.${orgId}`, JSON.stringify({ lat: 52.52, lon: 13.405, zoom: 13 })]);
    await page.getByRole('link', { name: 'Road', exact: true }).click();
    await page.getByRole('heading', { name: 'Road', level: 2, exact: true }).waitFor();
    await page.getByTestId('road-map').locator('.leaflet-map-pane').waitFor({ state: 'attached' });
    const live = page.getByTestId('live-status').filter({ hasText: /^Live$/ });
    await live.waitFor();
    // The key is a sandbox key: read as sandbox, on a stream of its own.
    const reopened = page.waitForRequest((r) => r.url().includes('/v1/stream?'));
    await page.getByRole('button', { name: 'Sandbox' }).click();
    assert.match((await reopened).url(), /lat=52\.52&lon=13\.405&radius=5000&ticket=svc_st_/);
    await live.waitFor();
    const published = await v1json('POST', '/v1/events', rawKey, { type: 'accident', lat: 52.52, lon: 13.405, description: 'Road page test' });
    assert.equal(published.status, 201, `publishing answered ${published.status}: ${JSON.stringify(published.body)}`);
    roadEvent = published.body;
    await page.locator(`path.road-event.ev-${roadEvent.event_id}`).waitFor({ timeout: 2000 });
    assert.equal(await page.locator(`path.ev-${roadEvent.event_id}`).getAttribute('data-event-id'), roadEvent.event_id);
    await page.getByTestId('own-event-' + roadEvent.event_id).waitFor();
    await shot(page, '10g-road');
  });

  await step('the Road inspector shows the event, and its confidence follows a confirmation', async () => {
    const id = roadEvent.event_id;
    await page.locator(`path.ev-${id}`).click();
    const inspector = page.getByTestId('inspector');
    await inspector.getByRole('heading', { name: /Accident/ }).waitFor();
    const confidence = page.getByTestId('inspector-confidence');
    assert.equal(await confidence.textContent(), percent(roadEvent.confidence));
    await inspector.getByTestId('evidence').waitFor();
    // The publisher's own organisation may signal its event (docs/api.md §4.1 rule 6); a new
    // reporter's confirmation raises the confidence.
    const confirmed = await v1json('POST', `/v1/events/${id}/signals`, rawKey, { action: 'confirm', reporter_token: 'road-page-car' });
    assert.equal(confirmed.status, 200, `the confirmation answered ${confirmed.status}: ${JSON.stringify(confirmed.body)}`);
    assert.notEqual(percent(confirmed.body.confidence), percent(roadEvent.confidence));
    await confidence.filter({ hasText: percent(confirmed.body.confidence) }).waitFor({ timeout: 2000 });
    await page.getByTestId('inspector-tallies').filter({ hasText: /^1 confirm/ }).waitFor();
    await page.getByTestId('own-event-' + id).getByText(percent(confirmed.body.confidence)).waitFor();
    await shot(page, '10h-road-inspector');
  });

  await step('an owner closes the event from the Road inspector: it leaves the map and the list', async () => {
    const id = roadEvent.event_id;
    const inspector = page.getByTestId('inspector');
    await inspector.getByRole('button', { name: 'Close event' }).click();
    await inspector.getByRole('button', { name: 'Yes, close it' }).click();
    await inspector.getByText('The event is closed').waitFor();
    await page.locator(`path.ev-${id}`).waitFor({ state: 'detached' });
    await page.getByTestId('own-event-' + id).waitFor({ state: 'detached' });
    assert.equal(await page.getByTestId('inspector-status').textContent(), 'Expired');
    assert.equal((await v1json('GET', `/v1/events/${id}`, rawKey)).body.status, 'expired');
  });

  await step('the Road page fits a phone-sized screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.reload();
      await page.getByRole('heading', { name: 'Road', level: 2, exact: true }).waitFor();
      await page.getByRole('button', { name: 'Sandbox' }).click();
      const map = page.getByTestId('road-map');
      await map.locator('.leaflet-map-pane').waitFor({ state: 'attached' });
      const list = page.getByTestId('own-events');
      await list.getByRole('table').or(list.getByText('No active sandbox events of ours.')).waitFor();
      assert.ok(await map.isVisible(), 'the map is visible');
      assert.ok(await list.isVisible(), 'the own events are visible');
      const box = await map.boundingBox();
      assert.ok(box.width > 300 && box.x + box.width <= 390, `the map spans the screen: ${JSON.stringify(box)}`);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390, `the page scrolls sideways: ${width} px wide`);
      await shot(page, '10i-road-390');
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  await step('invites a colleague who accepts in a second browser context', async () => {
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members', level: 2 }).waitFor();
    await page.getByText('Invite someone').click();
    // The service's 422 shows next to the field its loc names (["body","email"]).
    await page.getByLabel('E-mail address').fill('not-an-address');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const email = page.getByLabel('E-mail address');
    await page.locator('input[name="email"][aria-invalid="true"]').waitFor();
    const errId = await email.getAttribute('aria-describedby');
    assert.ok((await page.locator('#' + errId).textContent()).length > 0, 'the field error is linked to its input');
    await shot(page, '11a-invite-field-error');
    await page.getByLabel('E-mail address').fill(COLLEAGUE);
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText(`Invitation sent to ${COLLEAGUE}.`).waitFor();
    await page.locator('tbody tr', { hasText: COLLEAGUE }).waitFor();
    await shot(page, '11-members-invited');

    const mail = await outbox.next(COLLEAGUE);
    const m = /(http:\/\/\S+\/app\/accept-invite#token=[^\s<>"]+)/.exec(mail);
    assert.ok(m, `no invitation link in the e-mail:\n${mail}`);

    // The colleague reads mail on a phone.
    const ctxB = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    ctxB.setDefaultTimeout(10000);
    await watchCSP(ctxB, 'colleague', cspViolations);
    const pageB = await ctxB.newPage();
    pageB.on('pageerror', (e) => pageErrors.push('colleague: ' + e.message));
    await pageB.goto(m[1]);
    await pageB.getByText('You have an invitation to an organisation.').waitFor();
    assert.ok(!pageB.url().includes('token'), `the token stays out of the address bar: ${pageB.url()}`);
    await shot(pageB, '12-invitation-sign-in-phone');
    await signIn(pageB, COLLEAGUE);
    await pageB.getByRole('heading', { name: 'Join an organisation' }).waitFor();
    await shot(pageB, '13-accept-invitation-phone');
    await pageB.getByRole('button', { name: 'Accept the invitation' }).click();
    await pageB.getByRole('heading', { name: ORG, level: 1 }).waitFor();
    await pageB.getByText('your role member').waitFor();
    // A member sees keys but cannot issue or revoke them.
    await pageB.getByRole('link', { name: 'API keys' }).click();
    await pageB.getByText('Only owners can issue and revoke keys.').waitFor();
    await pageB.locator('tbody tr', { hasText: 'Fleet app (test)' }).waitFor();
    await shot(pageB, '14-member-keys-phone');
    await pageB.getByRole('link', { name: 'Billing' }).click();
    await pageB.getByText('You are a member: only owners can change the plan').waitFor();
    await ctxB.close();

    await page.reload();
    await page.locator('tbody tr', { hasText: COLLEAGUE }).getByText('(you)').waitFor({ state: 'detached' });
    const row = page.locator('tbody tr', { hasText: COLLEAGUE }).first();
    await row.waitFor();
    assert.equal(await row.getByRole('combobox').inputValue(), 'member');
    assert.match(await page.getByText('Pending invitations').locator('xpath=following-sibling::*[1]').textContent(), /None/);
  });

  await step('the member signs in on a new browser and opens the organisation from the switcher', async () => {
    // Nothing of the phone's session or storage is here: the list can only come from the server.
    const ctxC = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    ctxC.setDefaultTimeout(10000);
    await watchCSP(ctxC, 'colleague, desktop', cspViolations);
    pageC = await ctxC.newPage();
    pageC.on('pageerror', (e) => pageErrors.push('colleague, desktop: ' + e.message));
    await pageC.goto(server.base + '/app/account');
    await signIn(pageC, COLLEAGUE);
    await pageC.getByRole('heading', { name: 'Your account' }).waitFor();
    assert.deepEqual(await switcherOptions(pageC), ['Switch organisation…', ORG, '+ New organisation']);
    await shot(pageC, '14a-new-browser-switcher');
    await pageC.getByRole('combobox', { name: 'Organisation' }).selectOption({ label: ORG });
    await pageC.getByRole('heading', { name: ORG, level: 1 }).waitFor();
    await pageC.getByText('your role member').waitFor();
    assert.deepEqual(await switcherOptions(pageC), [ORG, '+ New organisation']);
  });

  await step('manages members: resend, withdraw, role change, the last owner, remove', async () => {
    const THIRD = 'third@example.test';
    await page.getByText('Invite someone').click();
    await page.getByLabel('E-mail address').fill(THIRD);
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const inviteRow = page.locator('tbody tr', { hasText: THIRD });
    await inviteRow.waitFor();
    await outbox.next(THIRD);
    // Resend replaces the invitation (a new e-mail, still one row).
    await inviteRow.getByRole('button', { name: 'Resend' }).click();
    await page.getByText(`A new invitation is on its way to ${THIRD}.`).waitFor();
    await outbox.next(THIRD);
    assert.equal(await page.locator('tbody tr', { hasText: THIRD }).count(), 1);
    await page.locator('tbody tr', { hasText: THIRD }).getByRole('button', { name: 'Withdraw' }).click();
    await page.locator('tbody tr', { hasText: THIRD }).getByRole('button', { name: 'Yes, withdraw' }).click();
    await page.getByText(`The invitation to ${THIRD} is withdrawn.`).waitFor();
    await page.locator('tbody tr', { hasText: THIRD }).waitFor({ state: 'detached' });

    // Role change both ways.
    await page.getByLabel(`Role of ${COLLEAGUE}`).selectOption('owner');
    await page.getByText(`${COLLEAGUE} is now an owner.`).waitFor();
    await page.getByLabel(`Role of ${COLLEAGUE}`).selectOption('member');
    await page.getByText(`${COLLEAGUE} is now a member.`).waitFor();
    // The last owner cannot leave: the service's 409 is shown, nothing changes.
    const me = page.locator('tbody tr', { hasText: '(you)' });
    await me.getByRole('button', { name: 'Leave' }).click();
    await me.getByRole('button', { name: 'Yes, leave' }).click();
    await page.locator('.alert.error').waitFor();
    await shot(page, '11b-last-owner-cannot-leave');
    await page.getByRole('heading', { name: 'Members', level: 2 }).waitFor();
    // Remove the colleague.
    const row = page.locator('tbody tr', { hasText: COLLEAGUE });
    await row.getByRole('button', { name: 'Remove' }).click();
    await row.getByRole('button', { name: 'Yes, remove' }).click();
    await page.getByText(`${COLLEAGUE} is removed.`).waitFor();
    await page.locator('tbody tr', { hasText: COLLEAGUE }).waitFor({ state: 'detached' });

    // The removed colleague's browser: on the next load the organisation is refused and gone
    // from the switcher.
    await pageC.reload();
    await pageC.getByText('This organisation does not exist or you are not a member of it.').waitFor();
    assert.deepEqual(await switcherOptions(pageC), ['Switch organisation…', '+ New organisation']);
  });

  await step('profile, organisation rename, a second organisation and switching', async () => {
    await page.getByRole('link', { name: OWNER }).click();
    await page.getByLabel('Display name').fill('Olivia Owner');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByText('Your profile is saved.').waitFor();
    await page.getByRole('link', { name: 'Olivia Owner' }).waitFor();
    // docs/privacy.md §5: the person's data, downloaded as one JSON file.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download my data' }).click()]);
    assert.equal(download.suggestedFilename(), 'roadevents-my-data.json');
    const data = JSON.parse(readFileSync(await download.path(), 'utf8'));
    assert.equal(data.account.display_name, 'Olivia Owner');
    assert.ok(data.memberships.some((m) => m.name === ORG && m.role === 'owner'), 'the export lists the organisation');
    assert.ok(data.sessions.length >= 1 && !JSON.stringify(data).includes('ses_'), 'sessions by their times, never a token');
    await page.getByText('Your data is downloaded.').waitFor();

    await page.getByRole('combobox', { name: 'Organisation' }).selectOption({ label: '+ New organisation' });
    await page.getByRole('heading', { name: 'Create an organisation' }).waitFor();
    await page.getByLabel('Organisation name').fill('Second Fleet');
    await page.getByRole('button', { name: 'Create organisation' }).click();
    await page.getByRole('heading', { name: 'Second Fleet', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Organisation name').fill('Second Fleet (renamed)');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByText('The organisation is renamed.').waitFor();
    await page.getByRole('heading', { name: 'Second Fleet (renamed)', level: 1 }).waitFor();
    await page.getByRole('combobox', { name: 'Organisation' }).selectOption({ label: ORG });
    await page.getByRole('heading', { name: ORG, level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Is our integration alive?' }).waitFor();
    // The switcher lists the server's organisations by name.
    assert.deepEqual(await switcherOptions(page), [ORG, 'Second Fleet (renamed)', '+ New organisation']);
  });

  await step('after leaving an organisation, it is gone from the switcher', async () => {
    const SECOND = 'Second Fleet (renamed)';
    // The owner invites the colleague to the second organisation...
    await page.getByRole('combobox', { name: 'Organisation' }).selectOption({ label: SECOND });
    await page.getByRole('heading', { name: SECOND, level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByText('Invite someone').click();
    await page.getByLabel('E-mail address').fill(COLLEAGUE);
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText(`Invitation sent to ${COLLEAGUE}.`).waitFor();
    const mail = await outbox.next(COLLEAGUE);
    const m = /(http:\/\/\S+\/app\/accept-invite#token=[^\s<>"]+)/.exec(mail);
    assert.ok(m, `no invitation link in the e-mail:\n${mail}`);

    // ...who, still signed in on the desktop, accepts: the switcher lists it at once.
    await pageC.goto(m[1]);
    await pageC.getByRole('heading', { name: 'Join an organisation' }).waitFor();
    await pageC.getByRole('button', { name: 'Accept the invitation' }).click();
    await pageC.getByRole('heading', { name: SECOND, level: 1 }).waitFor();
    assert.deepEqual(await switcherOptions(pageC), [SECOND, '+ New organisation']);

    // Leaving takes it off the list; with none left the console offers to create one.
    await pageC.getByRole('link', { name: 'Members' }).click();
    const self = pageC.locator('tbody tr', { hasText: '(you)' });
    await self.getByRole('button', { name: 'Leave' }).click();
    await self.getByRole('button', { name: 'Yes, leave' }).click();
    await pageC.getByRole('heading', { name: 'Create an organisation' }).waitFor();
    assert.deepEqual(await switcherOptions(pageC), ['Switch organisation…', '+ New organisation']);
    await shot(pageC, '14b-left-organisation');
    // And it stays gone on a fresh load (the server's list, not this page's memory).
    await pageC.reload();
    await pageC.getByRole('heading', { name: 'Create an organisation' }).waitFor();
    assert.deepEqual(await switcherOptions(pageC), ['Switch organisation…', '+ New organisation']);
    await pageC.context().close();

    // The owner goes back to the first organisation for the pages that follow.
    await page.getByRole('combobox', { name: 'Organisation' }).selectOption({ label: ORG });
    await page.getByRole('heading', { name: ORG, level: 1 }).waitFor();
  });

  await step('billing and audit pages', async () => {
    await page.getByRole('link', { name: 'Billing' }).click();
    await page.getByRole('heading', { name: 'Plan and billing' }).waitFor();
    await page.getByText(/Current plan:/).waitFor();
    await shot(page, '15-billing');
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    for (const action of ['org.created', 'auth.totp_enabled', 'key.issued', 'member.invited', 'invitation.accepted', 'invitation.resent', 'invitation.withdrawn', 'member.role_changed', 'member.removed']) {
      await page.getByRole('cell', { name: action, exact: true }).first().waitFor();
    }
    await shot(page, '16-audit');
    // The skip link takes the keyboard past the header.
    await page.getByRole('link', { name: 'Skip to content' }).focus();
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
    assert.match(page.url(), /\/audit#main$/);
  });

  await step('revokes the key after a confirmation, and the key stops working', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    const row = page.locator('tbody tr', { hasText: 'Fleet app (test)' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    // Nothing happens before the confirmation.
    assert.equal(await v1('GET', '/v1/events?lat=48.8566&lon=2.3522', rawKey), 200);
    await row.getByRole('button', { name: 'Yes, revoke' }).click();
    await page.getByText('is revoked: requests with it are refused from now on.').waitFor();
    await row.getByText(/^Revoked/).waitFor();
    assert.equal(await v1('GET', '/v1/events?lat=48.8566&lon=2.3522', rawKey), 401);
    await shot(page, '17-key-revoked');
  });

  await step('an ended session goes back to sign-in', async () => {
    // Logout elsewhere ends every token of the user (docs/api.md §5): the page's next call is a
    // 401, which brings the sign-in page back with a reason.
    const tok = await page.evaluate(() => sessionStorage.getItem('roadevents.session'));
    assert.match(tok, /^ses_/);
    const res = await fetch(server.base + '/console/auth/logout', { method: 'POST', headers: { Authorization: 'Bearer ' + tok } });
    assert.equal(res.status, 200);
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Sign in to the road events console' }).waitFor();
    await page.getByText('Your session has ended. Please sign in again.').waitFor();
    await shot(page, '18-session-ended');
  });

  await step('signs in through the TOTP challenge with an authenticator code', async () => {
    await signIn(page, OWNER);
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    // The code field takes the focus as the challenge shows, so the code can be typed at once;
    // typing before it has the focus loses keys (a 5-digit code was sent once).
    const field = await page.getByLabel('Authenticator code').elementHandle();
    await page.waitForFunction((el) => document.activeElement === el, field);
    await page.keyboard.type(await device.code());
    await page.keyboard.press('Enter');
    // Back on the page the session ended on.
    await page.getByRole('heading', { name: 'Usage', level: 2 }).waitFor();
  });

  // The journey ends with deletions (docs/privacy.md §6). By now the colleague was removed
  // from ORG and left the second organisation: the owner is alone in both.
  const SECOND = 'Second Fleet (renamed)';

  await step('deleting the account is refused while the owner is the last owner of an organisation with other members', async () => {
    // The colleague joins ORG again, in a fresh browser.
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members', level: 2 }).waitFor();
    await page.getByText('Invite someone').click();
    await page.getByLabel('E-mail address').fill(COLLEAGUE);
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText(`Invitation sent to ${COLLEAGUE}.`).waitFor();
    const mail = await outbox.next(COLLEAGUE);
    const m = /(http:\/\/\S+\/app\/accept-invite#token=[^\s<>"]+)/.exec(mail);
    assert.ok(m, `no invitation link in the e-mail:\n${mail}`);
    const ctxD = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    ctxD.setDefaultTimeout(10000);
    await watchCSP(ctxD, 'colleague, again', cspViolations);
    const pageD = await ctxD.newPage();
    pageD.on('pageerror', (e) => pageErrors.push('colleague, again: ' + e.message));
    await pageD.goto(m[1]);
    await pageD.getByText('You have an invitation to an organisation.').waitFor();
    await signIn(pageD, COLLEAGUE);
    await pageD.getByRole('heading', { name: 'Join an organisation' }).waitFor();
    await pageD.getByRole('button', { name: 'Accept the invitation' }).click();
    await pageD.getByRole('heading', { name: ORG, level: 1 }).waitFor();
    await ctxD.close();

    await page.getByRole('link', { name: 'Olivia Owner' }).click();
    const zone = page.getByRole('region', { name: 'Delete this account' });
    await zone.getByRole('button', { name: 'Delete my account', exact: true }).click();
    const yes = zone.getByRole('button', { name: 'Yes, delete my account' });
    assert.ok(await yes.isDisabled(), 'the final button waits for the address');
    // The step takes the focus, so the address can be typed at once.
    await typeWhenFocused(page, zone.getByLabel('Type your e-mail address to confirm'), OWNER);
    await zone.getByLabel('Authenticator code').fill(await device.code());
    await yes.click();
    const refusal = zone.locator('.alert.error');
    await refusal.waitFor();
    assert.match(await refusal.textContent(), /last owner/);
    assert.ok((await refusal.textContent()).includes(ORG), `the refusal names the organisation: ${await refusal.textContent()}`);
    // Nothing changed: still signed in, on the Account page.
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    // The refusal comes before the code is read (docs/privacy.md §6), so the code is not
    // spent: the next step's code is this one again while its time step lasts.
    device.unspent();
  });

  await step('an owner deletes an organisation after typing its name and an authenticator code', async () => {
    await page.getByRole('combobox', { name: 'Organisation' }).selectOption({ label: SECOND });
    await page.getByRole('heading', { name: SECOND, level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Settings' }).click();
    const zone = page.getByRole('region', { name: 'Delete this organisation' });
    await zone.getByRole('button', { name: 'Delete organisation', exact: true }).click();
    const yes = zone.getByRole('button', { name: 'Yes, delete the organisation' });
    await zone.getByLabel("Type the organisation's name to confirm").fill('Second Fleet');
    assert.ok(await yes.isDisabled(), 'the final button waits for the exact name');
    await zone.getByLabel("Type the organisation's name to confirm").fill(SECOND);
    await zone.getByLabel('Authenticator code').fill(await device.code());
    await yes.click();
    // It leaves the switcher, and the console opens the organisation left.
    await page.getByRole('heading', { name: ORG, level: 1 }).waitFor();
    await page.getByText(`The organisation ${SECOND} is deleted.`).waitFor();
    assert.deepEqual(await switcherOptions(page), [ORG, '+ New organisation']);
    await shot(page, '15a-organisation-deleted');
  });

  await step('a person deletes their account: every session ends and the address can sign up afresh', async () => {
    // The colleague is removed, so ORG goes with the account as the owner's alone.
    await page.getByRole('link', { name: 'Members' }).click();
    const row = page.locator('tbody tr', { hasText: COLLEAGUE });
    await row.getByRole('button', { name: 'Remove' }).click();
    await row.getByRole('button', { name: 'Yes, remove' }).click();
    await page.getByText(`${COLLEAGUE} is removed.`).waitFor();

    const tok = await page.evaluate(() => sessionStorage.getItem('roadevents.session'));
    assert.match(tok, /^ses_/);
    await page.getByRole('link', { name: 'Olivia Owner' }).click();
    const zone = page.getByRole('region', { name: 'Delete this account' });
    await zone.getByRole('button', { name: 'Delete my account', exact: true }).click();
    await zone.getByLabel('Type your e-mail address to confirm').fill(OWNER);
    await zone.getByLabel('Authenticator code').fill(await device.code());
    const [erased] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'DELETE' && r.url().endsWith('/console/auth/me'), { timeout: 30000 }),
      zone.getByRole('button', { name: 'Yes, delete my account' }).click(),
    ]);
    assert.equal(erased.status(), 200, await erased.text());
    await page.getByRole('heading', { name: 'Sign in to the road events console' }).waitFor();
    await page.getByText('Your account is deleted.').waitFor();
    await shot(page, '15b-account-deleted');

    // The session is gone from the browser and refused by the service.
    assert.equal(await page.evaluate(() => sessionStorage.getItem('roadevents.session')), null);
    const res = await fetch(server.base + '/console/auth/me', { headers: { Authorization: 'Bearer ' + tok } });
    assert.equal(res.status, 401);
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in to the road events console' }).waitFor();

    // The address signs up afresh: a new account, no TOTP challenge, no name, no organisation.
    await signIn(page, OWNER);
    await page.getByRole('heading', { name: 'Create an organisation' }).waitFor();
    await page.getByRole('link', { name: OWNER }).waitFor();
    assert.deepEqual(await switcherOptions(page), ['Switch organisation…', '+ New organisation']);
  });

  assert.deepEqual(pageErrors, [], 'no script errors in the pages');
  assert.deepEqual(cspViolations, [], 'no Content-Security-Policy violations in the pages');
  await ctx.close();
});

test('the API reference at /docs renders the service\'s own operations, with nothing from elsewhere', async () => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  ctx.setDefaultTimeout(10000);
  const requests = [];
  ctx.on('request', (r) => requests.push(r.url()));
  const cspViolations = [];
  await watchCSP(ctx, 'reference', cspViolations);
  const page = await ctx.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));

  // docs/api.md §11.3: the reference runs under the console's strict policy.
  const res = await page.goto(server.base + '/docs');
  assert.equal(res.status(), 200);
  const csp = res.headers()['content-security-policy'] ?? '';
  for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
    assert.ok(csp.includes(directive), `Content-Security-Policy ${JSON.stringify(csp)} lacks ${directive}`);
  }
  assert.ok(!csp.includes('unsafe-'), `Content-Security-Policy ${JSON.stringify(csp)} allows something unsafe`);

  // Every operation of the served document is listed, by method, path and summary.
  const doc = await (await fetch(server.base + '/openapi.json')).json();
  const want = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) want.push(`${method.toUpperCase()} ${path} ${op.summary}`);
  }
  await page.locator('.opblock-summary-path[data-path="/v1/stream/tickets"]').waitFor();
  const listed = await page.locator('.opblock-summary').evaluateAll((els) =>
    els.map((e) => {
      const text = (sel) => e.querySelector(sel)?.textContent?.trim();
      return `${text('.opblock-summary-method')} ${e.querySelector('.opblock-summary-path')?.dataset.path} ${text('.opblock-summary-description')}`;
    }),
  );
  assert.deepEqual([...listed].sort(), [...want].sort());
  for (const op of ['POST /v1/events Publish a road event', 'POST /v1/stream/tickets']) {
    assert.ok(listed.some((l) => l.startsWith(op)), `the reference lists ${op}: ${listed.join('; ')}`);
  }
  // Opening the publish operation shows the document's description of it and an example body.
  await page.locator('.opblock-summary', { has: page.locator('.opblock-summary-path[data-path="/v1/events"]') }).filter({ hasText: 'POST' }).click();
  const opened = page.locator('.opblock-post.is-open');
  await opened.getByRole('heading', { name: /^Request body/ }).waitFor();
  const shown = (await opened.innerText()).replace(/\s+/g, ' ');
  const described = doc.paths['/v1/events'].post.description.replace(/\s+/g, ' ');
  assert.ok(shown.includes(described), `the publish operation shows its description ${JSON.stringify(described)}: ${shown.slice(0, 400)}`);
  assert.ok(shown.includes('"type": "accident"'), `the publish operation shows an example body: ${shown.slice(0, 800)}`);
  await shot(page, '19-api-reference');

  // Bundled at build time: every request went to this machine (data: URLs are no request).
  assert.ok(requests.some((u) => u === server.base + '/openapi.json'), `the page read /openapi.json: ${requests.join(' ')}`);
  const elsewhere = requests.filter((u) => {
    const url = new URL(u);
    return url.protocol !== 'data:' && url.hostname !== '127.0.0.1';
  });
  assert.deepEqual(elsewhere, [], 'no request left 127.0.0.1');
  assert.deepEqual(pageErrors, [], 'no script errors in the reference');
  assert.deepEqual(cspViolations, [], 'no Content-Security-Policy violations in the reference');
  await ctx.close();
});
