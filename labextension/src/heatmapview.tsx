/**
 * Render-only: the probe's bandwidth heatmap, a canvas of our own
 * (`heatcanvas.ts`) with its title as HTML and, over the cell under the
 * mouse, a tooltip naming the pair, its hosts and its bandwidth (text, never
 * HTML: host names come from the ranks).
 */

import * as React from 'react';

import { DRAWS, setAttr, useCanvasState } from './canvasview';
import { drawHeatmap, HEATMAP_HEIGHT } from './heatcanvas';
import { cellAt, cellText, type IGrid, type Matrix, tooltipAt } from './heatmap';
import { formatValue } from './lineplot';
import { useTrans } from './translate';

export interface IHeatmapProps {
  /** The figure's accessible name. */
  label: string;
  title: string;
  /** Changes whenever the matrix changed. */
  version: string;
  matrix: Matrix;
  /** Each rank's host, for the tooltip. */
  hosts: readonly string[];
}

/** The tooltip: its text and where it stands (`tooltipAt`). */
type Tip = ReturnType<typeof tooltipAt> & { text: string };

export function Heatmap(props: IHeatmapProps): JSX.Element {
  const canvas = React.useRef<HTMLCanvasElement>(null);
  const [error, setError] = React.useState('');
  const [tip, setTip] = React.useState<Tip | null>(null);
  // Where the last draw put the grid, to find the cell under the mouse.
  const grid = React.useRef<IGrid | null>(null);
  const latest = React.useRef(props);
  latest.current = props;
  const view = useCanvasState(canvas);
  const trans = useTrans();

  React.useEffect(() => {
    const node = canvas.current;
    if (!node) {
      return;
    }
    setTip(null); // its cell moves, or is another pair's
    DRAWS.request(node, () => {
      const width = view.width.current || node.clientWidth;
      if (!node.isConnected || width <= 0) {
        return; // Gone, or not laid out yet: the resize observer asks again.
      }
      const { matrix, title } = latest.current;
      const theme = view.theme(node);
      try {
        const drawn = drawHeatmap(node, width, matrix, trans.__('rank'), theme);
        grid.current = drawn.grid;
        // For tests: the coloured cells, and where the grid lies (left, top, a cell's side in CSS pixels).
        setAttr(node, 'data-cells', String(drawn.cells));
        setAttr(node, 'data-grid', `${drawn.grid.left} ${drawn.grid.top} ${drawn.grid.cell}`);
        setAttr(
          node,
          'aria-label',
          drawn.cells
            ? trans.__(
                '%1: %2 ranks, %3 to %4 GB/s',
                title,
                matrix.length,
                formatValue(drawn.range.lo),
                formatValue(drawn.range.hi)
              )
            : trans.__('%1: no pair measured', title)
        );
        setAttr(node, 'data-font-color', theme.font);
        setError('');
      } catch (e) {
        setError(trans.__('cannot draw the plot: %1', String(e)));
      }
    });
  }, [props.version, view.changes]);

  const hover = (event: React.MouseEvent<HTMLCanvasElement>): void => {
    const g = grid.current;
    const cell = g ? cellAt(g, event.nativeEvent.offsetX, event.nativeEvent.offsetY) : null;
    const text = g && cell ? cellText(props.matrix, props.hosts, cell.row, cell.col) : null;
    if (!g || !cell || text === null) {
      setTip(null);
      return;
    }
    const place = tooltipAt(g, cell, view.width.current || event.currentTarget.clientWidth);
    setTip(old => (old?.text === text && old.x === place.x && old.y === place.y ? old : { ...place, text }));
  };

  return (
    <figure className="jp-Distributed-plot" aria-label={props.label}>
      <figcaption className="jp-Distributed-plotTitle">{props.title}</figcaption>
      {error ? <p className="jp-Distributed-error">{error}</p> : null}
      <div className="jp-Distributed-heatmap">
        <canvas
          ref={canvas}
          className="jp-Distributed-plotCanvas"
          role="img"
          aria-label={trans.__('%1: no pair measured', props.title)}
          style={{ height: HEATMAP_HEIGHT }}
          onMouseMove={hover}
          onMouseLeave={() => setTip(null)}
        />
        {tip ? (
          <div
            className="jp-Distributed-tooltip"
            role="tooltip"
            style={{
              left: tip.x,
              top: tip.y,
              transform: `translate(${-100 * tip.shift}%, ${tip.above ? '-100%' : '0'})`
            }}
          >
            {tip.text}
          </div>
        ) : null}
      </div>
    </figure>
  );
}
