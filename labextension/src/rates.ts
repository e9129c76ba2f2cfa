/**
 * Samples/s: the one definition every view of the panel uses (the rank tiles,
 * the samples/s plot, its total), and the straggler rule. The TypeScript mirror
 * of `python/jupyter_distributed/rates.py` (what `%distributed compare`,
 * `%distributed runs` and a run's summary show); both are checked against the
 * same fixture, `tests/rates/rates.json`.
 *
 * A rank's rate over an interval is the samples it reported after the
 * interval's first report, up to and including its last, divided by the time
 * between those two reports. A finished run's is first report to last; the live
 * view slides a window of that form: its last report is the rank's latest, its
 * first the latest report at least `RATE_WINDOW_SECONDS` before that (or the
 * rank's first). One report alone has no rate. A run's total counts one rank
 * per data-parallel replica: the mean rank rate × the data-parallel degree.
 */

import type { RankCoords } from './wire';

/** The live view's window, in seconds (`rates.WINDOW_SECONDS`). */
export const RATE_WINDOW_SECONDS = 5;

/** The straggler rule's threshold until the server says its `c.Distributed.straggler_threshold`. */
export const STRAGGLER_THRESHOLD = 0.8;

/** The most reports kept per rank (the oldest are dropped; first-to-last keeps the first). */
export const MAX_REPORTS = 20_000;

/** `samples` reported after the report at `first` up to the one at `last`, per second. */
export function rateBetween(samples: number, first: number, last: number): number | null {
  return last > first ? samples / (last - first) : null;
}

/** The first index of sorted `values` whose value is `> value`. */
function upperBound(values: readonly number[], value: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((values[mid] as number) <= value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/**
 * One rank's `report(samples=…)` calls: their times and running sums, its live rate per whole
 * second (the plot's line; the tile shows the latest) and its first-to-last rate.
 */
export class RankReports {
  constructor(readonly window = RATE_WINDOW_SECONDS) {}

  /** Report times (ascending) and the samples reported up to and including each. */
  readonly t: number[] = [];
  readonly sums: number[] = [];
  /**
   * Per whole second (Unix) from the first report's to the last's: the live rate at the latest
   * report before the second's end, where that report is at most `window` seconds before it.
   */
  readonly perSecond = new Map<number, number>();

  /** Add a report; returns the whole seconds whose value may have changed. */
  add(t: number, samples: number): number[] {
    const n = this.t.length;
    const prev = n ? (this.t[n - 1] as number) : null;
    // First report to last, as `rates.RankRate` counts it: the first report seen starts it.
    if (this._first === null) {
      this._first = t;
    } else {
      this._after += samples;
    }
    this._last = Math.max(this._last, t);
    if (prev !== null && t < prev) {
      return this._late(t, samples);
    }
    this.t.push(t);
    this.sums.push((n ? (this.sums[n - 1] as number) : 0) + samples);
    const second = Math.floor(t);
    const touched: number[] = [];
    if (prev !== null) {
      // The seconds since the previous report keep its rate while it is within the window.
      const held = this.perSecond.get(Math.floor(prev));
      const until = Math.min(second - 1, Math.floor(prev + this.window - 1));
      for (let s = Math.floor(prev) + 1; s <= until; s++) {
        if (held !== undefined) {
          this.perSecond.set(s, held);
        }
        touched.push(s);
      }
    }
    this._set(second, this.windowRate(this.t.length - 1));
    touched.push(second);
    this._trim();
    return touched;
  }

  /** The live rate at report `j`: from the latest report at least `window` seconds before it. */
  windowRate(j: number): number | null {
    const last = this.t[j];
    if (last === undefined) {
      return null;
    }
    const i = Math.max(0, upperBound(this.t, last - this.window) - 1);
    return rateBetween((this.sums[j] as number) - (this.sums[i] as number), this.t[i] as number, last);
  }

  /** The live rate (at the latest report), or null with fewer than two reports. */
  get live(): number | null {
    return this.windowRate(this.t.length - 1);
  }

  /** First report to last: a finished run's rate. */
  get firstToLast(): number | null {
    return this._first === null ? null : rateBetween(this._after, this._first, this._last);
  }

  private _set(second: number, value: number | null): void {
    if (value === null) {
      this.perSecond.delete(second);
    } else {
      this.perSecond.set(second, value);
    }
  }

  /** A report older than the latest (rare): put in place, then every second again. */
  private _late(t: number, samples: number): number[] {
    const i = upperBound(this.t, t);
    this.t.splice(i, 0, t);
    this.sums.splice(i, 0, (i ? (this.sums[i - 1] as number) : 0) + samples);
    for (let k = i + 1; k < this.sums.length; k++) {
      this.sums[k] = (this.sums[k] as number) + samples;
    }
    const touched = [...this.perSecond.keys()];
    this.perSecond.clear();
    let j = -1;
    const from = Math.floor(this.t[0] as number);
    const to = Math.floor(this.t[this.t.length - 1] as number);
    for (let s = from; s <= to; s++) {
      while (j + 1 < this.t.length && (this.t[j + 1] as number) < s + 1) {
        j++;
      }
      if (s + 1 - (this.t[j] as number) <= this.window) {
        this._set(s, this.windowRate(j));
      }
      touched.push(s);
    }
    this._trim();
    return touched;
  }

  /** Drop the oldest reports and seconds beyond the caps (in chunks, so rarely). */
  private _trim(): void {
    const extra = this.t.length - MAX_REPORTS;
    if (extra > MAX_REPORTS / 10) {
      this.t.splice(0, extra);
      this.sums.splice(0, extra);
    }
    while (this.perSecond.size > MAX_REPORTS) {
      this.perSecond.delete(this.perSecond.keys().next().value as number);
    }
  }

  private _first: number | null = null;
  private _last = -Infinity;
  /** Samples reported after the first report. */
  private _after = 0;
}

/** A run's samples/s: one rank per data-parallel replica (mean rank rate × the degree). */
export function totalRate(rankRates: Iterable<number>, dataParallelDegree: number): number {
  let sum = 0;
  let n = 0;
  for (const v of rankRates) {
    sum += v;
    n++;
  }
  return n ? (sum / n) * dataParallelDegree : 0;
}

/** The data-parallel degree of a run's ranks: how many distinct replicas their coordinates name. */
export function dataParallelDegree(coords: Iterable<RankCoords>, ranks: number): number {
  const replicas = new Set<number>();
  for (const c of coords) {
    if (typeof c.data_parallel === 'number') {
      replicas.add(c.data_parallel);
    }
  }
  return replicas.size || Math.max(1, ranks);
}

/** The ranks below `threshold` × the median rank's rate (none with fewer than two ranks). */
export function stragglers(rankRates: ReadonlyMap<number, number>, threshold: number): Set<number> {
  const out = new Set<number>();
  if (rankRates.size < 2) {
    return out;
  }
  const med = median([...rankRates.values()]);
  if (med <= 0) {
    return out;
  }
  for (const [rank, rate] of rankRates) {
    if (rate < threshold * med) {
      out.add(rank);
    }
  }
  return out;
}

export function median(values: readonly number[]): number {
  if (!values.length) {
    return 0;
  }
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
