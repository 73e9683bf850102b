// Vitality: "is our integration alive?" (docs/api.md §4.4): the last call, today's counters and the
// last use of each key, per environment.
import { useState } from 'preact/hooks';
import type { Environment, Organisation, UsageTotals } from '../api';
import { useApp } from '../context';
import { href } from '../router';
import { Loading, Notice, formatNumber, formatTime, useLoad } from '../ui';

/** EnvSwitch chooses live or sandbox. */
export function EnvSwitch({ value, onChange }: { value: Environment; onChange: (e: Environment) => void }) {
  return (
    <div class="segmented" role="group" aria-label="Environment">
      {(['live', 'sandbox'] as Environment[]).map((e) => (
        <button type="button" key={e} aria-pressed={value === e} onClick={() => onChange(e)}>
          {e === 'live' ? 'Live' : 'Sandbox'}
        </button>
      ))}
    </div>
  );
}

/** counters names the five usage counters (docs/api.md §10.3 UsageTotals), in display order. */
export const counters: [keyof UsageTotals, string][] = [
  ['reads', 'Reads'],
  ['publishes', 'Publishes'],
  ['signals', 'Signals'],
  ['stream_connects', 'Stream connects'],
  ['tickets', 'Stream tickets'],
];

/** Totals shows the five counters as tiles. */
export function Totals({ totals, label }: { totals: UsageTotals | null; label: string }) {
  return (
    <dl class="tiles" aria-label={label}>
      {counters.map(([k, name]) => (
        <div key={k} class="tile">
          <dt>{name}</dt>
          <dd data-testid={'total-' + k}>{formatNumber(totals?.[k] ?? 0)}</dd>
        </div>
      ))}
    </dl>
  );
}

/** Overview is an organisation's first page. */
export function Overview({ org }: { org: Organisation }) {
  const { client } = useApp();
  const [env, setEnv] = useState<Environment>('live');
  const v = useLoad(() => client.vitality(org.org_id, env), [org.org_id, env]);
  return (
    <>
      <div class="row">
        <h2>Is our integration alive?</h2>
        <EnvSwitch value={env} onChange={setEnv} />
        <button type="button" onClick={v.reload}>
          Refresh
        </button>
      </div>
      <Loading load={v}>
        {(d) => (
          <>
            {d.has_traffic ? (
              <Notice kind="success">
                Last call {formatTime(d.last_used_at)}
                {d.last_used_key_id && <> with key {d.keys.find((k) => k.key_id === d.last_used_key_id)?.label ?? d.last_used_key_id}</>}.
              </Notice>
            ) : (
              <Notice>
                No {env} traffic yet. <a href={href(`orgs/${org.org_id}/keys`)}>Issue a {env} key</a> and make a first call.
              </Notice>
            )}
            <h3>Today</h3>
            <Totals totals={d.today} label={`Today's ${env} counters`} />
            <h3>Keys</h3>
            {d.keys.length === 0 ? (
              <p class="muted">No active {env} keys.</p>
            ) : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Key</th>
                      <th scope="col">Last used</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.keys.map((k) => (
                      <tr key={k.key_id}>
                        <td>{k.label}</td>
                        <td>{k.last_used_at ? formatTime(k.last_used_at) : 'Never'}</td>
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
