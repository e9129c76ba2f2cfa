/**
 * When a live figure's redraw can skip plotly's full plot pass. Each `Plotly.react`
 * (like `restyle` or `extendTraces` of x/y) lays the whole figure out again: axes,
 * automargin, the legend; 11–19 ms a figure in isolation, over 50 ms under load
 * (benchmarks/RESULTS.md, "Live points without a layout pass?"). `Plotly.animate` with
 * `redraw: false` only moves the traces' paths (0.3–0.4 ms), and is right only when
 * nothing but the points changed and the axes stay as drawn. Pure: the figures are given.
 */

import { niceStep } from './lineplot';

/** A built figure: plotly's data and layout. */
export interface IBuilt {
  data: unknown[];
  layout: Record<string, unknown>;
}

/** What `Plotly.animate` is given for a figure's new points: each trace's x and y. */
export interface IPoints {
  data: { x: unknown; y: unknown }[];
  traces: number[];
}

/** Whether a trace is given as a z matrix (a heatmap). */
function hasZ(trace: unknown): boolean {
  return (trace as { z?: unknown }).z !== undefined;
}

/**
 * The figure without its points: two figures with one shape differ only in x and y, or in z.
 * A z matrix is left out (its rows and columns stay): a 256-rank heatmap's 65k cells took
 * 15–25 ms of its draw's task to turn to text (RESULTS.md); `figureKey` tells them apart.
 */
export function shapeOf(figure: IBuilt): string {
  const data = figure.data.map(t => {
    const { x: _x, y: _y, z, ...rest } = t as Record<string, unknown>;
    return z === undefined ? rest : { ...rest, z: Array.isArray(z) ? [z.length, (z[0] as unknown[])?.length ?? 0] : 0 };
  });
  return JSON.stringify([data, figure.layout]);
}

/**
 * What tells two figures apart, given the figure's `shape` (`shapeOf`): the shape, each
 * trace's points, and for a figure of z matrices `zVersion`, what changes whenever a matrix
 * does (the figure's version): the matrices themselves are never turned to text.
 */
export function figureKey(shape: string, figure: IBuilt, zVersion = ''): string {
  const points = figure.data.map(t => [(t as { x?: unknown }).x, (t as { y?: unknown }).y]);
  return `${shape}\n${figure.data.some(hasZ) ? zVersion : ''}\n${JSON.stringify(points)}`;
}

/** The finite numbers among a trace's y values. */
function ys(trace: unknown): number[] {
  const y = (trace as { y?: unknown }).y;
  return Array.isArray(y) ? y.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)) : [];
}

/**
 * The new points of `next`, to move without a plot pass, or null when it needs `react`: its
 * shape (traces' styles, names, the layout, the x range) differs from what was drawn, the
 * user zoomed (`zoomed`), or a y value lies outside the y range plotly drew (`yRange`), so
 * that the axes would change.
 */
export function livePoints(
  drawnShape: string,
  next: IBuilt,
  yRange: readonly [number, number] | null,
  zoomed: boolean,
  nextShape: string = shapeOf(next)
): IPoints | null {
  if (zoomed || !yRange || nextShape !== drawnShape || next.data.some(hasZ)) {
    return null;
  }
  const [lo, hi] = yRange[0] <= yRange[1] ? yRange : [yRange[1], yRange[0]];
  for (const trace of next.data) {
    if (ys(trace).some(v => v < lo || v > hi)) {
      return null;
    }
  }
  return {
    data: next.data.map(t => ({ x: (t as { x?: unknown }).x ?? [], y: (t as { y?: unknown }).y ?? [] })),
    traces: next.data.map((_, i) => i)
  };
}

/**
 * The end of a live plot's default x range: the run's `end` rounded up to a nice step of the
 * span shown (about a fifth of it, 1 at least: the points come once a second), so that the axis changes once a step, not every second,
 * and the points in between are drawn without a plot pass.
 */
export function roundedEnd(start: number, end: number): number {
  const step = Math.max(1, niceStep(end - start, 5));
  return Math.ceil(end / step - 1e-9) * step;
}
