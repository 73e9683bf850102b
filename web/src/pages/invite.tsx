// Accepting an invitation from its e-mailed link (<console>/accept-invite#token=...): the app
// moved the token to sessionStorage before sign-in; here the signed-in user accepts it (docs/api.md
// §4.3: the session's address must match the invited one).
import { useState } from 'preact/hooks';
import { useApp } from '../context';
import { href, navigate } from '../router';
import { pendingInvite } from '../state';
import { FormError, Notice, useForm } from '../ui';

/** AcceptInvite asks the signed-in user to join the organisation of a pending invitation. */
export function AcceptInvite() {
  const { client, me, refreshOrgs } = useApp();
  const [tok] = useState(pendingInvite.get());
  const form = useForm([]);
  if (!tok) {
    return (
      <Notice>
        There is no invitation to accept here. Open the link from the invitation e-mail again, or go to{' '}
        <a href={href('')}>your organisations</a>.
      </Notice>
    );
  }
  const accept = async () => {
    const org = await form.run(() => client.acceptInvite(tok));
    if (org) {
      pendingInvite.set(null);
      await refreshOrgs();
      navigate(`orgs/${org.org_id}/overview`);
    }
  };
  return (
    <div class="card narrow">
      <h1>Join an organisation</h1>
      <p>
        You have been invited to an organisation. You are signed in as <strong>{me.email}</strong>; the invitation must be for
        this address.
      </p>
      <FormError form={form} />
      <button type="button" class="primary" onClick={accept} disabled={form.busy}>
        {form.busy ? 'Accepting…' : 'Accept the invitation'}
      </button>{' '}
      <button
        type="button"
        onClick={() => {
          pendingInvite.set(null);
          navigate('');
        }}
      >
        Not now
      </button>
    </div>
  );
}
