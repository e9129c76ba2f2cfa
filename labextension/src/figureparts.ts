/**
 * What the panel's figure (`figureview.tsx`) needs around plotly: the theme's colours, the y
 * range plotly drew, the x range a zoom set, the CSV download, the draws' User Timing, the
 * modebar's icons and plot passes in two tasks.
 */

import type { IFigureTheme } from './figures';
import { type IGraphDiv, nextTask } from './plotly';

/**
 * A User Timing entry for a draw's synchronous part, `jupyter-distributed:<what> <title>`:
 * `bench_panel.spec.ts` tells the figures' long tasks from the panel's others by them. Only
 * observers see it (a PerformanceObserver gets it all the same): it is not kept in the page's
 * timeline, which would grow by two entries a second per figure.
 */
export function timed(what: string, title: string, start: number): void {
  const name = `jupyter-distributed:${what} ${title}`;
  performance.measure(name, { start, end: performance.now() });
  performance.clearMeasures(name);
}

/**
 * The figure's box takes its layout's height: the box is a size-contained layout boundary
 * (`contain: strict` in the CSS), so its height cannot come from what plotly draws in it.
 */
export function fitHeight(node: HTMLElement, layout: Record<string, unknown>): void {
  const height = layout.height;
  if (typeof height === 'number' && height > 0 && node.style.height !== `${height}px`) {
    node.style.height = `${height}px`;
  }
}

/** The y range plotly drew (its full layout's), or null before the first draw. */
export function drawnYRange(node: IGraphDiv): [number, number] | null {
  const range = (node._fullLayout?.yaxis as { range?: unknown } | undefined)?.range;
  return Array.isArray(range) && typeof range[0] === 'number' && typeof range[1] === 'number'
    ? [range[0], range[1]]
    : null;
}

/** The theme's colours: JupyterLab's CSS variables, plotly's defaults outside JupyterLab. */
export function themeOf(node: HTMLElement): IFigureTheme {
  const style = getComputedStyle(node);
  const read = (name: string, fallback: string): string => style.getPropertyValue(name).trim() || fallback;
  return {
    font: read('--jp-ui-font-color1', '#444'),
    grid: read('--jp-border-color2', '#e5e5e5'),
    background: read('--jp-layout-color1', '#fff')
  };
}

export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function near(a: [number, number], b: [number, number] | null | undefined): boolean {
  const span = Math.abs(a[1] - a[0]) || 1;
  return !!b && Math.abs(a[0] - b[0]) <= span * 1e-6 && Math.abs(a[1] - b[1]) <= span * 1e-6;
}

/** The x range a relayout event set, null for a reset, undefined when it set no x range. */
export function rangeOf(event: Record<string, unknown>): [number, number] | null | undefined {
  const lo = event['xaxis.range[0]'];
  const hi = event['xaxis.range[1]'];
  if (typeof lo === 'number' && typeof hi === 'number') {
    return [lo, hi];
  }
  const both = event['xaxis.range'];
  if (Array.isArray(both) && typeof both[0] === 'number' && typeof both[1] === 'number') {
    return [both[0], both[1]];
  }
  return event['xaxis.autorange'] === true ? null : undefined;
}

/** The modebar's PNG button's icon (a picture frame). */
export const PNG_ICON = { width: 16, height: 16, path: 'M1 2h14v12H1zM3 4v8h10V4zm1 7 3-4 2 3 1-1 2 2z' };

/** The modebar's CSV button's icon (a sheet with rows). */
export const CSV_ICON = { width: 16, height: 16, path: 'M2 1h12v14H2zM4 4v2h8V4zm0 3v2h8V7zm0 3v2h8v-2z' };

/** `Plotly.animate`'s options for points moved at once: no transition, no plot pass. */
export const ANIMATE_NOW = { transition: { duration: 0 }, frame: { duration: 0, redraw: false }, mode: 'immediate' };

/**
 * Every plot pass of `node` after this call in two tasks: plotly's defaults and calc in the
 * task that asked for it, the drawing in the next (plotly draws once the promises in the
 * graph div's `_promises` are settled: `Plots.previousPromises`). `started` is called when the
 * second task begins. A figure's draw took 50–110 ms of CPU in one task (RESULTS.md).
 */
export function inTwoTasks(node: IGraphDiv, started: () => void): void {
  node.on?.('plotly_beforeplot', () => {
    node._promises ??= [];
    node._promises.push(nextTask().then(started));
  });
}
