/**
 * Render-only: the Throughput tab's plots. plotly.js is loaded on first use,
 * as its own chunk, so that the panel's entry stays small.
 */

import * as React from 'react';

import { acrossRanks, lastSeconds, MAX_RANK_TRACES } from './derive';
import { plotlyText } from './format';
import type { MetricSeries, Series } from './runstate';
import { useTrans } from './translate';

/** The least time between two redraws of one plot, in ms (plotly redraws are costly). */
const REDRAW_MS = 1000;

type Plotly = typeof import('plotly.js-basic-dist-min');

let plotly: Promise<Plotly> | null = null;

/** plotly.js, imported once. */
export function loadPlotly(): Promise<Plotly> {
  plotly ??= import('plotly.js-basic-dist-min');
  return plotly;
}

export interface IPlotTrace {
  name: string;
  series: Series;
  dash?: boolean;
}

export interface IPlotProps {
  title: string;
  /** Changes whenever the traces changed. */
  version: number;
  traces: IPlotTrace[];
  /** Show only the last this-many seconds; 0 shows everything. */
  window: number;
  xTitle?: string;
}

/** The theme's colours (JupyterLab's CSS variables), so plots follow light and dark themes. */
function themeColors(node: HTMLElement): { font: string; grid: string; colorway: string[] } {
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

function Plot(props: IPlotProps): JSX.Element {
  const root = React.useRef<HTMLDivElement>(null);
  const [error, setError] = React.useState('');
  const lastDraw = React.useRef(-Infinity);
  const [tick, setTick] = React.useState(0);
  const trans = useTrans();
  // Redrawn in the new colours when the user switches theme (JupyterLab names it on <body>).
  React.useEffect(() => {
    if (typeof MutationObserver === 'undefined') {
      return;
    }
    const observer = new MutationObserver(() => setTick(t => t + 1));
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
    lastDraw.current = performance.now();
    let cancelled = false;
    loadPlotly()
      .then(Plotly => {
        const node = root.current;
        if (cancelled || !node) {
          return;
        }
        const shown = lastSeconds(
          props.traces.map(t => t.series),
          props.window
        );
        const data = props.traces.map((t, i) => ({
          x: (shown[i] as Series).x,
          y: (shown[i] as Series).y,
          name: plotlyText(t.name),
          type: 'scatter' as const,
          mode: 'lines' as const,
          line: { width: t.dash ? 3 : 1.5, dash: t.dash ? 'dot' : 'solid' }
        }));
        const theme = themeColors(node);
        const axis = { gridcolor: theme.grid || undefined, zerolinecolor: theme.grid || undefined };
        const layout = {
          paper_bgcolor: 'rgba(0,0,0,0)',
          plot_bgcolor: 'rgba(0,0,0,0)',
          font: theme.font ? { color: theme.font } : {},
          ...(theme.colorway.length ? { colorway: theme.colorway } : {}),
          // Metric names are the user's: shown as text, never as plotly's HTML.
          title: { text: plotlyText(props.title), font: { size: 13 } },
          margin: { l: 48, r: 8, t: 32, b: 36 },
          height: 220,
          autosize: true,
          xaxis: { ...axis, title: { text: plotlyText(xTitle) } },
          yaxis: axis,
          showlegend: props.traces.length <= 16,
          legend: { font: { size: 10 } }
        };
        return Plotly.react(node, data, layout, { displaylogo: false, responsive: true });
      })
      .catch((e: unknown) => {
        if (!cancelled) {
          setError(trans.__('cannot draw the plot: %1', String(e)));
        }
      });
    return () => {
      cancelled = true;
    };
  }, [props.version, props.title, props.window, tick]);

  React.useEffect(
    () => () => {
      const node = root.current;
      if (node && plotly) {
        void plotly.then(P => P.purge(node));
      }
    },
    []
  );

  return (
    <figure className="jp-Distributed-plot" aria-label={trans.__('%1 plot', props.title)}>
      {error ? <p className="jp-Distributed-error">{error}</p> : null}
      <div ref={root} />
    </figure>
  );
}

/** One line per rank, or min / median / max across ranks when there are many. */
function rankTraces(byRank: ReadonlyMap<number, Series>, origin: number): IPlotTrace[] {
  if (byRank.size > MAX_RANK_TRACES) {
    const { min, median, max } = acrossRanks(byRank, origin);
    return [
      { name: 'max', series: max },
      { name: 'median', series: median, dash: true },
      { name: 'min', series: min }
    ];
  }
  return [...byRank.entries()]
    .sort(([a], [b]) => a - b)
    .map(([rank, s]) => ({ name: `rank ${rank}`, series: { x: s.x.map(t => t - origin), y: s.y } }));
}

function metricPlots(series: MetricSeries, origin: number, version: number, window: number): JSX.Element[] {
  return [...series.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, byRank]) => (
      <Plot key={name} title={name} version={version} window={window} traces={rankTraces(byRank, origin)} />
    ));
}

export function ThroughputView(props: {
  version: number;
  origin: number;
  perRank: Map<number, Series>;
  total: Series;
  metrics: MetricSeries;
  system: MetricSeries;
  /** Seconds of the run shown (the plot window setting); 0 shows all of it. */
  window: number;
}): JSX.Element {
  const trans = useTrans();
  const hasThroughput = props.perRank.size > 0;
  return (
    <div className="jp-Distributed-plots" role="group" aria-label={trans.__('Throughput')}>
      {hasThroughput ? (
        <Plot
          title="samples/s"
          version={props.version}
          window={props.window}
          traces={[
            { name: 'total', series: props.total, dash: true },
            ...(props.perRank.size > MAX_RANK_TRACES
              ? rankTraces(props.perRank, 0).map(t => ({ ...t, name: `${t.name} rank`, dash: false }))
              : [...props.perRank.entries()].map(([rank, series]) => ({
                  name: `rank ${rank}`,
                  series
                })))
          ]}
        />
      ) : (
        <p className="jp-Distributed-empty">{trans.__('No throughput yet: call report(samples=n) in the cell')}</p>
      )}
      {metricPlots(props.metrics, props.origin, props.version, props.window)}
      {metricPlots(props.system, props.origin, props.version, props.window)}
    </div>
  );
}
