/**
 * Render-only: the Throughput tab's plots, each a plotly.js figure
 * (`figureview.tsx`) of traces from the model's series (`plotdata.ts`,
 * `figures.ts`). The stacked plots of one run share their x range (linked
 * zoom) and the smoothing control. The Scaling tab draws its curves with
 * the same `Plot`, and the inline `--widget` view uses this tab's view.
 */

import * as React from 'react';

import { lastSeconds, rankRates } from './derive';
import { LabelledInput } from './field';
import { figureCsv, heightWithLegend, type IPlotTrace, lineLayout, scatterData, type XScale } from './figures';
import { Figure } from './figureview';
import { extent, formatBytes, integerTicks, logAxis } from './lineplot';
import { roundedEnd } from './livepoints';
import { BAND_RANKS, slowest } from './manyranks';
import { metricReady, metricTraces, metricUnit, runEnd, samplesReady, samplesTraces } from './plotdata';
import { RankPicker } from './rankpicker';
import { STRAGGLER_THRESHOLD, stragglers } from './rates';
import { XLink } from './redraw';
import type { RunLive, Series } from './runstate';
import type { ShownRanks } from './shownranks';
import { useTrans } from './translate';

/** A plot's height in CSS pixels, with a legend of up to `LEGEND_ROWS_IN` entries. */
export const PLOT_HEIGHT = 240;

export interface IPlotProps {
  title: string;
  /** The figure's accessible name; `<title> plot` when not given. */
  label?: string;
  /** Changes whenever the traces changed. */
  version: number | string;
  /** The traces to draw, computed only when the plot is drawn (at most 2 times a second). */
  traces: () => IPlotTrace[];
  /** Work the traces need first, done in slices until `done()`; true once it is over. */
  ready?: (done: () => boolean) => boolean;
  /** Show only the last this-many seconds; 0 shows everything. */
  window: number;
  xTitle?: string;
  /** The y axis' title: its unit (none: no title). */
  yTitle?: string;
  /** The x axis: linear (a time axis, the default), whole numbers or log sizes in bytes. */
  xScale?: XScale;
  /** The plots of one run share it: linked zoom. */
  link?: XLink;
  /** The x range before any zoom (the run's, shared by its plots). */
  range?: [number, number] | null;
  /** TensorBoard's smoothing weight, 0 (none) to 0.99. */
  smoothing?: number;
  /** Something else than the data that the traces depend on (the ranks asked for). */
  style?: string;
}

/** Ticks at powers of two, labelled in bytes, for a log axis of sizes. */
function byteTicks(traces: readonly IPlotTrace[]): { values: number[]; text: string[] } {
  const axis = logAxis(extent(traces.map(t => t.series.x)), 6);
  return { values: axis.ticks, text: axis.ticks.map(formatBytes) };
}

/** Whole-number ticks (world sizes), for a linear axis of them. */
function wholeTicks(traces: readonly IPlotTrace[]): { values: number[]; text: string[] } {
  const values = integerTicks(extent(traces.map(t => t.series.x)), 5);
  return { values, text: values.map(String) };
}

/** A line plot: a plotly figure of `traces()`, with hover, zoom, legend, PNG and CSV export. */
export function Plot(props: IPlotProps): JSX.Element {
  const trans = useTrans();
  const xTitle = props.xTitle ?? trans.__('s since start');
  const latest = React.useRef(props);
  latest.current = props;
  const shown = (): IPlotTrace[] => {
    const traces = latest.current.traces();
    const cut = lastSeconds(
      traces.map(t => t.series),
      latest.current.window
    );
    return traces.map((t, i) => ({ ...t, series: cut[i] as Series }));
  };
  return (
    <Figure
      title={props.title}
      label={props.label ?? trans.__('%1 plot', props.title)}
      version={props.version}
      style={`${props.smoothing ?? 0} ${props.style ?? ''}`}
      link={props.link}
      defaultRange={props.range ?? null}
      ready={props.ready}
      splitFrame
      build={theme => {
        const traces = shown();
        const { xScale, range, smoothing } = latest.current;
        const ticks = xScale === 'bytes' ? byteTicks(traces) : xScale === 'integer' ? wholeTicks(traces) : undefined;
        const data = scatterData(traces, theme, smoothing ?? 0);
        const height = heightWithLegend(PLOT_HEIGHT, data);
        return {
          data,
          layout: lineLayout(theme, { title: xTitle, scale: xScale, range, ticks }, height, latest.current.yTitle)
        };
      }}
      csv={() => figureCsv(shown(), xTitle, props.title)}
    />
  );
}

