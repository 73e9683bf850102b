// The first call (docs/console.md §4): beside an API key just issued, the two requests a new
// integration makes first, ready to paste into a shell with the key and the API's address
// filled in, and the way to the API reference for the rest.
import type { Environment } from './api';
import { REFERENCE } from './router';
import { CopyButton, Notice } from './ui';

/**
 * FIRST_EVENT is a valid EventIn (docs/api.md §2.2; the subtype is one GET /v1/meta/taxonomy
 * lists under accident): a collision in the centre of Munich. It names no environment: an
 * event takes its key's (docs/api.md §1).
 */
export const FIRST_EVENT = {
  type: 'accident',
  subtype: 'collision',
  lat: 48.137,
  lon: 11.575,
  severity: 'medium',
  description: 'First call from the console',
} as const;

/** QUERY_RADIUS_M is the radius of the query around FIRST_EVENT, in metres. */
export const QUERY_RADIUS_M = 500;

/** apiOrigin is the address the commands call: the configured API base, else this page's origin. */
export function apiOrigin(base: string, here: string = location.origin): string {
  return (base || here).replace(/\/+$/, '');
}

/** shellQuote quotes s for a POSIX shell: single quotes, each inner one closed and escaped. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** publishCommand is the curl that publishes FIRST_EVENT with key. */
export function publishCommand(origin: string, key: string): string {
  return [
    `curl ${shellQuote(origin + '/v1/events')}`,
    `  -H ${shellQuote('Authorization: Bearer ' + key)}`,
    `  -H ${shellQuote('Content-Type: application/json')}`,
    `  -d ${shellQuote(JSON.stringify(FIRST_EVENT))}`,
  ].join(' \\\n');
}

/** queryCommand is the curl that reads the active events around FIRST_EVENT with key. */
export function queryCommand(origin: string, key: string): string {
  const q = new URLSearchParams({ lat: String(FIRST_EVENT.lat), lon: String(FIRST_EVENT.lon), radius: String(QUERY_RADIUS_M) });
  return [`curl ${shellQuote(`${origin}/v1/events?${q}`)}`, `  -H ${shellQuote('Authorization: Bearer ' + key)}`].join(' \\\n');
}

/** FirstCall shows the publish and query commands for a key just issued. */
export function FirstCall(props: { apiKey: string; environment: Environment; origin: string }) {
  const publish = publishCommand(props.origin, props.apiKey);
  const query = queryCommand(props.origin, props.apiKey);
  return (
    <section class="first-call" aria-labelledby="first-call-title">
      <h3 id="first-call-title">Your first call</h3>
      {props.environment === 'live' ? (
        <Notice kind="warning">
          This is a live key: an event it publishes is seen by every live reader. Try the publish command with a sandbox key,
          or publish only a real hazard.
        </Notice>
      ) : (
        <p>
          This sandbox key publishes sandbox events, which sandbox keys read and live readers never see: try anything with it.
        </p>
      )}
      <h4>Publish an accident in Munich</h4>
      <pre>
        <code data-testid="curl-publish">{publish}</code>
      </pre>
      <CopyButton text={publish} label="Copy publish command" />
      <h4>Read the events around it</h4>
      <pre>
        <code data-testid="curl-query">{query}</code>
      </pre>
      <CopyButton text={query} label="Copy query command" />
      <p>
        Every route, with its parameters, bodies and answers: <a href={REFERENCE}>the API reference</a>.
      </p>
    </section>
  );
}
