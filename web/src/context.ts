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
  /** orgs are the organisations this browser knows the user belongs to. */
  orgs: Organisation[];
  /** rememberOrg adds or refreshes an organisation (after create, accept, rename). */
  rememberOrg: (o: Organisation) => void;
  forgetOrg: (orgId: string) => void;
}

export const AppContext = createContext<Ctx | null>(null);

/** useApp returns the context; pages only render inside the signed-in shell. */
export function useApp(): Ctx {
  const c = useContext(AppContext);
  if (!c) throw new Error('useApp outside the signed-in console');
  return c;
}
