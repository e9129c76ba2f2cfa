import { describe, expect, it } from 'vitest';

import {
  axisScale,
  extent,
  formatBytes,
  formatTick,
  formatValue,
  integerAxis,
  lastFinite,
  linearScale,
  logAxis,
  niceAxis,
  niceStep,
  polylines
} from '../../labextension/src/lineplot';

const identity = (v: number): number => v;

describe('extent', () => {
  it('spans every finite value of every array', () => {
    expect(extent([[3, 1], [], [7, -2]])).toEqual({ min: -2, max: 7 });
  });

  it('skips NaN and infinities, and is null with nothing finite', () => {
    expect(extent([[NaN, 2, Infinity, -Infinity, 5]])).toEqual({ min: 2, max: 5 });
    expect(extent([[NaN], []])).toBeNull();
    expect(extent([])).toBeNull();
  });
});

describe('nice ticks', () => {
  it('steps by 1, 2 or 5 times a power of ten', () => {
    expect(niceStep(100, 5)).toBe(20);
    expect(niceStep(1, 4)).toBe(0.2);
    expect(niceStep(7000, 4)).toBe(2000);
    expect(niceStep(0.03, 3)).toBeCloseTo(0.01);
    expect(niceStep(0, 5)).toBe(1);
    expect(niceStep(NaN, 5)).toBe(1);
  });

  it('widens a y axis to the ticks around the data', () => {
    expect(niceAxis({ min: 3, max: 97 }, 5, true)).toEqual({
      lo: 0,
      hi: 100,
      step: 20,
      ticks: [0, 20, 40, 60, 80, 100]
    });
  });

  it('keeps a time axis to the data, with the ticks inside it', () => {
    expect(niceAxis({ min: 3, max: 97 }, 5, false)).toEqual({ lo: 3, hi: 97, step: 20, ticks: [20, 40, 60, 80] });
  });

  it('gives decimal ticks without floating-point noise', () => {
    expect(niceAxis({ min: 0.1, max: 0.7 }, 6, true).ticks).toEqual([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]);
  });

  it('widens a single value, and shows 0 to 1 without data', () => {
    expect(niceAxis({ min: 64, max: 64 }, 4, true)).toMatchObject({ lo: 56, hi: 72 });
    expect(niceAxis({ min: 0, max: 0 }, 4, true)).toMatchObject({ lo: -1, hi: 1 });
    expect(niceAxis(null, 5, true).ticks).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('handles negative ranges', () => {
    expect(niceAxis({ min: -95, max: -5 }, 4, true).ticks).toEqual([-100, -80, -60, -40, -20, 0]);
  });
});

describe('whole-number and log axes', () => {
  it('ticks world sizes on whole numbers only', () => {
    expect(integerAxis({ min: 1, max: 2 }, 5)).toEqual({ lo: 1, hi: 2, step: 1, ticks: [1, 2] });
    expect(integerAxis({ min: 1, max: 8 }, 4).ticks).toEqual([2, 4, 6, 8]);
    expect(integerAxis({ min: 1, max: 256 }, 5).ticks).toEqual([50, 100, 150, 200, 250]);
  });

  it('widens one world size by a rank either side', () => {
    expect(integerAxis({ min: 4, max: 4 }, 5)).toEqual({ lo: 3, hi: 5, step: 1, ticks: [3, 4, 5] });
    expect(integerAxis(null, 5).ticks).toEqual([0, 1]);
  });

  it('ticks sizes at powers of two, a few exponents apart', () => {
    const axis = logAxis({ min: 1024, max: 65536 }, 4);
    expect(axis).toMatchObject({ lo: 1024, hi: 65536, step: 2, log: true });
    expect(axis.ticks).toEqual([1024, 4096, 16384, 65536]);
    expect(logAxis({ min: 1024, max: 256 * 2 ** 20 }, 3).ticks).toEqual([2 ** 10, 2 ** 15, 2 ** 20, 2 ** 25]);
    expect(logAxis({ min: 1, max: 2 ** 40 }, 2).ticks).toEqual([1, 2 ** 20, 2 ** 40]);
  });

  it('widens a range without two powers of two to the powers around it', () => {
    expect(logAxis({ min: 1024, max: 1024 }, 4)).toMatchObject({ lo: 1024, hi: 2048, ticks: [1024, 2048] });
    expect(logAxis({ min: 1500, max: 1600 }, 4)).toMatchObject({ lo: 1024, hi: 2048, ticks: [1024, 2048] });
    expect(logAxis(null, 4).ticks).toEqual([1, 4, 16, 64, 256, 1024]);
    expect(logAxis({ min: -5, max: 0 }, 4)).toMatchObject({ lo: 1, hi: 2 });
  });

  it('maps a log axis evenly by powers', () => {
    const sx = axisScale(logAxis({ min: 1024, max: 2 ** 20 }, 4), [0, 100]);
    expect(sx(1024)).toBeCloseTo(0);
    expect(sx(2 ** 15)).toBeCloseTo(50);
    expect(sx(2 ** 20)).toBeCloseTo(100);
    expect(axisScale({ lo: 0, hi: 10, step: 1, ticks: [] }, [0, 100])(5)).toBe(50);
  });

  it('writes sizes with binary units', () => {
    expect(formatBytes(1024)).toBe('1 KiB');
    expect(formatBytes(65536)).toBe('64 KiB');
    expect(formatBytes(2 ** 20)).toBe('1 MiB');
    expect(formatBytes(256 * 2 ** 20)).toBe('256 MiB');
    expect(formatBytes(1.5 * 2 ** 30)).toBe('1.5 GiB');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1000)).toBe('1000 B');
    expect(formatBytes(8)).toBe('8 B');
    expect(formatBytes(NaN)).toBe('');
  });
});

