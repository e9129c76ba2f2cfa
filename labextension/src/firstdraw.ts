/**
 * A figure's first draw in two tasks. plotly's first `react` of a figure creates all of its
 * DOM (the SVG layers, the axes, the modebar, the drag areas) and then lays out the data,
 * the legend and the automargins, often twice: 50–200 ms in one task under load
 * (benchmarks/RESULTS.md, "First draws in two tasks"). The frame alone (the layout without
 * data, legend or automargin) is about half of that; the figure, drawn in the next task over
 * that frame, is a redraw. Pure: the layout is given.
 */

/** The layout's axes: `xaxis`, `yaxis`, `xaxis2`, ... */
const AXIS = /^[xy]axis\d*$/;

/**
 * The frame of a figure's `layout`: the same size, axes and titles, with no legend and no
 * automargin (each of which makes plotly measure text and lay the figure out again). Drawn
 * with no data, before the figure itself.
 */
export function frameOf(layout: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const frame: Record<string, unknown> = { ...layout, showlegend: false };
  for (const [key, value] of Object.entries(layout)) {
    if (AXIS.test(key) && value && typeof value === 'object') {
      frame[key] = { ...(value as Record<string, unknown>), automargin: false };
    }
  }
  return frame;
}
