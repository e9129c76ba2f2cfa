/**
 * Render-only: the Scaling tab. For the selected run: its probe (bandwidth
 * heatmap, per-link table, all_reduce curve) when it is one, its sweep's runs
 * side by side when it belongs to one, and the Compare view of its cell's runs
 * (samples/s against world size, ideal linear scaling, efficiency).
 */

import type { Trace } from 'plotly.js-basic-dist-min';
import * as React from 'react';

import { plotlyText } from './format';
import { loadPlotly } from './loadplotly';
import {
  bandwidthMatrix,
  compareRows,
  type ICompareRow,
  type IProbe,
  type ISweepRow,
  probeOf,
  sweepRows
} from './scaling';
import { useTrans } from './translate';
import type { Run } from './wire';

/** Below this efficiency a run is marked (as `%distributed compare --threshold`). */
export const EFFICIENCY_WARNING = 0.8;

function Figure(props: {
  label: string;
  data: Trace[];
  layout: Record<string, unknown>;
  version: string;
}): JSX.Element {
  const root = React.useRef<HTMLDivElement>(null);
  const [error, setError] = React.useState('');
  const trans = useTrans();
  React.useEffect(() => {
    let cancelled = false;
    loadPlotly()
      .then(Plotly => {
        const node = root.current;
        if (cancelled || !node) {
          return;
        }
        const layout = {
          paper_bgcolor: 'rgba(0,0,0,0)',
          plot_bgcolor: 'rgba(0,0,0,0)',
          margin: { l: 56, r: 8, t: 32, b: 40 },
          height: 240,
          autosize: true,
          ...props.layout
        };
        return Plotly.react(node, props.data, layout, { displaylogo: false, responsive: true });
      })
      .catch((e: unknown) => {
        if (!cancelled) {
          setError(trans.__('cannot draw the plot: %1', String(e)));
        }
      });
    return () => {
      cancelled = true;
    };
  }, [props.version]);
  React.useEffect(
    () => () => {
      const node = root.current;
      if (node) {
        void loadPlotly().then(P => P.purge(node));
      }
    },
    []
  );
  return (
    <figure className="jp-Distributed-plot" aria-label={props.label}>
      {error ? <p className="jp-Distributed-error">{error}</p> : null}
      <div ref={root} />
    </figure>
  );
}

