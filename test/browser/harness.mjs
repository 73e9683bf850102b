// Helpers of the console's browser tests: the service as `go run .` runs it (built once, on
// the embedded store in a temporary data folder, on a free loopback port), its e-mail outbox,
// TOTP codes, and Debian's Chromium driven by playwright-core (never a downloaded browser).
import { spawn, execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** root is the repository. */
export const root = join(here, '..', '..');
/** screenshots is where the run saves its screenshots (gitignored). */
export const screenshots = join(here, 'screenshots');

// playwright-core is a devDependency of web/ (scripts/test.sh runs npm ci there).
const require = createRequire(join(root, 'web', 'package.json'));
const { chromium } = require('playwright-core');

/** CHROMIUM is Debian's browser; scripts/test.sh installs it with apt-get when it is missing. */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** launch starts headless Chromium with background networking off. */
export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * startServer builds the service and starts it like `go run .` on a temporary data folder.
 * It returns the base URL, the data folder and stop().
 */
export async function startServer() {
  const dir = mkdtempSync(join(tmpdir(), 'roadevents-browser-'));
  const bin = join(dir, 'roadevents');
  const data = join(dir, 'data');
  mkdirSync(data);
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: root, stdio: 'inherit' });
  // The embedded store, whatever the caller's environment says.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROADEVENTS_') && !k.startsWith('STRIPE_')));
  env.ROADEVENTS_LOG_LEVEL = 'warn';
  // The walk's feed is served on loopback (docs/interop.md §10).
  env.ROADEVENTS_FEEDS_ALLOW_PRIVATE = 'true';
  // And its webhook receiver (docs/webhooks.md §4).
  env.ROADEVENTS_WEBHOOKS_ALLOW_PRIVATE = 'true';
  // The Road page's map draws on a plain background: no request for tiles leaves the machine
  // (docs/console.md §5).
  env.ROADEVENTS_BASEMAP_TILES = 'none';
  const proc = spawn(bin, ['-addr', '127.0.0.1:0', '-data', data], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (b) => (log += b));
  const base = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (b) => {
      out += b;
      const m = /service on (http:\/\/[0-9.:]+)/.exec(out);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`the service exited with ${code} before listening:\n${log}`)));
  });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  return {
    base,
    data,
    log: () => log,
    async stop() {
      proc.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** decodeQP undoes quoted-printable (the outbox writes its parts so, docs/api.md §10.4). */
function decodeQP(s) {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
}

/**
 * Outbox reads the messages the service wrote to <data>/outbox/*.eml. next(to) waits for the
 * next message to that address not yet read.
 */
export class Outbox {
  constructor(data) {
    this.dir = join(data, 'outbox');
    this.seen = new Set();
  }

  async next(to, { timeoutMs = 10000 } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let names = [];
      try {
        names = readdirSync(this.dir).filter((n) => n.endsWith('.eml')).sort();
      } catch {
        // The folder appears with the first message.
      }
      for (const n of names) {
        if (this.seen.has(n)) continue;
        const raw = readFileSync(join(this.dir, n), 'utf8');
        const m = /^To:\s*(.+)$/im.exec(raw);
        if (m && m[1].toLowerCase().includes(to.toLowerCase())) {
          this.seen.add(n);
          return decodeQP(raw);
        }
      }
      if (Date.now() > deadline) throw new Error(`no e-mail to ${to} in ${this.dir} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** code waits for a sign-in e-mail to the address and returns its 6-digit code. */
  async code(to) {
    const mail = await this.next(to);
    const m = /code is:\s+(\d{6})/.exec(mail);
    if (!m) throw new Error(`no code in the e-mail to ${to}:\n${mail}`);
    return m[1];
  }
}

function base32(s) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of s.replace(/=+$/, '').toUpperCase()) {
    const v = alphabet.indexOf(c);
    if (v < 0) throw new Error(`not base32: ${s}`);
    bits += v.toString(2).padStart(5, '0');
  }
  const out = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) out.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(out);
}

/** totp computes the RFC 6238 code (SHA-1, 6 digits, 30 s) of secret for a time step. */
export function totp(secret, step) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', base32(secret)).update(counter).digest();
  const off = mac[mac.length - 1] & 0x0f;
  const n = (mac.readUInt32BE(off) & 0x7fffffff) % 1000000;
  return String(n).padStart(6, '0');
}

/**
 * TotpDevice hands out codes the way an authenticator app would, never the same time step
 * twice: the service accepts a code of the step before now, now or the step after, and
 * refuses one of the last step it accepted or an earlier one (docs/security.md §2).
 * So the device starts from the step before now while that one has time enough left to be
 * typed: three codes can then follow each other without waiting for the clock.
 */
export class TotpDevice {
  constructor(secret) {
    this.secret = secret;
    this.last = 0;
  }
  async code() {
    const now = () => Math.floor(Date.now() / 30000);
    // The step before now stays accepted until now ends: only with 10 s of it left.
    const earliest = 30000 - (Date.now() % 30000) >= 10000 ? now() - 1 : now();
    const step = Math.max(earliest, this.last + 1);
    // Two steps ahead of now would be refused: wait for the clock, as a person would.
    while (step > now() + 1) await new Promise((r) => setTimeout(r, 500));
    this.last = step;
    return totp(this.secret, step);
  }
  /** unspent gives the last code's step back: the service refused the act before reading the code. */
  unspent() {
    this.last -= 1;
  }
}
