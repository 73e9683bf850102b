// The console's root: it checks the stored session with GET /console/auth/me before drawing
// any signed-in page, then routes. Sign-in is shown whenever there is no session, whatever
// the path, so a deep link works after signing in, except on the Privacy page, which is open to
// everyone. Every page ends with the footer.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Client, type Me, type Organisation, type Session } from './api';
import { AppContext, type Ctx, useApp } from './context';
import { REFERENCE, href, navigate, onLinkClick, useRoute } from './router';
import { currentOrg, forgetLegacyOrgs, pendingInvite, token } from './state';
import { Notice } from './ui';
import { SignIn } from './pages/signin';
import { AcceptInvite } from './pages/invite';
import { Account } from './pages/account';
import { CreateOrg, OrgSettings } from './pages/orgs';
import { Overview } from './pages/overview';
import { Road } from './pages/road';
import { Keys } from './pages/keys';
import { Quality } from './pages/quality';
import { Feeds } from './pages/feeds';
import { Webhooks } from './pages/webhooks';
import { Usage } from './pages/usage';
import { Members } from './pages/members';
import { Billing } from './pages/billing';
import { Audit } from './pages/audit';
import { Privacy } from './pages/privacy';

/**
 * captureInvite moves an invitation token from the URL fragment (#token=..., the e-mailed link)
 * to sessionStorage, where it waits across sign-in, and takes it out of the address bar at once.
 * It runs before the first render so the sign-in page can say an invitation is waiting.
 */
export function captureInvite() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    pendingInvite.set(decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname);
  }
}

type Phase = { kind: 'checking' } | { kind: 'signed-out'; message?: string } | { kind: 'signed-in'; me: Me };

/** App is the whole console. */
export function App({ apiBase }: { apiBase: string }) {
  const [phase, setPhase] = useState<Phase>(() => (token.get() ? { kind: 'checking' } : { kind: 'signed-out' }));
  const path = useRoute();
  const signOutRef = useRef<(m?: string) => void>(() => {});
  const client = useMemo(
    () =>
      new Client({
        base: apiBase,
        token: token.get,
        onUnauthorized: () => signOutRef.current('Your session has ended. Please sign in again.'),
      }),
    [apiBase],
  );
  signOutRef.current = (message?: string) => {
    token.set(null);
    setPhase({ kind: 'signed-out', message });
  };

  useEffect(() => {
    if (phase.kind !== 'checking') return;
    client.me().then(
      (s) => {
        token.set(s.token);
        setPhase({ kind: 'signed-in', me: s.user });
      },
      (e) => {
        if (e?.status !== 401) {
          // The service is unreachable or failing: say so rather than pretend to be signed out.
          setPhase({ kind: 'signed-out', message: e?.message ?? 'The service cannot be reached.' });
        }
      },
    );
  }, [phase.kind, client]);

  let content: preact.ComponentChildren;
  if (phase.kind === 'checking') {
    content = (
      <main class="center" aria-busy="true">
        <p class="muted" role="status">
          Checking your session…
        </p>
      </main>
    );
  } else if (phase.kind === 'signed-out' && path === 'privacy') {
    content = (
      <main id="main" tabIndex={-1}>
        <p>
          <a href={href('')}>Sign in</a>
        </p>
        <Privacy />
      </main>
    );
  } else if (phase.kind === 'signed-out') {
    content = (
      <SignIn
        client={client}
        message={phase.message}
        onSession={(s) => {
          token.set(s.token);
          setPhase({ kind: 'signed-in', me: s.user });
        }}
      />
    );
  } else {
    content = (
      <SignedIn
        client={client}
        me={phase.me}
        setMe={(me) => setPhase({ kind: 'signed-in', me })}
        signOut={(m) => signOutRef.current(m)}
      />
    );
  }
  return (
    <div class="frame" onClick={onLinkClick}>
      {content}
      <footer class="foot">
        <a href={href('privacy')}>Privacy</a>
      </footer>
    </div>
  );
}

