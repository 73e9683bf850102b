// The user's own account: profile (PATCH /console/auth/me), two-factor authentication
// (docs/api.md §3, TOTP for an account: setup -> confirm -> disable; recovery codes shown once),
// the person's data (docs/privacy.md §5) and erasing the account (DELETE /console/auth/me,
// docs/privacy.md §6).
import { useEffect, useState } from 'preact/hooks';
import type { RecoveryCodes, TotpEnrolment } from '../api';
import { useApp } from '../context';
import { navigate } from '../router';
import { currentOrg } from '../state';
import { CopyButton, Field, FormError, Notice, TypedConfirm, formatTime, useForm, useLoad } from '../ui';

/** Account is the profile and security page. */
export function Account() {
  return (
    <>
      <h1>Your account</h1>
      <Profile />
      <TwoFactor />
      <YourData />
      <DeleteAccount />
    </>
  );
}

function Profile() {
  const { client, me, setMe } = useApp();
  const [name, setName] = useState(me.display_name ?? '');
  const [locale, setLocale] = useState(me.locale || 'en');
  const [saved, setSaved] = useState(false);
  const form = useForm(['display_name', 'locale']);
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    const n = name.trim();
    const m = await form.run(() => client.updateMe({ display_name: n === '' ? null : n, locale: locale.trim() }));
    if (m) {
      setMe(m);
      setSaved(true);
    }
  };
  return (
    <section class="card" aria-labelledby="profile-h">
      <h2 id="profile-h">Profile</h2>
      <p>
        Signed in as <strong>{me.email}</strong>
        {me.created_at && <span class="muted"> · account created {formatTime(me.created_at)}</span>}
      </p>
      {saved && <Notice kind="success">Your profile is saved.</Notice>}
      <FormError form={form} />
      <form onSubmit={submit} noValidate>
        <Field label="Display name" name="display_name" value={name} onInput={setName} form={form} hint="Leave empty to show your e-mail address." input={{ maxLength: 80, autocomplete: 'name' }} />
        <Field label="Language" name="locale" value={locale} onInput={setLocale} form={form} hint="A language tag such as en or fr-CA." input={{ maxLength: 35 }} />
        <button type="submit" class="primary" disabled={form.busy}>
          Save profile
        </button>
      </form>
    </section>
  );
}

/** download saves text as a file named name. */
function download(text: string, name: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** downloadCodes saves the recovery codes as a text file. */
function downloadCodes(codes: string[], account: string) {
  const text = `Road events console recovery codes for ${account}\nEach code works once.\n\n${codes.join('\n')}\n`;
  download(text, 'roadevents-recovery-codes.txt', 'text/plain');
}

/** YourData downloads what the service keeps about the person (docs/privacy.md §5). */
function YourData() {
  const { client } = useApp();
  const form = useForm([]);
  const [done, setDone] = useState(false);
  const fetchData = async () => {
    setDone(false);
    const data = await form.run(() => client.exportMe());
    if (data !== undefined) {
      download(JSON.stringify(data, null, 2) + '\n', 'roadevents-my-data.json', 'application/json');
      setDone(true);
    }
  };
  return (
    <section class="card" aria-labelledby="data-h">
      <h2 id="data-h">Your data</h2>
      <p>
        One JSON file of everything the service keeps about you: your account, the sessions that still sign you in (their
        times, never a token), your organisations and roles, and what you did in their audit logs.
      </p>
      {done && <Notice kind="success">Your data is downloaded.</Notice>}
      <FormError form={form} />
      <button type="button" onClick={fetchData} disabled={form.busy}>
        Download my data
      </button>
    </section>
  );
}

/**
 * DeleteAccount erases the account once its address is typed (and, with TOTP, a code is given);
 * every session ends, so the console goes back to sign-in and forgets the session.
 */
function DeleteAccount() {
  const { client, me, signOut } = useApp();
  const normal = (s: string) => s.trim().toLowerCase();
  return (
    <section class="card" aria-labelledby="delete-account-h">
      <h2 id="delete-account-h">Delete this account</h2>
      <p>
        Erase your account and sign out everywhere. If you are the last owner of an organisation with other members, make another
        member an owner or delete the organisation first.
      </p>
      <TypedConfirm
        label="Delete my account"
        confirmLabel="Yes, delete my account"
        typeLabel="Type your e-mail address to confirm"
        typeHint={
          <>
            Your address is <strong>{me.email}</strong>.
          </>
        }
        matches={(typed) => normal(typed) === normal(me.email)}
        totp={me.totp_enabled}
        act={(code) => client.deleteMe(code)}
        done={() => {
          currentOrg.set(me.user_id, null);
          signOut('Your account is deleted.');
          navigate('', true);
        }}
      >
        <Notice kind="warning">
          This cannot be undone. Your e-mail address, your name, your two-factor authentication secret and recovery codes, every
          session (you are signed out everywhere) and the invitations waiting for you are erased. Organisations where you are the
          only member are deleted with your account. The audit log entries of what you did stay, without your address.
        </Notice>
      </TypedConfirm>
    </section>
  );
}

/** ShowCodes displays recovery codes the one time the API returns them. */
export function ShowCodes({ codes, account, onDone }: { codes: RecoveryCodes; account: string; onDone: () => void }) {
  return (
    <div class="once" role="region" aria-label="Recovery codes">
      <Notice kind="warning">
        Save these recovery codes now: they are shown only once. Each one signs you in once if you lose your authenticator.
      </Notice>
      <ol class="codes" data-testid="recovery-codes">
        {codes.codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ol>
      <CopyButton text={codes.codes.join('\n')} label="Copy codes" />{' '}
      <button type="button" onClick={() => downloadCodes(codes.codes, account)}>
        Download codes
      </button>{' '}
      <button type="button" class="primary" onClick={onDone}>
        I have saved them
      </button>
    </div>
  );
}

/** Qr draws the otpauth URL as a QR code; the library loads only when needed. */
function Qr({ text }: { text: string }) {
  const [svg, setSvg] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    import('qrcode-generator').then(({ default: qrcode }) => {
      const qr = qrcode(0, 'M');
      qr.addData(text);
      qr.make();
      if (live) setSvg(qr.createSvgTag({ cellSize: 4, margin: 4, scalable: true }));
    });
    return () => {
      live = false;
    };
  }, [text]);
  return <div class="qr" role="img" aria-label="QR code of the authenticator secret" dangerouslySetInnerHTML={svg ? { __html: svg } : undefined} />;
}

