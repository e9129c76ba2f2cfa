/**
 * Render-only: one tile per rank, grouped by host.
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';
import type { HostGroup, RankTile } from './derive';
import { useTrans } from './translate';

function formatAge(age: number | null, trans: TranslationBundle): string {
  if (age === null) {
    return '–';
  }
  return age < 1 ? trans.__('now') : trans.__('%1 s ago', Math.round(age));
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

function Tile(props: { tile: RankTile; onStacks?: (rank: number) => void }): JSX.Element {
  const { tile, onStacks } = props;
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
        <strong>{trans.__('rank %1', tile.rank)}</strong>
        <span className="jp-Distributed-tileState">
          {tile.state}
          {tile.straggler ? ` · ${trans.__('straggler')}` : ''}
        </span>
      </div>
      <div>{trans.__('pid %1', tile.pid ?? '–')}</div>
      <div>{trans.__('heartbeat %1', formatAge(tile.heartbeatAge, trans))}</div>
      <div>{trans.__('%1 samples/s', formatRate(tile.samplesPerSec))}</div>
      {tile.progress !== null ? (
        <div className="jp-Distributed-tileProgress">
          <progress max={1} value={tile.progress} aria-label={trans.__('rank %1 progress', tile.rank)} />{' '}
          {trans.__('%1 %', Math.round(tile.progress * 100))}
        </div>
      ) : null}
      <div className="jp-Distributed-coords">{coordsText(tile)}</div>
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
}

/**
 * The tiles; `onStacks` (given while the run is running) puts a Stacks button on the tiles
 * that `hasStacks` accepts.
 */
export function RanksView(props: {
  groups: readonly HostGroup[];
  onStacks?: (rank: number) => void;
  hasStacks?: (tile: RankTile) => boolean;
}): JSX.Element {
  const { onStacks, hasStacks } = props;
  const trans = useTrans();
  if (!props.groups.length) {
    return <p className="jp-Distributed-empty">{trans.__('No ranks reported yet')}</p>;
  }
  return (
    <div className="jp-Distributed-ranks" role="group" aria-label={trans.__('Ranks')}>
      {props.groups.map(group => (
        <section key={group.host} aria-label={trans.__('Host %1', group.host || trans.__('unknown'))}>
          <h3 className="jp-Distributed-host">
            {group.host || trans.__('unknown host')} ({group.tiles.length})
          </h3>
          <div role="list" className="jp-Distributed-tiles">
            {group.tiles.map(tile => (
              <Tile
                key={tile.rank}
                tile={tile}
                onStacks={onStacks && (hasStacks?.(tile) ?? true) ? onStacks : undefined}
              />
            ))}
          </div>
        </section>
      ))}
    </div>
  );
}
