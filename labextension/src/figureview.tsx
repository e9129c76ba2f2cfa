/**
 * Render-only: one plotly.js figure of the panel (a line plot, the bandwidth
 * heatmap), drawn with `Plotly.react` from what `build()` returns when it is
 * drawn: at most 2 redraws a second, none while it cannot be seen (a
 * hidden tab or page, scrolled out of view; `redraw.ts`). plotly gives the hover (unified on x), zoom, pan, the
 * double-click reset, the legend that toggles a trace and the PNG export;
 * the modebar has a CSV download of the figure's data too. Plots given one
 * `XLink` share their x range: a zoom in one zooms the others.
 */

import * as React from 'react';
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
import { emptyOf, frameOf } from './firstdraw';
import { figureKey, livePoints, shapeOf } from './livepoints';
import { type IGraphDiv, type IPlotly, loadPlotly } from './plotly';
import { RedrawGate, XLink } from './redraw';
import { useTrans } from './translate';

export interface IFigureProps {
  title: string;
  /** The figure's accessible name. */
  label: string;
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
  /** Something other than the data that needs a redraw (the smoothing). */
  style?: string;
  /**
   * An empty pass first (plotly sets the div up), so that the frame's pass is drawn in two tasks
   * as well: for figures whose frame is long (a legend); one task more before the figure.
   */
  splitFrame?: boolean;
}

/** When a figure looks at the theme's colours again after JupyterLab named a new theme, in ms. */
const THEME_SETTLE_MS = [300, 1000, 3000];

/** The longest slice of a figure's `ready` work, in ms, so that a frame's task stays short. */
const SLICE_MS = 8;

