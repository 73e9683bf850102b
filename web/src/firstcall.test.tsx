// The first call shown with a new API key (docs/console.md §4): the commands must run as pasted,
// with the key, the API's origin and a JSON body the service accepts.
import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FIRST_EVENT, FirstCall, apiOrigin, publishCommand, queryCommand, shellQuote } from './firstcall';
import { mountPoint } from './testing';

const KEY = 'svc_' + 'A1b2C3d4E5'.repeat(4) + 'xyz';
const ORIGIN = 'https://roads.example';

/**
 * shellWords splits a command as a POSIX shell does for the syntax the commands use: blanks
 * between words, single quotes, a backslash before a character (a quote, or a line break that
 * continues the command).
 */
function shellWords(cmd: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < cmd.length; i++) {
    const c = cmd[i];
    if (c === "'") {
      const end = cmd.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated quote in ${cmd}`);
      word = (word ?? '') + cmd.slice(i + 1, end);
      i = end;
    } else if (c === '\\') {
      i++;
      if (cmd[i] !== '\n') word = (word ?? '') + cmd[i];
    } else if (c === ' ' || c === '\n') {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

afterEach(() => {
  vi.unstubAllGlobals();
});
const mount = mountPoint();

describe('the first call', () => {
  it('publishes a valid accident with the key, as JSON, to the API', () => {
    const argv = shellWords(publishCommand(ORIGIN, KEY));
    expect(argv).toEqual([
      'curl',
      ORIGIN + '/v1/events',
      '-H',
      'Authorization: Bearer ' + KEY,
      '-H',
      'Content-Type: application/json',
      '-d',
      expect.any(String),
    ]);
    // docs/api.md §2.2: an accident with one of its subtypes at a point; no environment field,
    // which the service refuses (the key decides it, docs/api.md §1).
    const body = JSON.parse(argv[7]);
    expect(body).toEqual({ type: 'accident', subtype: 'collision', lat: 48.137, lon: 11.575, severity: 'medium', description: 'First call from the console' });
    expect(body).not.toHaveProperty('environment');
  });

  it('reads the events around the published one with the same key', () => {
    const argv = shellWords(queryCommand(ORIGIN, KEY));
    expect(argv).toEqual(['curl', expect.any(String), '-H', 'Authorization: Bearer ' + KEY]);
    const url = new URL(argv[1]);
    expect(url.origin + url.pathname).toBe(ORIGIN + '/v1/events');
    expect(Number(url.searchParams.get('lat'))).toBe(FIRST_EVENT.lat);
    expect(Number(url.searchParams.get('lon'))).toBe(FIRST_EVENT.lon);
    expect(Number(url.searchParams.get('radius'))).toBeGreaterThan(0);
  });

  it('calls the configured API, else the console\'s own origin', () => {
    expect(apiOrigin('', 'http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(apiOrigin('https://api.example.com/', 'https://console.example.com')).toBe('https://api.example.com');
  });

  it('quotes any text for the shell', () => {
    expect(shellWords(shellQuote("it's 'quoted' \\ $HOME"))).toEqual(["it's 'quoted' \\ $HOME"]);
  });

  it('shows both commands with copy buttons and links the API reference', async () => {
    const writeText = vi.fn(async () => {});
    vi.stubGlobal('navigator', { clipboard: { writeText } });
    render(<FirstCall apiKey={KEY} environment="sandbox" origin={ORIGIN} />, mount.el);
    expect(mount.el.querySelector('[data-testid="curl-publish"]')?.textContent).toBe(publishCommand(ORIGIN, KEY));
    expect(mount.el.querySelector('[data-testid="curl-query"]')?.textContent).toBe(queryCommand(ORIGIN, KEY));
    const copy = [...mount.el.querySelectorAll('button')].find((b) => b.textContent === 'Copy publish command');
    await act(async () => {
      copy!.click();
    });
    expect(writeText).toHaveBeenCalledWith(publishCommand(ORIGIN, KEY));
    const link = [...mount.el.querySelectorAll('a')].find((a) => a.textContent === 'the API reference');
    expect(link?.getAttribute('href')).toBe('/docs');
  });

  it('warns that a live key publishes to every live reader, and not for a sandbox key', () => {
    render(<FirstCall apiKey={KEY} environment="live" origin={ORIGIN} />, mount.el);
    expect(mount.el.querySelector('.alert.warning')?.textContent).toMatch(/live key: an event it publishes is seen by every live reader/);
    render(<FirstCall apiKey={KEY} environment="sandbox" origin={ORIGIN} />, mount.el);
    expect(mount.el.querySelector('.alert.warning')).toBeNull();
    expect(mount.el.textContent).toMatch(/live readers never see/);
  });
});