function ProbeView(props: { probe: IProbe }): JSX.Element {
  const trans = useTrans();
  const { probe } = props;
  const matrix = bandwidthMatrix(probe);
  const x: number[] = [];
  const y: number[] = [];
  const color: number[] = [];
  const text: string[] = [];
  for (const [r, row] of matrix.entries()) {
    for (const [c, value] of row.entries()) {
      if (value !== null) {
        x.push(c);
        y.push(r);
        color.push(value);
        text.push(`${r}↔${c} (${plotlyText(probe.hosts[r] ?? '')} / ${plotlyText(probe.hosts[c] ?? '')})`);
      }
    }
  }
  const size = Math.max(6, Math.min(40, 320 / Math.max(1, probe.world_size)));
  const heat: Trace = {
    x,
    y,
    name: 'GB/s',
    type: 'scatter',
    mode: 'markers',
    text,
    hovertemplate: '%{text}: %{marker.color:.3f} GB/s<extra></extra>',
    marker: { symbol: 'square', size, color, colorscale: 'Viridis', showscale: true }
  };
  const curve: Trace = {
    x: probe.allreduce.map(p => p.bytes),
    y: probe.allreduce.map(p => p.busbw_gbs),
    name: 'all_reduce',
    type: 'scatter',
    mode: 'lines+markers'
  };
  const axis = { dtick: 1, title: { text: trans.__('rank') } };
  return (
    <section aria-label={trans.__('Probe')}>
      <h3>{trans.__('Probe: %1 ranks, %2', probe.world_size, probe.library)}</h3>
      <table className="jp-Distributed-table" aria-label={trans.__('Links')}>
        <thead>
          <tr>
            <th>{trans.__('link')}</th>
            <th>{trans.__('pairs')}</th>
            <th>{trans.__('latency µs')}</th>
            <th>{trans.__('GB/s median')}</th>
            <th>{trans.__('GB/s min')}</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(probe.groups).map(([link, g]) => (
            <tr key={link}>
              <td>{link === 'intra' ? trans.__('intra-node') : trans.__('inter-node')}</td>
              <td>{g.pairs}</td>
              <td>{g.latency_us.toFixed(1)}</td>
              <td>{g.bandwidth_gbs.toFixed(3)}</td>
              <td>{g.min_bandwidth_gbs.toFixed(3)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Figure
        label={trans.__('bandwidth heatmap')}
        version={probe.run_id}
        data={[heat]}
        layout={{
          title: { text: trans.__('pair bandwidth (GB/s)'), font: { size: 13 } },
          xaxis: axis,
          yaxis: { ...axis, autorange: 'reversed' }
        }}
      />
      <Figure
        label={trans.__('all_reduce curve')}
        version={probe.run_id}
        data={[curve]}
        layout={{
          title: { text: trans.__('all_reduce bus bandwidth (GB/s)'), font: { size: 13 } },
          xaxis: { type: 'log', title: { text: trans.__('bytes') } }
        }}
      />
    </section>
  );
}

function SweepView(props: { rows: ISweepRow[] }): JSX.Element {
  const trans = useTrans();
  return (
    <section aria-label={trans.__('Sweep')}>
      <h3>{trans.__('Sweep: %1 runs', props.rows.length)}</h3>
      <table className="jp-Distributed-table" aria-label={trans.__('Sweep runs')}>
        <thead>
          <tr>
            <th>{trans.__('values')}</th>
            <th>{trans.__('state')}</th>
            <th>{trans.__('samples/s')}</th>
            <th>{trans.__('last metrics')}</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map(r => (
            <tr key={r.id} title={r.id}>
              <td>{r.values}</td>
              <td>{r.state}</td>
              <td>{r.throughput === null ? '-' : r.throughput.toFixed(1)}</td>
              <td>{r.final}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function CompareView(props: { rows: ICompareRow[] }): JSX.Element {
  const trans = useTrans();
  const { rows } = props;
  const measured: Trace = {
    x: rows.map(r => r.worldSize),
    y: rows.map(r => r.throughput),
    name: trans.__('measured'),
    type: 'scatter',
    mode: 'lines+markers'
  };
  const ideal: Trace = {
    x: rows.map(r => r.worldSize),
    y: rows.map(r => r.ideal),
    name: trans.__('ideal'),
    type: 'scatter',
    mode: 'lines',
    line: { dash: 'dot' }
  };
  return (
    <section aria-label={trans.__('Compare')}>
      <h3>{trans.__('Compare: runs of this cell')}</h3>
      <Figure
        label={trans.__('samples/s against world size')}
        version={rows.map(r => `${r.id}:${r.throughput}`).join()}
        data={[measured, ideal]}
        layout={{
          title: { text: trans.__('samples/s against world size'), font: { size: 13 } },
          xaxis: { title: { text: trans.__('ranks') }, dtick: 1 }
        }}
      />
      <table className="jp-Distributed-table" aria-label={trans.__('Efficiency')}>
        <thead>
          <tr>
            <th>{trans.__('run')}</th>
            <th>{trans.__('ranks')}</th>
            <th>{trans.__('samples/s')}</th>
            <th>{trans.__('ideal')}</th>
            <th>{trans.__('efficiency')}</th>
            <th>{trans.__('global batch')}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(r => (
            <tr key={r.id} className={r.efficiency < EFFICIENCY_WARNING ? 'jp-Distributed-warn' : undefined}>
              <td>{r.id}</td>
              <td>{r.worldSize}</td>
              <td>{r.throughput.toFixed(1)}</td>
              <td>{r.ideal.toFixed(1)}</td>
              <td>{`${Math.round(r.efficiency * 100)}%`}</td>
              <td title={r.warning ?? undefined}>
                {r.globalBatch ?? '-'}
                {r.warning ? ' ⚠' : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows
        .filter(r => r.warning)
        .map(r => (
          <p key={r.id} className="jp-Distributed-warn">
            {trans.__('%1: %2', r.id, r.warning ?? '')}
          </p>
        ))}
    </section>
  );
}

export function ScalingView(props: { runs: readonly Run[]; run: Run }): JSX.Element {
  const trans = useTrans();
  const probe = probeOf(props.run);
  const sweep = sweepRows(props.runs, props.run);
  const compare = compareRows(props.runs, props.run);
  const empty = !probe && !sweep.length && !compare.length;
  return (
    <div className="jp-Distributed-scaling" role="group" aria-label={trans.__('Scaling')}>
      {probe ? <ProbeView probe={probe} /> : null}
      {sweep.length ? <SweepView rows={sweep} /> : null}
      {compare.length ? <CompareView rows={compare} /> : null}
      {empty ? (
        <p className="jp-Distributed-empty">
          {trans.__('No scaling data: call report(samples=N) in the cell, run %distributed probe, or use --sweep.')}
        </p>
      ) : null}
    </div>
  );
}
