/**
 * Render-only: the Throughput tab's plots, each a canvas of our own
 * (`plotcanvas.ts`) with its title and legend as HTML text around it. The
 * Scaling tab draws its curves with the same `Plot`.
 */

import * as React from 'react';

import { DRAWS, setAttr, useCanvasState } from './canvasview';
import { lastSeconds } from './derive';
import { formatValue } from './lineplot';
import { drawPlot, type IDrawnTrace, type LineStyle, PLOT_HEIGHT, type XScale } from './plotcanvas';
import { type IPlotTrace, metricReady, metricTraces, samplesReady, samplesTraces } from './plotdata';
import type { RunLive, Series } from './runstate';
import { useTrans } from './translate';

/**
 * The least time between two redraws of one plot, in ms (a plot's traces are computed when it
 * is drawn, so this also bounds that work).
 */
const REDRAW_MS = 1000;

/** The longest slice of a plot's `ready` work, in ms, so that a frame's task stays short. */
const SLICE_MS = 8;

/** Above this many traces a plot has no legend (its summary still names them all). */
const MAX_LEGEND = 16;

export interface IPlotProps {
  title: string;
  /** The figure's accessible name; `<title> plot` when not given. */
  label?: string;
  /** Changes whenever the traces changed. */
  version: number | string;
  /** The traces to draw, computed only when the plot is drawn (at most once per `REDRAW_MS`). */
  traces: () => IPlotTrace[];
  /**
   * Work the traces need first, done in slices: it works until `done()` and says whether it is
   * over; the draw waits for it, a slice per frame (a long run's statistics catching up).
   */
  ready?: (done: () => boolean) => boolean;
  /** Show only the last this-many seconds; 0 shows everything. */
  window: number;
  xTitle?: string;
  /** The x axis: linear (a time axis, the default), whole numbers or log sizes in bytes. */
  xScale?: XScale;
}

/** A legend entry: what it shows, compared with the last one to render only on a change. */
type LegendEntry = Pick<IDrawnTrace, 'name' | 'color' | 'line'>;

function sameLegend(a: readonly LegendEntry[], b: readonly LegendEntry[]): boolean {
  return (
    a.length === b.length &&
    a.every((e, i) => e.name === b[i]?.name && e.color === b[i]?.color && e.line === b[i]?.line)
  );
}

/** A legend entry's sample of its line, as CSS borders. */
const LEGEND_LINES: Record<LineStyle, React.CSSProperties> = {
  solid: { borderTopStyle: 'solid', borderTopWidth: 2 },
  dash: { borderTopStyle: 'dashed', borderTopWidth: 3 },
  dot: { borderTopStyle: 'dotted', borderTopWidth: 2 }
};

