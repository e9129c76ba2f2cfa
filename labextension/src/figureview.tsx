/**
 * Render-only: one plotly.js figure of the panel (a line plot, the bandwidth
 * heatmap), drawn with `Plotly.react` from what `build()` returns when it is
 * drawn: at most 2 redraws a second, none while it cannot be seen (a
 * hidden tab or page, scrolled out of view; `redraw.ts`). plotly gives the hover (unified on x), zoom, pan, the
 * double-click reset, the legend that toggles a trace and the PNG export;
 * the modebar has a CSV download of the figure's data too. Plots given one
 * `XLink` share their x range: a zoom in one zooms the others. How a draw is
 * done is `figuredraw.ts`'s; this view says when, and owns the div.
 */

import * as React from 'react';
import { FigureDraw, type IFigureSource } from './figuredraw';
import { type IGraphDiv, loadPlotly } from './plotly';
import { RedrawGate } from './redraw';
import { useTrans } from './translate';

export interface IFigureProps extends IFigureSource {
  /** The figure's accessible name. */
  label: string;
  /** Something other than the data that needs a redraw (the smoothing). */
  style?: string;
}

/** When a figure looks at the theme's colours again after JupyterLab named a new theme, in ms. */
const THEME_SETTLE_MS = [300, 1000, 3000];

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
    const drawing = new FigureDraw(node, {
      source: () => latest.current,
      gate: () => gate.current,
      setError,
      trans
    });
    let first: ReturnType<typeof setTimeout> | undefined;
    // Scrolled out of view (a tab's lower plots), a figure waits like a hidden one.
    let inView = true;
    const visible = (): boolean =>
      inView && document.visibilityState !== 'hidden' && node.isConnected && node.getClientRects().length > 0;
    const g = new RedrawGate(() => drawing.draw(), {
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
    const resized = (): void => {
      drawing.resized(node.clientWidth);
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
        drawing.loaded(p);
        // Each figure's first draw in a task of its own: the figures of a tab shown at once
        // would otherwise all draw in the one task that resolves this promise.
        first = setTimeout(() => g.request(), 0);
      },
      (e: unknown) => setError(trans.__('cannot load plotly.js: %1', String(e)))
    );
    return () => {
      g.stop();
      clearTimeout(first);
      observer?.disconnect();
      seen?.disconnect();
      themes.disconnect();
      settling.forEach(clearTimeout);
      document.removeEventListener('visibilitychange', shown);
      drawing.stop();
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
