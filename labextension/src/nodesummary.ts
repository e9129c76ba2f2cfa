/**
 * A node's ranks in one line, for runs too large for a tile per rank (issue 26: 1,000 ranks and
 * more): how many ranks are in each state, their rates, and the ranks worth a look (failed,
 * stalled, stragglers), which keep their own tiles. Pure functions of the tiles.
 */

import type { HostGroup, RankTile, TileState } from './derive';
import { median } from './rates';

/** Above this many ranks in a run, the Ranks tab shows a summary per node, not every tile. */
export const NODE_SUMMARY_ABOVE = 64;

export interface NodeSummary {
  host: string;
  ranks: number;
  /** Ranks per state, in the order of `STATE_ORDER`, states with no rank left out. */
  states: [TileState, number][];
  stragglers: number;
  /** The slowest and the median rank's samples/s, null before any rank has a rate. */
  slowest: number | null;
  medianRate: number | null;
  /** The ranks that keep a tile of their own: failed, stalled or stragglers, ascending. */
  notable: RankTile[];
}

export const STATE_ORDER: readonly TileState[] = ['failed', 'stalled', 'interrupted', 'starting', 'running', 'done'];

function notable(tile: RankTile): boolean {
  return tile.state === 'failed' || tile.state === 'stalled' || tile.straggler;
}

export function nodeSummary(group: HostGroup): NodeSummary {
  const counts = new Map<TileState, number>();
  const rates: number[] = [];
  let stragglers = 0;
  for (const tile of group.tiles) {
    counts.set(tile.state, (counts.get(tile.state) ?? 0) + 1);
    if (tile.samplesPerSec !== null) {
      rates.push(tile.samplesPerSec);
    }
    stragglers += tile.straggler ? 1 : 0;
  }
  return {
    host: group.host,
    ranks: group.tiles.length,
    states: STATE_ORDER.filter(s => counts.has(s)).map(s => [s, counts.get(s) ?? 0]),
    stragglers,
    slowest: rates.length ? rates.reduce((a, b) => Math.min(a, b)) : null,
    medianRate: rates.length ? median(rates) : null,
    notable: group.tiles.filter(notable)
  };
}

/** Whether a run's Ranks tab shows node summaries: more than `NODE_SUMMARY_ABOVE` ranks. */
export function summarised(groups: readonly HostGroup[]): boolean {
  let ranks = 0;
  for (const group of groups) {
    ranks += group.tiles.length;
  }
  return ranks > NODE_SUMMARY_ABOVE;
}
