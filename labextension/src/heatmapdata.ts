/**
 * The bandwidth heatmap's data: its plotly trace (one z-matrix, one hover template, no per-cell
 * text) and its CSV. Pure: the matrix is given.
 */

import { csvField } from './figures';

/** A matrix of values by row and column; null is a cell without one. */
export type Matrix = readonly (readonly (number | null)[])[];

/** A heatmap of an n × n matrix: one z-matrix, one hover template, no per-cell text. */
export interface IHeatmapTrace {
  type: 'heatmap';
  z: (number | null)[][];
  /** The colour scale's ends, when the matrix has two values or more: plotly need not look. */
  zmin?: number;
  zmax?: number;
  colorscale: string;
  hovertemplate: string;
  hoverongaps: false;
  colorbar: { title: { text: string }; thickness: number; ticklabeloverflow: 'allow' };
}

/**
 * The bandwidth heatmap's trace: NaN (not measured, a rank with itself) is a gap. Its colour
 * scale's ends are given (found while the matrix is copied), so that plotly does not look
 * through the 65k cells once more for them, and its colour bar's labels are not measured again
 * (`AXIS_LABELS`).
 */
export function heatmapData(matrix: Matrix, unit: string): IHeatmapTrace[] {
  let lo = Infinity;
  let hi = -Infinity;
  const z = matrix.map(row =>
    row.map(v => {
      if (v === null || !Number.isFinite(v)) {
        return null;
      }
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
      return v;
    })
  );
  return [
    {
      type: 'heatmap',
      z,
      ...(lo < hi ? { zmin: lo, zmax: hi } : {}),
      colorscale: 'Viridis',
      hovertemplate: `%{y}↔%{x}: %{z:.3f} ${unit}<extra></extra>`,
      hoverongaps: false,
      colorbar: { title: { text: unit }, thickness: 10, ticklabeloverflow: 'allow' }
    }
  ];
}

/** An n × n matrix as CSV: `row,column,value`, one row per measured cell. */
export function matrixCsv(matrix: Matrix, names: [string, string, string]): string {
  const rows = [names.map(csvField).join(',')];
  matrix.forEach((row, i) => {
    row.forEach((v, j) => {
      if (v !== null && Number.isFinite(v)) {
        rows.push(`${i},${j},${v}`);
      }
    });
  });
  return `${rows.join('\r\n')}\r\n`;
}
