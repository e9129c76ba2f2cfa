/**
 * One colour per rank in every figure (`palette.ts`): the samples/s plot, a metric's plot, the
 * rank tile and the Logs rank chip give rank r the same colour; 20 ranks get 20 distinct
 * colours, each readable on a light and a dark background.
 */

import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

import { rankGroups } from '../../labextension/src/derive';
import { LogRows } from '../../labextension/src/logrows';
import { ranksData } from '../../labextension/src/nodesummary';
import { RANK_PALETTE, rankColor } from '../../labextension/src/palette';
import { metricTraces, samplesTraces } from '../../labextension/src/plotdata';
import { RanksView } from '../../labextension/src/ranksview';
import type { LogLine } from '../../labextension/src/wire';
import { liveOf } from './fakes';

const T = 2_000_000;

/** WCAG relative luminance of a #RRGGBB colour. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map(i => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** CIE L*a*b* of a #RRGGBB colour (D65). */
function lab(hex: string): [number, number, number] {
  const [r, g, b] = [1, 3, 5].map(i => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c > 0.04045 ? ((c + 0.055) / 1.055) ** 2.4 : c / 12.92;
  }) as [number, number, number];
  const f = (t: number) => (t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116);
  const x = f((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047);
  const y = f(0.2126 * r + 0.7152 * g + 0.0722 * b);
  const z = f((0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883);
  return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
}

function deltaE(a: string, b: string): number {
  const [p, q] = [lab(a), lab(b)];
  return Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

describe('one colour per rank', () => {
  it('gives 20 ranks 20 distinct colours, each readable on light and dark backgrounds', () => {
    const colors = Array.from({ length: 20 }, (_, r) => rankColor(r));
    expect(new Set(colors).size).toBe(20);
    expect(RANK_PALETTE.length).toBeGreaterThanOrEqual(20);
    for (const [i, a] of RANK_PALETTE.entries()) {
      expect(contrast(a, '#ffffff'), a).toBeGreaterThanOrEqual(2.5);
      expect(contrast(a, '#111111'), a).toBeGreaterThanOrEqual(2.5);
      for (const b of RANK_PALETTE.slice(i + 1)) {
        expect(deltaE(a, b), `${a} ${b}`).toBeGreaterThanOrEqual(20);
      }
    }
  });

  it('gives a rank the same colour in the samples/s plot, a metric plot, its tile and its Logs chip', () => {
    const live = liveOf(5);
    const samples = new Map(samplesTraces(live, T, 0).map(t => [t.name, t.color]));
    const loss = new Map(metricTraces(live, 'loss', T, 0).map(t => [t.name, t.color]));
    const groups = rankGroups(live, T + 2);
    const tiles = renderToStaticMarkup(React.createElement(RanksView, { data: ranksData(live, T + 2) }));
    const lines: LogLine[] = [0, 1, 2, 3, 4].map(rank => ({ seq: rank + 1, rank, t: T, stream: 'stdout', text: 'x' }));
    const chips = renderToStaticMarkup(React.createElement(LogRows, { lines, first: 0, last: 5, slots: 5 }));
    for (let rank = 0; rank < 5; rank++) {
      const color = rankColor(rank);
      expect(samples.get(`rank ${rank}`)).toBe(color);
      expect(loss.get(`rank ${rank}`)).toBe(color);
      expect(groups[0]?.tiles[rank]?.color).toBe(color);
      expect(tiles).toContain(`background:${color}`);
      expect(chips).toContain(`color:${color}">[rank ${rank}]`);
    }
    // Rank 1 and rank 3 (the same green before) differ.
    expect(rankColor(1)).not.toBe(rankColor(3));
  });
});
