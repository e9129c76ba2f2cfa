/**
 * The runs list as the panel shows it: the polled list, with the selected run's state taken
 * from its live stream when the stream is ahead (the list is polled every few seconds, the
 * stream is pushed), so that the list row and the run's header never disagree. No I/O.
 */

import { isRunActive, type Run, type RunState } from './wire';

/** How far a run has gone: each source is taken only where it is further along. */
function stage(state: RunState): number {
  return state === 'pending' ? 0 : state === 'queued' ? 1 : state === 'running' ? 2 : 3;
}

/**
 * `runs` with the entry of `live` (the selected run as its stream knows it) brought up to its
 * state, message and end where the stream is further along; the list is kept where it is ahead
 * (it may have polled an end that the stream has not delivered yet).
 */
export function withLiveRun(runs: readonly Run[], live: Run | null): readonly Run[] {
  if (!live) {
    return runs;
  }
  const i = runs.findIndex(run => run.id === live.id);
  const listed = runs[i];
  if (!listed || !isRunActive(listed.state) || stage(live.state) <= stage(listed.state)) {
    return runs;
  }
  const shown = [...runs];
  shown[i] = { ...listed, state: live.state, message: live.message, ended: live.ended };
  return shown;
}

/** `withLiveRun`, computed again only when the list or the live run changes (views read it often). */
export class LiveRunList {
  get(runs: readonly Run[], live: Run | null): readonly Run[] {
    if (runs !== this._runs || live !== this._live) {
      this._runs = runs;
      this._live = live;
      this._shown = withLiveRun(runs, live);
    }
    return this._shown;
  }

  private _runs: readonly Run[] = [];
  private _live: Run | null = null;
  private _shown: readonly Run[] = [];
}
