/**
 * Render-only: the probe's bandwidth heatmap, a plotly.js figure
 * (`figureview.tsx`) of one z-matrix with one hover template and no per-cell
 * text, so that 256 ranks (65k cells) draw in well under a second.
 */

import * as React from 'react';
import { AXIS_LABELS } from './figures';
import { Figure } from './figureview';
import { heatmapData, type Matrix, matrixCsv } from './heatmapdata';
import { useTrans } from './translate';

export interface IHeatmapProps {
  /** The figure's accessible name. */
  label: string;
  title: string;
  /** Changes whenever the matrix changed. */
  version: string;
  matrix: Matrix;
}

/** The heatmap's height in CSS pixels. */
export const HEATMAP_HEIGHT = 320;

export function Heatmap(props: IHeatmapProps): JSX.Element {
  const trans = useTrans();
  const latest = React.useRef(props);
  latest.current = props;
  return (
    <Figure
      title={props.title}
      label={props.label}
      version={props.version}
      build={theme => {
        const n = latest.current.matrix.length;
        const axis = (title: string): Record<string, unknown> => ({
          title: { text: title },
          // Whole ranks: a tick per rank while they are few.
          ...(n <= 16 ? { dtick: 1 } : {}),
          color: theme.font,
          showgrid: false,
          zeroline: false,
          ...AXIS_LABELS
        });
        return {
          data: heatmapData(latest.current.matrix, 'GB/s'),
          layout: {
            height: HEATMAP_HEIGHT,
            margin: { l: 48, r: 12, t: 8, b: 36 },
            paper_bgcolor: 'rgba(0,0,0,0)',
            plot_bgcolor: 'rgba(0,0,0,0)',
            font: { color: theme.font, size: 11 },
            xaxis: axis(trans.__('rank')),
            yaxis: { ...axis(trans.__('rank')), autorange: 'reversed' },
            uirevision: 'keep'
          }
        };
      }}
      csv={() => matrixCsv(latest.current.matrix, ['rank', 'peer', 'GB/s'])}
    />
  );
}
