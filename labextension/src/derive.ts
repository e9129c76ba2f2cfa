/**
 * What the views show, derived from a run's live state: rank tiles grouped by
 * host with stalled ranks and stragglers marked, and the throughput series.
 * Rates and the straggler rule come from `rates.ts`, colours from `palette.ts`.
 * Pure functions of their arguments (the current time is one).
 */

import { rankColor } from './palette';
import { dataParallelDegree, median, STRAGGLER_THRESHOLD, stragglers, totalRate } from './rates';
import { type RankLive, type RunLive, type Series, STALL_SECONDS } from './runstate';
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
  /**
   * The rank's samples/s (`rates.ts`): live while the run runs, first report to last once it
   * ended; null before its second report.
   */
  samplesPerSec: number | null;
  /** The rank's colour, the same in every figure (`palette.ts`). */
  color: string;
  /** The rank's last `progress` (0-1: `report(progress=...)` or its tqdm bar), or null. */
  progress: number | null;
  /** The rank's last GPU memory (MiB) and GPU use (%), sampled with NVML; null without a GPU. */
  gpuMemMb: number | null;
  gpuUtil: number | null;
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

/** Each rank's samples/s: live while the run runs, first report to last once it ended. */
export function rankRates(live: RunLive): Map<number, number> {
  const runActive = live.run === null || isRunActive(live.run.state);
  const rates = new Map<number, number>();
  for (const [rank, reports] of live.samples) {
    const rate = runActive ? reports.live : reports.firstToLast;
    if (rate !== null) {
      rates.set(rank, rate);
    }
  }
  return rates;
}

/** The run's data-parallel degree: the replicas its ranks' coordinates name. */
export function runDataParallelDegree(live: RunLive): number {
  return dataParallelDegree(
    [...live.ranks.values()].map(r => r.coords),
    Math.max(live.ranks.size, live.samples.size)
  );
}

/** What every tile of one render shares: the ranks' rates, the stragglers, the time. */
export interface ITileContext {
  rates: ReadonlyMap<number, number>;
  slow: ReadonlySet<number>;
  runActive: boolean;
  now: number;
}

/**
 * What the tiles of a run at `now` share. A rank below `stragglerThreshold` of its peers' median
 * samples/s is a straggler (`rates.ts`; the threshold is the server's
 * `c.Distributed.straggler_threshold`).
 */
export function tileContext(live: RunLive, now: number, stragglerThreshold = STRAGGLER_THRESHOLD): ITileContext {
  const rates = rankRates(live);
  return {
    rates,
    slow: stragglers(rates, stragglerThreshold),
    runActive: live.run === null || isRunActive(live.run.state),
    now
  };
}

/** One rank's tile. */
export function rankTile(live: RunLive, rank: RankLive, context: ITileContext): RankTile {
  return {
    ...tile(rank, context.rates.get(rank.rank) ?? null, context.slow.has(rank.rank), context.runActive, context.now),
    progress: lastValue(live.metrics.get(PROGRESS_METRIC)?.get(rank.rank)?.y),
    gpuMemMb: lastValue(live.system.get(GPU_MEM_METRIC)?.get(rank.rank)?.y),
    gpuUtil: lastValue(live.system.get(GPU_UTIL_METRIC)?.get(rank.rank)?.y)
  };
}

/** A rank's state as its tile shows it: a running rank without a heartbeat for a while is stalled. */
export function tileState(rank: RankLive, runActive: boolean, now: number): TileState {
  const state: TileState = rank.state;
  const age = rank.heartbeat === null ? null : now - rank.heartbeat;
  return state === 'running' && runActive && age !== null && age > STALL_SECONDS ? 'stalled' : state;
}

/** The order of nodes: by node rank (a rank's coordinates), then by name. */
export function nodeOrder(a: { host: string; node: number }, b: { host: string; node: number }): number {
  return a.node - b.node || a.host.localeCompare(b.host);
}

/** A rank's host: as its events name it, else its coordinates'. */
export function rankHost(rank: RankLive): string {
  return rank.host || rank.coords.host || '';
}

/**
 * The rank tiles of a run, grouped by host (node rank order, then name), ranks ascending
 * (see `tileContext` for the stragglers).
 */
export function rankGroups(live: RunLive, now: number, stragglerThreshold = STRAGGLER_THRESHOLD): HostGroup[] {
  return groupTiles(live, tileContext(live, now, stragglerThreshold));
}

/** `rankGroups` with the tiles' context given. */
export function groupTiles(live: RunLive, context: ITileContext): HostGroup[] {
  const groups = new Map<string, { host: string; node: number; tiles: RankTile[] }>();
  for (const rank of [...live.ranks.values()].sort((a, b) => a.rank - b.rank)) {
    const t = rankTile(live, rank, context);
    const node = rank.coords.node_rank ?? Number.MAX_SAFE_INTEGER;
    let group = groups.get(t.host);
    if (!group) {
      group = { host: t.host, node, tiles: [] };
      groups.set(t.host, group);
    }
    group.node = Math.min(group.node, node);
    group.tiles.push(t);
  }
  return [...groups.values()].sort(nodeOrder).map(({ host, tiles }) => ({ host, tiles }));
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
/** A rank's GPU memory (MiB) and use (%): its heartbeat's NVML samples (`protocol/reports.py`). */
export const GPU_MEM_METRIC = 'sys.gpu_mem_mb';
export const GPU_UTIL_METRIC = 'sys.gpu_util';

function lastValue(values: number[] | undefined): number | null {
  return values && values.length > 0 ? (values[values.length - 1] ?? null) : null;
}

function tile(
  rank: RankLive,
  rate: number | null,
  straggler: boolean,
  runActive: boolean,
  now: number
): Omit<RankTile, 'progress' | 'gpuMemMb' | 'gpuUtil'> {
  return {
    rank: rank.rank,
    host: rankHost(rank),
    pid: rank.pid ?? rank.coords.pid ?? null,
    state: tileState(rank, runActive, now),
    heartbeatAge: rank.heartbeat === null ? null : Math.max(0, now - rank.heartbeat),
    samplesPerSec: rate,
    color: rankColor(rank.rank),
    straggler,
    dp: rank.coords.data_parallel ?? null,
    pp: rank.coords.pipeline_stage ?? null,
    tp: rank.coords.tensor_parallel ?? null,
    role: rank.coords.role ?? ''
  };
}

/**
 * Samples/s per rank (each rank's live rate per whole second, `rates.ts`) and in total (the mean
 * rank's × the data-parallel degree), x in seconds since `origin` (the run's start).
 */
export function throughputSeries(live: RunLive, origin: number): { perRank: Map<number, Series>; total: Series } {
  const perRank = new Map<number, Series>();
  const bySecond = new Map<number, number[]>();
  for (const [rank, reports] of [...live.samples.entries()].sort(([a], [b]) => a - b)) {
    const seconds = [...reports.perSecond.keys()].sort((a, b) => a - b);
    const y = seconds.map(s => reports.perSecond.get(s) as number);
    perRank.set(rank, { x: seconds.map(s => s - origin), y });
    seconds.forEach((s, i) => {
      const values = bySecond.get(s) ?? [];
      values.push(y[i] as number);
      bySecond.set(s, values);
    });
  }
  const degree = runDataParallelDegree(live);
  const seconds = [...bySecond.keys()].sort((a, b) => a - b);
  return {
    perRank,
    total: { x: seconds.map(s => s - origin), y: seconds.map(s => totalRate(bySecond.get(s) ?? [], degree)) }
  };
}

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
