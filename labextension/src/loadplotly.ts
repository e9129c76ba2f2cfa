/**
 * plotly.js for the figures drawn with it (the Scaling tab's), loaded on
 * first use as its own chunk, so that the panel's entry stays small.
 */

type Plotly = typeof import('plotly.js-basic-dist-min');

let plotly: Promise<Plotly> | null = null;

/** plotly.js, imported once. */
export function loadPlotly(): Promise<Plotly> {
  plotly ??= import('plotly.js-basic-dist-min');
  return plotly;
}