/** A line plot on a canvas of our own, with its title and legend as HTML text. */
export function Plot(props: IPlotProps): JSX.Element {
  const canvas = React.useRef<HTMLCanvasElement>(null);
  const [error, setError] = React.useState('');
  const [legend, setLegend] = React.useState<LegendEntry[]>([]);
  const lastDraw = React.useRef(-Infinity);
  // The canvas' state (`changes`) the last draw was for: after a change the plot is drawn at once.
  const drawnFor = React.useRef(-1);
  // The props of the latest render: a queued draw uses them when its frame comes.
  const latest = React.useRef(props);
  latest.current = props;
  const [tick, setTick] = React.useState(0);
  const view = useCanvasState(canvas);
  const trans = useTrans();
  const xTitle = props.xTitle ?? trans.__('s since start');

  React.useEffect(() => {
    const wait = view.changes === drawnFor.current ? lastDraw.current + REDRAW_MS - performance.now() : 0;
    if (wait > 0) {
      // Drawn recently: draw the latest data once the interval is over.
      const timer = setTimeout(() => setTick(t => t + 1), wait);
      return () => clearTimeout(timer);
    }
    const node = canvas.current;
    if (!node) {
      return undefined;
    }
    lastDraw.current = performance.now();
    drawnFor.current = view.changes;
    const draw = (): void => {
      const plotWidth = view.width.current || node.clientWidth;
      if (!node.isConnected || plotWidth <= 0) {
        return; // Gone, or not laid out yet: the resize observer asks again.
      }
      lastDraw.current = performance.now();
      const { traces: computeTraces, title, window, ready, xScale } = latest.current;
      const deadline = lastDraw.current + SLICE_MS;
      if (ready && !ready(() => performance.now() >= deadline)) {
        DRAWS.request(node, draw); // the next slice in a coming frame, then the draw
        return;
      }
      const traces = computeTraces();
      const shown = lastSeconds(
        traces.map(t => t.series),
        window
      );
      const theme = view.theme(node);
      let drawn: IDrawnTrace[];
      try {
        drawn = drawPlot(
          node,
          plotWidth,
          traces.map((t, i) => ({ ...t, series: shown[i] as Series })),
          { title: xTitle, scale: xScale },
          theme
        );
      } catch (e) {
        setError(trans.__('cannot draw the plot: %1', String(e)));
        return;
      }
      // What a screen reader (and a test) reads: each trace's latest value.
      const values = drawn
        .slice(0, MAX_LEGEND)
        .map(t => `${t.name} ${Number.isNaN(t.last) ? trans.__('no value') : formatValue(t.last)}`);
      if (drawn.length > MAX_LEGEND) {
        values.push(trans.__('and %1 more', drawn.length - MAX_LEGEND));
      }
      setAttr(
        node,
        'aria-label',
        drawn.length ? trans.__('%1, latest: %2', title, values.join(', ')) : trans.__('%1: no data yet', title)
      );
      setAttr(node, 'data-traces', String(drawn.length));
      setAttr(node, 'data-points', String(drawn.reduce((n, t) => n + t.points, 0)));
      setAttr(node, 'data-font-color', theme.font);
      const entries = drawn.length <= MAX_LEGEND ? drawn.map(({ name, color, line }) => ({ name, color, line })) : [];
      setLegend(old => (sameLegend(old, entries) ? old : entries));
      setError('');
    };
    DRAWS.request(node, draw);
    return undefined;
  }, [props.version, props.title, props.window, tick, view.changes]);

  return (
    <figure className="jp-Distributed-plot" aria-label={props.label ?? trans.__('%1 plot', props.title)}>
      {/* Metric names are the user's: text nodes, never HTML. */}
      <figcaption className="jp-Distributed-plotTitle">{props.title}</figcaption>
      {error ? <p className="jp-Distributed-error">{error}</p> : null}
      <canvas
        ref={canvas}
        className="jp-Distributed-plotCanvas"
        role="img"
        aria-label={trans.__('%1: no data yet', props.title)}
        style={{ height: PLOT_HEIGHT }}
      />
      {legend.length ? (
        <ul className="jp-Distributed-legend" aria-label={trans.__('legend')}>
          {legend.map(entry => (
            <li key={entry.name} className="jp-Distributed-legendEntry">
              <span
                className="jp-Distributed-legendLine"
                aria-hidden="true"
                style={{ borderTopColor: entry.color, ...LEGEND_LINES[entry.line] }}
              />
              {entry.name}
            </li>
          ))}
        </ul>
      ) : null}
    </figure>
  );
}

function metricPlots(live: RunLive, names: Iterable<string>, origin: number, window: number): JSX.Element[] {
  return [...names]
    .sort((a, b) => a.localeCompare(b))
    .map(name => (
      <Plot
        key={name}
        title={name}
        version={live.version}
        window={window}
        traces={() => metricTraces(live, name, origin, window)}
        ready={done => metricReady(live, name, done)}
      />
    ));
}

/** The Throughput tab: samples/s, then one plot per reported metric, then the system samples. */
export function ThroughputView(props: {
  live: RunLive;
  /** Unix time of x = 0 (the run's start, whole seconds). */
  origin: number;
  /** Seconds of the run shown (the plot window setting); 0 shows all of it. */
  window: number;
}): JSX.Element {
  const { live, origin } = props;
  const trans = useTrans();
  return (
    <div className="jp-Distributed-plots" role="group" aria-label={trans.__('Throughput')}>
      {live.samples.size > 0 ? (
        <Plot
          title="samples/s"
          version={live.version}
          window={props.window}
          traces={() => samplesTraces(live, origin, props.window)}
          ready={done => samplesReady(live, done)}
        />
      ) : (
        <p className="jp-Distributed-empty">{trans.__('No throughput yet: call report(samples=n) in the cell')}</p>
      )}
      {metricPlots(live, live.metrics.keys(), origin, props.window)}
      {metricPlots(live, live.system.keys(), origin, props.window)}
    </div>
  );
}