function TwoFactor() {
  const { client, me, setMe, setSession } = useApp();
  const [enrol, setEnrol] = useState<TotpEnrolment | null>(null);
  const [codes, setCodes] = useState<RecoveryCodes | null>(null);
  const [code, setCode] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const form = useForm(['code']);
  const status = useLoad(() => (me.totp_enabled ? client.recoveryStatus() : Promise.resolve(null)), [me.totp_enabled, codes]);

  const start = async () => {
    setDone(null);
    const e = await form.run(() => client.totpSetup());
    if (e) {
      setCode('');
      setEnrol(e);
    }
  };
  const confirm = async (e: Event) => {
    e.preventDefault();
    const r = await form.run(() => client.totpConfirm(code.trim()));
    if (r) {
      setCodes(r);
      setEnrol(null);
      setCode('');
      setMe({ ...me, totp_enabled: true });
    }
  };
  const disable = async (e: Event) => {
    e.preventDefault();
    const s = await form.run(() => client.totpDisable(code.trim()));
    if (s) {
      setCode('');
      setSession(s);
      setDone('Two-factor authentication is off. Your other sessions have been signed out.');
    }
  };
  const regenerate = async (e: Event) => {
    e.preventDefault();
    const r = await form.run(() => client.regenerateRecovery(code.trim()));
    if (r) {
      setCode('');
      setCodes(r);
    }
  };

  return (
    <section class="card" aria-labelledby="tfa-h">
      <h2 id="tfa-h">Two-factor authentication</h2>
      {done && <Notice kind="success">{done}</Notice>}
      <FormError form={form} />
      {codes ? (
        <ShowCodes codes={codes} account={me.email} onDone={() => setCodes(null)} />
      ) : enrol ? (
        <form onSubmit={confirm} noValidate>
          <p>Scan this QR code with your authenticator app, or type the secret into it. Then enter the code it shows.</p>
          <Qr text={enrol.otpauth_url} />
          <p>
            Secret: <code data-testid="totp-secret">{enrol.secret}</code> <CopyButton text={enrol.secret} label="Copy secret" />
          </p>
          <Field label="Code from the app" name="code" value={code} onInput={setCode} form={form} input={{ inputMode: 'numeric', autocomplete: 'one-time-code', maxLength: 16, autoFocus: true }} />
          <button type="submit" class="primary" disabled={form.busy || code.trim() === ''}>
            Turn on two-factor authentication
          </button>{' '}
          <button type="button" onClick={() => setEnrol(null)}>
            Cancel
          </button>
        </form>
      ) : me.totp_enabled ? (
        <>
          <p>
            <strong>On.</strong> Signing in and issuing API keys ask for a code from your authenticator app.
          </p>
          {status.data && (
            <p>
              Recovery codes left: <strong>{status.data.remaining}</strong> of {status.data.total}.
            </p>
          )}
          <form noValidate onSubmit={(e) => e.preventDefault()}>
            <Field label="Authenticator code" name="code" value={code} onInput={setCode} form={form} hint="Needed to make new recovery codes or to turn two-factor authentication off." input={{ inputMode: 'numeric', autocomplete: 'one-time-code', maxLength: 16 }} />
            <button type="submit" onClick={regenerate} disabled={form.busy || code.trim() === ''}>
              Make new recovery codes
            </button>{' '}
            <button type="button" class="danger" onClick={disable} disabled={form.busy || code.trim() === ''}>
              Turn off two-factor authentication
            </button>
          </form>
        </>
      ) : (
        <>
          <p>
            <strong>Off.</strong> Add a code from an authenticator app to signing in and to issuing API keys.
          </p>
          <button type="button" class="primary" onClick={start} disabled={form.busy}>
            Set up two-factor authentication
          </button>
        </>
      )}
    </section>
  );
}
