/**
 * Render-only: one tile per rank, grouped by host.
 */

import * as React from 'react';

import type { HostGroup, RankTile } from './derive';

function formatAge(age: number | null): string {
  if (age === null) {
    return '–';
  }
  return age < 1 ? 'now' : `${Math.round(age)} s ago`;
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

function Tile(props: { tile: RankTile }): JSX.Element {
  const { tile } = props;
  const label = `Rank ${tile.rank}: ${tile.state}${tile.straggler ? ', straggler' : ''}`;
  return (
    <div
      role="listitem"
      aria-label={label}
      title={label}
      className={`jp-Distributed-tile jp-mod-${tile.state}${tile.straggler ? ' jp-mod-straggler' : ''}`}
    >
      <div className="jp-Distributed-tileHead">
        <strong>rank {tile.rank}</strong>
        <span className="jp-Distributed-tileState">
          {tile.state}
          {tile.straggler ? ' · straggler' : ''}
        </span>
      </div>
      <div>pid {tile.pid ?? '–'}</div>
      <div>heartbeat {formatAge(tile.heartbeatAge)}</div>
      <div>{formatRate(tile.samplesPerSec)} samples/s</div>
      <div className="jp-Distributed-coords">{coordsText(tile)}</div>
    </div>
  );
}

export function RanksView(props: { groups: readonly HostGroup[] }): JSX.Element {
  if (!props.groups.length) {
    return <p className="jp-Distributed-empty">No ranks reported yet</p>;
  }
  return (
    <div className="jp-Distributed-ranks" aria-label="Ranks">
      {props.groups.map(group => (
        <section key={group.host} aria-label={`Host ${group.host || 'unknown'}`}>
          <h3 className="jp-Distributed-host">
            {group.host || 'unknown host'} ({group.tiles.length})
          </h3>
          <div role="list" className="jp-Distributed-tiles">
            {group.tiles.map(tile => (
              <Tile key={tile.rank} tile={tile} />
            ))}
          </div>
        </section>
      ))}
    </div>
  );
}
