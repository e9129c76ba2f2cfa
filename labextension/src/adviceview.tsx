/**
 * Render-only: the advice of `%distributed advise` in the Scaling tab (`advice.ts`): a row
 * per layout, best first, with its launch line, its predicted memory, step time, throughput
 * and dominant cost, what `--verify` measured where it ran, and a New cell button; narrow
 * enough for the side panel (the launch line on a row of its own).
 */

import * as React from 'react';

import type { IAdvice, IAdviceRow } from './advice';
import { useTrans } from './translate';

/** The figures' columns: GiB/rank, step s, samples/s, dominant cost. */
const COLUMNS = 4;

function fixed(value: number | null | undefined, digits: number): string {
  return value === null || value === undefined ? '-' : value.toFixed(digits);
}

/** What `--verify` measured of a layout, on a line of its own under its predictions. */
function Measured(props: { row: IAdviceRow }): JSX.Element | null {
  const trans = useTrans();
  const m = props.row.measured;
  return m ? (
    <tr className={m.blame ? 'jp-Distributed-warn' : undefined}>
      <td colSpan={COLUMNS}>
        {trans.__(
          'measured: %1 GiB/rank, %2 s/step, %3 samples/s',
          fixed(m.gib, 4),
          fixed(m.stepS, 4),
          fixed(m.samplesPerS, 1)
        )}
        {m.blame ? trans.__('; off: %1', m.blame) : ''}
      </td>
    </tr>
  ) : null;
}

/** `onNewCell`: put a row's launch line into a new cell (none: no buttons); `error`: why the last one failed. */
export function AdviceView(props: {
  advice: IAdvice;
  onNewCell?: (row: IAdviceRow) => void;
  error?: string;
}): JSX.Element {
  const trans = useTrans();
  const { advice, onNewCell } = props;
  const predicted = advice.calibrated ? trans.__('predicted, calibrated') : trans.__('predicted');
  return (
    <section aria-label={trans.__('Advice')}>
      <h3>
        {trans.__(
          'Advice: %1, %2 × %3 ranks, global batch %4 (run %5)',
          advice.model,
          advice.nodes,
          advice.procsPerNode,
          advice.globalBatch ?? '-',
          advice.run.id
        )}
      </h3>
      {advice.traced ? null : (
        <p className="jp-Distributed-warn">{trans.__('analytic fallback: nothing was traced (see the notes)')}</p>
      )}
      <table className="jp-Distributed-table jp-Distributed-advice" aria-label={trans.__('Advice')}>
        <thead>
          <tr>
            <th colSpan={COLUMNS}>{predicted}</th>
          </tr>
          <tr>
            <th>{trans.__('GiB/rank')}</th>
            <th>{trans.__('step s')}</th>
            <th>{trans.__('samples/s')}</th>
            <th>{trans.__('dominant cost')}</th>
          </tr>
        </thead>
        {advice.rows.map(r => (
          <tbody
            key={r.launch}
            aria-label={r.layout}
            className={r.fits ? (r.pareto ? 'jp-mod-pareto' : undefined) : 'jp-Distributed-warn'}
          >
            <tr className="jp-Distributed-adviceLaunch">
              <td colSpan={COLUMNS}>
                <code>{r.launch}</code>
                {r.fits ? '' : trans.__(' (does not fit)')}
                {onNewCell ? (
                  <button
                    type="button"
                    className="jp-Button"
                    disabled={!r.fits}
                    title={trans.__('Put this launch line into a new cell of the cluster’s notebook')}
                    aria-label={trans.__('New cell: %1', r.launch)}
                    onClick={() => onNewCell(r)}
                  >
                    {trans.__('New cell')}
                  </button>
                ) : null}
              </td>
            </tr>
            <tr title={r.layout}>
              <td>{r.predictedGib.toPrecision(3)}</td>
              <td>{r.predictedStepS.toPrecision(3)}</td>
              <td>{r.predictedSamplesPerS.toFixed(1)}</td>
              <td>{r.dominant}</td>
            </tr>
            <Measured row={r} />
          </tbody>
        ))}
      </table>
      {props.error ? <p className="jp-Distributed-error">{props.error}</p> : null}
      <details>
        <summary>{trans.__('notes (%1)', advice.notes.length)}</summary>
        <ul>
          {advice.notes.map(n => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      </details>
    </section>
  );
}
