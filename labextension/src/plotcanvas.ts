/**
 * Draws one Throughput plot on a `<canvas>`: grid, axes with nice ticks, the
 * x axis' title and each trace as a polyline, in the theme's colours and at
 * the screen's pixel density. The numbers come from `lineplot.ts`; the title
 * and the legend are HTML around the canvas (`plotsview.tsx`).
 */

import { extent, formatTick, lastFinite, linearScale, niceAxis, polylines } from './lineplot';
import type { Series } from './runstate';

/** The canvas' height in CSS pixels. */
export const PLOT_HEIGHT = 180;

/** The colours and font a plot is drawn with. */
export interface ITheme {
  font: string;
  grid: string;
  family: string;
  colorway: string[];
}

/** plotly's default colours, for a page without JupyterLab's theme variables. */
const FALLBACK_COLORWAY = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

/** The theme's colours (JupyterLab's CSS variables), so plots follow light and dark themes. */
export function themeColors(node: HTMLElement): ITheme {
  const style = getComputedStyle(node);
  const v = (name: string): string => style.getPropertyValue(name).trim();
  const colorway = [
    '--jp-brand-color1',
    '--jp-warn-color1',
    '--jp-success-color1',
    '--jp-error-color1',
    '--jp-accent-color1',
    '--jp-brand-color3',
    '--jp-warn-color3',
    '--jp-success-color3'
  ]
    .map(v)
    .filter(Boolean);
  return {
    font: v('--jp-ui-font-color1') || style.color,
    grid: v('--jp-border-color2') || 'rgba(128, 128, 128, 0.3)',
    family: v('--jp-ui-font-family') || 'sans-serif',
    colorway: colorway.length ? colorway : FALLBACK_COLORWAY
  };
}

/** A trace to draw: its name, its points (already cut to the plot's window) and its style. */
export interface ICanvasTrace {
  name: string;
  series: Series;
  dash?: boolean;
}

/** What was drawn of a trace: its colour and its latest value (NaN when it has none). */
export interface IDrawnTrace {
  name: string;
  color: string;
  dash: boolean;
  last: number;
}

const FONT_PX = 11;
const TOP = 8;
const RIGHT = 12;
/** Tick labels, then the x axis' title. */
const BOTTOM = 2 * FONT_PX + 14;

/**
 * Draw `traces` on `canvas`, `width` CSS pixels wide and `PLOT_HEIGHT` high, with
 * `xTitle` under the x axis. Returns each trace's colour and latest value.
 */
export function drawPlot(
  canvas: HTMLCanvasElement,
  width: number,
  traces: readonly ICanvasTrace[],
  xTitle: string,
  theme: ITheme
): IDrawnTrace[] {
  const ctx = canvas.getContext('2d');
  if (!ctx) {
    throw new Error('no 2D canvas context');
  }
  const ratio = typeof devicePixelRatio === 'number' && devicePixelRatio > 0 ? devicePixelRatio : 1;
  const pixelWidth = Math.round(width * ratio);
  const pixelHeight = Math.round(PLOT_HEIGHT * ratio);
  if (canvas.width !== pixelWidth || canvas.height !== pixelHeight) {
    canvas.width = pixelWidth; // also clears it
    canvas.height = pixelHeight;
  }
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, PLOT_HEIGHT);
  ctx.font = `${FONT_PX}px ${theme.family}`;

  // The axes: the y axis widened to nice ticks, the x axis the data's time span.
  const plotHeight = PLOT_HEIGHT - TOP - BOTTOM;
  const yAxis = niceAxis(extent(traces.map(t => t.series.y)), Math.max(2, Math.floor(plotHeight / 32)), true);
  const yLabels = yAxis.ticks.map(v => formatTick(v, yAxis.step));
  const left = Math.ceil(Math.max(24, ...yLabels.map(l => ctx.measureText(l).width)) + 10);
  const right = Math.max(left + 1, width - RIGHT);
  const bottom = TOP + plotHeight;
  const xAxis = niceAxis(extent(traces.map(t => t.series.x)), Math.max(2, Math.floor((right - left) / 70)), false);
  const sx = linearScale([xAxis.lo, xAxis.hi], [left, right]);
  const sy = linearScale([yAxis.lo, yAxis.hi], [bottom, TOP]);

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
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  yAxis.ticks.forEach((v, i) => {
    ctx.fillText(yLabels[i] ?? '', left - 6, sy(v));
  });
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const v of xAxis.ticks) {
    ctx.fillText(formatTick(v, xAxis.step), sx(v), bottom + 4);
  }
  ctx.fillText(xTitle, (left + right) / 2, bottom + 8 + FONT_PX);

  // The traces, clipped to the plot area.
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, TOP - 2, right - left, plotHeight + 4);
  ctx.clip();
  ctx.lineJoin = 'round';
  const drawn = traces.map((trace, i): IDrawnTrace => {
    const color = theme.colorway[i % theme.colorway.length] as string;
    const dash = Boolean(trace.dash);
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = dash ? 3 : 1.5;
    ctx.setLineDash(dash ? [6, 4] : []);
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
    return { name: trace.name, color, dash, last: lastFinite(trace.series.y) };
  });
  ctx.restore();
  return drawn;
}
