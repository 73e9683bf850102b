// Sign-in and sign-up in one (docs/api.md §4.2): an e-mailed code, then, for an account with TOTP,
// the authenticator code or a recovery code with the challenge's temp_token.
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Client, isSession, type Session } from '../api';
import { pendingInvite } from '../state';
import { Field, FormError, Notice, useForm } from '../ui';

type Step = { kind: 'email' } | { kind: 'code'; email: string } | { kind: 'totp'; email: string; temp: string; recovery: boolean };

/** isLocal says the console is served by `go run .`, whose e-mail goes to the outbox folder. */
function isLocal(): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(location.hostname);
}

/** SignIn is the page shown whenever there is no session. */
export function SignIn(props: { client: Client; message?: string; onSession: (s: Session) => void }) {
  const { client } = props;
  const [step, setStep] = useState<Step>({ kind: 'email' });
  const [email, setEmail] = useState('');
  const [code, setCode] = useState('');
  const [info, setInfo] = useState<string | null>(null);
  const form = useForm(['email', 'code']);
  const card = useRef<HTMLDivElement>(null);

  // Each step puts the keyboard in its one input, so the flow needs no mouse.
  useEffect(() => {
    card.current?.querySelector<HTMLInputElement>('form input')?.focus();
  }, [step.kind, step.kind === 'totp' && step.recovery]);

  const requestCode = async (e: Event) => {
    e.preventDefault();
    const r = await form.run(() => client.requestCode(email.trim()));
    if (r) {
      setCode('');
      setInfo(null);
      setStep({ kind: 'code', email: r.email ?? email.trim() });
    }
  };

  const verifyCode = async (e: Event) => {
    e.preventDefault();
    if (step.kind !== 'code') return;
    if (!/^\d{6}$/.test(code.trim())) {
      form.setError('code', 'The code is the 6 digits from the e-mail.');
      return;
    }
    const r = await form.run(() => client.verifyCode(step.email, code.trim()));
    if (!r) return;
    if (isSession(r)) props.onSession(r);
    else if (r.method === 'totp' && r.temp_token) {
      setCode('');
      setStep({ kind: 'totp', email: step.email, temp: r.temp_token, recovery: false });
    }
  };

  const verifySecond = async (e: Event) => {
    e.preventDefault();
    if (step.kind !== 'totp') return;
    const r = await form.run(() =>
      step.recovery ? client.verifyRecovery(step.temp, code.trim()) : client.verifyTotp(step.temp, code.trim()),
    );
    if (r) props.onSession(r);
  };

  return (
    <main class="center signin">
      <div class="card" ref={card}>
        <h1>
          {step.kind === 'email' ? 'Sign in to the road events console' : step.kind === 'code' ? 'Check your e-mail' : 'Two-factor authentication'}
        </h1>
        {props.message && step.kind === 'email' && <Notice>{props.message}</Notice>}
        {pendingInvite.get() && step.kind === 'email' && (
          <Notice>You have an invitation to an organisation. Sign in with the invited address to accept it.</Notice>
        )}
        {info && <Notice>{info}</Notice>}
        <FormError form={form} />

        {step.kind === 'email' && (
          <form onSubmit={requestCode} noValidate>
            <p>We e-mail you a one-time code. New here? The same code creates your account.</p>
            <Field
              label="E-mail address"
              name="email"
              value={email}
              onInput={setEmail}
              form={form}
              input={{ type: 'email', autocomplete: 'email', required: true, autoFocus: true }}
            />
            <button type="submit" class="primary" disabled={form.busy || email.trim() === ''}>
              {form.busy ? 'Sending…' : 'Send me a code'}
            </button>
          </form>
        )}

        {step.kind === 'code' && (
          <form onSubmit={verifyCode} noValidate>
            <p>
              We sent a 6-digit code to <strong>{step.email}</strong>. It expires in a few minutes.
            </p>
            {isLocal() && (
              <Notice>
                Running locally: no e-mail is sent. The code is in a file in the outbox folder, <code>./data/outbox</code> (or{' '}
                <code>&lt;data&gt;/outbox</code> with <code>-data</code>).
              </Notice>
            )}
            <Field
              label="Code"
              name="code"
              value={code}
              onInput={setCode}
              form={form}
              input={{ inputMode: 'numeric', autocomplete: 'one-time-code', maxLength: 6, pattern: '[0-9]{6}', autoFocus: true }}
            />
            <button type="submit" class="primary" disabled={form.busy}>
              {form.busy ? 'Checking…' : 'Sign in'}
            </button>{' '}
            <button
              type="button"
              class="link"
              onClick={async () => {
                const r = await form.run(() => client.requestCode(step.email));
                if (r) setInfo('A new code is on its way. Earlier codes may no longer work.');
              }}
            >
              Send a new code
            </button>{' '}
            <button type="button" class="link" onClick={() => setStep({ kind: 'email' })}>
              Use another address
            </button>
          </form>
        )}

        {step.kind === 'totp' && (
          <form onSubmit={verifySecond} noValidate>
            {step.recovery ? (
              <p>Enter one of your recovery codes. Each code works once.</p>
            ) : (
              <p>Enter the 6-digit code from your authenticator app.</p>
            )}
            <Field
              label={step.recovery ? 'Recovery code' : 'Authenticator code'}
              name="code"
              value={code}
              onInput={setCode}
              form={form}
              input={
                step.recovery
                  ? { autocomplete: 'off', maxLength: 64, autoFocus: true }
                  : { inputMode: 'numeric', autocomplete: 'one-time-code', maxLength: 16, autoFocus: true }
              }
            />
            <button type="submit" class="primary" disabled={form.busy || code.trim() === ''}>
              {form.busy ? 'Checking…' : 'Verify'}
            </button>{' '}
            <button
              type="button"
              class="link"
              onClick={() => {
                setCode('');
                setStep({ ...step, recovery: !step.recovery });
              }}
            >
              {step.recovery ? 'Use the authenticator app instead' : 'Use a recovery code instead'}
            </button>{' '}
            <button type="button" class="link" onClick={() => setStep({ kind: 'email' })}>
              Start again
            </button>
          </form>
        )}
      </div>
    </main>
  );
}
