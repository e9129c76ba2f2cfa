/**
 * Draws the probe's bandwidth heatmap on a `<canvas>`: an n×n grid of square
 * cells (row 0 at the top) coloured on the Viridis scale, a cell without a
 * value left blank, rank ticks on both axes and a colour bar with the value
 * range, in the theme's colours and at the screen's pixel density
 * (`canvas.ts`). The numbers come from `heatmap.ts` and `lineplot.ts`.
 */

import { BOTTOM, drawXLabels, drawYLabels, type ITheme, labelFont, leftEdge, prepareCanvas, TOP } from './canvas';
import {
  cellCentre,
  colorStops,
  gridIn,
  gridSide,
  heatmapPixels,
  type IGrid,
  type Matrix,
  matrixExtent,
  rankTicks
} from './heatmap';
import { formatTick, type IAxis, linearScale, niceAxis } from './lineplot';

/** The grid's largest side, in CSS pixels; the canvas is as tall as the grid and its labels. */
const MAX_SIDE = 280;

/** The canvas' height in CSS pixels before its first draw (then the drawn grid's). */
export const HEATMAP_HEIGHT = TOP + MAX_SIDE + BOTTOM;

/** The colour bar: its gap from the grid and its width, in CSS pixels. */
const BAR_GAP = 16;
const BAR_WIDTH = 12;

/** What was drawn: where the grid lies (to find the cell under the mouse), its coloured cells, the value range. */
export interface IDrawnHeatmap {
  grid: IGrid;
  cells: number;
  range: IAxis;
}

/**
 * Draw `matrix` (square, by rank) on `canvas`, `width` CSS pixels wide and as tall as the largest
 * grid that fits (at most `MAX_SIDE`), with `xTitle` under the x axis.
 */
export function drawHeatmap(
  canvas: HTMLCanvasElement,
  width: number,
  matrix: Matrix,
  xTitle: string,
  theme: ITheme
): IDrawnHeatmap {
  const n = matrix.length;
  const values = matrixExtent(matrix);
  // The colour bar's axis: the data's range, with fewer ticks on a smaller grid.
  const barAxis = (side: number): IAxis => niceAxis(values, Math.max(2, Math.floor(side / 40)), false);
  const barLabels = (axis: IAxis): string[] => axis.ticks.map(v => formatTick(v, axis.step));

  // The grid in the room the labels leave (measured for the largest grid, whose ticks are the most).
  const measure = canvas.getContext('2d');
  if (!measure) {
    throw new Error('no 2D canvas context');
  }
  measure.font = labelFont(theme);
  const left = leftEdge(measure, [String(Math.max(0, n - 1))]);
  const barWidths = barLabels(barAxis(MAX_SIDE)).map(l => measure.measureText(l).width);
  const barRoom = BAR_GAP + BAR_WIDTH + 6 + Math.max(0, ...barWidths) + 4;
  const grid = gridIn(n, left, TOP, width - left - barRoom, MAX_SIDE);
  const side = gridSide(grid);
  const ctx = prepareCanvas(canvas, width, TOP + side + BOTTOM, theme);
  const range = barAxis(side);
  const ticks = rankTicks(n, Math.max(2, Math.floor(side / 24)));

  // The cells: a pixel per cell, scaled up without smoothing (sharp squares, cheap at 256 ranks).
  const { pixels, cells } = heatmapPixels(matrix, range.lo, range.hi);
  if (n > 0 && side > 0) {
    const cellsCanvas = document.createElement('canvas');
    cellsCanvas.width = n;
    cellsCanvas.height = n;
    cellsCanvas.getContext('2d')?.putImageData(new ImageData(pixels, n, n), 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(cellsCanvas, grid.left, grid.top, side, side);
  }
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  ctx.strokeRect(grid.left - 0.5, grid.top - 0.5, side + 1, side + 1);

  // Rank ticks at the middle of their row and column (row 0 at the top).
  ctx.fillStyle = theme.font;
  const rankLabels = (start: number) => ticks.map(k => ({ at: start + cellCentre(grid, k), label: String(k) }));
  drawYLabels(ctx, rankLabels(grid.top), grid.left, 'left');
  drawXLabels(ctx, rankLabels(grid.left), grid.top + side, xTitle, grid.left + side / 2, width);

  // The colour bar beside the grid, as tall: low at the bottom, high at the top.
  const barLeft = grid.left + side + BAR_GAP;
  const gradient = ctx.createLinearGradient(0, grid.top + side, 0, grid.top);
  for (const [offset, color] of colorStops()) {
    gradient.addColorStop(offset, color);
  }
  ctx.fillStyle = gradient;
  ctx.fillRect(barLeft, grid.top, BAR_WIDTH, side);
  ctx.fillStyle = theme.font;
  const sy = linearScale([range.lo, range.hi], [grid.top + side, grid.top]);
  const rangeLabels = barLabels(range);
  drawYLabels(
    ctx,
    range.ticks.map((v, i) => ({ at: sy(v), label: rangeLabels[i] ?? '' })),
    barLeft + BAR_WIDTH,
    'right'
  );
  return { grid, cells, range };
}
