/**
 * Pure: the advice of `%distributed advise` as the Scaling tab shows it. The
 * advice is a run of its own kind (`runkind.isAdvice`) whose
 * `summary.advice` holds the layouts (`advise/enumerate.Row.to_json`), best
 * first. For the selected run the tab shows the advice itself, or else the
 * newest advice of the run's cluster: asked with `--cluster` of its cluster
 * id, or asked for the same nodes × processes per node from the same host (the
 * advisor's own key of a cluster, `advise/calibrate.cluster_key`).
 */

import type { JSONObject, JSONValue } from '@lumino/coreutils';

import { isAdvice } from './runkind';
import type { Run } from './wire';

/** What `--verify` measured of a layout. */
export interface IMeasured {
  gib: number | null;
  stepS: number | null;
  samplesPerS: number | null;
  /** The component a prediction off by more than 15 % blames; "" when none. */
  blame: string;
}

/** One layout of the advice; every number predicted unless under `measured`. */
export interface IAdviceRow {
  /** The exact `%%distributed …` line that launches it. */
  launch: string;
  layout: string;
  predictedGib: number;
  predictedStepS: number;
  predictedSamplesPerS: number;
  /** The largest share of the predicted step, e.g. "inter-node all-gather 38 %". */
  dominant: string;
  fits: boolean;
  pareto: boolean;
  measured: IMeasured | null;
}

export interface IAdvice {
  /** The advice's run. */
  run: Run;
  model: string;
  nodes: number;
  procsPerNode: number;
  globalBatch: number | null;
  /** False for the analytic fallback (nothing traced: its note says what it left out). */
  traced: boolean;
  /** Predictions corrected by an earlier `--verify` on this cluster. */
  calibrated: boolean;
  notes: string[];
  rows: IAdviceRow[];
}

function object(value: JSONValue | undefined): JSONObject | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
}

function num(value: JSONValue | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function text(value: JSONValue | undefined): string {
  return typeof value === 'string' ? value : '';
}

function measured(value: JSONValue | undefined): IMeasured | null {
  const m = object(value);
  return m ? { gib: num(m.gib), stepS: num(m.step_s), samplesPerS: num(m.samples_per_s), blame: text(m.blame) } : null;
}

function row(value: JSONValue): IAdviceRow | null {
  const r = object(value);
  const launch = text(r?.launch);
  if (!r || !launch.startsWith('%%distributed')) {
    return null;
  }
  return {
    launch,
    layout: text(r.layout),
    predictedGib: num(r.predicted_gib) ?? 0,
    predictedStepS: num(r.predicted_step_s) ?? 0,
    predictedSamplesPerS: num(r.predicted_samples_per_s) ?? 0,
    dominant: text(r.dominant),
    fits: r.fits !== false,
    pareto: r.pareto === true,
    measured: measured(r.measured)
  };
}

/** The advice an advice run holds; null for any other run (or one without layouts). */
export function adviceOf(run: Run): IAdvice | null {
  const advice = isAdvice(run) ? object(run.summary.advice) : null;
  const layouts = advice?.layouts;
  if (!advice || !Array.isArray(layouts)) {
    return null;
  }
  const inputs = object(advice.inputs) ?? {};
  const rows = layouts.map(row).filter((r): r is IAdviceRow => r !== null);
  return rows.length
    ? {
        run,
        model: text(inputs.model),
        nodes: num(inputs.nodes) ?? 1,
        procsPerNode: num(inputs.procs_per_node) ?? run.world_size,
        globalBatch: num(inputs.global_batch),
        traced: inputs.traced !== false,
        calibrated: object(inputs.calibration) !== null,
        notes: Array.isArray(advice.notes) ? advice.notes.map(text).filter(n => n) : [],
        rows
      }
    : null;
}

/** A cell's run's nodes × processes per node, from its stored spec (`spec.Spec.to_json`). */
function shapeOf(run: Run): string | null {
  const layout = object(run.spec.layout);
  const nodes = num(layout?.nodes);
  const perNode = num(layout?.procs_per_node);
  return nodes !== null && perNode !== null ? `${nodes}x${perNode}` : null;
}

/** The advice to show with `selected`: its own, or the newest of its cluster (see above). */
export function adviceFor(runs: readonly Run[], selected: Run): IAdvice | null {
  if (isAdvice(selected)) {
    return adviceOf(selected);
  }
  const shape = shapeOf(selected);
  let best: IAdvice | null = null;
  for (const run of runs) {
    if (!isAdvice(run) || (best && best.run.started >= run.started)) {
      continue;
    }
    const advice = adviceOf(run);
    const sameCluster = !!run.cluster_id && run.cluster_id === selected.cluster_id;
    const sameShape =
      advice !== null &&
      shape !== null &&
      !run.cluster_id &&
      run.host === selected.host &&
      shape === `${advice.nodes}x${advice.procsPerNode}`;
    if (advice && (sameCluster || sameShape)) {
      best = advice;
    }
  }
  return best;
}

function figure(value: number): string {
  return String(Number(value.toPrecision(3)));
}

/** The new cell's text for a layout: its launch line, then a comment saying where it came from. */
export function cellText(advice: IAdvice, row: IAdviceRow): string {
  return (
    `${row.launch}\n# advice ${advice.run.id}: ${row.layout}, predicted ${figure(row.predictedGib)} GiB/rank, ` +
    `${figure(row.predictedStepS)} s/step, ${figure(row.predictedSamplesPerS)} samples/s`
  );
}
