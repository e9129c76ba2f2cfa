/**
 * The pure part of the panel's plotly figures: traces (plotly.js' JSON) from
 * the model's series (which ranks get one: `manyranks.ts`), TensorBoard's
 * smoothing, the figure's data as CSV text, and the layouts.
 * No DOM and no plotly.js: `figureview.tsx` hands what these return to
 * `Plotly.react`.
 */

import type { Series } from './runstate';

/** How a trace's line is drawn: solid (the default), dashed (a total or a median), or dotted. */
export type LineStyle = 'solid' | 'dash' | 'dot';

/** A trace of a line plot, as the model's series give it. */
export interface IPlotTrace {
  name: string;
  series: Series;
  line?: LineStyle;
  /** A dot on each point too. */
  markers?: boolean;
  /** Its colour: a rank's from `palette.ts`, `NEUTRAL` for the theme's text colour (a total). */
  color?: string;
  /** Drawn thicker: a straggler in the many-rank view. */
  highlight?: boolean;
  /** The band's upper edge: filled down to the trace before it (its lower edge). */
  fillToPrevious?: boolean;
  /** Shown without a legend entry (the band's lower edge). */
  noLegend?: boolean;
}

/** The colour of a trace that is no rank's (a total): the theme's text colour. */
export const NEUTRAL = 'neutral';

/** One trace of plotly.js' JSON, as far as the panel uses it. */
export interface IScatter {
  type: 'scatter';
  /** The trace's identity across redraws (from its name), so that a legend toggle stays. */
  uid: string;
  name: string;
  x: number[];
  y: number[];
  mode: 'lines' | 'lines+markers';
  line: { color?: string; dash?: LineStyle; width: number };
  visible?: true | 'legendonly';
  showlegend?: boolean;
  fill?: 'tonexty';
  fillcolor?: string;
  hovertemplate: string;
}

/**
 * TensorBoard's smoothing: an exponential moving average with `weight` in [0, 1) (0: none),
 * debiased so that the first points are not pulled towards 0. A NaN is kept and skipped.
 */
export function smooth(y: readonly number[], weight: number): number[] {
  if (!(weight > 0)) {
    return [...y];
  }
  const w = Math.min(weight, 0.999);
  let last = 0;
  let n = 0;
  return y.map(v => {
    if (!Number.isFinite(v)) {
      return v;
    }
    last = last * w + (1 - w) * v;
    n++;
    return last / (1 - w ** n);
  });
}

/** The theme's colours a figure is drawn in (read from the panel's CSS variables). */
export interface IFigureTheme {
  font: string;
  grid: string;
  background: string;
}

/** Below this many points a trace's points are drawn as dots too (one point is no line). */
export const FEW_POINTS = 3;

/** Plotly's `data` for `traces`: ranks in their colours, `NEUTRAL` in the theme's text colour. */
export function scatterData(traces: readonly IPlotTrace[], theme: IFigureTheme, smoothing = 0): IScatter[] {
  return traces.map(t => {
    const color = t.color === NEUTRAL ? theme.font : t.color;
    const trace: IScatter = {
      type: 'scatter',
      uid: uidOf(t.name),
      name: t.name,
      x: [...t.series.x],
      y: smooth(t.series.y, smoothing),
      // A line of one point draws nothing: a short run's few points get their dots.
      mode:
        t.markers || (t.series.x.length < FEW_POINTS && !t.noLegend && !t.fillToPrevious) ? 'lines+markers' : 'lines',
      line: { width: t.highlight ? 3 : t.line === 'dash' ? 2.5 : 1.5, ...(color ? { color } : {}) },
      // The name in the unified hover's row is the trace's own (user text is never HTML here).
      hovertemplate: '%{y:.4~g}'
    };
    if (t.line && t.line !== 'solid') {
      trace.line.dash = t.line;
    }
    if (t.noLegend) {
      trace.showlegend = false;
      trace.line.width = 0;
    }
    if (t.fillToPrevious) {
      trace.fill = 'tonexty';
      trace.fillcolor = withAlpha(color ?? theme.font, 0.18);
      trace.line.width = 0;
    }
    return trace;
  });
}

/**
 * A trace's plotly `uid` from its name, one to one, of letters, digits, `_` and `-` only: plotly
 * puts it in CSS selectors (its PNG export fails on a space or a parenthesis).
 */
export function uidOf(name: string): string {
  return `t-${name.replace(/[^A-Za-z0-9-]/g, c => `_${(c.codePointAt(0) as number).toString(16)}_`)}`;
}

