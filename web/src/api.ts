// The console's client of the /console routes (docs/api.md §4.2-§4.4, §10.3). It is the only
// module that speaks HTTP: pages call its methods and show an ApiError's message, its field
// errors (422 loc) or its wait (429 Retry-After). A 401 on a session route calls onUnauthorized,
// which sends the user back to sign-in (docs/api.md §5: expired sessions).

export type Environment = 'live' | 'sandbox';
export type Role = 'owner' | 'member';

export interface Me {
  user_id: string;
  email: string;
  display_name: string | null;
  locale: string;
  totp_enabled: boolean;
  created_at?: string;
  last_seen_at?: string | null;
}
export interface Session {
  token: string;
  expires_at: string;
  user: Me;
}
export interface AuthChallenge {
  method: 'email' | 'totp';
  email?: string | null;
  temp_token?: string | null;
}
export interface TotpEnrolment {
  secret: string;
  otpauth_url: string;
  issuer: string;
  account: string;
}
export interface RecoveryCodes {
  codes: string[];
  generated_at: string;
}
export interface RecoveryCodesStatus {
  remaining: number;
  total: number;
}
export interface Organisation {
  org_id: string;
  name: string;
  plan: string;
  created_at?: string;
  role: Role;
}
export interface Member {
  user_id: string;
  email: string;
  display_name?: string | null;
  role: Role;
  joined_at?: string | null;
}
export interface Invite {
  invite_id: string;
  email: string;
  role: Role;
  invited_by_email?: string | null;
  created_at?: string | null;
  expires_at?: string | null;
}
export interface MembersList {
  members: Member[];
  invitations: Invite[];
}
export interface ApiKey {
  key_id: string;
  label: string;
  environment: Environment;
  prefix: string;
  created_at?: string | null;
  created_by_email?: string | null;
  last_used_at?: string | null;
  revoked?: boolean;
  revoked_at?: string | null;
}
export interface IssuedKey {
  key: string;
  api_key: ApiKey;
}
export interface UsageTotals {
  reads: number;
  publishes: number;
  signals: number;
  stream_connects: number;
  tickets: number;
}
export interface UsageDay extends UsageTotals {
  date: string;
}
export type UsageWindow = '7d' | '30d' | '90d';
export interface UsageSeries {
  org_id: string;
  environment: Environment;
  window: UsageWindow;
  start: string;
  end: string;
  days: UsageDay[];
  totals: UsageTotals;
}
export interface Vitality {
  environment: Environment;
  has_traffic: boolean;
  last_used_at: string | null;
  last_used_key_id: string | null;
  today: UsageTotals | null;
  keys: { key_id: string; label: string; last_used_at: string | null }[];
}
/** Bands of a publisher's standing (docs/network.md §2). */
export type ReputationBand = 'new' | 'good' | 'fair' | 'poor';
export interface PublisherStanding {
  environment: Environment;
  for: number;
  against: number;
  decided: number;
  /** Share of decided events corroborated, 0..1; absent when none was decided. */
  score?: number;
  band: ReputationBand;
}
export interface ReputationReport {
  org_id: string;
  window_days: number;
  min_history: number;
  verdict_percent: number;
  good_percent: number;
  environments: PublisherStanding[];
}
/** The open-data formats a feed can be read in (docs/interop.md §1, §9). */
export type FeedFormat = 'cifs' | 'wzdx' | 'tdx' | 'datex2';
/** What one poll of a feed did (docs/interop.md §12). */
export interface FeedPollCounts {
  /** The upstream answered that the document had not changed (304). */
  not_modified: boolean;
  created: number;
  revised: number;
  unchanged: number;
  /** Records that could not be read or were refused by the event rules. */
  skipped: number;
  /** Events ended: their record left the document or its end passed. */
  ended: number;
}
/** A feed's health: its last poll, and totals since it was registered. */
export interface FeedHealth {
  last_poll_at: string | null;
  last_success_at: string | null;
  /** Why the last poll read nothing; null once a poll succeeds again. */
  last_error: string | null;
  last_error_at: string | null;
  last_poll: FeedPollCounts | null;
  active_records: number;
  imported_total: number;
  skipped_total: number;
  ended_total: number;
}
/** A feed the organisation imports (docs/interop.md §13), as the console sees it. */
export interface FeedPublic {
  feed_id: string;
  name: string;
  url: string;
  format: FeedFormat;
  environment: Environment;
  license: string;
  poll_interval_s: number;
  paused: boolean;
  created_at: string;
  created_by_email: string | null;
  updated_at: string;
  /** null while paused. */
  next_poll_at: string | null;
  health: FeedHealth;
}
/** The body of POST /console/orgs/{org_id}/feeds; environment is fixed once registered. */
export interface FeedDraft {
  name?: string;
  url: string;
  format: FeedFormat;
  environment?: Environment;
  license?: string;
  poll_interval_s?: number;
  paused?: boolean;
}
/** The body of PATCH /console/orgs/{org_id}/feeds/{feed_id}: only the fields sent are written. */
export type FeedUpdate = Partial<Pick<FeedPublic, 'name' | 'url' | 'format' | 'license' | 'poll_interval_s' | 'paused'>>;
/**
 * What an endpoint can be told of (docs/webhooks.md §1): what happens to the organisation's own
 * events, and (alert.*) any network event that comes to match one of its alert rules, changes
 * while it matches, or stops matching (§5).
 */
