/**
 * Statistics across ranks per whole second (min, median, max, sum and mean of one
 * value per rank and second), kept up to date as values arrive: a new value
 * marks its second, and reading computes only the marked seconds again. So a
 * plot of a long run with many ranks costs the seconds it shows plus what
 * changed since the last draw, never a pass over the whole history.
 */

/** Points of a plot line: x and y of equal length, x ascending. */
export interface Series {
  x: number[];
  y: number[];
}

export interface IAcrossRanks {
  min: Series;
  median: Series;
  max: Series;
  sum: Series;
  mean: Series;
}

export class SecondStats {
  /**
   * `values(second)` gives each rank's value in a whole second (Unix), as it is when read;
   * at most `capacity` seconds are kept (the oldest are dropped).
   */
  constructor(
    private readonly values: (second: number) => readonly number[],
    readonly capacity = Number.MAX_SAFE_INTEGER
  ) {}

  /** The last second with a value, or null before the first. */
  get last(): number | null {
    let last = this._seconds.length ? (this._seconds[this._seconds.length - 1] as number) : null;
    for (const s of this._dirty) {
      last = last === null ? s : Math.max(last, s);
    }
    return last;
  }

  /** A value in `second` (whole, Unix) was added or changed. */
  touch(second: number): void {
    this._dirty.add(second);
  }

  /**
   * Compute marked seconds again, at least one, until `done()` says to stop; true when none is
   * left. A long run's first draw so spreads the pass over its whole history across frames.
   */
  catchUp(done: () => boolean): boolean {
    this._update(done);
    return this._dirty.size === 0;
  }

  /**
   * Per second from `from` (whole, Unix) on, x relative to `origin`: the statistics across
   * the ranks that have a value in that second.
   */
  read(origin: number, from = -Infinity): IAcrossRanks {
    this._update();
    const start = lowerBound(this._seconds, from);
    const x = this._seconds.slice(start).map(s => s - origin);
    return {
      min: { x, y: this._min.slice(start) },
      median: { x, y: this._median.slice(start) },
      max: { x, y: this._max.slice(start) },
      sum: { x, y: this._sum.slice(start) },
      mean: { x, y: this._sum.slice(start).map((sum, i) => sum / (this._count[start + i] as number)) }
    };
  }

  private _update(done: () => boolean = () => false): void {
    if (!this._dirty.size) {
      return;
    }
    let first = true;
    for (const second of [...this._dirty].sort((a, b) => a - b)) {
      if (!first && done()) {
        break;
      }
      first = false;
      this._dirty.delete(second);
      // A typed array sorts numbers natively (no comparator calls): a long run's first read
      // sorts every second of its history.
      const values = Float64Array.from(this.values(second)).sort();
      const i = lowerBound(this._seconds, second);
      if (this._seconds[i] !== second) {
        if (!values.length) {
          continue;
        }
        for (const column of this._columns()) {
          column.splice(i, 0, 0); // at the end, as seconds usually come: no copy
        }
      } else if (!values.length) {
        for (const column of this._columns()) {
          column.splice(i, 1);
        }
        continue;
      }
      const n = values.length;
      let sum = 0;
      for (const v of values) {
        sum += v;
      }
      this._seconds[i] = second;
      this._min[i] = values[0] as number;
      this._max[i] = values[n - 1] as number;
      this._median[i] =
        n % 2 ? (values[(n - 1) / 2] as number) : ((values[n / 2 - 1] as number) + (values[n / 2] as number)) / 2;
      this._sum[i] = sum;
      this._count[i] = n;
    }
    const extra = this._seconds.length - this.capacity;
    if (extra > 0) {
      for (const column of this._columns()) {
        column.splice(0, extra);
      }
    }
  }

  private _columns(): number[][] {
    return [this._seconds, this._min, this._median, this._max, this._sum, this._count];
  }

  private _seconds: number[] = [];
  private _min: number[] = [];
  private _median: number[] = [];
  private _max: number[] = [];
  private _sum: number[] = [];
  private _count: number[] = [];
  private _dirty = new Set<number>();
}

/** The first index of sorted `values` whose value is `>= value`. */
export function lowerBound(values: readonly number[], value: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((values[mid] as number) < value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
