/**
 * Render-only: one rank's tile (its state, pid, heartbeat, samples/s, progress, GPU and
 * coordinates, and its Plot and Stacks buttons).
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';
import type { RankTile } from './derive';
import { useTrans } from './translate';

function formatAge(age: number | null, trans: TranslationBundle): string {
  const shown = ageShown(age);
  if (shown === null) {
    return '–';
  }
  return shown < 0 ? trans.__('now') : trans.__('%1 s ago', shown);
}

export function formatRate(rate: number | null): string {
  if (rate === null) {
    return '–';
  }
  return rate >= 100 ? rate.toFixed(0) : rate.toFixed(1);
}

function coordsText(tile: RankTile): string {
  const parts: string[] = [];
  if (tile.dp !== null) {
    parts.push(`dp ${tile.dp}`);
  }
  if (tile.pp !== null) {
    parts.push(`pp ${tile.pp}`);
  }
  if (tile.tp !== null) {
    parts.push(`tp ${tile.tp}`);
  }
  if (tile.role) {
    parts.push(tile.role);
  }
  return parts.join(' · ');
}

/** The rank's GPU line ('GPU 1234 MiB · 87 %'), '' where it has no GPU samples. */
export function gpuText(tile: RankTile, trans: TranslationBundle): string {
  if (tile.gpuMemMb === null && tile.gpuUtil === null) {
    return '';
  }
  const parts: string[] = [];
  if (tile.gpuMemMb !== null) {
    parts.push(trans.__('%1\u00a0MiB', Math.round(tile.gpuMemMb)));
  }
  if (tile.gpuUtil !== null) {
    parts.push(trans.__('%1\u00a0%', Math.round(tile.gpuUtil)));
  }
  return trans.__('GPU %1', parts.join(' · '));
}

/** Whether two tiles look the same: ages and rates as they are shown, the rest as they are. */
function sameTile(a: RankTile, b: RankTile): boolean {
  for (const key of Object.keys(a) as (keyof RankTile)[]) {
    if (key !== 'heartbeatAge' && key !== 'samplesPerSec' && a[key] !== b[key]) {
      return false;
    }
  }
  return (
    ageShown(a.heartbeatAge) === ageShown(b.heartbeatAge) && formatRate(a.samplesPerSec) === formatRate(b.samplesPerSec)
  );
}

function ageShown(age: number | null): number | null {
  return age === null ? null : age < 1 ? -1 : Math.round(age);
}

export interface ITileProps {
  tile: RankTile;
  /** Asks for the rank's stacks (the same function on every render); none without a Stacks button. */
  onStacks?: (rank: number) => void;
  /** Draws the rank as its own line in the plots, or stops (many ranks only; the same function every render). */
  onPlot?: (rank: number) => void;
  /** Whether the rank is drawn as its own line now. */
  plotted?: boolean;
}

/** One rank's tile; rendered again only when what it shows changed (256 tiles, several renders a second). */
export const Tile = React.memo(
  function Tile(props: ITileProps): JSX.Element {
    const { tile, onStacks, onPlot, plotted } = props;
    const trans = useTrans();
    const label = tile.straggler
      ? trans.__('Rank %1: %2, straggler', tile.rank, tile.state)
      : trans.__('Rank %1: %2', tile.rank, tile.state);
    return (
      <div
        role="listitem"
        aria-label={label}
        title={label}
        className={`jp-Distributed-tile jp-mod-${tile.state}${tile.straggler ? ' jp-mod-straggler' : ''}`}
      >
        <div className="jp-Distributed-tileHead">
          <strong>
            <span className="jp-Distributed-rankSwatch" aria-hidden="true" style={{ background: tile.color }} />
            {trans.__('rank %1', tile.rank)}
          </strong>
          <span className="jp-Distributed-tileState">
            {tile.state}
            {tile.straggler ? ` · ${trans.__('straggler')}` : ''}
          </span>
        </div>
        <div>{trans.__('pid %1', tile.pid ?? '–')}</div>
        <div>{trans.__('heartbeat %1', formatAge(tile.heartbeatAge, trans))}</div>
        <div
          title={trans.__(
            'this rank’s samples/s: live over the last seconds while it runs, first report to last once it ended'
          )}
        >
          {trans.__('%1 samples/s (rank)', formatRate(tile.samplesPerSec))}
        </div>
        {tile.progress !== null ? (
          <div className="jp-Distributed-tileProgress">
            <progress max={1} value={tile.progress} aria-label={trans.__('rank %1 progress', tile.rank)} />{' '}
            {trans.__('%1\u00a0%', Math.round(tile.progress * 100))}
          </div>
        ) : null}
        {gpuText(tile, trans) ? <div className="jp-Distributed-tileGpu">{gpuText(tile, trans)}</div> : null}
        <div className="jp-Distributed-coords">{coordsText(tile)}</div>
        {onPlot ? (
          <button
            type="button"
            className="jp-Button jp-Distributed-tilePlot"
            aria-pressed={!!plotted}
            aria-label={trans.__('Plot rank %1', tile.rank)}
            title={
              plotted
                ? trans.__('Stop drawing rank %1 as its own line in the Throughput plots', tile.rank)
                : trans.__('Draw rank %1 as its own line in the Throughput plots', tile.rank)
            }
            onClick={() => onPlot(tile.rank)}
          >
            {plotted ? trans.__('Plotted') : trans.__('Plot')}
          </button>
        ) : null}{' '}
        {onStacks ? (
          <button
            type="button"
            className="jp-Button jp-Distributed-tileStacks"
            aria-label={trans.__('Stacks of rank %1', tile.rank)}
            title={trans.__('Where rank %1 is now: the stack of each of its threads', tile.rank)}
            onClick={() => onStacks(tile.rank)}
          >
            {trans.__('Stacks')}
          </button>
        ) : null}
      </div>
    );
  },
  (a: ITileProps, b: ITileProps) =>
    a.onStacks === b.onStacks && a.onPlot === b.onPlot && a.plotted === b.plotted && sameTile(a.tile, b.tile)
);
