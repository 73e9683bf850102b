// The Road page's live stream (docs/api.md §6, docs/console.md §5): GET /v1/stream opened with
// a fresh ticket each time (a ticket opens streams for 300 s only), its snapshot and deltas
// handed on, and a new ticket and a new connection after a bye that says reconnect, an error,
// or a keepalive that reports dropped deltas (the next snapshot is the truth again), with a
// growing wait between failures. The browser's own EventSource retries are cut short: they
// would reuse a ticket that may have expired.
import { ApiError, type StreamBye, type StreamDelta, type StreamSnapshot } from '../api';

/** SourceLike is what is used of an EventSource. */
export interface SourceLike {
  addEventListener(type: string, listener: (e: Event) => void): void;
  close(): void;
}

/** OpenSource opens a stream at url (new EventSource(url) in a browser). */
export type OpenSource = (url: string) => SourceLike;

/** LiveStatus is how the stream is doing, for the page to say. */
export type LiveStatus =
  | { state: 'connecting' }
  | { state: 'live'; dropped: number }
  | { state: 'retrying'; inMs: number; why: string }
  | { state: 'stopped'; why: string };

export interface LiveOptions {
  /** mint gets a new ticket. */
  mint: () => Promise<string>;
  /** url is the stream's address with a ticket. */
  url: (ticket: string) => string;
  open: OpenSource;
  onSnapshot: (s: StreamSnapshot) => void;
  onDelta: (d: StreamDelta) => void;
  onStatus: (s: LiveStatus) => void;
  /** backoff is the wait before the attempt-th reconnection in a row (1, 2, ...), in ms. */
  backoff?: (attempt: number) => number;
}

/** defaultBackoff waits 1 s, 2 s, 4 s, ... up to 30 s. */
export function defaultBackoff(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, attempt - 1));
}

function parse<T>(e: Event): T | null {
  try {
    return JSON.parse(String((e as MessageEvent).data)) as T;
  } catch {
    return null;
  }
}

/**
 * startLive opens the stream and keeps it open until the returned stop is called. A ticket
 * refused for good (401, 403, 404) or a bye that says not to reconnect stops it.
 */
export function startLive(o: LiveOptions): () => void {
  const backoff = o.backoff ?? defaultBackoff;
  let stopped = false;
  let source: SourceLike | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  // attempt counts the failures since the last snapshot.
  let attempt = 0;
  let dropped = 0;

  const drop = () => {
    source?.close();
    source = null;
  };
  const stop = (why: string) => {
    drop();
    stopped = true;
    o.onStatus({ state: 'stopped', why });
  };
  const retry = (why: string, soon = false) => {
    drop();
    if (stopped) return;
    attempt++;
    const inMs = soon ? 0 : backoff(attempt);
    o.onStatus({ state: 'retrying', inMs, why });
    timer = setTimeout(connect, inMs);
  };

  function connect() {
    timer = null;
    if (stopped) return;
    o.onStatus({ state: 'connecting' });
    o.mint().then(
      (ticket) => {
        if (stopped) return;
        const es = o.open(o.url(ticket));
        source = es;
        const mine = (f: (e: Event) => void) => (e: Event) => {
          if (source === es && !stopped) f(e);
        };
        es.addEventListener(
          'snapshot',
          mine((e) => {
            const s = parse<StreamSnapshot>(e);
            if (!s || !Array.isArray(s.events)) return;
            attempt = 0;
            dropped = 0;
            o.onSnapshot(s);
            o.onStatus({ state: 'live', dropped });
          }),
        );
        es.addEventListener(
          'event',
          mine((e) => {
            const d = parse<StreamDelta>(e);
            if (d && d.event && typeof d.event.event_id === 'string') o.onDelta(d);
          }),
        );
        es.addEventListener(
          'keepalive',
          mine((e) => {
            const k = parse<{ dropped?: number }>(e);
            const n = typeof k?.dropped === 'number' ? k.dropped : dropped;
            // Deltas were lost: a new connection starts with a snapshot, the truth again.
            if (n > dropped) retry('some changes were missed', true);
            else o.onStatus({ state: 'live', dropped: n });
          }),
        );
        es.addEventListener(
          'bye',
          mine((e) => {
            const b = parse<StreamBye>(e);
            if (b && b.reconnect === false) stop(`the service ended the stream (${b.reason})`);
            else retry(`the service ended the stream (${b?.reason ?? 'bye'})`, attempt === 0);
          }),
        );
        es.addEventListener(
          'error',
          mine(() => retry('the connection was lost')),
        );
      },
      (err) => {
        if (stopped) return;
        const status = err instanceof ApiError ? err.status : 0;
        if (status === 401 || status === 403 || status === 404) stop((err as Error).message);
        else retry((err as Error)?.message ?? 'no ticket');
      },
    );
  }

  connect();
  return () => {
    stopped = true;
    if (timer !== null) clearTimeout(timer);
    timer = null;
    drop();
  };
}
