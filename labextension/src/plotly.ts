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
  /** plotly's layout as drawn (with the axes' computed ranges). */
  _fullLayout?: { yaxis?: unknown };
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
  animate(div: HTMLElement, frame: object, options: Record<string, unknown>): Promise<unknown>;
  relayout(div: HTMLElement, update: Record<string, unknown>): Promise<unknown>;
  downloadImage(div: HTMLElement, options: Record<string, unknown>): Promise<unknown>;
  purge(div: HTMLElement): void;
  Plots: { resize(div: HTMLElement): Promise<unknown> | undefined };
}

let loading: Promise<IPlotly> | null = null;

/** The next task: work after it does not lengthen the task before. */
function nextTask(): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, 0));
}

/**
 * Draw a one-point plot off screen and throw it away: plotly's one-time set-up (its style
 * sheet, font measurements) is then part of loading it, in a task of its own, not the first
 * figure's draw (a 256-rank heatmap's first draw was 375–459 ms, most of it that set-up).
 */
async function warmUp(plotly: IPlotly): Promise<void> {
  await nextTask();
  const div = document.createElement('div');
  div.style.cssText = 'position: absolute; left: -10000px; top: 0; width: 200px; height: 100px';
  document.body.appendChild(div);
  try {
    await plotly.react(div, [{ type: 'scatter', x: [0], y: [0] }], { width: 200, height: 100 }, { staticPlot: true });
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
    return plotly;
  });
  return loading;
}
