/**
 * How one figure of the panel is drawn by plotly.js into its div, once `figureview.tsx` says
 * to draw: its `ready` work in slices first; then, the first time, an optional empty pass
 * (plotly sets the div up) and the figure's frame (`firstdraw.ts`); then a plot pass
 * (`Plotly.react`) when the figure's shape changed, or its points moved without one
 * (`livepoints.ts`); nothing when nothing changed. One plot pass at a time, each in two tasks
 * (`inTwoTasks`). Also the modebar (PNG and CSV downloads) and the linked zoom on x.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import {
  ANIMATE_NOW,
  CSV_ICON,
  download,
  drawnYRange,
  fitHeight,
  inTwoTasks,
  near,
  PNG_ICON,
  rangeOf,
  themeOf,
  timed
} from './figureparts';
import { fileName, type IFigureTheme } from './figures';
import { emptyOf, frameOf, type IFigure } from './firstdraw';
import { figureKey, livePoints, shapeOf } from './livepoints';
import type { IGraphDiv, IPlotly } from './plotly';
import { type RedrawGate, XLink } from './redraw';

/** What a figure draws, as its view is given it. */
export interface IFigureSource {
  title: string;
  /** Changes whenever the data changed. */
  version: number | string;
  /** The figure, built when it is drawn: plotly's data and layout, in the theme's colours. */
  build: (theme: IFigureTheme) => { data: unknown[]; layout: Record<string, unknown> };
  /** The figure's data as CSV text, built when it is downloaded. */
  csv: () => string;
  /** Work the figure needs first, in slices until `done()`; true once it is over. */
  ready?: (done: () => boolean) => boolean;
  /** Plots of one run share it: linked zoom on x. */
  link?: XLink;
  /** The x range before any zoom; a double-click returns to it. */
  defaultRange?: [number, number] | null;
  /**
   * An empty pass first (plotly sets the div up), so that the frame's pass is drawn in two tasks
   * as well: for figures whose frame is long (a legend); one task more before the figure.
   */
  splitFrame?: boolean;
}

/** What the drawing uses of its view. */
export interface IFigureHost {
  /** The figure as it is now. */
  source: () => IFigureSource;
  /** The gate that calls `draw` (null before it is made). */
  gate: () => RedrawGate | null;
  /** An error to show over the figure ('' for none). */
  setError: (error: string) => void;
  trans: TranslationBundle;
}

/** The longest slice of a figure's `ready` work, in ms, so that a frame's task stays short. */
const SLICE_MS = 8;

export class FigureDraw {
  constructor(
    private readonly _node: IGraphDiv,
    private readonly _host: IFigureHost
  ) {
    const { trans, source, setError } = _host;
    this._config = {
      displaylogo: false,
      // No 'Double-click on legend' toast over the panel's buttons.
      showTips: false,
      // Nothing leaves the machine: no "Share chart" (an upload to plotly's cloud).
      showSendToCloud: false,
      showEditInChartStudio: false,
      modeBarButtonsToRemove: ['select2d', 'lasso2d', 'toImage'],
      responsive: true,
      doubleClick: 'reset',
      modeBarButtonsToAdd: [
        {
          name: 'png',
          title: trans.__('Download plot as a PNG'),
          icon: PNG_ICON,
          click: () => {
            this._plotly
              ?.downloadImage(_node, { format: 'png', filename: fileName(source().title) })
              .catch((e: unknown) => setError(trans.__('cannot export the PNG: %1', String(e))));
          }
        },
        {
          name: 'csv',
          title: trans.__('Download data as CSV'),
          icon: CSV_ICON,
          click: () => download(`${fileName(source().title)}.csv`, source().csv())
        }
      ]
    };
  }

  /** plotly.js is loaded: figures can be drawn. */
  loaded(plotly: IPlotly): void {
    this._plotly = plotly;
  }

  /** The div's width changed: plotly lays the figure out again (once it has drawn one). */
  resized(width: number): void {
    if (this._plotly && this._bound && width > 0 && width !== this._width) {
      void this._plotly.Plots.resize(this._node);
    }
    this._width = width;
  }

  /** No more drawing: the next slice, the link and plotly's hold on the div let go. */
  stop(): void {
    cancelAnimationFrame(this._frame);
    this._stopLink();
    this._plotly?.purge(this._node);
  }

