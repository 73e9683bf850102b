// Usage (docs/api.md §4.4): a dense daily series per environment over 7, 30 or 90 days, with
// totals. The chart library loads only on this page; a table carries the same numbers for screen
// readers and small screens.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Environment, Organisation, UsageSeries, UsageWindow } from '../api';
import { useApp } from '../context';
import { Loading, formatNumber, useLoad } from '../ui';
import { EnvSwitch, Totals, counters } from './overview';

const windows: [UsageWindow, string][] = [
  ['7d', '7 days'],
  ['30d', '30 days'],
  ['90d', '90 days'],
];
const colours = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be123c'];

function Chart({ series }: { series: UsageSeries }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let plot: { destroy(): void; setSize(s: { width: number; height: number }): void } | null = null;
    let live = true;
    const onResize = () => plot && el.current && plot.setSize({ width: el.current.clientWidth, height: 260 });
    Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([{ default: UPlot }]) => {
      if (!live || !el.current) return;
      const xs = series.days.map((d) => Date.parse(d.date + 'T00:00:00Z') / 1000);
      const data = [xs, ...counters.map(([k]) => series.days.map((d) => d[k]))] as [number[], ...number[][]];
      plot = new UPlot(
        {
          width: el.current.clientWidth || 600,
          height: 260,
          tzDate: (ts: number) => UPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
          scales: { y: { range: (_u: unknown, _min: number, max: number) => [0, Math.max(5, max * 1.1)] } },
          axes: [{}, { size: 60 }],
          series: [{ label: 'Day' }, ...counters.map(([, name], i) => ({ label: name, stroke: colours[i], width: 2, points: { show: series.days.length <= 31 } }))],
        },
        data,
        el.current,
      );
      addEventListener('resize', onResize);
    });
    return () => {
      live = false;
      removeEventListener('resize', onResize);
      plot?.destroy();
    };
  }, [series]);
  return <div class="chart" ref={el} aria-hidden="true" />;
}

/** Usage shows the usage series of one environment. */
export function Usage({ org }: { org: Organisation }) {
  const { client } = useApp();
  const [env, setEnv] = useState<Environment>('live');
  const [win, setWin] = useState<UsageWindow>('30d');
  const u = useLoad(() => client.usage(org.org_id, win, env), [org.org_id, win, env]);
  return (
    <>
      <div class="row">
        <h2>Usage</h2>
        <EnvSwitch value={env} onChange={setEnv} />
        <div class="segmented" role="group" aria-label="Window">
          {windows.map(([w, label]) => (
            <button type="button" key={w} aria-pressed={win === w} onClick={() => setWin(w)}>
              {label}
            </button>
          ))}
        </div>
        <button type="button" onClick={u.reload}>
          Refresh
        </button>
      </div>
      <p class="muted small">Counts are written every few seconds; refresh to see the latest calls.</p>
      <Loading load={u}>
        {(s) => (
          <>
            <h3>
              Totals, {s.start} to {s.end} ({s.environment})
            </h3>
            <Totals totals={s.totals} label={`Usage totals over ${s.window}`} />
            <Chart series={s} />
            <details>
              <summary>Daily numbers</summary>
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Day</th>
                      {counters.map(([k, name]) => (
                        <th scope="col" key={k}>
                          {name}
                        </th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {[...s.days].reverse().map((d) => (
                      <tr key={d.date}>
                        <td>{d.date}</td>
                        {counters.map(([k]) => (
                          <td key={k}>{formatNumber(d[k])}</td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </details>
          </>
        )}
      </Loading>
    </>
  );
}
