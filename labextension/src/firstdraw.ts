/**
 * A figure's first draw in two tasks. plotly's first `react` of a whole figure creates its DOM
 * (the SVG layers, the axes, the modebar, the legend), lays it out, and lays it out again once
 * the automargins and the legend have pushed its margins: one task of 50–200 ms under load
 * (benchmarks/RESULTS.md, "First draws in two tasks"). Drawn first with every trace
 * `legendonly` (the DOM, the axes, the legend and the margins, no trace drawn), the figure in
 * the next task is a redraw of the traces over the same frame. Pure: the figure is given.
 */

/** A built figure: plotly's data and layout. */
export interface IFigure {
  data: unknown[];
  layout: Record<string, unknown>;
}

/** The frame of a figure, drawn before it: the same layout and legend, no trace drawn. */
export function frameOf(figure: IFigure): IFigure {
  return {
    data: figure.data.map(trace => ({ ...(trace as object), visible: 'legendonly' })),
    layout: figure.layout
  };
}

/**
 * A figure's empty first pass: its size, margins and background, no trace, axis or legend.
 * plotly sets the div up in it (its events: `plotly_beforeplot` can then split the frame's pass
 * in two tasks), for about a third of a frame's cost.
 */
export function emptyOf(layout: Record<string, unknown>): Record<string, unknown> {
  const { height, margin, paper_bgcolor, plot_bgcolor } = layout;
  return {
    height,
    margin,
    paper_bgcolor,
    plot_bgcolor,
    showlegend: false,
    xaxis: { visible: false },
    yaxis: { visible: false }
  };
}
