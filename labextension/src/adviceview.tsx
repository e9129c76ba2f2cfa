/**
 * Render-only: the advice of `%distributed advise` in the Scaling tab (`advice.ts`): a row
 * per layout, best first, with its launch line, its predicted memory, step time, throughput
 * and dominant cost, what `--verify` measured where it ran, and a New cell button.
 */

import * as React from 'react';

import type { IAdvice, IAdviceRow } from './advice';
import { useTrans } from './translate';

function fixed(value: number | null | undefined, digits: number): string {
  return value === null || value === undefined ? '-' : value.toFixed(digits);
}

function Measured(props: { row: IAdviceRow }): JSX.Element {
  const trans = useTrans();
  const m = props.row.measured;
  return (
    <>
      <td>{fixed(m?.gib, 4)}</td>
      <td>{fixed(m?.stepS, 4)}</td>
      <td title={m?.blame ? trans.__('off: %1', m.blame) : undefined}>
        {fixed(m?.samplesPerS, 1)}
        {m?.blame ? ' ⚠' : ''}
      </td>
    </>
  );
}

/** `onNewCell`: put a row's launch line into a new cell (none: no buttons); `error`: why the last one failed. */
export function AdviceView(props: {
  advice: IAdvice;
  onNewCell?: (row: IAdviceRow) => void;
  error?: string;
}): JSX.Element {
  const trans = useTrans();
  const { advice, onNewCell } = props;
  const verified = advice.rows.some(r => r.measured !== null);
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
            <th>{trans.__('launch line')}</th>
            <th>{trans.__('GiB/rank (%1)', predicted)}</th>
            <th>{trans.__('step s (%1)', predicted)}</th>
            <th>{trans.__('samples/s (%1)', predicted)}</th>
            <th>{trans.__('dominant cost (%1)', predicted)}</th>
            {verified ? (
              <>
                <th>{trans.__('GiB/rank (measured)')}</th>
                <th>{trans.__('step s (measured)')}</th>
                <th>{trans.__('samples/s (measured)')}</th>
              </>
            ) : null}
            {onNewCell ? <th aria-label={trans.__('actions')} /> : null}
          </tr>
        </thead>
        <tbody>
          {advice.rows.map(r => (
            <tr
              key={r.launch}
              title={r.layout}
              className={r.fits ? (r.pareto ? 'jp-mod-pareto' : undefined) : 'jp-Distributed-warn'}
            >
              <td>
                <code>{r.launch}</code>
                {r.fits ? '' : trans.__(' (does not fit)')}
              </td>
              <td>{r.predictedGib.toPrecision(3)}</td>
              <td>{r.predictedStepS.toPrecision(3)}</td>
              <td>{r.predictedSamplesPerS.toFixed(1)}</td>
              <td>{r.dominant}</td>
              {verified ? <Measured row={r} /> : null}
              {onNewCell ? (
                <td>
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
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
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
