// The signed-in user's context, shared by every page.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Client, Me, Organisation, Session } from './api';

/** Ctx is what a page can use: the client, the user, and the session's setters. */
export interface Ctx {
  client: Client;
  me: Me;
  /** setSession stores a session the API returned (it carries a fresh token). */
  setSession: (s: Session) => void;
  setMe: (m: Me) => void;
  signOut: (message?: string) => void;
  /**
   * orgs are the user's organisations as GET /console/orgs last answered (by name then org_id):
   * the server's list is the truth, whatever browser the user signs in from.
   */
  orgs: Organisation[];
  /**
   * refreshOrgs reads the list again; pages call it after whatever changes it (create, accept,
   * rename, leave, or finding themselves removed). It resolves with the new list, or with the
   * old one when the service cannot be reached (the page then shows its own error or result).
   */
  refreshOrgs: () => Promise<Organisation[]>;
  /**
   * flash shows a success notice on the page at path (a console path, as navigate takes it)
   * until the console leaves it: a page that navigates away as it finishes (deleting an
   * organisation) says so on the next one.
   */
  flash: (text: string, path: string) => void;
}

export const AppContext = createContext<Ctx | null>(null);

/** useApp returns the context; pages only render inside the signed-in shell. */
export function useApp(): Ctx {
  const c = useContext(AppContext);
  if (!c) throw new Error('useApp outside the signed-in console');
  return c;
}
