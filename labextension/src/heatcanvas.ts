/**
 * Draws the probe's bandwidth heatmap on a `<canvas>`: an n×n grid of square
 * cells (row 0 at the top) coloured on the Viridis scale, a cell without a
 * value left blank, rank ticks on both axes and a colour bar with the value
 * range, in the theme's colours and at the screen's pixel density
 * (`canvas.ts`). The numbers come from `heatmap.ts` and `lineplot.ts`.
 */

import { BOTTOM, drawXLabels, drawYLabels, type ITheme, leftEdge, prepareCanvas, TOP } from './canvas';
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

/** The canvas' height in CSS pixels. */
export const HEATMAP_HEIGHT = 260;

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
 * Draw `matrix` (square, by rank) on `canvas`, `width` CSS pixels wide and `HEATMAP_HEIGHT` high,
 * with `xTitle` under the x axis.
 */
export function drawHeatmap(
  canvas: HTMLCanvasElement,
  width: number,
  matrix: Matrix,
  xTitle: string,
  theme: ITheme
): IDrawnHeatmap {
  const ctx = prepareCanvas(canvas, width, HEATMAP_HEIGHT, theme);
  const n = matrix.length;
  const height = HEATMAP_HEIGHT - TOP - BOTTOM;

  // The colour bar's ticks (the data's range) and their labels' width, then the grid in what is left.
  const range = niceAxis(matrixExtent(matrix), Math.max(2, Math.floor(height / 40)), false);
  const barLabels = range.ticks.map(v => formatTick(v, range.step));
  const barRoom = BAR_GAP + BAR_WIDTH + 6 + Math.max(0, ...barLabels.map(l => ctx.measureText(l).width)) + 4;
  const ticks = rankTicks(n, Math.max(2, Math.floor(height / 24)));
  const left = leftEdge(
    ctx,
    ticks.map(k => String(k))
  );
  const grid = gridIn(n, left, TOP, width - left - barRoom, height);
  const side = gridSide(grid);

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
  drawXLabels(ctx, rankLabels(grid.left), grid.top + side, xTitle, grid.left + side / 2);

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
  drawYLabels(
    ctx,
    range.ticks.map((v, i) => ({ at: sy(v), label: barLabels[i] ?? '' })),
    barLeft + BAR_WIDTH,
    'right'
  );
  return { grid, cells, range };
}
