/**
 * Render-only: the Throughput tab's plots. plotly.js is loaded on first use,
 * as its own chunk, so that the panel's entry stays small.
 */

import * as React from 'react';

import { MAX_RANK_TRACES, acrossRanks } from './derive';
import type { MetricSeries, Series } from './runstate';

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
  xTitle?: string;
}

function Plot(props: IPlotProps): JSX.Element {
  const root = React.useRef<HTMLDivElement>(null);
  const [error, setError] = React.useState('');
  const lastDraw = React.useRef(-Infinity);
  const [tick, setTick] = React.useState(0);

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
        const data = props.traces.map(t => ({
          x: t.series.x,
          y: t.series.y,
          name: t.name,
          type: 'scatter' as const,
          mode: 'lines' as const,
          line: { width: t.dash ? 3 : 1.5, dash: t.dash ? 'dot' : 'solid' }
        }));
        const layout = {
          title: { text: props.title, font: { size: 13 } },
          margin: { l: 48, r: 8, t: 32, b: 36 },
          height: 220,
          autosize: true,
          xaxis: { title: { text: props.xTitle ?? 's since start' } },
          showlegend: props.traces.length <= 16,
          legend: { font: { size: 10 } }
        };
        return Plotly.react(node, data, layout, { displaylogo: false, responsive: true });
      })
      .catch((e: unknown) => {
        if (!cancelled) {
          setError(`cannot draw the plot: ${String(e)}`);
        }
      });
    return () => {
      cancelled = true;
    };
  }, [props.version, props.title, tick]);

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
    <figure className="jp-Distributed-plot" aria-label={`${props.title} plot`}>
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

function metricPlots(series: MetricSeries, origin: number, version: number): JSX.Element[] {
  return [...series.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, byRank]) => (
      <Plot key={name} title={name} version={version} traces={rankTraces(byRank, origin)} />
    ));
}

export function ThroughputView(props: {
  version: number;
  origin: number;
  perRank: Map<number, Series>;
  total: Series;
  metrics: MetricSeries;
  system: MetricSeries;
}): JSX.Element {
  const hasThroughput = props.perRank.size > 0;
  return (
    <div className="jp-Distributed-plots" aria-label="Throughput">
      {hasThroughput ? (
        <Plot
          title="samples/s"
          version={props.version}
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
        <p className="jp-Distributed-empty">
          No throughput yet: call report(samples=n) in the cell
        </p>
      )}
      {metricPlots(props.metrics, props.origin, props.version)}
      {metricPlots(props.system, props.origin, props.version)}
    </div>
  );
}