export function Figure(props: IFigureProps): JSX.Element {
  const div = React.useRef<IGraphDiv>(null);
  const latest = React.useRef(props);
  latest.current = props;
  const gate = React.useRef<RedrawGate | null>(null);
  const [error, setError] = React.useState('');
  const trans = useTrans();

  React.useEffect(() => {
    const node = div.current;
    if (!node) {
      return undefined;
    }
    const own = new XLink();
    const linkOf = (): XLink => latest.current.link ?? own;
    let plotly: IPlotly | null = null;
    let bound = false;
    let frame = 0;
    let first: ReturnType<typeof setTimeout> | undefined;
    // What was last given to plotly: a redraw of the same figure (new lines came, no new
    // point) is skipped, since each costs plotly a full layout pass.
    let drawn = '';
    // The shape (all but the points) of what the last `react` drew.
    let shape = '';
    // The first draw is the figure's frame (its layout and legend, no trace drawn), the figure
    // itself the next task's: plotly's first draw of a whole figure is one long task.
    let framed = false;
    // Whether plotly has set the div up before the frame, in an empty pass of its own.
    let set = false;
    // Scrolled out of view (a tab's lower plots), a figure waits like a hidden one.
    let inView = true;
    const visible = (): boolean =>
      inView && document.visibilityState !== 'hidden' && node.isConnected && node.getClientRects().length > 0;
    const config = {
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
            plotly
              ?.downloadImage(node, { format: 'png', filename: fileName(latest.current.title) })
              .catch((e: unknown) => setError(trans.__('cannot export the PNG: %1', String(e))));
          }
        },
        {
          name: 'csv',
          title: trans.__('Download data as CSV'),
          icon: CSV_ICON,
          click: () => download(`${fileName(latest.current.title)}.csv`, latest.current.csv())
        }
      ]
    };
    // A plot pass drawn in two tasks: its second part's start, for the User Timing.
    let secondPart = 0;
    // A plot pass in progress (its second part not drawn yet): no other draw starts meanwhile.
    let busy = false;
    const settled = (kind: string): void => {
      busy = false;
      if (secondPart) {
        timed(kind, latest.current.title, secondPart);
        secondPart = 0;
      }
    };
    const bind = (p: IPlotly): void => {
      if (bound || !node.on) {
        return;
      }
      bound = true;
      inTwoTasks(node, () => {
        secondPart = performance.now();
      });
      node.on('plotly_relayout', event => {
        const range = rangeOf(event);
        const link = linkOf();
        if (range === undefined) {
          return;
        }
        const reset = range === null || near(range, latest.current.defaultRange);
        if (reset ? link.range !== null : !near(range, link.range)) {
          link.publish(reset ? null : range, node);
        }
      });
      node.on('plotly_doubleclick', () => linkOf().publish(null, node));
      stopLink = linkOf().subscribe((range, from) => {
        if (from !== node) {
          const update = range ?? latest.current.defaultRange;
          void p.relayout(node, update ? { 'xaxis.range': [...update] } : { 'xaxis.autorange': true });
        }
      });
    };
    const draw = (): void => {
      const { ready, build, title } = latest.current;
      if (!plotly) {
        return;
      }
      if (busy) {
        gate.current?.requestSoon(); // once the pass in progress is drawn
        return;
      }
      const deadline = performance.now() + SLICE_MS;
      if (ready && !ready(() => performance.now() >= deadline)) {
        frame = requestAnimationFrame(() => gate.current?.request()); // the next slice, then the draw
        return;
      }
      try {
        const { data, layout } = build(themeOf(node));
        const zoomed = linkOf().range;
        if (zoomed) {
          layout.xaxis = { ...(layout.xaxis as object), range: [...zoomed], autorange: false };
        }
        const p = plotly;
        fitHeight(node, layout);
        if (!set && latest.current.splitFrame) {
          set = true;
          gate.current?.partial();
          const start = performance.now();
          busy = true;
          p.react(node, [], emptyOf(layout), config).then(
            () => {
              settled('init 2');
              bind(p);
            },
            () => settled('init 2')
          );
          timed('init', title, start);
          return;
        }
        if (!framed) {
          framed = true;
          gate.current?.partial();
          const frame = frameOf({ data, layout });
          const start = performance.now();
          busy = true;
          p.react(node, frame.data, frame.layout, config).then(
            () => {
              settled('frame 2');
              bind(p);
            },
            () => settled('frame 2') // the figure's own draw, next, says what failed
          );
          timed('frame', title, start);
          return;
        }
        const nextShape = shapeOf({ data, layout });
        const key = figureKey(nextShape, { data, layout }, String(latest.current.version));
        if (key === drawn) {
          return;
        }
        drawn = key;
        // Only the points changed, inside the axes drawn: moved without a plot pass.
        const points = bound
          ? livePoints(shape, { data, layout }, drawnYRange(node), zoomed !== null, nextShape)
          : null;
        if (points) {
          node.dataset.moves = String(Number(node.dataset.moves ?? 0) + 1);
          const start = performance.now();
          p.animate(node, points, ANIMATE_NOW).catch(() => {
            drawn = '';
            shape = '';
          });
          timed('move', title, start);
          return;
        }
        shape = nextShape;
        // How each figure was drawn (`bench_panel.spec.ts` reports it): plot passes and moves.
        node.dataset.reacts = String(Number(node.dataset.reacts ?? 0) + 1);
        const start = performance.now();
        busy = true;
        p.react(node, data, layout, config).then(
          () => {
            settled('draw 2');
            bind(p);
            node.setAttribute('aria-label', trans.__('%1: %2 traces', title, data.length));
            node.setAttribute('data-traces', String(data.length));
          },
          (e: unknown) => {
            settled('draw 2');
            drawn = '';
            shape = '';
            setError(trans.__('cannot draw the plot: %1', String(e)));
          }
        );
        timed('draw', title, start);
        setError('');
      } catch (e) {
        setError(trans.__('cannot draw the plot: %1', String(e)));
      }
    };
    let stopLink = (): void => undefined;
    const g = new RedrawGate(draw, {
      now: () => performance.now(),
      visible,
      later: (fn, ms) => {
        const timer = setTimeout(fn, ms);
        return () => clearTimeout(timer);
      }
    });
    gate.current = g;
    const shown = (): void => g.shown();
    document.addEventListener('visibilitychange', shown);
    // A figure shown again draws what came meanwhile; one whose width changed (the panel
    // resized) is laid out again by plotly.
    let width = 0;
    const resized = (): void => {
      const w = node.clientWidth;
      if (plotly && bound && w > 0 && w !== width) {
        void plotly.Plots.resize(node);
      }
      width = w;
      g.shown();
    };
    const observer = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(resized);
    observer?.observe(node);
    const seen =
      typeof IntersectionObserver === 'undefined'
        ? null
        : new IntersectionObserver(entries => {
            inView = entries.some(e => e.isIntersecting);
            g.shown();
          });
    seen?.observe(node);
    // Drawn in the new colours when the user switches theme (JupyterLab names it on <body>).
    // JupyterLab may name the new theme before its CSS applies: a draw at once can read the old
    // colours, so the figure looks again a little later (an unchanged figure is not redrawn).
    const settling: ReturnType<typeof setTimeout>[] = [];
    const themes = new MutationObserver(() => {
      g.request();
      settling.push(...THEME_SETTLE_MS.map(ms => setTimeout(() => g.request(), ms)));
    });
    themes.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-name'] });
    loadPlotly().then(
      p => {
        plotly = p;
        // Each figure's first draw in a task of its own: the figures of a tab shown at once
        // would otherwise all draw in the one task that resolves this promise.
        first = setTimeout(() => g.request(), 0);
      },
      (e: unknown) => setError(trans.__('cannot load plotly.js: %1', String(e)))
    );
    return () => {
      g.stop();
      clearTimeout(first);
      cancelAnimationFrame(frame);
      stopLink();
      observer?.disconnect();
      seen?.disconnect();
      themes.disconnect();
      settling.forEach(clearTimeout);
      document.removeEventListener('visibilitychange', shown);
      plotly?.purge(node);
    };
  }, []);

  // New data arrives in the stream message's task with the panel's render: drawn in a later one.
  React.useEffect(
    () => gate.current?.requestSoon(),
    [props.version, props.title, props.style, props.defaultRange?.join()]
  );

  return (
    <figure className="jp-Distributed-plot" aria-label={props.label}>
      {/* Metric names are the user's: text nodes, never HTML. */}
      <figcaption className="jp-Distributed-plotTitle">{props.title}</figcaption>
      {error ? <p className="jp-Distributed-error">{error}</p> : null}
      <div
        ref={div}
        className="jp-Distributed-figure"
        role="img"
        aria-label={trans.__('%1: no data yet', props.title)}
      />
    </figure>
  );
}