describe('labels', () => {
  it('shows as many decimals as the step needs', () => {
    expect(formatTick(0.2, 0.2)).toBe('0.2');
    expect(formatTick(0.25, 0.05)).toBe('0.25');
    expect(formatTick(40, 20)).toBe('40');
    expect(formatTick(-0, 1)).toBe('0');
  });

  it('writes thousands and up with k, M, G', () => {
    expect(formatTick(20000, 5000)).toBe('20k');
    expect(formatTick(12500, 2500)).toBe('12.5k');
    expect(formatTick(3e6, 1e6)).toBe('3M');
    expect(formatTick(2e9, 1e9)).toBe('2G');
    expect(formatTick(2000, 500)).toBe('2000');
  });

  it('writes a value in a sentence with three significant digits', () => {
    expect(formatValue(192)).toBe('192');
    expect(formatValue(0.3333333)).toBe('0.333');
    expect(formatValue(12345)).toBe('12.3k');
    expect(formatValue(0)).toBe('0');
    expect(formatValue(1.5e-5)).toBe('1.50e-5');
    expect(formatValue(NaN)).toBe('NaN');
  });
});

describe('scales and paths', () => {
  it('maps a domain onto a range, flipped for y', () => {
    const y = linearScale([0, 100], [200, 0]);
    expect(y(0)).toBe(200);
    expect(y(25)).toBe(150);
    expect(linearScale([5, 5], [0, 10])(5)).toBe(5);
  });

  it('maps a series to one polyline, in pixels', () => {
    const sx = linearScale([0, 2], [0, 200]);
    expect(polylines([0, 1, 2], [1, 2, 3], sx, identity)).toEqual([[0, 1, 100, 2, 200, 3]]);
  });

  it('breaks the line at NaN and infinite values', () => {
    const sx = linearScale([0, 5], [0, 500]);
    const lines = polylines([0, 1, 2, 3, 4, 5], [1, 1, NaN, 2, Infinity, 3], sx, identity);
    expect(lines).toEqual([
      [0, 1, 100, 1],
      [300, 2],
      [500, 3]
    ]);
  });

  it('is empty for an empty series or one of only NaN', () => {
    expect(polylines([], [], identity, identity)).toEqual([]);
    expect(polylines([0, 1], [NaN, NaN], identity, identity)).toEqual([]);
  });

  it('folds many points of one pixel column to its first, lowest, highest and last', () => {
    // 1000 points over 10 pixels: each column keeps at most 4 of its 100.
    const x = Array.from({ length: 1000 }, (_, i) => i);
    const y = x.map(i => (i === 555 ? 99 : i % 7));
    const [line] = polylines(x, y, linearScale([0, 999], [0, 9]), identity);
    expect(line).toBeDefined();
    expect((line as number[]).length / 2).toBeLessThanOrEqual(40);
    const ys = (line as number[]).filter((_, k) => k % 2 === 1);
    expect(Math.max(...ys)).toBe(99); // the peak is kept
    expect(ys[0]).toBe(0);
    expect(ys[ys.length - 1]).toBe(999 % 7);
  });

  it('keeps the order of a column: first, then low and high as they came, then last', () => {
    const line = polylines([0, 0.1, 0.2, 0.3], [5, 9, 1, 4], identity, identity)[0];
    expect(line).toEqual([0, 5, 0.1, 9, 0.2, 1, 0.3, 4]);
  });

  it('finds the last finite value', () => {
    expect(lastFinite([1, 2, NaN])).toBe(2);
    expect(lastFinite([])).toBeNaN();
  });
});
