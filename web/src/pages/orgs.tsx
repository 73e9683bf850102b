// Creating an organisation, renaming one and deleting one (docs/api.md §4.3, docs/privacy.md §6).
import { useState } from 'preact/hooks';
import type { Organisation } from '../api';
import { useApp } from '../context';
import { navigate } from '../router';
import { currentOrg } from '../state';
import { Field, FormError, Notice, TypedConfirm, useForm } from '../ui';

/** CreateOrg makes a new organisation; the caller becomes its owner on the free plan. */
export function CreateOrg() {
  const { client, refreshOrgs, orgs } = useApp();
  const [name, setName] = useState('');
  const form = useForm(['name']);
  const submit = async (e: Event) => {
    e.preventDefault();
    const n = name.trim();
    if (n.length < 1 || n.length > 80) {
      form.setError('name', 'A name has 1 to 80 characters.');
      return;
    }
    const org = await form.run(() => client.createOrg(n));
    if (org) {
      // The switcher lists the new organisation from the server's list before it opens.
      await refreshOrgs();
      navigate(`orgs/${org.org_id}/overview`);
    }
  };
  return (
    <div class="card narrow">
      <h1>Create an organisation</h1>
      {orgs.length === 0 && (
        <p>
          An organisation holds your API keys, members, usage and billing. Create one to start, or open the link of an invitation you
          received.
        </p>
      )}
      <FormError form={form} />
      <form onSubmit={submit} noValidate>
        <Field label="Organisation name" name="name" value={name} onInput={setName} form={form} input={{ maxLength: 80, required: true, autoFocus: true }} />
        <button type="submit" class="primary" disabled={form.busy}>
          {form.busy ? 'Creating…' : 'Create organisation'}
        </button>
      </form>
    </div>
  );
}

/** OrgSettings renames and deletes the organisation (owners). */
export function OrgSettings({ org, onChange }: { org: Organisation; onChange: (o: Organisation) => void }) {
  const { client, refreshOrgs } = useApp();
  const [name, setName] = useState(org.name);
  const [saved, setSaved] = useState(false);
  const form = useForm(['name']);
  const owner = org.role === 'owner';
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    const o = await form.run(() => client.updateOrg(org.org_id, name.trim()));
    if (o) {
      // The new name shows in the switcher, in its place by name.
      void refreshOrgs();
      onChange(o);
      setSaved(true);
    }
  };
  return (
    <>
      <h2>Settings</h2>
      {!owner && <Notice>Only owners can rename the organisation.</Notice>}
      {saved && <Notice kind="success">The organisation is renamed.</Notice>}
      <FormError form={form} />
      <form onSubmit={submit} noValidate>
        <Field label="Organisation name" name="name" value={name} onInput={setName} form={form} input={{ maxLength: 80, disabled: !owner }} />
        <button type="submit" class="primary" disabled={!owner || form.busy || name.trim() === org.name}>
          Rename
        </button>
      </form>
      <p class="muted">
        Organisation id: <code>{org.org_id}</code>
      </p>
      {owner && <DeleteOrg org={org} />}
    </>
  );
}

/**
 * DeleteOrg deletes the organisation once its name is typed (and, with TOTP, a code is given);
 * it then leaves the switcher, and the console opens another organisation or offers to create one.
 */
function DeleteOrg({ org }: { org: Organisation }) {
  const { client, me, refreshOrgs, flash } = useApp();
  const deleted = async () => {
    if (currentOrg.get(me.user_id) === org.org_id) currentOrg.set(me.user_id, null);
    const list = await refreshOrgs();
    // Where the start page would go: the first organisation left, else creating one.
    const next = list.find((o) => o.org_id !== org.org_id);
    const to = next ? `orgs/${next.org_id}/overview` : 'orgs/new';
    flash(`The organisation ${org.name} is deleted.`, to);
    navigate(to);
  };
  return (
    <section class="card" aria-labelledby="delete-org-h">
      <h3 id="delete-org-h">Delete this organisation</h3>
      <TypedConfirm
        label="Delete organisation"
        confirmLabel="Yes, delete the organisation"
        typeLabel="Type the organisation's name to confirm"
        typeHint={
          <>
            Its name is <strong>{org.name}</strong>.
          </>
        }
        matches={(typed) => typed === org.name}
        totp={me.totp_enabled}
        act={(code) => client.deleteOrg(org.org_id, code)}
        done={deleted}
      >
        <Notice kind="warning">
          This cannot be undone. Every API key of {org.name} is revoked at once, its subscription is cancelled, its members and
          invitations are removed, its feeds, webhook endpoints and alert rules are deleted, and it leaves every member's list. The
          events it published stay on the network until they expire, since other organisations rely on them.
        </Notice>
      </TypedConfirm>
    </section>
  );
}
