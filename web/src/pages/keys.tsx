// API keys (docs/api.md §4.4, §5): issue with an environment and, when the user has TOTP, a code
// (step-up); the raw key is shown once, with the first calls to make with it; the list shows
// prefix and last use; revoke asks first.
import { useState } from 'preact/hooks';
import type { Environment, IssuedKey, Organisation } from '../api';
import { useApp } from '../context';
import { FirstCall, apiOrigin } from '../firstcall';
import { Confirm, CopyButton, Field, FormError, Loading, Notice, formatTime, useForm, useLoad, type Msg } from '../ui';

/** Keys lists and issues the organisation's API keys. */
export function Keys({ org }: { org: Organisation }) {
  const { client, me } = useApp();
  const keys = useLoad(() => client.keys(org.org_id), [org.org_id]);
  const [issued, setIssued] = useState<IssuedKey | null>(null);
  const [label, setLabel] = useState('');
  const [env, setEnv] = useState<Environment>('sandbox');
  const [totp, setTotp] = useState('');
  const form = useForm(['label', 'environment', 'totp_code']);
  const [revokeMsg, setRevokeMsg] = useState<Msg | null>(null);
  const owner = org.role === 'owner';

  const issue = async (e: Event) => {
    e.preventDefault();
    if (label.trim() === '') {
      form.setError('label', 'Give the key a label (1 to 120 characters), such as the app that uses it.');
      return;
    }
    if (me.totp_enabled && totp.trim() === '') {
      form.setError('totp_code', 'Enter the code from your authenticator app.');
      return;
    }
    const k = await form.run(() => client.issueKey(org.org_id, label.trim(), env, me.totp_enabled ? totp.trim() : null));
    if (k) {
      setIssued(k);
      setLabel('');
      setTotp('');
      keys.reload();
    }
  };

  const revoke = async (keyId: string, keyLabel: string) => {
    setRevokeMsg(null);
    try {
      await client.revokeKey(org.org_id, keyId);
      setRevokeMsg({ kind: 'success', text: `The key “${keyLabel}” is revoked: requests with it are refused from now on.` });
    } catch (e) {
      setRevokeMsg({ kind: 'error', text: (e as Error).message });
    }
    keys.reload();
  };

  return (
    <>
      <h2>API keys</h2>
      {issued && (
        <div class="once" role="region" aria-label="New API key">
          <Notice kind="warning">
            Copy this key now. It is shown only once: we keep only a fingerprint of it. Anyone with the key can use the service as
            your organisation.
          </Notice>
          <p>
            <span class={'env ' + issued.api_key.environment}>{issued.api_key.environment}</span> {issued.api_key.label}
          </p>
          <p class="secret">
            <code data-testid="raw-key">{issued.key}</code>
          </p>
          <CopyButton text={issued.key} label="Copy key" />{' '}
          <button type="button" onClick={() => setIssued(null)}>
            I have copied it
          </button>
          <FirstCall apiKey={issued.key} environment={issued.api_key.environment} origin={apiOrigin(client.base)} />
        </div>
      )}

      {owner ? (
        <details class="card" open={keys.data?.length === 0 || undefined}>
          <summary>Issue a new key</summary>
          <FormError form={form} />
          <form onSubmit={issue} noValidate>
            <Field label="Label" name="label" value={label} onInput={setLabel} form={form} hint="What uses the key, for example “Fleet app (staging)”." input={{ maxLength: 120 }} />
            <fieldset aria-describedby={form.fields.environment ? 'env-error' : undefined}>
              <legend>Environment</legend>
              <label class="radio">
                <input type="radio" name="environment" value="sandbox" checked={env === 'sandbox'} onChange={() => setEnv('sandbox')} /> Sandbox: for
                testing; reads live and sandbox events, writes sandbox events
              </label>
              <label class="radio">
                <input type="radio" name="environment" value="live" checked={env === 'live'} onChange={() => setEnv('live')} /> Live: production
                traffic; capped by your plan
              </label>
              {form.fields.environment && (
                <p class="field-error" id="env-error" role="alert">
                  {form.fields.environment}
                </p>
              )}
            </fieldset>
            {me.totp_enabled && (
              <Field label="Authenticator code" name="totp_code" value={totp} onInput={setTotp} form={form} hint="Your account has two-factor authentication: issuing a key needs a fresh code." input={{ inputMode: 'numeric', autocomplete: 'one-time-code', maxLength: 16 }} />
            )}
            <button type="submit" class="primary" disabled={form.busy}>
              {form.busy ? 'Issuing…' : 'Issue key'}
            </button>
          </form>
        </details>
      ) : (
        <Notice>Only owners can issue and revoke keys. You can see them here.</Notice>
      )}

      {revokeMsg && <Notice kind={revokeMsg.kind}>{revokeMsg.text}</Notice>}
      <Loading load={keys}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No keys yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">API keys</caption>
                <thead>
                  <tr>
                    <th scope="col">Label</th>
                    <th scope="col">Environment</th>
                    <th scope="col">Prefix</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">State</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((k) => (
                    <tr key={k.key_id} class={k.revoked ? 'revoked' : ''}>
                      <td>{k.label}</td>
                      <td>
                        <span class={'env ' + k.environment}>{k.environment}</span>
                      </td>
                      <td>
                        <code>{k.prefix}…</code>
                      </td>
                      <td>
                        {formatTime(k.created_at)}
                        {k.created_by_email && <div class="muted small">by {k.created_by_email}</div>}
                      </td>
                      <td>{k.last_used_at ? formatTime(k.last_used_at) : 'Never'}</td>
                      <td>
                        {k.revoked ? (
                          <span>Revoked {formatTime(k.revoked_at)}</span>
                        ) : owner ? (
                          <Confirm label="Revoke" question={`Revoke “${k.label}”? Apps using it stop working.`} confirmLabel="Yes, revoke" onConfirm={() => revoke(k.key_id, k.label)} />
                        ) : (
                          'Active'
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Loading>
    </>
  );
}
