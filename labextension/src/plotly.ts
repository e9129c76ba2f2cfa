/**
 * plotly.js, loaded lazily: the partial bundle of its cartesian traces
 * (scatter, heatmap, ...) is its own chunk, fetched the first time a figure
 * is shown, so the panel opens as fast as without it. The types are the
 * few calls the figures make.
 */

/** The graph div plotly draws into (`.js-plotly-plot`), with its figure and events. */
export interface IGraphDiv extends HTMLDivElement {
  data?: unknown[];
  layout?: Record<string, unknown>;
  on?(event: string, handler: (event: Record<string, unknown>) => void): void;
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
  relayout(div: HTMLElement, update: Record<string, unknown>): Promise<unknown>;
  downloadImage(div: HTMLElement, options: Record<string, unknown>): Promise<unknown>;
  purge(div: HTMLElement): void;
  Plots: { resize(div: HTMLElement): Promise<unknown> | undefined };
}

let loading: Promise<IPlotly> | null = null;

/** plotly.js, loaded once (its chunk is fetched on the first call). */
export function loadPlotly(): Promise<IPlotly> {
  loading ??= import(/* webpackChunkName: "plotly" */ 'plotly.js-cartesian-dist-min').then(
    m => ((m as { default?: unknown }).default ?? m) as IPlotly
  );
  return loading;
}
