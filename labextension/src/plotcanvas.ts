/**
 * Draws a line plot on a `<canvas>` (the Throughput tab's, the Scaling tab's
 * curves): grid, axes with nice ticks (linear, whole numbers or log sizes),
 * the x axis' title and each trace as a polyline, with markers where asked,
 * in the theme's colours and at the screen's pixel density (`canvas.ts`).
 * The numbers come from `lineplot.ts`; the title and the legend are HTML
 * around the canvas (`plotsview.tsx`).
 */

import { BOTTOM, drawXLabels, drawYLabels, type ITheme, leftEdge, prepareCanvas, TOP } from './canvas';
import {
  axisScale,
  extent,
  formatBytes,
  formatTick,
  type IAxis,
  type IExtent,
  integerAxis,
  lastFinite,
  logAxis,
  niceAxis,
  polylines
} from './lineplot';
import type { Series } from './runstate';

/** The canvas' height in CSS pixels. */
export const PLOT_HEIGHT = 180;

/** How a trace's line is drawn: solid (the default), dashed and thicker (a total), or dotted. */
export type LineStyle = 'solid' | 'dash' | 'dot';

/** A trace to draw: its name, its points (already cut to the plot's window) and its style. */
export interface ICanvasTrace {
  name: string;
  series: Series;
  line?: LineStyle;
  /** A dot on each point too. */
  markers?: boolean;
  /**
   * Its colour: a rank's from `palette.ts`, `NEUTRAL` for the theme's text colour (a total);
   * without one, the theme's colours in trace order.
   */
  color?: string;
}

/** The colour of a trace that is no rank's (a total): the theme's text colour. */
export const NEUTRAL = 'neutral';

/** What was drawn of a trace: its colour, its latest value (NaN when it has none) and its points. */
export interface IDrawnTrace {
  name: string;
  color: string;
  line: LineStyle;
  last: number;
  points: number;
}

/**
 * The x axis: `linear` spans the data (a time axis), `integer` ticks whole numbers (world sizes),
 * `bytes` is a log axis of sizes with ticks at powers of two.
 */
export type XScale = 'linear' | 'integer' | 'bytes';

const RIGHT = 12;
const DASHES: Record<LineStyle, number[]> = { solid: [], dash: [6, 4], dot: [2, 3] };
const MARKER_RADIUS = 3;

/** The x axis of `scale` over `range` with about `count` ticks, and its ticks' labels. */
function xAxisOf(scale: XScale, range: IExtent | null, count: number): [IAxis, (v: number) => string] {
  if (scale === 'bytes') {
    return [logAxis(range, count), formatBytes];
  }
  const axis = scale === 'integer' ? integerAxis(range, count) : niceAxis(range, count, false);
  return [axis, v => formatTick(v, axis.step)];
}

/**
 * Draw `traces` on `canvas`, `width` CSS pixels wide and `PLOT_HEIGHT` high, with the x axis of
 * `x.scale` (linear by default) titled `x.title`. Returns each trace's colour, latest value and
 * number of points.
 */
