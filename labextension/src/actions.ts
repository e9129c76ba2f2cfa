/**
 * The control actions on the selected run: cancel it, stop its cluster (once
 * the user confirms, then saying what was stopped), ask for its stacks, delete
 * it. Each goes to the server, which queues it in the history for the kernel
 * running the run (a busy kernel still sees it) or, for a delete, removes the
 * finished run; the model then refreshes. No DOM.
 */

import type { DistributedApi } from './api';
import { formatRanks } from './format';
import type { Run } from './wire';

/** How long the line saying which cluster was stopped stays, in ms. */
export const NOTICE_MS = 8000;

/** The cluster of a run as the user knows it: "local × 4 (ranks 0-3)". */
export function clusterName(run: Run): string {
  const size = run.backend ? `${run.backend} × ${run.world_size}` : `× ${run.world_size}`;
  return run.ranks.length ? `${size} (${formatRanks(run.ranks)})` : size;
}

export interface IActionsOptions {
  /** Asks the user whether to stop the cluster named; true to go on (none: always go on). */
  confirmStop?: (cluster: string) => Promise<boolean>;
  /** Called when the transient notice changes (it clears itself after `noticeMs`). */
  changed?: () => void;
  noticeMs?: number;
}

export class RunActions {
  /**
   * @param selected - the run an action applies to (none: the action does nothing)
   * @param done - called after each action with its error message ('' when it succeeded)
   */
  constructor(
    private readonly _api: DistributedApi,
    private readonly _selected: () => Run | null,
    private readonly _done: (error: string) => Promise<void>,
    private readonly _deleted: (runId: string) => void = () => undefined,
    private readonly _options: IActionsOptions = {}
  ) {}

  /** The cluster the last Stop cluster stopped ("local × 4 (ranks 0-3)"), for a while; '' else. */
  get stopped(): string {
    return this._stopped;
  }

  /** Delete the selected run and all it holds (the server refuses a running one, saying why). */
  async delete(): Promise<void> {
    await this._act(async run => {
      await this._api.deleteRun(run.id);
      this._deleted(run.id);
    });
  }

  async cancel(): Promise<void> {
    await this._act(run => this._api.cancel(run.id));
  }

  /** The stacks of every rank of the selected run, or of `rank` only (a rank tile's action). */
  async requestStacks(rank?: number): Promise<void> {
    await this._act(run => this._api.requestStacks(run.id, rank));
  }

  /** Stop the selected run's cluster once the user confirms; then say which one was stopped. */
  async stopCluster(): Promise<void> {
    const run = this._selected();
    if (!run?.cluster_id) {
      return;
    }
    const name = clusterName(run);
    const confirm = this._options.confirmStop;
    if (confirm && !(await confirm(name))) {
      return;
    }
    // The run confirmed, even if the selection changed while the dialog was open.
    await this._act(async () => {
      await this._api.stopCluster(run.cluster_id);
      this._notify(name);
    }, run);
  }

  dispose(): void {
    this._clearTimer();
  }

  private _notify(stopped: string): void {
    this._clearTimer();
    this._stopped = stopped;
    this._timer = setTimeout(() => {
      this._timer = null;
      this._stopped = '';
      this._options.changed?.();
    }, this._options.noticeMs ?? NOTICE_MS);
  }

  private _clearTimer(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private async _act(action: (run: Run) => Promise<void>, run = this._selected()): Promise<void> {
    if (!run) {
      return;
    }
    let error = '';
    try {
      await action(run);
    } catch (reason) {
      error = (reason as Error).message;
    }
    await this._done(error);
  }

  private _stopped = '';
  private _timer: ReturnType<typeof setTimeout> | null = null;
}
