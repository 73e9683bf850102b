// Members and pending invitations (docs/api.md §4.3, §10.3): owners invite, resend, withdraw,
// change roles and remove; everyone may leave (the last owner cannot: 409, shown as said).
import { useState } from 'preact/hooks';
import type { Organisation, Role } from '../api';
import { useApp } from '../context';
import { navigate } from '../router';
import { currentOrg } from '../state';
import { Confirm, Field, FormError, Loading, Notice, formatTime, useForm, useLoad, type Msg } from '../ui';

/** Members lists members and invitations. */
export function Members({ org }: { org: Organisation }) {
  const { client, me, refreshOrgs } = useApp();
  const list = useLoad(() => client.members(org.org_id), [org.org_id]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const form = useForm(['email', 'role']);
  const [msg, setMsg] = useState<Msg | null>(null);
  const owner = org.role === 'owner';

  const act = async (fn: () => Promise<unknown>, success: string) => {
    setMsg(null);
    try {
      await fn();
      setMsg({ kind: 'success', text: success });
    } catch (e) {
      setMsg({ kind: 'error', text: (e as Error).message });
    }
    list.reload();
  };

  const invite = async (e: Event) => {
    e.preventDefault();
    setMsg(null);
    const inv = await form.run(() => client.invite(org.org_id, email.trim(), role));
    if (inv) {
      setEmail('');
      setMsg({ kind: 'success', text: `Invitation sent to ${inv.email}.` });
      list.reload();
    }
  };

  const leave = async () => {
    setMsg(null);
    try {
      await client.leave(org.org_id);
    } catch (e) {
      setMsg({ kind: 'error', text: (e as Error).message });
      return;
    }
    // The organisation leaves the switcher, and the start page opens another one (or offers
    // to create one) rather than the one just left.
    if (currentOrg.get(me.user_id) === org.org_id) currentOrg.set(me.user_id, null);
    await refreshOrgs();
    navigate('');
  };

  return (
    <>
      <h2>Members</h2>
      {msg && <Notice kind={msg.kind}>{msg.text}</Notice>}
      {owner && (
        <details class="card">
          <summary>Invite someone</summary>
          <FormError form={form} />
          <form onSubmit={invite} noValidate>
            <Field label="E-mail address" name="email" value={email} onInput={setEmail} form={form} input={{ type: 'email', autocomplete: 'off' }} />
            <div class="field">
              <label for="invite-role">Role</label>
              <select id="invite-role" value={role} onChange={(e) => setRole((e.currentTarget as HTMLSelectElement).value as Role)}>
                <option value="member">Member: reads everything, can leave</option>
                <option value="owner">Owner: also manages members, keys and billing</option>
              </select>
              {form.fields.role && (
                <p class="field-error" role="alert">
                  {form.fields.role}
                </p>
              )}
            </div>
            <button type="submit" class="primary" disabled={form.busy || email.trim() === ''}>
              {form.busy ? 'Sending…' : 'Send invitation'}
            </button>
          </form>
        </details>
      )}
      <Loading load={list}>
        {(l) => (
          <>
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Members</caption>
                <thead>
                  <tr>
                    <th scope="col">Member</th>
                    <th scope="col">Role</th>
                    <th scope="col">Joined</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {l.members.map((m) => {
                    const self = m.user_id === me.user_id;
                    return (
                      <tr key={m.user_id}>
                        <td>
                          {m.display_name ? (
                            <>
                              {m.display_name} <span class="muted small">{m.email}</span>
                            </>
                          ) : (
                            m.email
                          )}
                          {self && <span class="muted small"> (you)</span>}
                        </td>
                        <td>
                          {owner ? (
                            <select
                              aria-label={`Role of ${m.email}`}
                              value={m.role}
                              onChange={(e) => {
                                const r = (e.currentTarget as HTMLSelectElement).value as Role;
                                act(() => client.setRole(org.org_id, m.user_id, r), `${m.email} is now ${r === 'owner' ? 'an owner' : 'a member'}.`);
                              }}
                            >
                              <option value="owner">Owner</option>
                              <option value="member">Member</option>
                            </select>
                          ) : (
                            m.role
                          )}
                        </td>
                        <td>{formatTime(m.joined_at)}</td>
                        <td>
                          {self ? (
                            <Confirm label="Leave" question="Leave this organisation?" confirmLabel="Yes, leave" onConfirm={leave} />
                          ) : owner ? (
                            <Confirm
                              label="Remove"
                              question={`Remove ${m.email}? The organisation's keys keep working.`}
                              confirmLabel="Yes, remove"
                              onConfirm={() => act(() => client.removeMember(org.org_id, m.user_id), `${m.email} is removed.`)}
                            />
                          ) : null}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            <h3>Pending invitations</h3>
            {l.invitations.length === 0 ? (
              <p class="muted">None.</p>
            ) : (
              <div class="table-wrap">
                <table>
                  <caption class="visually-hidden">Pending invitations</caption>
                  <thead>
                    <tr>
                      <th scope="col">E-mail</th>
                      <th scope="col">Role</th>
                      <th scope="col">Invited by</th>
                      <th scope="col">Expires</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {l.invitations.map((i) => (
                      <tr key={i.invite_id}>
                        <td>{i.email}</td>
                        <td>{i.role}</td>
                        <td>{i.invited_by_email ?? '—'}</td>
                        <td>{formatTime(i.expires_at)}</td>
                        <td>
                          {owner && (
                            <>
                              <button type="button" onClick={() => act(() => client.resendInvite(org.org_id, i.invite_id), `A new invitation is on its way to ${i.email}.`)}>
                                Resend
                              </button>{' '}
                              <Confirm
                                label="Withdraw"
                                question={`Withdraw the invitation to ${i.email}?`}
                                confirmLabel="Yes, withdraw"
                                onConfirm={() => act(() => client.withdrawInvite(org.org_id, i.invite_id), `The invitation to ${i.email} is withdrawn.`)}
                              />
                            </>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </>
        )}
      </Loading>
    </>
  );
}
