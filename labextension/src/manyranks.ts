/**
 * The many-rank view of a plot: which ranks get a line of their own. Up to `BAND_RANKS` ranks
 * every one; above, a total, a min–max band with its median, the stragglers highlighted, and any
 * other rank the user asked for (`shownranks.ts`, parsed by `parseRanks`). Pure: `figures.ts`
 * turns the traces into plotly's JSON.
 */

import { type IPlotTrace, NEUTRAL } from './figures';
import { rankColor } from './palette';
import type { Series } from './runstate';

/** Above this many ranks a plot shows the total, the band and the stragglers, not every rank. */
export const BAND_RANKS = 16;

/**
 * Above `BAND_RANKS` ranks at most this many stragglers are drawn as lines of their own, the
 * slowest: at 10,000 ranks a slow second can make a thousand ranks stragglers for a moment, and
 * a legend of a thousand lines took plotly seconds to lay out.
 */
export const STRAGGLER_LINES = 8;

/** The `max` slowest ranks of `slow` by their `rates` (ties: the lower rank first). */
export function slowest(
  slow: ReadonlySet<number>,
  rates: ReadonlyMap<number, number>,
  max = STRAGGLER_LINES
): Set<number> {
  if (slow.size <= max) {
    return new Set(slow);
  }
  const rate = (rank: number): number => rates.get(rank) ?? Number.POSITIVE_INFINITY;
  return new Set([...slow].sort((a, b) => rate(a) - rate(b) || a - b).slice(0, max));
}

/**
 * One trace per rank at most `BAND_RANKS` ranks, the stragglers named and highlighted. Above, the total,
 * the band (min to max across ranks, and the median), the stragglers named and highlighted, and
 * the ranks the user asked to see (`shown`): a figure of a few traces however many ranks, so that
 * a 256-rank run redraws in a few milliseconds. `seriesOf` is asked only for the ranks drawn.
 */
export function rankTraces(
  total: IPlotTrace | null,
  ranks: readonly number[],
  seriesOf: (rank: number) => Series,
  stragglers: ReadonlySet<number>,
  band: () => { min: Series; median: Series; max: Series },
  shown: ReadonlySet<number> = new Set()
): IPlotTrace[] {
  const sorted = [...ranks].sort((a, b) => a - b);
  const out: IPlotTrace[] = total ? [total] : [];
  const many = sorted.length > BAND_RANKS;
  if (many) {
    const { min, median, max } = band();
    out.push(
      { name: 'min rank', series: min, color: NEUTRAL, noLegend: true },
      { name: 'min – max rank', series: max, color: NEUTRAL, fillToPrevious: true },
      { name: 'median rank', series: median, color: NEUTRAL, line: 'dot' }
    );
  }
  for (const rank of sorted) {
    // A straggler is named and drawn thicker however many ranks: among 16 lines one 30 % slower
    // is hard to see otherwise.
    const slow = stragglers.has(rank);
    if (many && !slow && !shown.has(rank)) {
      continue;
    }
    const trace: IPlotTrace = {
      name: slow ? `rank ${rank} (straggler)` : `rank ${rank}`,
      series: seriesOf(rank),
      color: rankColor(rank)
    };
    if (slow) {
      trace.highlight = true;
    }
    out.push(trace);
  }
  return out;
}

/** The ranks named in `text` ("3, 17 40-42"), at most `max` of them; what is not a rank is skipped. */
export function parseRanks(text: string, max = 32): Set<number> {
  const out = new Set<number>();
  for (const word of text.split(/[\s,]+/)) {
    const range = /^(\d{1,6})(?:-(\d{1,6}))?$/.exec(word);
    if (!range) {
      continue;
    }
    const lo = Number(range[1]);
    const hi = range[2] === undefined ? lo : Number(range[2]);
    for (let r = lo; r <= hi && out.size < max; r++) {
      out.add(r);
    }
  }
  return out;
}
