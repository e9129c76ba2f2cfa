/**
 * Render-only: the Scaling tab. For the selected run: the advice of its cluster
 * (`adviceview.tsx`) when there is one, its probe (bandwidth
 * heatmap, per-link table, all_reduce curve) when it is one, its sweep's runs
 * side by side when it belongs to one, and the Compare view of its cell's runs
 * (samples/s against world size, ideal linear scaling, efficiency).
 */

import * as React from 'react';

import { adviceFor, type IAdvice, type IAdviceRow } from './advice';
import { AdviceView } from './adviceview';
import { Heatmap } from './heatmapview';
import { Plot } from './plotsview';
import type { IProbeView } from './probepairs';
import { runningProbe } from './runkind';
import { bandwidthMatrix, compareRows, type ICompareRow, type ISweepRow, sweepRows } from './scaling';
import { useTrans } from './translate';
import type { Run } from './wire';

/** Below this efficiency a run is marked (as `%distributed compare --threshold`). */
export const EFFICIENCY_WARNING = 0.8;

function ProbeView(props: { view: IProbeView }): JSX.Element {
  const trans = useTrans();
  const { probe, key, pairs, error } = props.view;
  // n × n cells: computed once per probe's pairs (kept by the model), not on every render of the panel.
  const matrix = React.useMemo(() => (pairs ? bandwidthMatrix(probe.world_size, pairs) : null), [pairs]);
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
      {matrix ? (
        <Heatmap
          label={trans.__('bandwidth heatmap')}
          title={trans.__('pair bandwidth (GB/s)')}
          version={key}
          matrix={matrix}
        />
      ) : error ? (
        <p className="jp-Distributed-error">{trans.__('cannot load the pairs: %1', error)}</p>
      ) : (
        <p className="jp-Distributed-empty">{trans.__('loading the pairs…')}</p>
      )}
      <Plot
        label={trans.__('all_reduce curve')}
        title={trans.__('all_reduce bus bandwidth (GB/s)')}
        version={key}
        window={0}
        xTitle={trans.__('bytes')}
        xScale="bytes"
        traces={() => [
          {
            name: 'all_reduce',
            series: { x: probe.allreduce.map(p => p.bytes), y: probe.allreduce.map(p => p.busbw_gbs) },
            markers: true
          }
        ]}
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
            <th>{trans.__('samples/s (total)')}</th>
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
  return (
    <section aria-label={trans.__('Compare')}>
      <h3>{trans.__('Compare: runs of this cell')}</h3>
      <Plot
        label={trans.__('samples/s against world size')}
        title={trans.__('samples/s against world size')}
        version={rows.map(r => `${r.id}:${r.throughput}`).join()}
        window={0}
        xTitle={trans.__('ranks')}
        xScale="integer"
        traces={() => {
          const x = rows.map(r => r.worldSize);
          return [
            { name: trans.__('measured'), series: { x, y: rows.map(r => r.throughput) }, markers: true },
            { name: trans.__('ideal'), series: { x, y: rows.map(r => r.ideal) }, line: 'dot' }
          ];
        }}
      />
      <table className="jp-Distributed-table" aria-label={trans.__('Efficiency')}>
        <thead>
          <tr>
            <th>{trans.__('run')}</th>
            <th>{trans.__('ranks')}</th>
            <th>{trans.__('samples/s (total)')}</th>
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

/** `probe`: the run's probe with its pairs as the model has them (`ProbePairs.view`); null when none.
 * `probing`: a probe of the run's cluster runs now (then "probing…", never "no data").
 * `onNewCell`: put an advised launch line into a new cell (none: no buttons); `cellError`: why it failed. */
export function ScalingView(props: {
  runs: readonly Run[];
  run: Run;
  probe: IProbeView | null;
  probing?: boolean;
  onNewCell?: (advice: IAdvice, row: IAdviceRow) => void;
  cellError?: string;
}): JSX.Element {
  const trans = useTrans();
  const { probe } = props;
  const probing = props.probing || runningProbe(props.runs, props.run) !== null;
  const sweep = sweepRows(props.runs, props.run);
  const compare = compareRows(props.runs, props.run);
  const advice = adviceFor(props.runs, props.run);
  const onNewCell = props.onNewCell;
  const empty = !advice && !probe && !sweep.length && !compare.length;
  return (
    <div className="jp-Distributed-scaling" role="group" aria-label={trans.__('Scaling')}>
      {advice ? (
        <AdviceView
          advice={advice}
          onNewCell={onNewCell ? row => onNewCell(advice, row) : undefined}
          error={props.cellError}
        />
      ) : null}
      {probe ? <ProbeView view={probe} /> : null}
      {sweep.length ? <SweepView rows={sweep} /> : null}
      {compare.length ? <CompareView rows={compare} /> : null}
      {probing && !probe ? (
        <p className="jp-Distributed-empty" role="status">
          {trans.__('probing… the links between the ranks are being measured (the probe’s run is listed as running)')}
        </p>
      ) : empty ? (
        <p className="jp-Distributed-empty">
          {trans.__(
            'No scaling data: call report(samples=N) in the cell, run %distributed probe or %distributed advise, or use --sweep.'
          )}
        </p>
      ) : null}
    </div>
  );
}