export type WebhookKind =
  | 'event.confirmed'
  | 'event.denied'
  | 'event.merged'
  | 'event.ended'
  | 'event.expired'
  | 'alert.created'
  | 'alert.updated'
  | 'alert.ended';
/** A webhook endpoint of the organisation (docs/webhooks.md §1-§3), without its secret. */
export interface WebhookEndpointPublic {
  endpoint_id: string;
  url: string;
  description: string;
  kinds: string[];
  enabled: boolean;
  /** Why the service disabled it (the receiver answered 410 Gone); null when an owner did, or when enabled. */
  disabled_reason: string | null;
  created_at: string;
  created_by_email: string | null;
  updated_at: string;
  rotated_at: string | null;
  /** Until when the secret before the last rotation still signs deliveries; null when none does. */
  previous_secret_until: string | null;
}
/** The body of POST /console/orgs/{org_id}/webhooks. */
export interface WebhookEndpointDraft {
  url: string;
  kinds: WebhookKind[];
  description?: string;
  enabled?: boolean;
}
/** The body of PATCH /console/orgs/{org_id}/webhooks/{endpoint_id}: only the fields sent are written. */
export type WebhookEndpointUpdate = Partial<WebhookEndpointDraft>;
/** An endpoint with its signing secret, shown once: on registration and on rotation. */
export interface IssuedWebhookSecret {
  secret: string;
  endpoint: WebhookEndpointPublic;
}
export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed' | 'dropped';
/** One attempt of a delivery (docs/webhooks.md §3). */
export interface WebhookAttempt {
  at: string;
  /** The receiver's HTTP status; 0 when no answer came (error says why). */
  status: number;
  error?: string;
  latency_ms: number;
}
/** One delivery to an endpoint, with its attempts, oldest first. */
export interface WebhookDelivery {
  delivery_id: string;
  endpoint_id: string;
  kind: string;
  created_at: string;
  state: WebhookDeliveryState;
  /** Why it was dropped or given up. */
  reason: string | null;
  /** When a pending delivery is next tried. */
  next_attempt_at: string | null;
  attempts: WebhookAttempt[];
  /** The JSON body sent (docs/webhooks.md §1). */
  body: Record<string, unknown>;
}
/** The event types, in the order of the flat list of docs/api.md §2.1 (GET /v1/meta/event-types). */
export const eventTypes = [
  'accident',
  'stopped_vehicle',
  'object_on_road',
  'weather_hazard',
  'congestion',
  'wrong_way_vehicle',
  'road_damage',
  'people_on_road',
  'police_check',
  'speed_camera',
  'road_closure',
  'infrastructure_fault',
  'roadworks',
] as const;
export type EventType = (typeof eventTypes)[number];
/** A GeoJSON LineString: an event's extent beyond its point, [longitude, latitude] positions. */
export interface LineStringGeometry {
  type: 'LineString';
  coordinates: [number, number][];
}
/** A publisher's assessment of an event (docs/api.md §2.2). */
export type Severity = 'low' | 'medium' | 'high';
/** A road event as returned (EventPublic, docs/api.md §2.3). */
export interface EventPublic {
  event_id: string;
  schema_version: number;
  /** Open vocabulary: an unknown type is shown as it is. */
  type: string;
  lat: number;
  lon: number;
  geometry?: LineStringGeometry | null;
  heading?: number | null;
  road_ref?: string | null;
  severity?: string | null;
  description?: string | null;
  occurred_at?: string | null;
  created_at: string;
  expires_at: string;
  /** publisher or feed. */
  source_kind: string;
  feed_id?: string | null;
  license?: string | null;
  upstream_updated_at?: string | null;
  fetched_at?: string | null;
  /** active, expired, invalidated or merged. */
  status: string;
  /** unverified, confirmed or disputed. */
  verification: string;
  /** 0..1: (confirm_count + 2) / (confirm_count + deny_count + 3). */
  confidence: number;
  confirm_count: number;
  deny_count: number;
  updated_at?: string | null;
  merged_into?: string | null;
  environment?: string;
  subtype?: string | null;
}
/** Whose act an evidence item is, seen by the caller's organisation. */
export type EvidenceBy = 'your_organisation' | 'another_organisation';
/** One change of an event after its publication (EvidenceStep). */
export interface EvidenceStep {
  at: string;
  kind: 'signal' | 'duplicate' | 'revision' | 'merged' | 'closed' | 'invalidated' | string;
  action?: 'confirm' | 'deny';
  by?: EvidenceBy;
  distance_m: number | null;
  event_id?: string;
  reason?: string;
}
/** Why an event has the confidence it has (EvidenceOut, docs/network.md §4). */
export interface EventEvidence {
  event_id: string;
  status: string;
  confidence: number;
  verification: string;
  reporters: { confirming: number; denying: number; organisations: number };
  /** Every change after publication, oldest first. */
  timeline: EvidenceStep[];
  timeline_truncated: boolean;
  /** Reports of other sources merged into this event. */
  duplicates: { event_id: string; merged_at: string; distance_m: number | null; by: EvidenceBy }[];
  /** Each setting of expires_at, oldest first. */
  expiry: { at: string; expires_at: string; cause: string }[];
  publisher: { by: EvidenceBy; reputation: string };
}
/** The map background (GET /v1/meta/basemap): tiles null for a plain one. */
export interface Basemap {
  tiles: string | null;
  attribution: string;
}
/** The limits a client reads at run time (GET /v1/meta/limits). */
export interface Limits {
  max_query_radius_m: number;
  query_level?: number;
  note?: string;
}
/** A stream ticket (docs/api.md §2.8): opens GET /v1/stream for 300 s. */
export interface StreamTicket {
  ticket: string;
  expires_at: string;
  expires_in: number;
}
/** The filter of an area read and of a stream: a circle, the types (none: all) and the least confidence. */
export interface AreaQuery {
  lat: number;
  lon: number;
  radius: number;
  types: string[];
  min_confidence: number;
}
/** A stream's snapshot frame: the full truth for the area. */
export interface StreamSnapshot {
  events: EventPublic[];
  max_seconds: number;
  at: string;
}
/** A stream's event frame: one change of an event the filter matched before or after it. */
export interface StreamDelta {
  kind: 'created' | 'updated' | 'signal' | 'ended' | string;
  event: EventPublic;
  at: string;
}
/** A stream's bye frame. */
export interface StreamBye {
  reason: string;
  reconnect: boolean;
}
/**
 * The body of a revision (RevisionIn, docs/api.md §2.4): the fields are applied, not merged, so
 * an omitted severity or subtype is cleared and an omitted geometry shrinks the event to its point.
 */
