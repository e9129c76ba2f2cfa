/**
 * Pure: what the Scaling tab shows, from run summaries the kernel stored
 * (`summary.throughput` and `summary.final` from `scaling.Throughput`,
 * `summary.probe` from `%distributed probe`, `summary.sweep` and `sweep_id`).
 * Efficiency is `%distributed compare`'s rule: throughput(n) / (n × the
 * smallest run's throughput per rank).
 */

import type { ProbePair, ProbeSummary, Run } from './wire';

export interface ICompareRow {
  id: string;
  worldSize: number;
  throughput: number;
  ideal: number;
  efficiency: number;
  globalBatch: number | null;
  warning: string | null;
}

export interface ISweepRow {
  id: string;
  values: string;
  state: string;
  throughput: number | null;
  final: string;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** The runs of the selected run's cell (same source) that measured samples/s, by world size. */
export function compareRows(runs: readonly Run[], selected: Run): ICompareRow[] {
  const same = runs
    .filter(r => r.source === selected.source && num(r.summary.throughput) !== null)
    .sort((a, b) => a.world_size - b.world_size || a.started - b.started);
  if (!same.length) {
    return [];
  }
  const base = same[0] as Run;
  const perRank = (num(base.summary.throughput) ?? 0) / base.world_size;
  return same.map(r => {
    const throughput = num(r.summary.throughput) ?? 0;
    const ideal = perRank * r.world_size;
    const previous = num(r.summary.previous_global_batch);
    const batch = num(r.summary.global_batch);
    return {
      id: r.id,
      worldSize: r.world_size,
      throughput,
      ideal,
      efficiency: ideal > 0 ? throughput / ideal : 0,
      globalBatch: batch,
      warning:
        previous !== null && batch !== null && previous !== batch
          ? `global batch changed from ${previous} to ${batch}: scale the learning rate with it`
          : null
    };
  });
}

function formatValue(value: unknown): string {
  return typeof value === 'number' ? String(Number(value.toPrecision(4))) : JSON.stringify(value);
}

/** The runs of the selected run's sweep, side by side (oldest first). */
export function sweepRows(runs: readonly Run[], selected: Run): ISweepRow[] {
  if (!selected.sweep_id) {
    return [];
  }
  return runs
    .filter(r => r.sweep_id === selected.sweep_id)
    .sort((a, b) => a.started - b.started)
    .map(r => {
      const values = (r.summary.sweep ?? {}) as { [name: string]: unknown };
      const final = (r.summary.final ?? {}) as { [name: string]: unknown };
      return {
        id: r.id,
        values: Object.entries(values)
          .map(([k, v]) => `${k}=${formatValue(v)}`)
          .join(' '),
        state: r.state,
        throughput: num(r.summary.throughput),
        final: Object.entries(final)
          .map(([k, v]) => `${k} ${formatValue(v)}`)
          .join(', ')
      };
    });
}

/** The run's probe, if it is a probe's run: with its pairs, or as listed, with their number only. */
export function probeOf(run: Run): ProbeSummary | null {
  const probe = run.summary.probe as unknown as ProbeSummary | undefined;
  return probe && (Array.isArray(probe.pairs) || typeof probe.pair_count === 'number') ? probe : null;
}

/** The bandwidth matrix of `n` ranks' pairs (GB/s, null on the diagonal), rows and columns by rank. */
export function bandwidthMatrix(n: number, pairs: readonly ProbePair[]): (number | null)[][] {
  const matrix: (number | null)[][] = Array.from({ length: n }, () => Array<number | null>(n).fill(null));
  for (const p of pairs) {
    if (p.a < n && p.b < n) {
      (matrix[p.a] as (number | null)[])[p.b] = p.bandwidth_gbs;
      (matrix[p.b] as (number | null)[])[p.a] = p.bandwidth_gbs;
    }
  }
  return matrix;
}
