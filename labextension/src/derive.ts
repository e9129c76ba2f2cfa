/**
 * What the views show, derived from a run's live state: rank tiles grouped by
 * host with stalled ranks and stragglers marked, and the throughput series.
 * Pure functions of their arguments (the current time is one).
 */

import {
  RATE_WINDOW_SECONDS,
  type RankLive,
  type RunLive,
  type SecondSpan,
  type Series,
  STALL_SECONDS,
  STRAGGLER_FRACTION
} from './runstate';
import { lowerBound } from './secondstats';
import { isRunActive, type Run } from './wire';

export type TileState = 'starting' | 'running' | 'done' | 'failed' | 'interrupted' | 'stalled';

export interface RankTile {
  rank: number;
  host: string;
  pid: number | null;
  state: TileState;
  /** Seconds since the last sign of life, or null if none yet. */
  heartbeatAge: number | null;
  /** Mean samples/s over the rank's last few reporting seconds, or null if it reports none. */
  samplesPerSec: number | null;
  /** The rank's last `progress` (0-1: `report(progress=...)` or its tqdm bar), or null. */
  progress: number | null;
  straggler: boolean;
  dp: number | null;
  pp: number | null;
  tp: number | null;
  role: string;
}

export interface HostGroup {
  host: string;
  tiles: RankTile[];
}

/**
 * The rank tiles of a run, grouped by host (node rank order, then name), ranks ascending.
 * A rank below `stragglerThreshold` of its peers' median samples/s is a straggler.
 */
export function rankGroups(live: RunLive, now: number, stragglerThreshold = STRAGGLER_FRACTION): HostGroup[] {
  const runActive = live.run === null || isRunActive(live.run.state);
  const rates = new Map<number, number>();
  for (const [rank, perSecond] of live.samples) {
    rates.set(rank, currentRate(perSecond, live.sampleSpans.get(rank)));
  }
  const peers = [...rates.values()];
  const med = median(peers);
  const tiles = [...live.ranks.values()]
    .sort((a, b) => a.rank - b.rank)
    .map(rank => ({
      ...tile(rank, rates.get(rank.rank) ?? null, med, peers.length, runActive, now, stragglerThreshold),
      progress: lastValue(live.metrics.get(PROGRESS_METRIC)?.get(rank.rank)?.y)
    }));
  const groups = new Map<string, { node: number; tiles: RankTile[] }>();
  for (const t of tiles) {
    const live_ = live.ranks.get(t.rank);
    const node = live_?.coords.node_rank ?? Number.MAX_SAFE_INTEGER;
    let group = groups.get(t.host);
    if (!group) {
      group = { node, tiles: [] };
      groups.set(t.host, group);
    }
    group.node = Math.min(group.node, node);
    group.tiles.push(t);
  }
  return [...groups.entries()]
    .sort(([ha, a], [hb, b]) => a.node - b.node || ha.localeCompare(hb))
    .map(([host, group]) => ({ host, tiles: group.tiles }));
}

/**
 * Whether a rank tile offers its Stacks: only while the run is running (its kernel answers)
 * and for a rank that has not failed (its process may be gone).
 */
export function tileHasStacks(run: Run | null, tile: RankTile): boolean {
  return run?.state === 'running' && tile.state !== 'failed';
}

/** The metric a rank's progress bar reports (0-1). */
export const PROGRESS_METRIC = 'progress';

function lastValue(values: number[] | undefined): number | null {
  return values && values.length > 0 ? (values[values.length - 1] ?? null) : null;
}

function tile(
  rank: RankLive,
  rate: number | null,
  med: number,
  reporting: number,
  runActive: boolean,
  now: number,
  stragglerThreshold: number
): Omit<RankTile, 'progress'> {
  const age = rank.heartbeat === null ? null : Math.max(0, now - rank.heartbeat);
  let state: TileState = rank.state;
  if (state === 'running' && runActive && age !== null && age > STALL_SECONDS) {
    state = 'stalled';
  }
  return {
    rank: rank.rank,
    host: rank.host || rank.coords.host || '',
    pid: rank.pid ?? rank.coords.pid ?? null,
    state,
    heartbeatAge: age,
    samplesPerSec: rate,
    straggler: rate !== null && reporting >= 2 && med > 0 && rate < stragglerThreshold * med,
    dp: rank.coords.data_parallel ?? null,
    pp: rank.coords.pipeline_stage ?? null,
    tp: rank.coords.tensor_parallel ?? null,
    role: rank.coords.role ?? ''
  };
}