export interface RevisionDraft {
  lat: number;
  lon: number;
  geometry?: LineStringGeometry;
  severity?: Severity;
  subtype?: string;
}
/** An alert rule's area: within radius_m metres (10 to 100 000) of a point, measured on the sphere. */
export interface AlertCircle {
  type: 'Circle';
  lat: number;
  lon: number;
  radius_m: number;
}
/**
 * An alert rule's area as a GeoJSON Polygon of one ring: 4 to 257 [lon, lat] positions, the
 * last repeating the first; not crossing itself, spanning less than 180° of longitude.
 */
export interface AlertPolygon {
  type: 'Polygon';
  coordinates: [number, number][][];
}
export type AlertArea = AlertCircle | AlertPolygon;
/** An alert rule of the organisation (docs/webhooks.md §5): where, which events, and whether it is on. */
export interface AlertRulePublic {
  rule_id: string;
  name: string;
  /** live hears live events; sandbox hears live and sandbox events. */
  environment: Environment;
  area: AlertArea;
  /** The types heard; empty for every type. */
  types: string[];
  /** The least confidence, 0..1, an event needs to match. */
  min_confidence: number;
  enabled: boolean;
  created_at: string;
  created_by_email: string | null;
  updated_at: string;
}
/** The body of POST /console/orgs/{org_id}/alert-rules (CreateAlertRulePayload). */
export interface AlertRuleDraft {
  name: string;
  environment: Environment;
  area: AlertArea;
  types?: string[];
  min_confidence?: number;
  enabled?: boolean;
}
/** The body of PATCH /console/orgs/{org_id}/alert-rules/{rule_id}: only the fields sent are written. */
export type AlertRuleUpdate = Partial<AlertRuleDraft>;
export interface Plan {
  plan_id: string;
  name: string;
  monthly_price_cents: number | null;
  currency: string;
  included_reads: number | null;
  live_key_cap: number | null;
  seat_cap: number | null;
  self_serve: boolean;
}
export interface BillingSummary {
  org_id: string;
  plan: Plan;
  period_start: string;
  period_end: string;
  totals: UsageTotals;
  included_reads: number | null;
  billing_configured: boolean;
  subscription_active: boolean;
}
export interface AuditEntry {
  audit_id: string;
  action: string;
  actor_user_id?: string | null;
  actor_email?: string | null;
  target?: string | null;
  detail?: Record<string, unknown>;
  created_at?: string | null;
}

