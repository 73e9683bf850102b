// What the console keeps in the browser, and why where.
//
// The session token lives in sessionStorage: it lasts as long as the tab, survives a reload and
// the round trip of sign-in, and is gone when the tab closes, so a 30-day credential (docs/api.md
// §10.3) is not left behind on a shared computer. The cost is signing in again in a new tab.
// localStorage holds only a non-secret preference: the organisation each user opened last. The list
// of a user's organisations is the server's (GET /console/orgs, docs/console.md §1),
// read on every sign-in, so a new browser shows the same list. No credential is ever put in a URL
// (docs/security.md §2): the invitation token arrives in the URL fragment and moves to
// sessionStorage at once.

const TOKEN = 'roadevents.session';
const INVITE = 'roadevents.invite';
// ORGS is the key prefix of the list earlier consoles kept; only forgetLegacyOrgs uses it.
const ORGS = 'roadevents.orgs.';
const CURRENT = 'roadevents.current-org.';

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
