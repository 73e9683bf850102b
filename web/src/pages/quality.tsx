// Quality (docs/network.md §2): the organisation's standing as a publisher in each environment,
// drawn from how the network decided its events over the window, and what a poor standing does.
import type { Organisation, PublisherStanding, ReputationReport } from '../api';
import { useApp } from '../context';
import { Loading, Notice, formatNumber, useLoad } from '../ui';

const bandNames: Record<PublisherStanding['band'], string> = {
  new: 'New',
  good: 'Good',
  fair: 'Fair',
  poor: 'Poor',
};

/** percent formats a share of 0..1 as a whole percentage. */
function percent(share: number | undefined): string {
  return share === undefined ? '—' : `${Math.round(share * 100)} %`;
}

/** Verdict says in words what the standing of one environment means. */
function Verdict({ s, r }: { s: PublisherStanding; r: ReputationReport }) {
  const env = s.environment === 'live' ? 'Live' : 'Sandbox';
  switch (s.band) {
    case 'poor':
      return (
        <Notice kind="error">
          {env}: at least {r.verdict_percent} % of your decided events were ended by other reporters' denials. Your active{' '}
          {s.environment} events are invalidated, and each further event ended by denial invalidates them again.
        </Notice>
      );
    case 'fair':
      return (
        <Notice kind="warning">
          {env}: fewer than {r.good_percent} % of your decided events were corroborated. From {r.verdict_percent} % ended by
          denial, your {s.environment} events are invalidated.
        </Notice>
      );
    case 'good':
      return <Notice kind="success">{env}: the network corroborates your events.</Notice>;
    default:
      return (
        <Notice>
          {env}: {formatNumber(s.decided)} of the {formatNumber(r.min_history)} decided events needed for a standing.
        </Notice>
      );
  }
}

/** Quality shows the organisation's standing as a publisher. */
export function Quality({ org }: { org: Organisation }) {
  const { client } = useApp();
  const q = useLoad(() => client.reputation(org.org_id), [org.org_id]);
  return (
    <>
      <div class="row">
        <h2>Publisher quality</h2>
        <button type="button" onClick={q.reload}>
          Refresh
        </button>
      </div>
      <Loading load={q}>
        {(r) => (
          <>
            <p class="muted small">
              Over the last {r.window_days} days: your events <strong>corroborated</strong> (confirmed by a reporter of another
              organisation, or reported by another source too) and those <strong>ended by denial</strong> (a deny quorum of
              reporters). Other events are not counted.
            </p>
            {r.environments.map((s) => (
              <Verdict key={s.environment} s={s} r={r} />
            ))}
            <div class="table-wrap">
              <table aria-label="Standing per environment">
                <thead>
                  <tr>
                    <th scope="col">Environment</th>
                    <th scope="col">Band</th>
                    <th scope="col">Score</th>
                    <th scope="col">Corroborated</th>
                    <th scope="col">Ended by denial</th>
                    <th scope="col">Decided</th>
                  </tr>
                </thead>
                <tbody>
                  {r.environments.map((s) => (
                    <tr key={s.environment} data-testid={'standing-' + s.environment}>
                      <td>{s.environment}</td>
                      <td data-testid={'band-' + s.environment}>{bandNames[s.band]}</td>
                      <td>{percent(s.score)}</td>
                      <td>{formatNumber(s.for)}</td>
                      <td>{formatNumber(s.against)}</td>
                      <td>{formatNumber(s.decided)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <p class="muted small">
              Bands: new below {r.min_history} decided events; good from {r.good_percent} % corroborated; poor from{' '}
              {r.verdict_percent} % ended by denial; fair between.
            </p>
          </>
        )}
      </Loading>
    </>
  );
}
