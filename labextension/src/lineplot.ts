/**
 * Numbers for the figures' axes and texts: data ranges, the log axis of
 * sizes in bytes (ticks at powers of two, labelled with binary units) that
 * the all_reduce curve's plotly figure is given, and values in a sentence.
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
 * A log axis of sizes in bytes (1 and up): the data's range with about `count` ticks at powers
 * of two whose exponents are 1, 2, 5, 10... apart (1 KiB, 4 KiB, 16 KiB or 1 KiB, 1 MiB); `step`
 * is that exponent step. A range with fewer than two powers of two is widened to the powers
 * around it (the all_reduce curve's ticks, on plotly's log axis).
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

/**
 * Whole-number ticks (world sizes) for the data's range, about `count` of them, a step of at
 * least 1, and one step beyond each end (where plotly pads the range around the points): plotly's
 * own ticks over 1 to 3 fall on halves, which a whole-number format shows as "1 2 2 3 3".
 */
export function integerTicks(range: IExtent | null, count: number): number[] {
  if (range === null) {
    return [];
  }
  const step = Math.max(1, niceStep(range.max - range.min, count));
  const ticks: number[] = [];
  for (let v = Math.floor(range.min / step) * step - step; v <= range.max + step; v += step) {
    ticks.push(v);
  }
  return ticks;
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

/** Without trailing zeros after the point (and no "-0"). */
function trim(text: string): string {
  const out = text.includes('.') && !text.includes('e') ? text.replace(/\.?0+$/, '') : text;
  return out === '-0' ? '0' : out;
}