function metricPlots(
  live: RunLive,
  names: Iterable<string>,
  shared: Omit<IPlotProps, 'title' | 'version' | 'traces'> & {
    origin: number;
    slow: ReadonlySet<number>;
    shown: ReadonlySet<number>;
  }
): JSX.Element[] {
  const { origin, slow, shown, ...rest } = shared;
  return [...names]
    .sort((a, b) => a.localeCompare(b))
    .map(name => (
      <Plot
        key={name}
        title={name}
        yTitle={metricUnit(name)}
        version={live.version}
        traces={() => metricTraces(live, name, origin, rest.window, slow, shown)}
        ready={done => metricReady(live, name, done)}
        {...rest}
      />
    ));
}

const NONE: ReadonlySet<number> = new Set();

/** The Throughput tab: samples/s, then one plot per reported metric, then the system samples. */
export function ThroughputView(props: {
  live: RunLive;
  /** Unix time of x = 0 (the run's start, whole seconds). */
  origin: number;
  /** Seconds of the run shown (the plot window setting); 0 shows all of it. */
  window: number;
  /** The straggler rule's threshold (`rates.ts`); the server's setting in the panel. */
  stragglerThreshold?: number;
  /** The ranks drawn as their own lines above `BAND_RANKS` ranks (none: only the stragglers). */
  shownRanks?: ShownRanks;
}): JSX.Element {
  const { live, origin, window } = props;
  const trans = useTrans();
  const [smoothing, setSmoothing] = React.useState(0);
  // One link per run: its stacked plots zoom together.
  const link = React.useMemo(() => new XLink(), [live.runId]);
  const end = runEnd(live, origin);
  const start = end === null ? 0 : window > 0 ? Math.max(0, end - window) : 0;
  // The end rounded up to a step of the span: the axis changes once a step, and the new points
  // in between are drawn without plotly's plot pass (`livepoints.ts`).
  const range: [number, number] | null = end === null ? null : [start, roundedEnd(start, end)];
  const rates = rankRates(live);
  const allSlow = stragglers(rates, props.stragglerThreshold ?? STRAGGLER_THRESHOLD);
  // Above BAND_RANKS ranks the plots show the band and the slowest stragglers, and the ranks asked for.
  const picked = props.shownRanks;
  const shown = picked?.set ?? NONE;
  const asked = picked?.key ?? '';
  const many = Math.max(live.samples.size, live.ranks.size) > BAND_RANKS;
  const slow = many ? slowest(allSlow, rates) : allSlow;
  const shared = { link, range, smoothing, window, origin, slow, shown, style: asked };
  return (
    <div className="jp-Distributed-plots" role="group" aria-label={trans.__('Throughput')}>
      <LabelledInput
        label={trans.__('smoothing')}
        type="range"
        min={0}
        max={0.99}
        step={0.01}
        value={smoothing}
        onChange={e => setSmoothing(Number(e.currentTarget.value))}
      >
        <output>{smoothing.toFixed(2)}</output>
      </LabelledInput>
      {many && picked ? <RankPicker shown={picked} /> : null}
      {slow.size < allSlow.size ? (
        <p className="jp-Distributed-empty" role="status">
          {trans.__('%1 stragglers: the %2 slowest drawn as their own lines', allSlow.size, slow.size)}
        </p>
      ) : null}
      {live.samples.size > 0 ? (
        <Plot
          title="samples/s"
          version={live.version}
          traces={() => samplesTraces(live, origin, window, slow, shown)}
          style={asked}
          ready={done => samplesReady(live, done)}
          link={link}
          range={range}
          smoothing={smoothing}
          window={window}
        />
      ) : (
        <p className="jp-Distributed-empty">{trans.__('No throughput yet: call report(samples=n) in the cell')}</p>
      )}
      {metricPlots(live, live.metrics.keys(), shared)}
      {metricPlots(live, live.system.keys(), shared)}
    </div>
  );
}