export function drawPlot(
  canvas: HTMLCanvasElement,
  width: number,
  traces: readonly ICanvasTrace[],
  x: { title: string; scale?: XScale },
  theme: ITheme
): IDrawnTrace[] {
  const ctx = prepareCanvas(canvas, width, PLOT_HEIGHT, theme);

  // The axes: the y axis widened to nice ticks, the x axis the data's span.
  const plotHeight = PLOT_HEIGHT - TOP - BOTTOM;
  const yAxis = niceAxis(extent(traces.map(t => t.series.y)), Math.max(2, Math.floor(plotHeight / 32)), true);
  const yLabels = yAxis.ticks.map(v => formatTick(v, yAxis.step));
  const left = leftEdge(ctx, yLabels);
  const right = Math.max(left + 1, width - RIGHT);
  const bottom = TOP + plotHeight;
  const xCount = Math.max(2, Math.floor((right - left) / 70));
  const [xAxis, xLabel] = xAxisOf(x.scale ?? 'linear', extent(traces.map(t => t.series.x)), xCount);
  const sx = axisScale(xAxis, [left, right]);
  const sy = axisScale(yAxis, [bottom, TOP]);

  // Grid lines on whole pixels (+0.5: a 1-pixel line is sharp).
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  ctx.setLineDash([]);
  ctx.beginPath();
  for (const v of yAxis.ticks) {
    const y = Math.round(sy(v)) + 0.5;
    ctx.moveTo(left, y);
    ctx.lineTo(right, y);
  }
  for (const v of xAxis.ticks) {
    const x = Math.round(sx(v)) + 0.5;
    ctx.moveTo(x, TOP);
    ctx.lineTo(x, bottom);
  }
  ctx.stroke();

  ctx.fillStyle = theme.font;
  drawYLabels(
    ctx,
    yAxis.ticks.map((v, i) => ({ at: sy(v), label: yLabels[i] ?? '' })),
    left,
    'left'
  );
  drawXLabels(
    ctx,
    xAxis.ticks.map(v => ({ at: sx(v), label: xLabel(v) })),
    bottom,
    x.title,
    (left + right) / 2,
    width
  );

  // The traces, clipped to the plot area (and room for a marker on its edges).
  const pad = MARKER_RADIUS + 1;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left - pad, TOP - pad, right - left + 2 * pad, plotHeight + 2 * pad);
  ctx.clip();
  ctx.lineJoin = 'round';
  const drawn = traces.map((trace, i): IDrawnTrace => {
    const color =
      trace.color === NEUTRAL ? theme.font : (trace.color ?? (theme.colorway[i % theme.colorway.length] as string));
    const line = trace.line ?? 'solid';
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = line === 'dash' ? 3 : line === 'dot' ? 2 : 1.5;
    ctx.setLineDash(DASHES[line]);
    ctx.beginPath();
    for (const line of polylines(trace.series.x, trace.series.y, sx, sy)) {
      if (line.length === 2) {
        // A lone point: a dot, where a line would show nothing.
        ctx.moveTo((line[0] as number) + ctx.lineWidth, line[1] as number);
        ctx.arc(line[0] as number, line[1] as number, ctx.lineWidth, 0, 2 * Math.PI);
        continue;
      }
      ctx.moveTo(line[0] as number, line[1] as number);
      for (let k = 2; k < line.length; k += 2) {
        ctx.lineTo(line[k] as number, line[k + 1] as number);
      }
    }
    ctx.stroke();
    const points = trace.markers ? drawMarkers(ctx, trace.series, sx, sy) : finitePoints(trace.series);
    return { name: trace.name, color, line, last: lastFinite(trace.series.y), points };
  });
  ctx.restore();
  return drawn;
}

/** How many points of `series` have a finite x and y. */
function finitePoints(series: Series): number {
  let n = 0;
  for (let i = 0; i < Math.min(series.x.length, series.y.length); i++) {
    n += Number.isFinite(series.x[i]) && Number.isFinite(series.y[i]) ? 1 : 0;
  }
  return n;
}

/** A filled dot on each finite point of `series` (a short one: every point is drawn); returns how many. */
function drawMarkers(
  ctx: CanvasRenderingContext2D,
  series: Series,
  sx: (v: number) => number,
  sy: (v: number) => number
): number {
  let n = 0;
  ctx.beginPath();
  for (let i = 0; i < Math.min(series.x.length, series.y.length); i++) {
    const xv = series.x[i] as number;
    const yv = series.y[i] as number;
    if (Number.isFinite(xv) && Number.isFinite(yv)) {
      ctx.moveTo(sx(xv) + MARKER_RADIUS, sy(yv));
      ctx.arc(sx(xv), sy(yv), MARKER_RADIUS, 0, 2 * Math.PI);
      n++;
    }
  }
  ctx.fill();
  return n;
}
