// The audit log (docs/api.md §4.3): newest first, readable by every member.
import { useState } from 'preact/hooks';
import type { Organisation } from '../api';
import { useApp } from '../context';
import { Loading, formatTime, useLoad } from '../ui';

/** Audit lists the organisation's audit entries. */
export function Audit({ org }: { org: Organisation }) {
  const { client } = useApp();
  const [limit, setLimit] = useState(50);
  const log = useLoad(() => client.audit(org.org_id, limit), [org.org_id, limit]);
  return (
    <>
      <h2>Audit log</h2>
      <Loading load={log}>
        {(entries) =>
          entries.length === 0 ? (
            <p class="muted">Nothing recorded yet.</p>
          ) : (
            <>
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">Action</th>
                      <th scope="col">By</th>
                      <th scope="col">Target</th>
                      <th scope="col">Detail</th>
                    </tr>
                  </thead>
                  <tbody>
                    {entries.map((a) => (
                      <tr key={a.audit_id}>
                        <td>{formatTime(a.created_at)}</td>
                        <td>
                          <code>{a.action}</code>
                        </td>
                        <td>{a.actor_email ?? a.actor_user_id ?? '—'}</td>
                        <td>{a.target ?? '—'}</td>
                        <td class="small">
                          {a.detail && Object.keys(a.detail).length > 0
                            ? Object.entries(a.detail)
                                .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
                                .join(', ')
                            : ''}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              {entries.length >= limit && (
                <button type="button" onClick={() => setLimit(limit + 50)}>
                  Show older entries
                </button>
              )}
            </>
          )
        }
      </Loading>
    </>
  );
}
