import { describe, expect, it } from 'vitest';

import { formatRunCount } from '../../labextension/src/format';

describe('formatRunCount', () => {
  it('says there are no runs yet for an empty history', () => {
    expect(formatRunCount(0)).toBe('No runs yet');
  });

  it('uses the singular for one run and the plural otherwise', () => {
    expect(formatRunCount(1)).toBe('1 run');
    expect(formatRunCount(12)).toBe('12 runs');
  });

  it('rejects counts that are not non-negative integers', () => {
    expect(() => formatRunCount(-1)).toThrow(RangeError);
    expect(() => formatRunCount(1.5)).toThrow(RangeError);
    expect(() => formatRunCount(Number.NaN)).toThrow(RangeError);
  });
});
