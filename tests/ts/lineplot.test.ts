import { describe, expect, it } from 'vitest';

import {
  extent,
  formatTick,
  formatValue,
  lastFinite,
  linearScale,
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