/** One item of a 422 validation body (docs/api.md §7, §10.1). Only type and loc are matched. */
export interface ValidationItem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
}

/**
 * ApiError is every non-2xx answer, and a network failure (status 0). message is what to show;
 * validation holds the items of a 422 validation body; retryAfter the seconds of a 429.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly validation: ValidationItem[];
  readonly retryAfter: number | null;

  constructor(status: number, message: string, validation: ValidationItem[] = [], retryAfter: number | null = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.validation = validation;
    this.retryAfter = retryAfter;
  }

  /**
   * fieldErrors maps the validation items under the given location prefix (by default the
   * body) to the field they concern: ["body","label"] becomes "label". Items on the whole body
   * (["body"]) or deeper paths keep their first field name after the prefix, or "" when none.
   */
  fieldErrors(prefix = 'body'): Record<string, string> {
    const out: Record<string, string> = {};
    for (const v of this.validation) {
      if (v.loc[0] !== prefix) continue;
      const field = v.loc.length > 1 ? String(v.loc[1]) : '';
      if (!(field in out)) out[field] = v.msg;
    }
    return out;
  }
}

/** formatWait says how long to wait, for a 429 (docs/api.md §7: wait for Retry-After). */
export function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return `${minutes} minute${minutes === 1 ? '' : 's'}`;
  const hours = Math.ceil(minutes / 60);
  return `${hours} hour${hours === 1 ? '' : 's'}`;
}

/** parseRetryAfter reads a Retry-After header: delay-seconds, or an HTTP date. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Math.max(1, parseInt(v, 10));
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(1, Math.ceil((at - now) / 1000));
}

const statusMessages: Record<number, string> = {
  400: 'The request was refused.',
  401: 'Your session has ended. Please sign in again.',
  403: 'You do not have permission to do this.',
  404: 'Not found.',
  409: 'This conflicts with the current state.',
  422: 'Please correct the highlighted fields.',
  503: 'This service is not available on this deployment.',
};

/** errorFromResponse turns a non-2xx response into an ApiError (docs/api.md §7: the two body shapes). */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const detail = (body as { detail?: unknown } | null)?.detail;
  let message = statusMessages[res.status] ?? `The service answered ${res.status}.`;
  let validation: ValidationItem[] = [];
  if (typeof detail === 'string' && detail !== '') {
    message = detail;
  } else if (Array.isArray(detail)) {
    validation = detail.filter(
      (d): d is ValidationItem => typeof d === 'object' && d !== null && Array.isArray((d as ValidationItem).loc),
    );
  }
  let retryAfter: number | null = null;
  if (res.status === 429) {
    retryAfter = parseRetryAfter(res.headers.get('Retry-After'));
    message = retryAfter !== null ? `Too many attempts. Try again in ${formatWait(retryAfter)}.` : 'Too many attempts. Try again later.';
  }
  return new ApiError(res.status, message, validation, retryAfter);
}

