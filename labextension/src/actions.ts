/**
 * The control actions on the selected run: cancel it, stop its cluster (once
 * the user confirms, then saying what was stopped), ask for its stacks, delete
 * it. Each goes to the server, which queues it in the history for the kernel
 * running the run (a busy kernel still sees it) or, for a delete, removes the
 * finished run; the model then refreshes. Each action's button stays busy until the action is
 * done: a cancel or a stop of a running run until the run has ended (or `SETTLE_MS` passed,
 * then saying so), the others until the request returned and the list was read again. No DOM.
 */

import type { DistributedApi } from './api';
import { formatRanks } from './format';
import { isRunActive, type Run } from './wire';

/** How long the line saying which cluster was stopped stays, in ms. */
export const NOTICE_MS = 8000;

/** How long a cancel or a stop waits for its running run to end before it says it has not, in ms. */
export const SETTLE_MS = 30_000;

/** The panel's actions on a run, each with its button. */
export type ActionKind = 'cancel' | 'stop' | 'stacks' | 'delete';

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
  /** The run as the panel knows it now (refreshed by polling and the stream); none: not followed. */
  runOf?: (id: string) => Run | null;
  /** How long a cancel or stop waits for its run to end (`SETTLE_MS`), and how often it looks. */
  settleMs?: number;
  pollMs?: number;
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

  /** Whether the action's button is busy: the action was asked for and is not done yet. */
  isBusy(kind: ActionKind): boolean {
    return this._busy.has(kind);
  }

  /** Delete the selected run and all it holds (the server refuses a running one, saying why). */
  async delete(): Promise<void> {
    await this._act('delete', async run => {
      await this._api.deleteRun(run.id);
      this._deleted(run.id);
    });
  }

  /** Cancel the selected run; busy until it has ended. */
  async cancel(): Promise<void> {
    await this._act('cancel', run => this._api.cancel(run.id));
  }

  /** The stacks of every rank of the selected run, or of `rank` only (a rank tile's action). */
  async requestStacks(rank?: number): Promise<void> {
    await this._act('stacks', run => this._api.requestStacks(run.id, rank));
  }

  /** Stop the selected run's cluster once the user confirms; then say which one was stopped. */
  async stopCluster(): Promise<void> {
    const run = this._selected();
    if (!run?.cluster_id) {
      return;
    }
    const name = clusterName(run);
    if (this._busy.has('stop')) {
      return;
    }
    const confirm = this._options.confirmStop;
    if (confirm && !(await confirm(name))) {
      return;
    }
    // The run confirmed, even if the selection changed while the dialog was open.
    await this._act(
      'stop',
      () => this._api.stopCluster(run.cluster_id),
      run,
      () => this._notify(name)
    );
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

  /** Run `action` with its button busy until it is done; then `after`, if it succeeded. */
  private async _act(
    kind: ActionKind,
    action: (run: Run) => Promise<void>,
    run = this._selected(),
    after?: () => void
  ): Promise<void> {
    if (!run || this._busy.has(kind)) {
      return;
    }
    this._busy.add(kind);
    this._options.changed?.();
    try {
      let error = '';
      try {
        await action(run);
      } catch (reason) {
        error = (reason as Error).message;
      }
      await this._done(error);
      if (!error && (kind === 'cancel' || kind === 'stop') && isRunActive(run.state)) {
        error = await this._settle(run);
        if (error) {
          await this._done(error);
        }
      }
      if (!error) {
        after?.();
      }
    } finally {
      this._busy.delete(kind);
      this._options.changed?.();
    }
  }

  /** Wait until `run` has ended; '' then, else (after `settleMs`) a line saying it has not. */
  private async _settle(run: Run): Promise<string> {
    const { runOf, settleMs = SETTLE_MS, pollMs = 250 } = this._options;
    if (!runOf) {
      return '';
    }
    const deadline = Date.now() + settleMs;
    for (;;) {
      const now = runOf(run.id);
      if (!now || !isRunActive(now.state)) {
        return '';
      }
      if (Date.now() >= deadline) {
        return `run ${run.id} is still ${now.state} ${settleMs / 1000} s after the request: its kernel has not ended it yet`;
      }
      await new Promise(resolve => setTimeout(resolve, pollMs));
    }
  }

  private readonly _busy = new Set<ActionKind>();
  private _stopped = '';
  private _timer: ReturnType<typeof setTimeout> | null = null;
}
