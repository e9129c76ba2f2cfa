/**
 * What a run is, for its label in the runs list and the Scaling tab (pure): the first line of
 * its cell, and its kind — an advice (`%distributed advise`, whose summary has
 * `kind: "advice"`; never training), a probe (`%distributed probe`, whose cell starts with
 * `PROBE_SOURCE`), a run of a sweep, a failed run, or training (only when it reported samples:
 * `summary.throughput`, written at its end).
 */

import { isRunActive, type Run } from './wire';

/** The first line of a probe's cell (`probe.ProbeSettings.code`). */
export const PROBE_SOURCE = '# %distributed probe';

export type RunKind = 'advice' | 'probe' | 'sweep' | 'failed' | 'training';

/** `summary.kind` of the run `%distributed advise` stores (`advise/store.py`). */
export const ADVICE_KIND = 'advice';

export function isAdvice(run: Run): boolean {
  return run.summary.kind === ADVICE_KIND;
}

export function isProbe(run: Run): boolean {
  return run.source.startsWith(PROBE_SOURCE);
}

/** The run's badge; null for a cell that is none of these (no samples reported). */
export function runKind(run: Run): RunKind | null {
  if (isAdvice(run)) {
    return 'advice';
  }
  if (run.state === 'failed') {
    return 'failed';
  }
  if (isProbe(run)) {
    return 'probe';
  }
  if (run.sweep_id) {
    return 'sweep';
  }
  return typeof run.summary.throughput === 'number' ? 'training' : null;
}

/** The first non-empty line of the run's cell (`%%distributed` line left out), cut at `max`. */
export function sourceLine(run: Run, max = 60): string {
  const line =
    run.source
      .split('\n')
      .map(l => l.trim())
      .find(l => l && !l.startsWith('%%distributed')) ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** The probe of `run`'s cluster that runs now (listed as running), if any. */
export function runningProbe(runs: readonly Run[], run: Run): Run | null {
  return (
    runs.find(r => isProbe(r) && isRunActive(r.state) && (r.id === run.id || r.cluster_id === run.cluster_id)) ?? null
  );
}
