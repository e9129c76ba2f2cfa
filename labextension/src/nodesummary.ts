/**
 * A node's ranks in one line, for runs too large for a tile per rank (issue 26: 1,000 to 10,000
 * ranks): how many ranks are in each state, their rates, and the ranks worth a look (failed,
 * stalled, stragglers). Made in one pass over the ranks, without a tile per rank: the views
 * make tiles only for the ranks they show (`rankTile`). Above `NODE_TILES_ABOVE` nodes each
 * node is a tile of its own (`nodeMark`), and the run one line (`runSummary`). Pure.
 */

import {
  groupTiles,
  type HostGroup,
  type ITileContext,
  nodeOrder,
  type RankTile,
  rankHost,
  rankTile,
  type TileState,
  tileContext,
  tileState
} from './derive';
import { median, STRAGGLER_THRESHOLD } from './rates';
import type { RunLive } from './runstate';

/** Above this many ranks in a run, the Ranks tab shows a summary per node, not every tile. */
export const NODE_SUMMARY_ABOVE = 64;

/** Above this many nodes, each node is a small tile of its own and the run one line. */
export const NODE_TILES_ABOVE = 128;

/** At most this many tiles of ranks worth a look are shown in a summary (the rest are counted). */
export const NOTABLE_TILES = 64;

export interface NodeSummary {
  host: string;
  /** The node's ranks, ascending. */
  ranks: number[];
  /** Ranks per state, in the order of `STATE_ORDER`, states with no rank left out. */
  states: [TileState, number][];
  stragglers: number;
  /** The slowest and the median rank's samples/s, null before any rank has a rate. */
  slowest: number | null;
  medianRate: number | null;
  /** The ranks worth a look: failed, stalled or stragglers, ascending. */
  notable: number[];
}

export const STATE_ORDER: readonly TileState[] = ['failed', 'stalled', 'interrupted', 'starting', 'running', 'done'];

/** How a node's tile is marked: its most urgent state, a straggler after the failures. */
export type NodeMark = TileState | 'straggler';

const MARK_ORDER: readonly NodeMark[] = [
  'failed',
  'stalled',
  'interrupted',
  'straggler',
  'starting',
  'running',
  'done'
];

interface INodeAcc {
  host: string;
  node: number;
  ranks: number[];
  counts: Map<TileState, number>;
  rates: number[];
  stragglers: number;
  notable: number[];
}

/** Every node's summary, in node order (node rank, then name), from the run's ranks at once. */
export function nodeSummaries(live: RunLive, context: ITileContext): NodeSummary[] {
  const nodes = new Map<string, INodeAcc>();
  for (const rank of live.ranks.values()) {
    const host = rankHost(rank);
    let acc = nodes.get(host);
    if (!acc) {
      acc = {
        host,
        node: Number.MAX_SAFE_INTEGER,
        ranks: [],
        counts: new Map(),
        rates: [],
        stragglers: 0,
        notable: []
      };
      nodes.set(host, acc);
    }
    acc.node = Math.min(acc.node, rank.coords.node_rank ?? Number.MAX_SAFE_INTEGER);
    acc.ranks.push(rank.rank);
    const state = tileState(rank, context.runActive, context.now);
    acc.counts.set(state, (acc.counts.get(state) ?? 0) + 1);
    const rate = context.rates.get(rank.rank);
    if (rate !== undefined) {
      acc.rates.push(rate);
    }
    const slow = context.slow.has(rank.rank);
    acc.stragglers += slow ? 1 : 0;
    if (slow || state === 'failed' || state === 'stalled') {
      acc.notable.push(rank.rank);
    }
  }
  const up = (a: number, b: number): number => a - b;
  return [...nodes.values()].sort(nodeOrder).map(acc => ({
    host: acc.host,
    ranks: acc.ranks.sort(up),
    states: STATE_ORDER.filter(s => acc.counts.has(s)).map(s => [s, acc.counts.get(s) ?? 0]),
    stragglers: acc.stragglers,
    slowest: acc.rates.length ? acc.rates.reduce((a, b) => Math.min(a, b)) : null,
    medianRate: acc.rates.length ? median(acc.rates) : null,
    notable: acc.notable.sort(up)
  }));
}

/** A node's tile's mark: its most urgent state, where a straggler comes after the failures. */
export function nodeMark(summary: NodeSummary): NodeMark {
  const marks = new Set<NodeMark>(summary.states.map(([state]) => state));
  if (summary.stragglers) {
    marks.add('straggler');
  }
  return MARK_ORDER.find(m => marks.has(m)) ?? 'starting';
}

/** The whole run in one line's numbers: ranks per state and the stragglers over every node. */
export function runSummary(nodes: readonly NodeSummary[], context: ITileContext): Omit<NodeSummary, 'host'> {
  const counts = new Map<TileState, number>();
  const ranks: number[] = [];
  const notable: number[] = [];
  let stragglers = 0;
  for (const node of nodes) {
    for (const [state, n] of node.states) {
      counts.set(state, (counts.get(state) ?? 0) + n);
    }
    ranks.push(...node.ranks);
    notable.push(...node.notable);
    stragglers += node.stragglers;
  }
  const rates = [...context.rates.values()];
  return {
    ranks,
    states: STATE_ORDER.filter(s => counts.has(s)).map(s => [s, counts.get(s) ?? 0]),
    stragglers,
    slowest: rates.length ? rates.reduce((a, b) => Math.min(a, b)) : null,
    medianRate: rates.length ? median(rates) : null,
    notable: notable.sort((a, b) => a - b)
  };
}

/** What the Ranks tab shows of a run at `now`: every tile, or above `NODE_SUMMARY_ABOVE` ranks
 * each node's summary and the tiles of the ranks asked for only. */
export interface IRanksData {
  /** Every rank's tile, grouped by host; null above `NODE_SUMMARY_ABOVE` ranks. */
  groups: HostGroup[] | null;
  /** Each node's summary, in node order; null up to `NODE_SUMMARY_ABOVE` ranks. */
  nodes: NodeSummary[] | null;
  /** The tiles of these ranks (those shown). */
  tiles: (ranks: readonly number[]) => RankTile[];
  /** What every tile shares: the rates, the stragglers, the time. */
  context: ITileContext;
}

export function ranksData(live: RunLive, now: number, stragglerThreshold = STRAGGLER_THRESHOLD): IRanksData {
  const context = tileContext(live, now, stragglerThreshold);
  const many = live.ranks.size > NODE_SUMMARY_ABOVE;
  const tiles = (ranks: readonly number[]): RankTile[] => {
    const out: RankTile[] = [];
    for (const r of ranks) {
      const rank = live.ranks.get(r);
      if (rank) {
        out.push(rankTile(live, rank, context));
      }
    }
    return out;
  };
  return {
    groups: many ? null : groupTiles(live, context),
    nodes: many ? nodeSummaries(live, context) : null,
    tiles,
    context
  };
}
