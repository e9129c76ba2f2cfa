/**
 * The pure parts of the probe's bandwidth heatmap: the Viridis colour scale,
 * the matrix as pixels, the grid's geometry and ticks, the cell under the
 * mouse and what its tooltip says. No DOM: `heatcanvas.ts` draws what these
 * return, `heatmapview.tsx` shows the tooltip.
 */

import { extent, type IExtent, niceStep } from './lineplot';

/** A colour as red, green and blue, 0 to 255. */
export type RGB = readonly [number, number, number];

/** A matrix of values by row and column; null is a cell without one. */
export type Matrix = readonly (readonly (number | null)[])[];

/** Viridis (matplotlib's and plotly's), at nine even stops from dark purple (low) to yellow (high). */
const VIRIDIS: readonly RGB[] = [
  [68, 1, 84],
  [71, 45, 123],
  [59, 82, 139],
  [44, 114, 142],
  [33, 145, 140],
  [40, 174, 128],
  [94, 201, 98],
  [173, 220, 48],
  [253, 231, 37]
];

/** The colour of `t` on the scale, 0 (low) to 1 (high), clamped; NaN is low. */
export function viridis(t: number): RGB {
  const x = (Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const a = VIRIDIS[i] as RGB;
  const b = VIRIDIS[i + 1] as RGB;
  const mix = (k: 0 | 1 | 2): number => Math.round(a[k] + (b[k] - a[k]) * (x - i));
  return [mix(0), mix(1), mix(2)];
}

/** The scale's stops as [offset 0 to 1, CSS colour], for a gradient (the colour bar). */
export function colorStops(): [number, string][] {
  return VIRIDIS.map((c, i) => [i / (VIRIDIS.length - 1), `rgb(${c[0]}, ${c[1]}, ${c[2]})`]);
}

/** The smallest and largest value of the matrix, or null when it has none. */
export function matrixExtent(matrix: Matrix): IExtent | null {
  return extent(matrix.map(row => row.map(v => v ?? NaN)));
}

/** The scale in 256 steps, red, green and blue each (a cell's colour is looked up, not computed). */
const STEPS = 256;
let steps: Uint8ClampedArray | null = null;

function colorTable(): Uint8ClampedArray {
  if (!steps) {
    steps = new Uint8ClampedArray(STEPS * 3);
    for (let i = 0; i < STEPS; i++) {
      steps.set(viridis(i / (STEPS - 1)), i * 3);
    }
  }
  return steps;
}

/**
 * The n×n matrix as RGBA pixels, one per cell (row r, column c at (r × n + c) × 4): the colour of
 * (v - lo) / (hi - lo) in 256 steps, a cell without a value transparent. `cells` counts the
 * coloured ones.
 */
export function heatmapPixels(
  matrix: Matrix,
  lo: number,
  hi: number
): { pixels: Uint8ClampedArray<ArrayBuffer>; cells: number } {
  const table = colorTable();
  const n = matrix.length;
  const pixels = new Uint8ClampedArray(n * n * 4);
  const k = hi > lo ? (STEPS - 1) / (hi - lo) : 0;
  const middle = (STEPS - 1) / 2;
  let cells = 0;
  matrix.forEach((row, r) => {
    for (let c = 0; c < n; c++) {
      const v = row[c];
      if (v === null || v === undefined || !Number.isFinite(v)) {
        continue;
      }
      const step = Math.round(Math.min(STEPS - 1, Math.max(0, k ? (v - lo) * k : middle))) * 3;
      const at = (r * n + c) * 4;
      pixels[at] = table[step] as number;
      pixels[at + 1] = table[step + 1] as number;
      pixels[at + 2] = table[step + 2] as number;
      pixels[at + 3] = 255;
      cells++;
    }
  });
  return { pixels, cells };
}

/** Where an n×n grid of square cells lies: its top-left corner and a cell's side, in CSS pixels. */
export interface IGrid {
  left: number;
  top: number;
  cell: number;
  n: number;
}

/**
 * The largest n×n grid of square cells in `width` × `height` at (left, top); its cells are whole
 * pixels where they can be one pixel or more (sharp edges between them).
 */
export function gridIn(n: number, left: number, top: number, width: number, height: number): IGrid {
  const size = Math.max(0, Math.min(width, height)) / Math.max(1, n);
  return { left, top, cell: size >= 1 ? Math.floor(size) : size, n };
}

/** The grid's side, in CSS pixels. */
export function gridSide(grid: IGrid): number {
  return grid.cell * grid.n;
}

/** The centre of row or column `k`, in pixels from the grid's top or left edge. */
export function cellCentre(grid: IGrid, k: number): number {
  return (k + 0.5) * grid.cell;
}

/** The cell under (x, y) (CSS pixels in the canvas), or null outside the grid. */
export function cellAt(grid: IGrid, x: number, y: number): { row: number; col: number } | null {
  const col = Math.floor((x - grid.left) / grid.cell);
  const row = Math.floor((y - grid.top) / grid.cell);
  const inside = (k: number): boolean => Number.isInteger(k) && k >= 0 && k < grid.n;
  return inside(row) && inside(col) ? { row, col } : null;
}

/**
 * Where the tooltip of `cell` stands, in CSS pixels in a canvas `width` wide: under the cell, or
 * over it (`above`) in the grid's lower half, so that it hides neither the cell nor the mouse;
 * `x` is the cell's middle and `shift` the share of the tooltip's own width left of it (0 at the
 * canvas' left edge, 1 at its right), so that the tooltip never leaves the canvas' width.
 */
export function tooltipAt(
  grid: IGrid,
  cell: { row: number; col: number },
  width: number
): { x: number; y: number; shift: number; above: boolean } {
  const x = grid.left + cellCentre(grid, cell.col);
  const above = cell.row >= grid.n / 2;
  const y = grid.top + (above ? cell.row * grid.cell - 4 : (cell.row + 1) * grid.cell + 4);
  return { x, y, shift: width > 0 ? Math.min(1, Math.max(0, x / width)) : 0, above };
}

/** About `count` rank ticks (0 first) for n ranks, a whole 1, 2, 5, 10... apart. */
export function rankTicks(n: number, count: number): number[] {
  const step = Math.max(1, niceStep(n - 1, count));
  const ticks: number[] = [];
  for (let k = 0; k < n; k += step) {
    ticks.push(k);
  }
  return ticks;
}

/**
 * A cell's tooltip, e.g. `1↔0 (node0 / node1): 3.012 GB/s`; null for a cell
 * without a value. Host names come from the ranks: show this as text, never as HTML.
 */
export function cellText(matrix: Matrix, hosts: readonly string[], row: number, col: number): string | null {
  const v = matrix[row]?.[col];
  if (v === null || v === undefined || !Number.isFinite(v)) {
    return null;
  }
  return `${row}↔${col} (${hosts[row] ?? ''} / ${hosts[col] ?? ''}): ${v.toFixed(3)} GB/s`;
}
