import { describe, expect, it } from 'vitest';

import { DEFAULT_CONFIG, readConfig } from '../../labextension/src/config';
import { formatRunCount, plotlyText } from '../../labextension/src/format';

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

describe('plotlyText', () => {
  it('escapes the characters plotly reads as HTML, so a metric name shows as typed', () => {
    expect(plotlyText('<a href="x">lr</a> & \'m\'')).toBe('&lt;a href=&quot;x&quot;&gt;lr&lt;/a&gt; &amp; &#39;m&#39;');
    expect(plotlyText('loss')).toBe('loss');
  });
});

describe('readConfig', () => {
  it('takes the values of the settings and keeps the default for a value out of range', () => {
    expect(readConfig({ refreshInterval: 500, runListLength: 10, plotWindow: 60, stragglerThreshold: 0.8 })).toEqual({
      refreshInterval: 500,
      runListLength: 10,
      plotWindow: 60,
      stragglerThreshold: 0.8
    });
    expect(readConfig({ refreshInterval: 1, runListLength: 'x', stragglerThreshold: 2 })).toEqual(DEFAULT_CONFIG);
  });
});