/** A CSS colour (#rgb, #rrggbb or rgb()) at `alpha`; another form is returned as it is. */
export function withAlpha(color: string, alpha: number): string {
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color.trim());
  if (hex) {
    const h = hex[1] as string;
    const full = h.length === 3 ? [...h].map(c => c + c).join('') : h;
    const [r, g, b] = [0, 2, 4].map(i => Number.parseInt(full.slice(i, i + 2), 16));
    return `rgba(${r}, ${g}, ${b}, ${alpha})`;
  }
  const rgb = /^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)/i.exec(color.trim());
  return rgb ? `rgba(${rgb[1]}, ${rgb[2]}, ${rgb[3]}, ${alpha})` : color;
}

/** A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
export function csvField(value: string | number): string {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * A figure's data as CSV: `trace,x,y`, a row per point of every trace (unsmoothed: the data,
 * not the drawing); a missing value is an empty field.
 */
export function figureCsv(traces: readonly IPlotTrace[], xTitle = 'x', yTitle = 'y'): string {
  const rows = [['trace', xTitle, yTitle].map(csvField).join(',')];
  for (const t of traces) {
    const n = Math.min(t.series.x.length, t.series.y.length);
    for (let i = 0; i < n; i++) {
      rows.push([t.name, t.series.x[i] as number, t.series.y[i] as number].map(csvField).join(','));
    }
  }
  return `${rows.join('\r\n')}\r\n`;
}

/** A file name for a figure's downloads: its title in lower case, words joined by `-`. */
export function fileName(title: string): string {
  const name = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return name || 'figure';
}

/** The legend rows a plot's own height holds; each entry past them adds `LEGEND_ROW` pixels. */
export const LEGEND_ROWS_IN = 3;
export const LEGEND_ROW = 19;

/**
 * A line plot's height with its legend: in the panel's width the legend (above the plot) takes
 * a row per entry, so 16 ranks' entries left the plot itself ~80 pixels of a fixed 240. The
 * plot keeps its own height and the figure grows with the entries shown in the legend.
 */
export function heightWithLegend(base: number, data: readonly IScatter[]): number {
  const entries = data.filter(trace => trace.showlegend !== false).length;
  return base + LEGEND_ROW * Math.max(0, entries - LEGEND_ROWS_IN);
}

/** The x axis of a line plot: linear (time), whole numbers (world sizes) or log sizes in bytes. */
export type XScale = 'linear' | 'integer' | 'bytes';

/** Plotly's layout of a line plot: a unified hover on x, zoom by drag, the theme's colours;
 * `yTitle` names the y axis' unit (none: no title). */
/**
 * Every axis' tick labels: the margins make room for them (automargin), and plotly does not
 * measure each label again to hide those past the figure's edge (its default for numeric axes,
 * `ticklabeloverflow: 'hide past div'`: a forced layout per label, 20–50 % of a figure's draw in
 * the panel; RESULTS.md). With automargin no label lies past the edge.
 */
export const AXIS_LABELS = { automargin: true, ticklabeloverflow: 'allow' } as const;

export function lineLayout(
  theme: IFigureTheme,
  x: { title: string; scale?: XScale; range?: [number, number] | null; ticks?: { values: number[]; text: string[] } },
  height: number,
  yTitle = ''
): Record<string, unknown> {
  const axis = { ...AXIS_LABELS, color: theme.font, gridcolor: theme.grid, zerolinecolor: theme.grid };
  const xaxis: Record<string, unknown> = { ...axis, title: { text: x.title } };
  if (x.scale === 'bytes') {
    xaxis.type = 'log';
  } else if (x.scale === 'integer') {
    xaxis.tickformat = 'd';
  }
  if (x.ticks) {
    xaxis.tickvals = x.ticks.values;
    xaxis.ticktext = x.ticks.text;
  }
  if (x.range) {
    xaxis.range = [...x.range];
    xaxis.autorange = false;
  }
  return {
    height,
    margin: { l: 48, r: 12, t: 8, b: 36 },
    paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)',
    font: { color: theme.font, size: 11 },
    hovermode: 'x unified',
    // The nearest x, however far: a short run's few points still show under the mouse.
    hoverdistance: -1,
    dragmode: 'zoom',
    showlegend: true,
    // Above the plot: below it, a legend that wraps to several rows ran over the x axis' title.
    // Up to 3/4 of the figure (plotly's default, 1/2, scrolled 16 ranks' entries of a figure
    // grown for them: `heightWithLegend`).
    legend: { orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom', maxheight: 0.75, font: { color: theme.font } },
    xaxis,
    yaxis: { ...axis, rangemode: 'tozero', ...(yTitle ? { title: { text: yTitle } } : {}) },
    uirevision: 'keep'
  };
}
