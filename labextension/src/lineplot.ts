/**
 * The pure parts of the line plots (the Throughput tab's, the Scaling tab's):
 * data ranges, linear and log scales, "nice" tick values and their labels
 * (numbers, byte sizes), and series mapped to pixel polylines. No DOM:
 * `plotcanvas.ts` draws what these return on a canvas.
 */

/** The smallest and largest finite value, or null when there is none. */
export interface IExtent {
  min: number;
  max: number;
}

/** The extent of every finite number in `arrays` (NaN, ±Infinity and empty arrays are skipped). */
export function extent(arrays: Iterable<ArrayLike<number>>): IExtent | null {
  let min = Infinity;
  let max = -Infinity;
  for (const values of arrays) {
    for (let i = 0; i < values.length; i++) {
      const v = values[i] as number;
      if (Number.isFinite(v)) {
        if (v < min) {
          min = v;
        }
        if (v > max) {
          max = v;
        }
      }
    }
  }
  return min <= max ? { min, max } : null;
}

/** A step of 1, 2 or 5 times a power of ten that cuts `span` into about `count` parts. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0) || !Number.isFinite(span)) {
    return 1;
  }
  const raw = span / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  const nice = fraction < 1.5 ? 1 : fraction < 3.5 ? 2 : fraction < 7.5 ? 5 : 10;
  return nice * power;
}

/** An axis: its domain (what the plot area spans) and the tick values inside it. */
export interface IAxis {
  lo: number;
  hi: number;
  step: number;
  ticks: number[];
}

/**
 * About `count` ticks over `range` (null: no data, shown as 0 to 1). A range of one value is
 * widened around it. With `expand`, the domain grows to the ticks just outside the data (a
 * y axis); without, it is the data's range and the ticks are those inside it (a time axis).
 */
export function niceAxis(range: IExtent | null, count: number, expand: boolean): IAxis {
  let { min, max } = range ?? { min: 0, max: 1 };
  if (min === max) {
    const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const step = niceStep(max - min, count);
  const lo = expand ? Math.floor(min / step + 1e-9) * step : min;
  const hi = expand ? Math.ceil(max / step - 1e-9) * step : max;
  const ticks: number[] = [];
  for (let k = Math.ceil(lo / step - 1e-9); k <= Math.floor(hi / step + 1e-9); k++) {
    // k * step, rounded so that 3 * 0.1 shows as 0.3.
    ticks.push(Number((k * step).toPrecision(12)));
  }
  return { lo, hi, step, ticks };
}

/**
 * An axis of whole numbers (world sizes): the data's range (one value widened by 1 either side)
 * with about `count` ticks, never closer than 1 apart.
 */
export function integerAxis(range: IExtent | null, count: number): IAxis {
  const r = range && range.min === range.max ? { min: range.min - 1, max: range.max + 1 } : range;
  const span = r ? r.max - r.min : 1;
  // At most `span` parts: a step of at least 1, so 1, 2 or 5 times a power of ten, whole.
  return niceAxis(r, Math.max(1, Math.min(count, span)), false);
}

/**
 * A log axis of sizes in bytes (1 and up): the data's range with about `count` ticks at powers
 * of two whose exponents are 1, 2, 5, 10... apart (1 KiB, 4 KiB, 16 KiB or 1 KiB, 1 MiB); `step`
 * is that exponent step. A range with fewer than two powers of two is widened to the powers
 * around it. `axisScale` maps it.
 */
export function logAxis(range: IExtent | null, count: number): IAxis & { log: true } {
  let hi = Math.max(1, range?.max ?? 1024);
  let lo = Math.min(hi, Math.max(1, range?.min ?? 1));
  let k0 = Math.ceil(Math.log2(lo) - 1e-9);
  let k1 = Math.floor(Math.log2(hi) + 1e-9);
  if (k1 - k0 < 1) {
    k0 = Math.floor(Math.log2(lo) + 1e-9);
    k1 = Math.max(k0 + 1, Math.ceil(Math.log2(hi) - 1e-9));
    lo = 2 ** k0;
    hi = 2 ** k1;
  }
  const step = Math.max(1, niceStep(k1 - k0, count));
  const ticks: number[] = [];
  for (let k = Math.ceil(k0 / step) * step; k <= k1; k += step) {
    ticks.push(2 ** k);
  }
  return { lo, hi, step, ticks, log: true };
}

/** `axis`'s domain mapped onto `range` pixels: linearly, or through log10 on a log axis. */
export function axisScale(axis: IAxis & { log?: boolean }, range: [number, number]): (v: number) => number {
  if (!axis.log) {
    return linearScale([axis.lo, axis.hi], range);
  }
  const scale = linearScale([Math.log10(axis.lo), Math.log10(axis.hi)], range);
  return v => scale(Math.log10(v));
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** A size in bytes with binary units: 512 B, 1 KiB, 1.5 MiB, 256 MiB. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) {
    return '';
  }
  let unit = 0;
  while (unit < BYTE_UNITS.length - 1 && Math.abs(bytes) >= 1024 ** (unit + 1)) {
    unit++;
  }
  const v = bytes / 1024 ** unit;
  return `${Math.abs(v) >= 100 ? v.toFixed(0) : trim(v.toPrecision(3))} ${BYTE_UNITS[unit]}`;
}

