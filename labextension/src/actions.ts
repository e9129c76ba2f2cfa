/**
 * The control actions on the selected run: cancel it, stop its cluster, ask
 * for its stacks, delete it. Each goes to the server, which queues it in the
 * history for the kernel running the run (a busy kernel still sees it) or, for
 * a delete, removes the finished run; the model then refreshes. No DOM.
 */

import type { DistributedApi } from './api';
import type { Run } from './wire';

export class RunActions {
  /**
   * @param selected - the run an action applies to (none: the action does nothing)
   * @param done - called after each action with its error message ('' when it succeeded)
   */
  constructor(
    private readonly _api: DistributedApi,
    private readonly _selected: () => Run | null,
    private readonly _done: (error: string) => Promise<void>,
    private readonly _deleted: (runId: string) => void = () => undefined
  ) {}

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

  async stopCluster(): Promise<void> {
    await this._act(run => this._api.stopCluster(run.cluster_id));
  }

  private async _act(action: (run: Run) => Promise<void>): Promise<void> {
    const run = this._selected();
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
}
