import { describe, expect, it } from 'vitest';

import { figureKey, livePoints, roundedEnd, shapeOf } from '../../labextension/src/livepoints';

const layout = { xaxis: { range: [0, 30] }, uirevision: 'keep' };
const line = (name: string, y: number[], extra: Record<string, unknown> = {}) => ({
  type: 'scatter',
  name,
  x: y.map((_, i) => i),
  y,
  ...extra
});

describe('live points drawn without a plot pass', () => {
  const drawn = { data: [line('rank 0', [10, 12]), line('rank 1', [9, 11])], layout };

  it('moves the new points of every trace when only the points changed, inside the drawn y range', () => {
    const next = { data: [line('rank 0', [10, 12, 13]), line('rank 1', [9, 11, 12])], layout };
    expect(livePoints(shapeOf(drawn), next, [0, 20], false)).toEqual({
      data: [
        { x: [0, 1, 2], y: [10, 12, 13] },
        { x: [0, 1, 2], y: [9, 11, 12] }
      ],
      traces: [0, 1]
    });
  });

  it('needs a full redraw when a point leaves the drawn y range', () => {
    const next = { data: [line('rank 0', [10, 12, 25]), line('rank 1', [9, 11, 12])], layout };
    expect(livePoints(shapeOf(drawn), next, [0, 20], false)).toBeNull();
  });

  it('needs a full redraw when the x range, a trace or its style changed', () => {
    const wider = { data: drawn.data, layout: { ...layout, xaxis: { range: [0, 40] } } };
    const added = { data: [...drawn.data, line('rank 2', [1, 2])], layout };
    const styled = { data: [line('rank 0', [10, 12], { mode: 'lines+markers' }), drawn.data[1]], layout };
    for (const next of [wider, added, styled]) {
      expect(livePoints(shapeOf(drawn), next, [0, 20], false)).toBeNull();
    }
  });

  it('needs a full redraw while zoomed, or before plotly drew a y range', () => {
    expect(livePoints(shapeOf(drawn), drawn, [0, 20], true)).toBeNull();
    expect(livePoints(shapeOf(drawn), drawn, null, false)).toBeNull();
  });

  it('ignores gaps (null) in a trace', () => {
    const next = { data: [line('rank 0', [10, NaN]), { ...line('rank 1', [9]), y: [9, null] }], layout };
    expect(livePoints(shapeOf(drawn), next, [0, 20], false)).not.toBeNull();
  });
});

describe("a live plot's x end", () => {
  it('is rounded up to a step of about a fifth of the span, so it changes once a step', () => {
    expect(roundedEnd(0, 23)).toBe(25);
    expect(roundedEnd(0, 25)).toBe(25);
    expect(roundedEnd(0, 26)).toBe(30);
    expect(roundedEnd(0, 3.2)).toBe(4);
    expect(roundedEnd(540, 600.5)).toBe(610);
  });

  it('never lies before the end', () => {
    for (let end = 0.5; end < 700; end += 7.3) {
      expect(roundedEnd(0, end)).toBeGreaterThanOrEqual(end);
      expect(roundedEnd(Math.max(0, end - 60), end)).toBeGreaterThanOrEqual(end);
    }
  });
});

describe('what tells two figures apart', () => {
  const figure = (y: number[], color = 'red'): { data: unknown[]; layout: Record<string, unknown> } => ({
    data: [{ type: 'scatter', x: y.map((_, i) => i), y, line: { color } }],
    layout: { height: 240 }
  });
  const key = (f: ReturnType<typeof figure>): string => figureKey(shapeOf(f), f);

  it('is the same for the same figure, and differs when a point, a style or the layout does', () => {
    expect(key(figure([1, 2]))).toBe(key(figure([1, 2])));
    expect(key(figure([1, 2]))).not.toBe(key(figure([1, 3])));
    expect(key(figure([1, 2]))).not.toBe(key(figure([1, 2, 3])));
    expect(key(figure([1, 2]))).not.toBe(key(figure([1, 2], 'blue')));
    expect(key(figure([1, 2]))).not.toBe(key({ ...figure([1, 2]), layout: { height: 320 } }));
  });

  it('tells heatmaps apart by their version, never turning the matrix to text', () => {
    const heat = (v: number): { data: unknown[]; layout: Record<string, unknown> } => ({
      data: [
        {
          type: 'heatmap',
          z: [
            [null, v],
            [v, null]
          ]
        }
      ],
      layout: {}
    });
    const hkey = (f: ReturnType<typeof heat>, version: string): string => figureKey(shapeOf(f), f, version);
    expect(hkey(heat(1), 'a')).toBe(hkey(heat(1), 'a'));
    expect(hkey(heat(1), 'a')).not.toBe(hkey(heat(2), 'b'));
    expect(hkey(heat(1), 'a')).not.toBe(hkey({ ...heat(1), layout: { height: 320 } }, 'a'));
    // A line plot's key does not change with the version (new log lines, no new point).
    expect(figureKey(shapeOf(figure([1, 2])), figure([1, 2]), 'a')).toBe(
      figureKey(shapeOf(figure([1, 2])), figure([1, 2]), 'b')
    );
    const f = heat(1);
    const z = (f.data[0] as { z: unknown[] }).z;
    let reads = 0;
    (f.data[0] as { z: unknown }).z = new Proxy(z, {
      get(target, prop, receiver) {
        if (prop === 'toJSON') {
          reads++;
        }
        return Reflect.get(target, prop, receiver);
      }
    });
    figureKey(shapeOf(f), f, 'a');
    expect(reads).toBe(0);
  });

  it('never moves the points of a heatmap: its new matrix is drawn', () => {
    const heat = { data: [{ type: 'heatmap', z: [[1]] }], layout: {} };
    expect(livePoints(shapeOf(heat), heat, [0, 20], false)).toBeNull();
  });
});
