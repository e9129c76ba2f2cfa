/**
 * Render-only: one tile per rank, grouped by host.
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';
import type { HostGroup, RankTile } from './derive';
import { nodeSummary, summarised } from './nodesummary';
import { useTrans } from './translate';

function formatAge(age: number | null, trans: TranslationBundle): string {
  const shown = ageShown(age);
  if (shown === null) {
    return '–';
  }
  return shown < 0 ? trans.__('now') : trans.__('%1 s ago', shown);
}

function formatRate(rate: number | null): string {
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

interface ITileProps {
  tile: RankTile;
  /** Asks for the rank's stacks (the same function on every render); none without a Stacks button. */
  onStacks?: (rank: number) => void;
  /** Draws the rank as its own line in the plots, or stops (many ranks only; the same function every render). */
  onPlot?: (rank: number) => void;
  /** Whether the rank is drawn as its own line now. */
  plotted?: boolean;
}

/** One rank's tile; rendered again only when what it shows changed (256 tiles, several renders a second). */
const Tile = React.memo(
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

/**
 * The tiles; `onStacks` (given while the run is running) puts a Stacks button on the tiles
 * that `hasStacks` accepts.
 */
export function RanksView(props: {
  groups: readonly HostGroup[];
  onStacks?: (rank: number) => void;
  hasStacks?: (tile: RankTile) => boolean;
  /** The ranks drawn as their own lines; given (many ranks), each tile has a Plot toggle. */
  plotted?: ReadonlySet<number>;
  onPlot?: (rank: number) => void;
}): JSX.Element {
  const { hasStacks } = props;
  // One function for every tile and render (the caller's changes each render), so that tiles
  // that look the same are not rendered again.
  const latest = React.useRef(props.onStacks);
  latest.current = props.onStacks;
  const stacks = React.useCallback((rank: number) => latest.current?.(rank), []);
  const onStacks = props.onStacks ? stacks : undefined;
  const latestPlot = React.useRef(props.onPlot);
  latestPlot.current = props.onPlot;
  const plot = React.useCallback((rank: number) => latestPlot.current?.(rank), []);
  const onPlot = props.onPlot && props.plotted ? plot : undefined;
  const trans = useTrans();
  // Above NODE_SUMMARY_ABOVE ranks a node is one line plus its notable ranks' tiles, until asked.
  const [expanded, setExpanded] = React.useState<ReadonlySet<string>>(new Set());
  if (!props.groups.length) {
    return <p className="jp-Distributed-empty">{trans.__('No ranks reported yet')}</p>;
  }
  const many = summarised(props.groups);
  const toggle = (host: string): void =>
    setExpanded(old => {
      const next = new Set(old);
      if (!next.delete(host)) {
        next.add(host);
      }
      return next;
    });
  const tiles = (list: readonly RankTile[]): JSX.Element => (
    <div role="list" className="jp-Distributed-tiles">
      {list.map(tile => (
        <Tile
          key={tile.rank}
          tile={tile}
          onStacks={onStacks && (hasStacks?.(tile) ?? true) ? onStacks : undefined}
          onPlot={onPlot}
          plotted={props.plotted?.has(tile.rank) ?? false}
        />
      ))}
    </div>
  );
  return (
    <div className="jp-Distributed-ranks" role="group" aria-label={trans.__('Ranks')}>
      {props.groups.map(group => {
        const name = group.host || trans.__('unknown host');
        const open = !many || expanded.has(group.host);
        return (
          <section key={group.host} aria-label={trans.__('Host %1', group.host || trans.__('unknown'))}>
            <h3 className="jp-Distributed-host">
              {name} ({group.tiles.length})
            </h3>
            {many ? <NodeLine group={group} open={open} onToggle={() => toggle(group.host)} /> : null}
            {tiles(open ? group.tiles : nodeSummary(group).notable)}
          </section>
        );
      })}
    </div>
  );
}

/** A node's ranks in one line (many ranks), with the button that shows or hides every tile. */
function NodeLine(props: { group: HostGroup; open: boolean; onToggle: () => void }): JSX.Element {
  const trans = useTrans();
  const summary = nodeSummary(props.group);
  const parts = summary.states.map(([state, count]) => trans.__('%1 %2', count, state));
  if (summary.stragglers) {
    parts.push(trans.__('%1 straggler(s)', summary.stragglers));
  }
  if (summary.medianRate !== null && summary.slowest !== null) {
    parts.push(
      trans.__('samples/s per rank: median %1, slowest %2', formatRate(summary.medianRate), formatRate(summary.slowest))
    );
  }
  return (
    <div className="jp-Distributed-nodeLine" role="status">
      <span>{parts.join(' · ')}</span>{' '}
      <button type="button" className="jp-Button jp-Distributed-nodeToggle" onClick={props.onToggle}>
        {props.open ? trans.__('Fold to the summary') : trans.__('Show all %1 ranks', summary.ranks)}
      </button>
    </div>
  );
}
