/**
 * What the Throughput tab's plots draw, computed when a plot is drawn (not
 * on every render): samples/s in total and per rank, and each metric per
 * rank; above `BAND_RANKS` ranks the total, a band (min, median, max across
 * ranks) and the stragglers, every other rank hidden until its legend entry
 * is clicked (`manyranks.ts`). Across-rank lines come from the run's per-second
 * statistics (`secondstats.ts`), kept up to date as samples arrive; what a
 * long run's first draw must compute first can be done in slices
 * (`samplesReady`, `metricReady`).
 */

import { acrossRanks, GPU_MEM_METRIC, GPU_UTIL_METRIC, runDataParallelDegree } from './derive';
import { type IPlotTrace, NEUTRAL } from './figures';
import { BAND_RANKS, rankTraces } from './manyranks';
import type { RunLive, Series } from './runstate';
import { lowerBound, type SecondStats } from './secondstats';

export type { IPlotTrace } from './figures';

/** The first whole second (Unix) a plot of the last `window` seconds shows; 0 shows all. */
function windowStart(stats: SecondStats, window: number): number {
  const last = stats.last;
  return window > 0 && last !== null ? last - window : -Infinity;
}

/** The name of the samples/s plot's total, which says what it counts. */
export function totalName(degree: number): string {
  return `total (mean rank × ${degree} data-parallel)`;
}

/** A rank's samples/s per whole second (`rates.ts`), x in seconds since `origin`, from `start` on. */
function rankRates(live: RunLive, rank: number, origin: number, start: number): Series {
  const perSecond = live.samples.get(rank)?.perSecond ?? new Map<number, number>();
  const seconds = [...perSecond.keys()].filter(s => s - origin >= start).sort((a, b) => a - b);
  return { x: seconds.map(s => s - origin), y: seconds.map(s => perSecond.get(s) as number) };
}

/**
 * The samples/s plot (`rates.ts`): the total (the mean rank's × the data-parallel degree), and
 * each rank's in its colour; above `BAND_RANKS` ranks the band, the `slow` ranks highlighted and
 * the `shown` ones.
 */
export function samplesTraces(
  live: RunLive,
  origin: number,
  window: number,
  slow: ReadonlySet<number> = new Set(),
  shown: ReadonlySet<number> = new Set()
): IPlotTrace[] {
  const stats = live.samplesStats;
  const start = windowStart(stats, window);
  const across = stats.read(origin, start);
  const degree = runDataParallelDegree(live);
  const total: IPlotTrace = {
    name: totalName(degree),
    series: { x: across.mean.x, y: across.mean.y.map(v => v * degree) },
    line: 'dash',
    color: NEUTRAL
  };
  const seriesOf = (rank: number): Series => rankRates(live, rank, origin, start - origin);
  return rankTraces(total, [...live.samples.keys()], seriesOf, slow, () => across, shown);
}

/**
 * A metric's plot: one line per rank; above `BAND_RANKS` ranks the band, the `slow` ranks and
 * the `shown` ones.
 */
export function metricTraces(
  live: RunLive,
  name: string,
  origin: number,
  window: number,
  slow: ReadonlySet<number> = new Set(),
  shown: ReadonlySet<number> = new Set()
): IPlotTrace[] {
  const byRank = live.metrics.get(name) ?? live.system.get(name) ?? new Map<number, Series>();
  let end = -Infinity;
  for (const { x } of byRank.values()) {
    end = Math.max(end, x[x.length - 1] ?? -Infinity);
  }
  const start = window > 0 ? end - window : -Infinity;
  const seriesOf = (rank: number): Series => {
    const { x, y } = byRank.get(rank) as Series;
    const i = lowerBound(x, start);
    return { x: x.slice(i).map(t => t - origin), y: y.slice(i) };
  };
  const band = (): { min: Series; median: Series; max: Series } => {
    const stats = live.metricStats.get(name);
    return stats ? stats.read(origin, windowStart(stats, window)) : acrossRanks(byRank, origin);
  };
  return rankTraces(null, [...byRank.keys()], seriesOf, slow, band, shown);
}

/** Bring the samples/s plot's statistics up to date until `done()`; true when they are. */
export function samplesReady(live: RunLive, done: () => boolean): boolean {
  return live.samplesStats.catchUp(done);
}

/** Bring a metric plot's statistics (when it shows them) up to date until `done()`; true when they are. */
export function metricReady(live: RunLive, name: string, done: () => boolean): boolean {
  const byRank = live.metrics.get(name) ?? live.system.get(name);
  const stats = live.metricStats.get(name);
  return !(stats && byRank && byRank.size > BAND_RANKS) || stats.catchUp(done);
}

/** The latest x (seconds since `origin`) of any series of the run, or null when there is none. */
export function runEnd(live: RunLive, origin: number): number | null {
  let end = -Infinity;
  for (const byName of [live.metrics, live.system]) {
    for (const byRank of byName.values()) {
      for (const { x } of byRank.values()) {
        end = Math.max(end, x[x.length - 1] ?? -Infinity);
      }
    }
  }
  const second = live.samplesStats.last;
  end = Math.max(end, second === null ? -Infinity : second + 1);
  return Number.isFinite(end) ? end - origin : null;
}

/** The units of the system samples (`protocol/reports.py`: RSS and GPU memory are in MiB). */
const SYSTEM_UNITS: Readonly<Record<string, string>> = {
  'sys.cpu_percent': '%',
  'sys.rss_mb': 'MiB',
  [GPU_MEM_METRIC]: 'MiB',
  [GPU_UTIL_METRIC]: 'GPU %'
};

/** The y axis' title of a metric's plot: the unit of a system sample, '' for the cell's metrics. */
export function metricUnit(name: string): string {
  return SYSTEM_UNITS[name] ?? '';
}