/** ClientOptions configures a Client. */
export interface ClientOptions {
  /** base is the API's origin ("" for the console's own origin). */
  base: string;
  /** token returns the session token to send, or null. */
  token: () => string | null;
  /** onUnauthorized is called when a session route answers 401 (expired or ended session). */
  onUnauthorized: () => void;
  fetch?: typeof fetch;
}

/** A query's values; an array repeats the parameter (type=a&type=b). */
type Query = Record<string, string | number | boolean | undefined | readonly string[]>;

interface RequestOptions {
  body?: unknown;
  query?: Query;
  /** bearer overrides the session token (the temp_token of the TOTP step). */
  bearer?: string;
  /** anonymous routes never send the session and never sign the user out on 401. */
  anonymous?: boolean;
}

const enc = encodeURIComponent;

/** queryString encodes a query, leaving out undefined values; an array repeats its parameter. */
function queryString(query: Query): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (Array.isArray(v)) for (const x of v) q.append(k, x);
    else if (v !== undefined) q.set(k, String(v));
  }
  return q.toString();
}

/** Client calls the console routes. */
export class Client {
  private readonly opts: ClientOptions;

  constructor(opts: ClientOptions) {
    this.opts = opts;
  }

  /** base is the API's origin as configured ("" for the console's own origin). */
  get base(): string {
    return this.opts.base;
  }

  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    let url = this.opts.base.replace(/\/$/, '') + path;
    if (o.query) {
      const s = queryString(o.query);
      if (s) url += '?' + s;
    }
    const headers: Record<string, string> = { Accept: 'application/json' };
    const bearer = o.bearer ?? (o.anonymous ? null : this.opts.token());
    if (bearer) headers.Authorization = 'Bearer ' + bearer;
    let body: string | undefined;
    if (o.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(o.body);
    }
    const f = this.opts.fetch ?? fetch;
    let res: Response;
    try {
      res = await f(url, { method, headers, body, credentials: 'omit', cache: 'no-store' });
    } catch {
      throw new ApiError(0, 'The service cannot be reached. Check your connection and try again.');
    }
    if (!res.ok) {
      const err = await errorFromResponse(res);
      // A session route's 401 means the session is over; the sign-in routes' 401 (a stale
      // temp_token) is the page's to handle.
      if (res.status === 401 && !o.anonymous && o.bearer === undefined) this.opts.onUnauthorized();
      throw err;
    }
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  // Sign-in and profile (docs/api.md §4.2).
  requestCode(email: string) {
    return this.request<AuthChallenge>('POST', '/console/auth/request-code', { body: { email }, anonymous: true });
  }
  verifyCode(email: string, code: string) {
    return this.request<Session | AuthChallenge>('POST', '/console/auth/verify-code', { body: { email, code }, anonymous: true });
  }
  verifyTotp(tempToken: string, code: string) {
    return this.request<Session>('POST', '/console/auth/verify-totp', { body: { code }, bearer: tempToken });
  }
  verifyRecovery(tempToken: string, code: string) {
    return this.request<Session>('POST', '/console/auth/verify-recovery', { body: { code }, bearer: tempToken });
  }
  me() {
    return this.request<Session>('GET', '/console/auth/me');
  }
  updateMe(update: { display_name?: string | null; locale?: string }) {
    return this.request<Me>('PATCH', '/console/auth/me', { body: update });
  }

