import { describe, expect, it } from 'vitest';

import { extent, formatBytes, formatValue, integerTicks, logAxis, niceStep } from '../../labextension/src/lineplot';

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
});

describe('the log axis of sizes', () => {
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
  it('writes a value in a sentence with three significant digits', () => {
    expect(formatValue(192)).toBe('192');
    expect(formatValue(0.3333333)).toBe('0.333');
    expect(formatValue(12345)).toBe('12.3k');
    expect(formatValue(0)).toBe('0');
    expect(formatValue(1.5e-5)).toBe('1.50e-5');
    expect(formatValue(NaN)).toBe('NaN');
  });
});

describe('integerTicks', () => {
  it('puts whole numbers only, a step of at least 1, one step past each end', () => {
    expect(integerTicks({ min: 2, max: 2 }, 5)).toEqual([1, 2, 3]);
    expect(integerTicks({ min: 1, max: 4 }, 5)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(integerTicks({ min: 1, max: 64 }, 5)).toEqual([-10, 0, 10, 20, 30, 40, 50, 60, 70]);
    expect(integerTicks(null, 5)).toEqual([]);
  });
});
