/**
 * What the Throughput tab's plots draw, computed when a plot is drawn (not
 * on every render): samples/s in total and per rank, each metric per rank,
 * or min / median / max across ranks when there are many. Across-rank lines
 * come from the run's per-second statistics (`secondstats.ts`), kept up to
 * date as samples arrive, so a draw costs the seconds shown, not the history;
 * what a long run's first draw must compute first can be done in slices
 * (`samplesReady`, `metricReady`).
 */

import { MAX_RANK_TRACES, runDataParallelDegree, throughputSeries } from './derive';
import { rankColor } from './palette';
import { type ICanvasTrace, NEUTRAL } from './plotcanvas';
import type { RunLive, Series } from './runstate';
import { lowerBound, type SecondStats } from './secondstats';

/** A trace of a plot, as `plotcanvas.ts` draws it. */
export type IPlotTrace = ICanvasTrace;

/** The first whole second (Unix) a plot of the last `window` seconds shows; 0 shows all. */
function windowStart(stats: SecondStats, window: number): number {
  const last = stats.last;
  return window > 0 && last !== null ? last - window : -Infinity;
}

/** The name of the samples/s plot's total, which says what it counts. */
export function totalName(degree: number): string {
  return `total (mean rank × ${degree} data-parallel)`;
}

/**
 * The samples/s plot (`rates.ts`): the total (the mean rank's × the data-parallel degree), and
 * each rank's in its colour (or min / median / max across ranks).
 */
export function samplesTraces(live: RunLive, origin: number, window: number): IPlotTrace[] {
  const stats = live.samplesStats;
  const across = stats.read(origin, windowStart(stats, window));
  const degree = runDataParallelDegree(live);
  const total: IPlotTrace = {
    name: totalName(degree),
    series: { x: across.mean.x, y: across.mean.y.map(v => v * degree) },
    line: 'dash',
    color: NEUTRAL
  };
  if (live.samples.size > MAX_RANK_TRACES) {
    return [
      total,
      { name: 'max rank', series: across.max },
      { name: 'median rank', series: across.median },
      { name: 'min rank', series: across.min }
    ];
  }
  const { perRank } = throughputSeries(live, origin);
  return [
    total,
    ...[...perRank.entries()].map(([rank, series]) => ({ name: `rank ${rank}`, series, color: rankColor(rank) }))
  ];
}

/** A metric's plot: one line per rank, or min / median / max across ranks when there are many. */
export function metricTraces(live: RunLive, name: string, origin: number, window: number): IPlotTrace[] {
  const byRank = live.metrics.get(name) ?? live.system.get(name) ?? new Map<number, Series>();
  const stats = live.metricStats.get(name);
  if (byRank.size > MAX_RANK_TRACES && stats) {
    const across = stats.read(origin, windowStart(stats, window));
    return [
      { name: 'max', series: across.max },
      { name: 'median', series: across.median, line: 'dash' },
      { name: 'min', series: across.min }
    ];
  }
  let end = -Infinity;
  for (const { x } of byRank.values()) {
    end = Math.max(end, x[x.length - 1] ?? -Infinity);
  }
  const from = window > 0 ? end - window : -Infinity;
  return [...byRank.entries()]
    .sort(([a], [b]) => a - b)
    .map(([rank, { x, y }]) => {
      const start = lowerBound(x, from);
      return {
        name: `rank ${rank}`,
        series: { x: x.slice(start).map(t => t - origin), y: y.slice(start) },
        color: rankColor(rank)
      };
    });
}

/** Bring the samples/s plot's statistics up to date until `done()`; true when they are. */
export function samplesReady(live: RunLive, done: () => boolean): boolean {
  return live.samplesStats.catchUp(done);
}

/** Bring a metric plot's statistics (when it shows them) up to date until `done()`; true when they are. */
export function metricReady(live: RunLive, name: string, done: () => boolean): boolean {
  const byRank = live.metrics.get(name) ?? live.system.get(name);
  const stats = live.metricStats.get(name);
  return !(stats && byRank && byRank.size > MAX_RANK_TRACES) || stats.catchUp(done);
}
