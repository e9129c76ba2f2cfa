import { describe, expect, it } from 'vitest';

import { DEFAULT_CONFIG, readConfig } from '../../labextension/src/config';
import { formatRunCount, stacksTitle } from '../../labextension/src/format';
import type { StacksEvent } from '../../labextension/src/wire';

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

describe('readConfig', () => {
  it('takes the values of the settings and keeps the default for a value out of range', () => {
    expect(readConfig({ refreshInterval: 500, runListLength: 10, plotWindow: 60 })).toEqual({
      refreshInterval: 500,
      runListLength: 10,
      plotWindow: 60
    });
    expect(readConfig({ refreshInterval: 1, runListLength: 'x', plotWindow: -1 })).toEqual(DEFAULT_CONFIG);
    // The straggler threshold is the server's one setting (c.Distributed.straggler_threshold).
    expect(readConfig({ stragglerThreshold: 0.5 })).not.toHaveProperty('stragglerThreshold');
  });
});

describe('stacksTitle', () => {
  const snapshot = (ranks: string[], reason: StacksEvent['reason'] = 'request'): StacksEvent => ({
    kind: 'stacks',
    run_id: 'r',
    t: 0,
    reason,
    diagnosis: '',
    ranks: Object.fromEntries(
      ranks.map(r => [r, { rank: Number(r), threads: [], stage: '', source: 'none' as const, error: '' }])
    )
  });

  it('names the one rank a tile asked for, or every rank the snapshot holds, in rank order', () => {
    expect(stacksTitle(snapshot(['1']))).toBe('Stacks of rank 1 (request)');
    expect(stacksTitle(snapshot(['10', '2', '0'], 'interrupt'))).toBe('Stacks of ranks 0, 2, 10 (interrupt)');
  });

  it('says only why when the snapshot holds no rank', () => {
    expect(stacksTitle(snapshot([], 'timeout'))).toBe('Stacks (timeout)');
  });
});