  /** Draw what the figure is now (the gate calls it). */
  draw(): void {
    const node = this._node;
    const { ready, build, title, version, splitFrame } = this._host.source();
    const { trans, setError } = this._host;
    const gate = this._host.gate();
    const p = this._plotly;
    if (!p) {
      return;
    }
    if (this._busy) {
      gate?.requestSoon(); // once the pass in progress is drawn
      return;
    }
    const deadline = performance.now() + SLICE_MS;
    if (ready && !ready(() => performance.now() >= deadline)) {
      this._frame = requestAnimationFrame(() => this._host.gate()?.request()); // the next slice, then the draw
      return;
    }
    try {
      const { data, layout } = build(themeOf(node));
      const zoomed = this._link().range;
      if (zoomed) {
        layout.xaxis = { ...(layout.xaxis as object), range: [...zoomed], autorange: false };
      }
      fitHeight(node, layout);
      if (!this._set && splitFrame) {
        this._set = true;
        this._pass(p, 'init', title, { data: [], layout: emptyOf(layout) });
        return;
      }
      if (!this._framed) {
        this._framed = true;
        // On failure the figure's own draw, next, says what failed.
        this._pass(p, 'frame', title, frameOf({ data, layout }));
        return;
      }
      const nextShape = shapeOf({ data, layout });
      const key = figureKey(nextShape, { data, layout }, String(version));
      if (key === this._drawn) {
        return;
      }
      this._drawn = key;
      // Only the points changed, inside the axes drawn: moved without a plot pass.
      const points = this._bound
        ? livePoints(this._shape, { data, layout }, drawnYRange(node), zoomed !== null, nextShape)
        : null;
      if (points) {
        node.dataset.moves = String(Number(node.dataset.moves ?? 0) + 1);
        const start = performance.now();
        p.animate(node, points, ANIMATE_NOW).catch(() => {
          this._drawn = '';
          this._shape = '';
        });
        timed('move', title, start);
        return;
      }
      this._shape = nextShape;
      // How each figure was drawn (`bench_panel.spec.ts` reports it): plot passes and moves.
      node.dataset.reacts = String(Number(node.dataset.reacts ?? 0) + 1);
      const start = performance.now();
      this._busy = true;
      p.react(node, data, layout, this._config).then(
        () => {
          this._settled('draw 2');
          this._bind(p);
          node.setAttribute('aria-label', trans.__('%1: %2 traces', title, data.length));
          node.setAttribute('data-traces', String(data.length));
        },
        (e: unknown) => {
          this._settled('draw 2');
          this._drawn = '';
          this._shape = '';
          setError(trans.__('cannot draw the plot: %1', String(e)));
        }
      );
      timed('draw', title, start);
      setError('');
    } catch (e) {
      setError(trans.__('cannot draw the plot: %1', String(e)));
    }
  }

  /** A first pass (`init`: the empty one, `frame`: the figure's frame), a partial draw of the gate. */
  private _pass(p: IPlotly, kind: 'init' | 'frame', title: string, figure: IFigure): void {
    this._host.gate()?.partial();
    const start = performance.now();
    this._busy = true;
    p.react(this._node, figure.data, figure.layout, this._config).then(
      () => {
        this._settled(`${kind} 2`);
        this._bind(p);
      },
      () => this._settled(`${kind} 2`)
    );
    timed(kind, title, start);
  }

  private _link(): XLink {
    return this._host.source().link ?? this._ownLink;
  }

  private _settled(kind: string): void {
    this._busy = false;
    if (this._secondPart) {
      timed(kind, this._host.source().title, this._secondPart);
      this._secondPart = 0;
    }
  }

  /** Once plotly has drawn in the div: the two-task passes, and the zoom linked both ways. */
  private _bind(p: IPlotly): void {
    const node = this._node;
    if (this._bound || !node.on) {
      return;
    }
    this._bound = true;
    inTwoTasks(node, () => {
      this._secondPart = performance.now();
    });
    node.on('plotly_relayout', event => {
      const range = rangeOf(event);
      const link = this._link();
      if (range === undefined) {
        return;
      }
      const reset = range === null || near(range, this._host.source().defaultRange);
      if (reset ? link.range !== null : !near(range, link.range)) {
        link.publish(reset ? null : range, node);
      }
    });
    node.on('plotly_doubleclick', () => this._link().publish(null, node));
    this._stopLink = this._link().subscribe((range, from) => {
      if (from !== node) {
        const update = range ?? this._host.source().defaultRange;
        void p.relayout(node, update ? { 'xaxis.range': [...update] } : { 'xaxis.autorange': true });
      }
    });
  }

  private readonly _config: Record<string, unknown>;
  private readonly _ownLink = new XLink();
  private _plotly: IPlotly | null = null;
  private _bound = false;
  private _frame = 0;
  private _width = 0;
  // What was last given to plotly: a redraw of the same figure (new lines came, no new
  // point) is skipped, since each costs plotly a full layout pass.
  private _drawn = '';
  // The shape (all but the points) of what the last `react` drew.
  private _shape = '';
  // The first draw is the figure's frame (its layout and legend, no trace drawn), the figure
  // itself the next task's: plotly's first draw of a whole figure is one long task.
  private _framed = false;
  // Whether plotly has set the div up before the frame, in an empty pass of its own.
  private _set = false;
  // A plot pass drawn in two tasks: its second part's start, for the User Timing.
  private _secondPart = 0;
  // A plot pass in progress (its second part not drawn yet): no other draw starts meanwhile.
  private _busy = false;
  private _stopLink = (): void => undefined;
}