  /** exportMe returns everything the service keeps about the signed-in person (docs/privacy.md §5). */
  exportMe(): Promise<unknown> {
    return this.request<unknown>('GET', '/console/auth/me/export');
  }
  /**
   * deleteMe erases the signed-in person's account and ends every session (docs/privacy.md §6);
   * totpCode is required when the account has TOTP. A last owner of an organisation with other
   * members is refused (409, the detail names it).
   */
  deleteMe(totpCode?: string) {
    return this.request<{ ok: true }>('DELETE', '/console/auth/me', { body: totpCode === undefined ? {} : { totp_code: totpCode } });
  }
  logout() {
    return this.request<{ ok: true }>('POST', '/console/auth/logout');
  }
  totpSetup() {
    return this.request<TotpEnrolment>('POST', '/console/auth/totp/setup');
  }
  totpConfirm(code: string) {
    return this.request<RecoveryCodes>('POST', '/console/auth/totp/confirm', { body: { code } });
  }
  totpDisable(code: string) {
    return this.request<Session>('POST', '/console/auth/totp/disable', { body: { code } });
  }
  recoveryStatus() {
    return this.request<RecoveryCodesStatus>('GET', '/console/auth/recovery-codes');
  }
  regenerateRecovery(code: string) {
    return this.request<RecoveryCodes>('POST', '/console/auth/recovery-codes/regenerate', { body: { code } });
  }

  // Organisations (docs/api.md §4.3).
  /**
   * orgs lists the signed-in user's organisations with the user's role in each, by name then
   * org_id ([] when none). GET /console/orgs is an addition to docs/api.md §4.3 (docs/console.md §1): without it a returning user on a new browser could not find them.
   */
  orgs() {
    return this.request<Organisation[]>('GET', '/console/orgs');
  }
  createOrg(name: string) {
    return this.request<Organisation>('POST', '/console/orgs', { body: { name } });
  }
  org(orgId: string) {
    return this.request<Organisation>('GET', `/console/orgs/${enc(orgId)}`);
  }
  updateOrg(orgId: string, name: string) {
    return this.request<Organisation>('PATCH', `/console/orgs/${enc(orgId)}`, { body: { name } });
  }
  /**
   * deleteOrg deletes an organisation (owners; docs/privacy.md §6): its keys are revoked, its
   * subscription cancelled, its members, invitations, feeds, webhooks and alert rules removed.
   * totpCode is required when the caller's account has TOTP, as for issuing a key.
   */
  deleteOrg(orgId: string, totpCode?: string) {
    return this.request<{ ok: true }>('DELETE', `/console/orgs/${enc(orgId)}`, { body: totpCode === undefined ? {} : { totp_code: totpCode } });
  }
  members(orgId: string) {
    return this.request<MembersList>('GET', `/console/orgs/${enc(orgId)}/members`);
  }
  invite(orgId: string, email: string, role: Role) {
    return this.request<Invite>('POST', `/console/orgs/${enc(orgId)}/members`, { body: { email, role } });
  }
  setRole(orgId: string, userId: string, role: Role) {
    return this.request<Member>('PATCH', `/console/orgs/${enc(orgId)}/members/${enc(userId)}`, { body: { role } });
  }
  removeMember(orgId: string, userId: string) {
    return this.request<{ ok: true }>('DELETE', `/console/orgs/${enc(orgId)}/members/${enc(userId)}`);
  }
  leave(orgId: string) {
    return this.request<{ ok: true }>('POST', `/console/orgs/${enc(orgId)}/leave`);
  }
  withdrawInvite(orgId: string, inviteId: string) {
    return this.request<{ ok: true }>('DELETE', `/console/orgs/${enc(orgId)}/invitations/${enc(inviteId)}`);
  }
  resendInvite(orgId: string, inviteId: string) {
    return this.request<Invite>('POST', `/console/orgs/${enc(orgId)}/invitations/${enc(inviteId)}/resend`);
  }
  acceptInvite(token: string) {
    return this.request<Organisation>('POST', '/console/invitations/accept', { body: { token } });
  }
  audit(orgId: string, limit = 50) {
    return this.request<AuditEntry[]>('GET', `/console/orgs/${enc(orgId)}/audit`, { query: { limit } });
  }