const SI: [number, string][] = [
  [1e12, 'T'],
  [1e9, 'G'],
  [1e6, 'M'],
  [1e3, 'k']
];

/** A tick's label: as many decimals as the step needs, 10,000 and up with k, M, G, T. */
export function formatTick(value: number, step: number): string {
  if (!Number.isFinite(value)) {
    return '';
  }
  const size = Math.max(Math.abs(value), Math.abs(step));
  for (const [unit, suffix] of SI) {
    if (size >= Math.max(unit, 1e4)) {
      return `${trim((value / unit).toFixed(decimals(step / unit)))}${suffix}`;
    }
  }
  return trim(value.toFixed(decimals(step)));
}

/** A value in a sentence (the plot's summary): three significant digits, k, M, G, T. */
export function formatValue(value: number): string {
  if (!Number.isFinite(value)) {
    return String(value);
  }
  for (const [unit, suffix] of SI) {
    if (Math.abs(value) >= unit) {
      return `${trim((value / unit).toPrecision(3))}${suffix}`;
    }
  }
  return Math.abs(value) >= 1e-3 || value === 0 ? trim(value.toPrecision(3)) : value.toExponential(2);
}

/** The decimals that write `step` exactly (0.25: 2, 2.5: 1, 20: 0). */
function decimals(step: number): number {
  let d = 0;
  while (d < 12 && Math.abs(Math.round(step * 10 ** d) - step * 10 ** d) > 1e-6) {
    d++;
  }
  return d;
}

/** Without trailing zeros after the point (and no "-0"). */
function trim(text: string): string {
  const out = text.includes('.') && !text.includes('e') ? text.replace(/\.?0+$/, '') : text;
  return out === '-0' ? '0' : out;
}

/** A linear map from `domain` to `range` (a domain of one value maps to the range's middle). */
export function linearScale(domain: [number, number], range: [number, number]): (v: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  if (d1 === d0) {
    return () => (r0 + r1) / 2;
  }
  const k = (r1 - r0) / (d1 - d0);
  return v => r0 + (v - d0) * k;
}

/**
 * A series in pixels: one flat [x0, y0, x1, y1, ...] polyline per run of finite points (a
 * NaN or infinite value breaks the line). The points of one pixel column are reduced to its
 * first, lowest, highest and last, in their order, so a long series costs about the plot's
 * width, not its length, and keeps its peaks.
 */
export function polylines(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  sx: (v: number) => number,
  sy: (v: number) => number
): number[][] {
  const lines: number[][] = [];
  let line: number[] = [];
  // The current column's points: first, lowest, highest, last (indices into px/py below).
  let column = NaN;
  let col: number[] = [];
  const n = Math.min(x.length, y.length);
  const px = new Float64Array(n);
  const py = new Float64Array(n);
  const flush = (): void => {
    const first = col[0];
    if (first === undefined) {
      return;
    }
    let lo = first;
    let hi = first;
    for (const i of col) {
      lo = (py[i] as number) < (py[lo] as number) ? i : lo;
      hi = (py[i] as number) > (py[hi] as number) ? i : hi;
    }
    const last = col[col.length - 1] as number;
    let previous = -1;
    for (const i of [first, Math.min(lo, hi), Math.max(lo, hi), last]) {
      if (i !== previous) {
        line.push(px[i] as number, py[i] as number);
        previous = i;
      }
    }
    col = [];
  };
  for (let i = 0; i < n; i++) {
    const xv = x[i] as number;
    const yv = y[i] as number;
    if (!Number.isFinite(xv) || !Number.isFinite(yv)) {
      flush();
      if (line.length) {
        lines.push(line);
      }
      line = [];
      column = NaN;
      continue;
    }
    px[i] = sx(xv);
    py[i] = sy(yv);
    const c = Math.round(px[i] as number);
    if (c !== column) {
      flush();
      column = c;
    }
    col.push(i);
  }
  flush();
  if (line.length) {
    lines.push(line);
  }
  return lines;
}

/** The last finite value of `values`, or NaN. */
export function lastFinite(values: ArrayLike<number>): number {
  for (let i = values.length - 1; i >= 0; i--) {
    const v = values[i] as number;
    if (Number.isFinite(v)) {
      return v;
    }
  }
  return NaN;
}
