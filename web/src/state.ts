// What the console keeps in the browser, and why where.
//
// The session token lives in sessionStorage: it lasts as long as the tab, survives a reload and
// the round trip of sign-in, and is gone when the tab closes, so a 30-day credential (docs/api.md
// §10.3) is not left behind on a shared computer. The cost is signing in again in a new tab.
// localStorage holds only non-secret preferences: the organisation each user opened last, and
// where each organisation's Road page was last searched (docs/console.md §5). The list
// of a user's organisations is the server's (GET /console/orgs, docs/console.md §1),
// read on every sign-in, so a new browser shows the same list. No credential is ever put in a URL
// (docs/security.md §2): the invitation token arrives in the URL fragment and moves to
// sessionStorage at once.

const TOKEN = 'roadevents.session';
const INVITE = 'roadevents.invite';
// ORGS is the key prefix of the list earlier consoles kept; only forgetLegacyOrgs uses it.
const ORGS = 'roadevents.orgs.';
const CURRENT = 'roadevents.current-org.';
const ROAD = 'roadevents.road-centre.';

function get(store: Storage, key: string): string | null {
  try {
    return store.getItem(key);
  } catch {
    return null;
  }
}
function set(store: Storage, key: string, value: string | null) {
  try {
    if (value === null) store.removeItem(key);
    else store.setItem(key, value);
  } catch {
    // Storage refused (private mode quotas): the console still works for this page's life.
  }
}

/** token is the session token, or null when signed out. */
export const token = {
  get: () => get(sessionStorage, TOKEN),
  set: (v: string | null) => set(sessionStorage, TOKEN, v),
};

/** pendingInvite holds an invitation token across sign-in. */
export const pendingInvite = {
  get: () => get(sessionStorage, INVITE),
  set: (v: string | null) => set(sessionStorage, INVITE, v),
};

/**
 * forgetLegacyOrgs removes the per-user list of organisation ids that earlier consoles kept in
 * localStorage: the server's list replaced it, and a stale copy has no reader left.
 */
export function forgetLegacyOrgs(userId: string) {
  set(localStorage, ORGS + userId, null);
}

/** currentOrg is the organisation last opened by a user. */
export const currentOrg = {
  get: (userId: string) => get(localStorage, CURRENT + userId),
  set: (userId: string, orgId: string | null) => set(localStorage, CURRENT + userId, orgId),
};

/** RoadCentre is where a Road page was last searched: its centre, and the map's zoom then. */
export interface RoadCentre {
  lat: number;
  lon: number;
  zoom: number;
}

/** roadCentre is the centre an organisation's Road page last searched, in this browser. */
export const roadCentre = {
  get(orgId: string): RoadCentre | null {
    const raw = get(localStorage, ROAD + orgId);
    if (!raw) return null;
    try {
      const v = JSON.parse(raw) as Partial<RoadCentre>;
      const ok = (n: unknown, max: number): n is number => typeof n === 'number' && Number.isFinite(n) && Math.abs(n) <= max;
      if (!ok(v.lat, 90) || !ok(v.lon, 180)) return null;
      return { lat: v.lat, lon: v.lon, zoom: ok(v.zoom, 30) ? v.zoom : 13 };
    } catch {
      return null;
    }
  },
  set: (orgId: string, v: RoadCentre) => set(localStorage, ROAD + orgId, JSON.stringify(v)),
};