  // Keys, activity, billing (docs/api.md §4.4).
  keys(orgId: string) {
    return this.request<ApiKey[]>('GET', `/console/orgs/${enc(orgId)}/keys`, { query: { include_revoked: true } });
  }
  issueKey(orgId: string, label: string, environment: Environment, totpCode: string | null) {
    return this.request<IssuedKey>('POST', `/console/orgs/${enc(orgId)}/keys`, {
      body: { label, environment, totp_code: totpCode },
    });
  }
  revokeKey(orgId: string, keyId: string) {
    return this.request<{ ok: true }>('DELETE', `/console/orgs/${enc(orgId)}/keys/${enc(keyId)}`);
  }
  usage(orgId: string, window: UsageWindow, environment: Environment) {
    return this.request<UsageSeries>('GET', `/console/orgs/${enc(orgId)}/usage`, { query: { window, environment } });
  }
  vitality(orgId: string, environment: Environment) {
    return this.request<Vitality>('GET', `/console/orgs/${enc(orgId)}/vitality`, { query: { environment } });
  }
  reputation(orgId: string) {
    return this.request<ReputationReport>('GET', `/console/orgs/${enc(orgId)}/reputation`);
  }
  // Feeds the organisation imports (docs/interop.md §13): members read, owners change.
  feeds(orgId: string) {
    return this.request<FeedPublic[]>('GET', `/console/orgs/${enc(orgId)}/feeds`);
  }
  createFeed(orgId: string, draft: FeedDraft) {
    return this.request<FeedPublic>('POST', `/console/orgs/${enc(orgId)}/feeds`, { body: draft });
  }
  updateFeed(orgId: string, feedId: string, update: FeedUpdate) {
    return this.request<FeedPublic>('PATCH', `/console/orgs/${enc(orgId)}/feeds/${enc(feedId)}`, { body: update });
  }
  deleteFeed(orgId: string, feedId: string) {
    return this.request<{ ok: true }>('DELETE', `/console/orgs/${enc(orgId)}/feeds/${enc(feedId)}`);
  }
  pollFeed(orgId: string, feedId: string) {
    return this.request<FeedPublic>('POST', `/console/orgs/${enc(orgId)}/feeds/${enc(feedId)}/poll`);
  }
  // Webhook endpoints and their deliveries (docs/webhooks.md): members read, owners change.
  webhookEndpoints(orgId: string) {
    return this.request<WebhookEndpointPublic[]>('GET', `/console/orgs/${enc(orgId)}/webhooks`);
  }
  createWebhookEndpoint(orgId: string, draft: WebhookEndpointDraft) {
    return this.request<IssuedWebhookSecret>('POST', `/console/orgs/${enc(orgId)}/webhooks`, { body: draft });
  }
  updateWebhookEndpoint(orgId: string, endpointId: string, update: WebhookEndpointUpdate) {
    return this.request<WebhookEndpointPublic>('PATCH', `/console/orgs/${enc(orgId)}/webhooks/${enc(endpointId)}`, { body: update });
  }
  deleteWebhookEndpoint(orgId: string, endpointId: string) {
    return this.request<{ ok: true }>('DELETE', `/console/orgs/${enc(orgId)}/webhooks/${enc(endpointId)}`);
  }
  rotateWebhookSecret(orgId: string, endpointId: string) {
    return this.request<IssuedWebhookSecret>('POST', `/console/orgs/${enc(orgId)}/webhooks/${enc(endpointId)}/rotate`);
  }
  webhookDeliveries(orgId: string, endpointId: string, limit = 50) {
    return this.request<WebhookDelivery[]>('GET', `/console/orgs/${enc(orgId)}/webhooks/${enc(endpointId)}/deliveries`, { query: { limit } });
  }
  redeliverWebhook(orgId: string, endpointId: string, deliveryId: string) {
    return this.request<WebhookDelivery>(
      'POST',
      `/console/orgs/${enc(orgId)}/webhooks/${enc(endpointId)}/deliveries/${enc(deliveryId)}/redeliver`,
    );
  }
  // Alert rules (docs/webhooks.md §5): members read, owners change.
  alertRules(orgId: string) {
    return this.request<AlertRulePublic[]>('GET', `/console/orgs/${enc(orgId)}/alert-rules`);
  }
  createAlertRule(orgId: string, draft: AlertRuleDraft) {
    return this.request<AlertRulePublic>('POST', `/console/orgs/${enc(orgId)}/alert-rules`, { body: draft });
  }
  alertRule(orgId: string, ruleId: string) {
    return this.request<AlertRulePublic>('GET', `/console/orgs/${enc(orgId)}/alert-rules/${enc(ruleId)}`);
  }
  updateAlertRule(orgId: string, ruleId: string, update: AlertRuleUpdate) {
    return this.request<AlertRulePublic>('PATCH', `/console/orgs/${enc(orgId)}/alert-rules/${enc(ruleId)}`, { body: update });
  }
  deleteAlertRule(orgId: string, ruleId: string) {
    return this.request<{ ok: true }>('DELETE', `/console/orgs/${enc(orgId)}/alert-rules/${enc(ruleId)}`);
  }
  // The Road page (docs/console.md §5): the network's events read as the organisation in an
  // environment; members read, owners close and revise the organisation's own events.
  basemap() {
    return this.request<Basemap>('GET', '/v1/meta/basemap', { anonymous: true });
  }
  limits() {
    return this.request<Limits>('GET', '/v1/meta/limits', { anonymous: true });
  }
  areaEvents(orgId: string, environment: Environment, a: AreaQuery) {
    return this.request<EventPublic[]>('GET', `/console/orgs/${enc(orgId)}/events`, { query: { environment, ...areaParams(a) } });
  }
  ownEvents(orgId: string, environment: Environment) {
    return this.request<EventPublic[]>('GET', `/console/orgs/${enc(orgId)}/own-events`, { query: { environment } });
  }
  roadEvent(orgId: string, environment: Environment, eventId: string) {
    return this.request<EventPublic>('GET', `/console/orgs/${enc(orgId)}/events/${enc(eventId)}`, { query: { environment } });
  }
  eventEvidence(orgId: string, environment: Environment, eventId: string) {
    return this.request<EventEvidence>('GET', `/console/orgs/${enc(orgId)}/events/${enc(eventId)}/evidence`, { query: { environment } });
  }
  closeEvent(orgId: string, environment: Environment, eventId: string) {
    return this.request<EventPublic>('POST', `/console/orgs/${enc(orgId)}/events/${enc(eventId)}/close`, { query: { environment } });
  }
  reviseEvent(orgId: string, environment: Environment, eventId: string, draft: RevisionDraft) {
    return this.request<EventPublic>('POST', `/console/orgs/${enc(orgId)}/events/${enc(eventId)}/revisions`, { query: { environment }, body: draft });
  }
  streamTicket(orgId: string, environment: Environment) {
    return this.request<StreamTicket>('POST', `/console/orgs/${enc(orgId)}/stream/tickets`, { query: { environment } });
  }
  /**
   * streamUrl is the address of GET /v1/stream for an area, opened with a ticket: a browser's
   * EventSource cannot send the Authorization header (docs/api.md §5).
   */
  streamUrl(a: AreaQuery, ticket: string): string {
    return this.opts.base.replace(/\/$/, '') + '/v1/stream?' + queryString({ ...areaParams(a), ticket });
  }
  plans() {
    return this.request<Plan[]>('GET', '/console/plans', { anonymous: true });
  }
  billing(orgId: string) {
    return this.request<BillingSummary>('GET', `/console/orgs/${enc(orgId)}/billing`);
  }
  checkout(orgId: string, plan: string) {
    return this.request<{ url: string }>('POST', `/console/orgs/${enc(orgId)}/billing/checkout`, { body: { plan } });
  }
  portal(orgId: string) {
    return this.request<{ url: string }>('POST', `/console/orgs/${enc(orgId)}/billing/portal`);
  }
}

/** areaParams are an area's query parameters: types repeat type, and are left out when none is chosen (every type). */
function areaParams(a: AreaQuery): Query {
  return { lat: a.lat, lon: a.lon, radius: a.radius, type: a.types.length ? a.types : undefined, min_confidence: a.min_confidence || undefined };
}

/** isSession tells a Session from an AuthChallenge (verify-code answers either, docs/api.md §4.2). */
export function isSession(v: Session | AuthChallenge): v is Session {
  return typeof (v as Session).token === 'string';
}