function SignedIn(props: { client: Client; me: Me; setMe: (m: Me) => void; signOut: (m?: string) => void }) {
  const { client, me } = props;
  const path = useRoute();
  const [orgs, setOrgs] = useState<Organisation[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  // latest is the list as last read (null before the first answer), for refreshOrgs to fall
  // back on when a refresh fails.
  const latest = useRef<Organisation[] | null>(null);
  // flashed is a notice for the page at its path, dropped once the console leaves that page.
  const [flashed, setFlashed] = useState<{ text: string; path: string } | null>(null);
  useEffect(() => {
    if (flashed && flashed.path !== path) setFlashed(null);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [path]);

  // The user's organisations are the server's list (GET /console/orgs, docs/console.md §1), read once per sign-in and again after anything that changes it.
  const refreshOrgs = async (): Promise<Organisation[]> => {
    try {
      const list = await client.orgs();
      latest.current = list;
      setOrgs(list);
      setLoadError(null);
      return list;
    } catch (e) {
      // A 401 has already sent the user to sign-in; anything else keeps the list as it was.
      if (latest.current === null && (e as { status?: number })?.status !== 401) {
        setLoadError((e as Error)?.message ?? 'The service cannot be reached.');
      }
      return latest.current ?? [];
    }
  };

  useEffect(() => {
    forgetLegacyOrgs(me.user_id);
    latest.current = null;
    setOrgs(null);
    void refreshOrgs();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [client, me.user_id]);

  const ctx: Ctx = {
    client,
    me,
    setSession: (s: Session) => {
      token.set(s.token);
      props.setMe(s.user);
    },
    setMe: props.setMe,
    signOut: props.signOut,
    orgs: orgs ?? [],
    refreshOrgs,
    flash: (text, at) => setFlashed({ text, path: at }),
  };

  if (orgs === null) {
    if (loadError) {
      return (
        <main class="center">
          <Notice kind="error">{loadError}</Notice>
          <button
            type="button"
            class="primary"
            onClick={() => {
              setLoadError(null);
              void refreshOrgs();
            }}
          >
            Try again
          </button>
        </main>
      );
    }
    return (
      <main class="center" aria-busy="true">
        <p class="muted" role="status">
          Loading your organisations…
        </p>
      </main>
    );
  }

  const parts = path.split('/').filter(Boolean);
  let orgId: string | null = null;
  let page: preact.ComponentChildren;
  if (pendingInvite.get() && parts[0] !== 'accept-invite') {
    navigate('accept-invite', true);
    return null;
  }
  if (parts[0] === 'accept-invite') {
    page = <AcceptInvite />;
  } else if (parts[0] === 'privacy') {
    page = <Privacy />;
  } else if (parts[0] === 'account') {
    page = <Account />;
  } else if (parts[0] === 'orgs' && parts[1] === 'new') {
    page = <CreateOrg />;
  } else if (parts[0] === 'orgs' && parts[1]) {
    orgId = parts[1];
    page = <OrgPage orgId={orgId} tab={parts[2] ?? 'overview'} />;
  } else {
    // The start page: the last organisation opened if the user still belongs to it, else the
    // first of the list, else create one.
    const last = currentOrg.get(me.user_id);
    const target = orgs.find((o) => o.org_id === last) ?? orgs[0];
    navigate(target ? `orgs/${target.org_id}/overview` : 'orgs/new', true);
    return null;
  }

  return (
    <AppContext.Provider value={ctx}>
      <div class="shell">
        <Header orgId={orgId} />
        <main id="main" tabIndex={-1}>
          {flashed?.path === path && <Notice kind="success">{flashed.text}</Notice>}
          {page}
        </main>
      </div>
    </AppContext.Provider>
  );
}

function Header({ orgId }: { orgId: string | null }) {
  const { me, orgs, client, signOut } = useApp();
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <a class="brand" href={href('')}>
        Road events console
      </a>
      <label class="org-switch">
        <span class="visually-hidden">Organisation</span>
        <select
          value={orgId ?? ''}
          onChange={(e) => {
            const v = (e.currentTarget as HTMLSelectElement).value;
            navigate(v === '__new' ? 'orgs/new' : `orgs/${v}/overview`);
          }}
        >
          {!orgs.some((o) => o.org_id === orgId) && <option value={orgId ?? ''}>Switch organisation…</option>}
          {orgs.map((o) => (
            <option value={o.org_id} key={o.org_id}>
              {o.name}
            </option>
          ))}
          <option value="__new">+ New organisation</option>
        </select>
      </label>
      <a href={REFERENCE}>API reference</a>
      <nav class="user" aria-label="Account">
        <a href={href('account')}>{me.display_name || me.email}</a>
        <button
          type="button"
          class="link"
          onClick={async () => {
            try {
              await client.logout();
            } catch {
              // Signed out locally whatever the answer.
            }
            signOut('You are signed out.');
          }}
        >
          Sign out
        </button>
      </nav>
    </header>
  );
}


const tabs: [string, string][] = [
  ['overview', 'Overview'],
  ['road', 'Road'],
  ['keys', 'API keys'],
  ['usage', 'Usage'],
  ['quality', 'Quality'],
  ['feeds', 'Feeds'],
  ['webhooks', 'Webhooks'],
  ['members', 'Members'],
  ['billing', 'Billing'],
  ['audit', 'Audit log'],
  ['settings', 'Settings'],
];

function OrgPage({ orgId, tab }: { orgId: string; tab: string }) {
  const ctx = useApp();
  const [org, setOrg] = useState<Organisation | null>(ctx.orgs.find((o) => o.org_id === orgId) ?? null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setError(null);
    ctx.client.org(orgId).then(
      (o) => {
        if (!live) return;
        setOrg(o);
        currentOrg.set(ctx.me.user_id, o.org_id);
        // The list is older than this answer (joined or renamed elsewhere, a new role): read it again.
        const listed = ctx.orgs.find((x) => x.org_id === o.org_id);
        if (!listed || listed.name !== o.name || listed.role !== o.role || listed.plan !== o.plan) void ctx.refreshOrgs();
      },
      (e) => {
        if (!live) return;
        if (e?.status === 404) {
          // Removed by an owner, or left in another tab: the organisation leaves the switcher.
          if (currentOrg.get(ctx.me.user_id) === orgId) currentOrg.set(ctx.me.user_id, null);
          void ctx.refreshOrgs();
        }
        setError(e?.status === 404 ? 'This organisation does not exist or you are not a member of it.' : e?.message);
      },
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [orgId]);
  if (error) return <Notice kind="error">{error}</Notice>;
  if (!org) {
    return (
      <p class="muted" role="status">
        Loading…
      </p>
    );
  }
  const body = (() => {
    switch (tab) {
      case 'road':
        return <Road org={org} />;
      case 'keys':
        return <Keys org={org} />;
      case 'usage':
        return <Usage org={org} />;
      case 'quality':
        return <Quality org={org} />;
      case 'feeds':
        return <Feeds org={org} />;
      case 'webhooks':
        return <Webhooks org={org} />;
      case 'members':
        return <Members org={org} />;
      case 'billing':
        return <Billing org={org} />;
      case 'audit':
        return <Audit org={org} />;
      case 'settings':
        return <OrgSettings org={org} onChange={setOrg} />;
      default:
        return <Overview org={org} />;
    }
  })();
  return (
    <>
      <div class="org-head">
        <h1>{org.name}</h1>
        <p class="muted">
          Plan <strong>{org.plan}</strong> · your role <strong>{org.role}</strong>
        </p>
      </div>
      <nav class="tabs" aria-label="Organisation pages">
        {tabs.map(([t, label]) => (
          <a key={t} href={href(`orgs/${org.org_id}/${t}`)} aria-current={t === tab || (tab === '' && t === 'overview') ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      <section class="page">{body}</section>
    </>
  );
}
