/**
 * plotly.js, loaded lazily: the partial bundle of its cartesian traces
 * (scatter, heatmap, ...) is its own chunk, fetched the first time a figure
 * is shown, so the panel opens as fast as without it. The types are the
 * few calls the figures make.
 */

import { lineLayout, scatterData } from './figures';
import { heatmapData } from './heatmapdata';

/** The graph div plotly draws into (`.js-plotly-plot`), with its figure and events. */
export interface IGraphDiv extends HTMLDivElement {
  data?: unknown[];
  layout?: Record<string, unknown>;
  /** plotly's layout as drawn (with the axes' computed ranges). */
  _fullLayout?: { yaxis?: unknown };
  on?(event: string, handler: (event: Record<string, unknown>) => void): void;
  /** What plotly waits for before it draws a plot pass (`Plots.previousPromises`). */
  _promises?: Promise<unknown>[];
  removeAllListeners?(event: string): void;
}

/** The calls of plotly.js that the figures make. */
export interface IPlotly {
  react(
    div: HTMLElement,
    data: unknown[],
    layout: Record<string, unknown>,
    config: Record<string, unknown>
  ): Promise<unknown>;
  animate(div: HTMLElement, frame: object, options: Record<string, unknown>): Promise<unknown>;
  relayout(div: HTMLElement, update: Record<string, unknown>): Promise<unknown>;
  downloadImage(div: HTMLElement, options: Record<string, unknown>): Promise<unknown>;
  purge(div: HTMLElement): void;
  Plots: { resize(div: HTMLElement): Promise<unknown> | undefined };
}

let loading: Promise<IPlotly> | null = null;

/** The next task: work after it does not lengthen the task before. */
export function nextTask(): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, 0));
}

/** The warm-up's figures: the panel's kinds (a line plot with a band, a dotted line, a legend
 * and axis titles; a heatmap with its colour bar), small. */
function warmUpFigures(): { data: unknown[]; layout: Record<string, unknown> }[] {
  const theme = { font: '#444', grid: '#e5e5e5', background: '#fff' };
  const series = (y: number[]): { x: number[]; y: number[] } => ({ x: y.map((_, i) => i), y });
  const layout = lineLayout(theme, { title: 's', range: [0, 2] }, 240, 'n');
  const lines = scatterData(
    [
      { name: 'low', series: series([1, 2, 1]), noLegend: true },
      { name: 'band', series: series([2, 3, 4]), fillToPrevious: true },
      { name: 'median', series: series([3, 1, 2]), line: 'dot' },
      { name: 'rank', series: series([1, 1, 3]), highlight: true }
    ],
    theme
  );
  return [
    { data: lines, layout },
    {
      data: heatmapData(
        [
          [null, 1],
          [2, null]
        ],
        'GB/s'
      ),
      layout: { ...layout, showlegend: false }
    }
  ];
}

/**
 * Draw the panel's kinds of figure off screen, each in a task of its own, and throw them away:
 * plotly's one-time set-up (its style sheet, font measurements, the first modebar, legend,
 * colour bar; code run the first time) is then part of loading it, not the first figure's
 * draw (a 256-rank heatmap's first draw was 375–459 ms, most of it that set-up; a line plot's
 * first draw was 1.5–2× the next ones after a one-point warm-up: RESULTS.md).
 */
async function warmUp(plotly: IPlotly): Promise<void> {
  const div = document.createElement('div');
  div.style.cssText = 'position: absolute; left: -10000px; top: 0; width: 560px';
  document.body.appendChild(div);
  try {
    for (const { data, layout } of warmUpFigures()) {
      await nextTask();
      await plotly.react(div, data, layout, { displaylogo: false, showTips: false });
      plotly.purge(div);
    }
  } catch {
    // A failed warm-up only means the first figure pays the set-up.
  } finally {
    plotly.purge(div);
    div.remove();
  }
  await nextTask();
}

/** plotly.js, loaded once (its chunk is fetched on the first call) and warmed up. */
export function loadPlotly(): Promise<IPlotly> {
  loading ??= import(/* webpackChunkName: "plotly" */ 'plotly.js-cartesian-dist-min').then(async m => {
    const plotly = ((m as { default?: unknown }).default ?? m) as IPlotly;
    await warmUp(plotly);
    // Loaded and warmed up: `bench_panel.spec.ts` counts the long tasks after this apart.
    performance.mark('jupyter-distributed:plotly-ready');
    return plotly;
  });
  return loading;
}