/**
 * Mean samples/s over the last `RATE_WINDOW_SECONDS` seconds up to the rank's latest report.
 * With the span of its seconds, only the window's seconds are looked at.
 */
export function currentRate(perSecond: ReadonlyMap<number, number>, span?: SecondSpan): number {
  if (perSecond.size === 0) {
    return 0;
  }
  let { first, last } = span ?? { first: Infinity, last: -Infinity };
  if (!span) {
    for (const second of perSecond.keys()) {
      first = Math.min(first, second);
      last = Math.max(last, second);
    }
  }
  const from = Math.max(first, last - RATE_WINDOW_SECONDS + 1);
  let total = 0;
  for (let second = from; second <= last; second++) {
    total += perSecond.get(second) ?? 0;
  }
  return total / (last - from + 1);
}

export function median(values: readonly number[]): number {
  if (!values.length) {
    return 0;
  }
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/**
 * Samples/s per rank and in total, one point per second, x in seconds since
 * `origin` (the run's start).
 */
export function throughputSeries(live: RunLive, origin: number): { perRank: Map<number, Series>; total: Series } {
  const perRank = new Map<number, Series>();
  const total = new Map<number, number>();
  for (const [rank, perSecond] of [...live.samples.entries()].sort(([a], [b]) => a - b)) {
    const seconds = [...perSecond.keys()].sort((a, b) => a - b);
    perRank.set(rank, {
      x: seconds.map(s => s - origin),
      y: seconds.map(s => perSecond.get(s) ?? 0)
    });
    for (const s of seconds) {
      total.set(s, (total.get(s) ?? 0) + (perSecond.get(s) ?? 0));
    }
  }
  const seconds = [...total.keys()].sort((a, b) => a - b);
  return {
    perRank,
    total: { x: seconds.map(s => s - origin), y: seconds.map(s => total.get(s) ?? 0) }
  };
}

/** Above this many ranks a plot shows min / median / max across ranks instead of one line each. */
export const MAX_RANK_TRACES = 32;

/**
 * Per whole second (x relative to `origin`), the min, median and max across ranks of
 * `byRank`'s values (the last value of each rank in that second).
 */
export function acrossRanks(
  byRank: ReadonlyMap<number, Series>,
  origin: number
): { min: Series; median: Series; max: Series } {
  const perSecond = new Map<number, Map<number, number>>();
  for (const [rank, series] of byRank) {
    series.x.forEach((t, i) => {
      const second = Math.floor(t - origin);
      let values = perSecond.get(second);
      if (!values) {
        values = new Map();
        perSecond.set(second, values);
      }
      values.set(rank, series.y[i] ?? 0);
    });
  }
  const seconds = [...perSecond.keys()].sort((a, b) => a - b);
  const out = {
    min: { x: seconds, y: [] as number[] },
    median: { x: seconds, y: [] as number[] },
    max: { x: seconds, y: [] as number[] }
  };
  for (const second of seconds) {
    const values = [...(perSecond.get(second) as Map<number, number>).values()];
    out.min.y.push(Math.min(...values));
    out.median.y.push(median(values));
    out.max.y.push(Math.max(...values));
  }
  return out;
}

/**
 * The part of each series within the last `seconds` of the latest point of any of them
 * (the plot window); `seconds <= 0` keeps everything.
 */
export function lastSeconds(series: readonly Series[], seconds: number): Series[] {
  if (seconds <= 0) {
    return [...series];
  }
  let end = -Infinity;
  for (const s of series) {
    end = Math.max(end, s.x[s.x.length - 1] ?? -Infinity);
  }
  const from = end - seconds;
  return series.map(s => {
    const i = lowerBound(s.x, from);
    return i === 0 ? s : { x: s.x.slice(i), y: s.y.slice(i) };
  });
}
