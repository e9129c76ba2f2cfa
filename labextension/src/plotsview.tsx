/**
 * Render-only: the Throughput tab's plots. plotly.js is loaded on first use,
 * as its own chunk, so that the panel's entry stays small.
 */

import * as React from 'react';

import { lastSeconds } from './derive';
import { plotlyText } from './format';
import { FrameQueue } from './framequeue';
import { loadPlotly } from './loadplotly';
import { type IPlotTrace, metricTraces, samplesTraces } from './plotdata';
import type { RunLive, Series } from './runstate';
import { useTrans } from './translate';

/**
 * The least time between two redraws of one plot, in ms (plotly redraws are costly; a plot's
 * traces are computed when it is drawn, so this also bounds that work).
 */
const REDRAW_MS = 1000;

export interface IPlotProps {
  title: string;
  /** Changes whenever the traces changed. */
  version: number;
  /** The traces to draw, computed only when the plot is drawn (at most once per `REDRAW_MS`). */
  traces: () => IPlotTrace[];
  /** Show only the last this-many seconds; 0 shows everything. */
  window: number;
  xTitle?: string;
}

/** Every plot of the page draws through this queue: one plotly draw per animation frame. */
const DRAWS = new FrameQueue();

/** The theme's colours (JupyterLab's CSS variables), so plots follow light and dark themes. */
function themeColors(node: HTMLElement): ITheme {
  const style = getComputedStyle(node);
  const v = (name: string): string => style.getPropertyValue(name).trim();
  const colorway = [
    '--jp-brand-color1',
    '--jp-warn-color1',
    '--jp-success-color1',
    '--jp-error-color1',
    '--jp-accent-color1',
    '--jp-brand-color3',
    '--jp-warn-color3',
    '--jp-success-color3'
  ]
    .map(v)
    .filter(Boolean);
  return { font: v('--jp-ui-font-color1'), grid: v('--jp-border-color2'), colorway };
}

interface ITheme {
  font: string;
  grid: string;
  colorway: string[];
}

function Plot(props: IPlotProps): JSX.Element {
  const root = React.useRef<HTMLDivElement>(null);
  const [error, setError] = React.useState('');
  const lastDraw = React.useRef(-Infinity);
  // The props of the latest render: a queued draw uses them when its frame comes.
  const latest = React.useRef(props);
  latest.current = props;
  // The theme's colours, read once per theme (reading them forces a style recalculation).
  const theme = React.useRef<ITheme | null>(null);
  const [tick, setTick] = React.useState(0);
  // The plot's width, followed without forcing a layout (plotly's autosize would measure it on every draw).
  const width = React.useRef(0);
  const trans = useTrans();
  React.useEffect(() => {
    const node = root.current;
    if (!node || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(entries => {
      const w = Math.floor(entries[0]?.contentRect.width ?? 0);
      if (w !== width.current) {
        width.current = w;
        setTick(t => t + 1);
      }
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, []);
  // Redrawn in the new colours when the user switches theme (JupyterLab names it on <body>).
  React.useEffect(() => {
    if (typeof MutationObserver === 'undefined') {
      return;
    }
    const observer = new MutationObserver(() => {
      theme.current = null;
      setTick(t => t + 1);
    });
    observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-name'] });
    return () => observer.disconnect();
  }, []);
  const xTitle = props.xTitle ?? trans.__('s since start');

  React.useEffect(() => {
    const wait = lastDraw.current + REDRAW_MS - performance.now();
    if (wait > 0) {
      // Drawn recently: draw the latest data once the interval is over.
      const timer = setTimeout(() => setTick(t => t + 1), wait);
      return () => clearTimeout(timer);
    }
    const node = root.current;
    if (!node) {
      return undefined;
    }
    lastDraw.current = performance.now();
    DRAWS.request(node, () =>
      loadPlotly()
        .then(Plotly => {
          const plotWidth = width.current || node.clientWidth;
          if (!node.isConnected || plotWidth <= 0) {
            return; // Gone, or not laid out yet: the resize observer asks again.
          }
          lastDraw.current = performance.now();
          const { traces: computeTraces, title, window } = latest.current;
          const traces = computeTraces();
          const shown = lastSeconds(
            traces.map(t => t.series),
            window
          );
          const data = traces.map((t, i) => ({
            x: (shown[i] as Series).x,
            y: (shown[i] as Series).y,
            name: plotlyText(t.name),
            type: 'scatter' as const,
            mode: 'lines' as const,
            line: { width: t.dash ? 3 : 1.5, dash: t.dash ? 'dot' : 'solid' }
          }));
          theme.current ??= themeColors(node);
          const { font, grid, colorway } = theme.current;
          const axis = { gridcolor: grid || undefined, zerolinecolor: grid || undefined };
          const layout = {
            paper_bgcolor: 'rgba(0,0,0,0)',
            plot_bgcolor: 'rgba(0,0,0,0)',
            font: font ? { color: font } : {},
            ...(colorway.length ? { colorway } : {}),
            // Metric names are the user's: shown as text, never as plotly's HTML.
            title: { text: plotlyText(title), font: { size: 13 } },
            margin: { l: 48, r: 8, t: 32, b: 36 },
            height: 220,
            autosize: true,
            xaxis: { ...axis, title: { text: plotlyText(xTitle) } },
            yaxis: axis,
            showlegend: traces.length <= 16,
            legend: { font: { size: 10 } }
          };
          return Plotly.react(node, data, layout, { displaylogo: false });
        })
        .catch((e: unknown) => {
          setError(trans.__('cannot draw the plot: %1', String(e)));
        })
    );
    return undefined;
  }, [props.version, props.title, props.window, tick]);

  // When the plot goes: no draw for it any more, and plotly's state of it freed. (The node is
  // taken now: React empties the ref before this cleanup runs.)
  React.useEffect(() => {
    const node = root.current;
    return () => {
      if (node) {
        DRAWS.cancel(node);
        void loadPlotly().then(P => P.purge(node));
      }
    };
  }, []);

  return (
    <figure className="jp-Distributed-plot" aria-label={trans.__('%1 plot', props.title)}>
      {error ? <p className="jp-Distributed-error">{error}</p> : null}
      <div ref={root} />
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
        />
      ) : (
        <p className="jp-Distributed-empty">{trans.__('No throughput yet: call report(samples=n) in the cell')}</p>
      )}
      {metricPlots(live, live.metrics.keys(), origin, props.window)}
      {metricPlots(live, live.system.keys(), origin, props.window)}
    </div>
  );
}
