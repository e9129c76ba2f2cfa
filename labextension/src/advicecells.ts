/**
 * The Scaling tab's New cell action: an advised launch line put into a new
 * code cell of the notebook whose kernel owns the cluster. The notebooks are
 * behind `INotebookCells` (`notebookcells.ts` is JupyterLab's, tests pass a
 * fake); this module picks whose notebook and keeps the last error. No DOM.
 */

import { cellText, type IAdvice, type IAdviceRow } from './advice';
import type { Run } from './wire';

/** Which notebook: the one of the kernel that ran it, else the one with its path (`probe.sessionOf`). */
export type CellOwner = Pick<Run, 'kernel_id' | 'notebook'>;

/** The open notebooks, as the action uses them. */
export interface INotebookCells {
  /**
   * Put `text` into a new code cell below the active cell of `owner`'s
   * notebook and show that notebook; one line saying why not (no such
   * notebook open), or null when it is done.
   */
  insertBelow(owner: CellOwner, text: string): string | null;
}

/** The run whose kernel owns the cluster: the selected one, or else the advice's own. */
export function ownerOf(selected: Run, advice: IAdvice): CellOwner {
  return selected.kernel_id || selected.notebook ? selected : advice.run;
}

export class AdviceCells {
  constructor(
    private readonly _cells: INotebookCells,
    private readonly _changed: () => void
  ) {}

  /** The last insertion's error, as one line; empty when it succeeded. */
  get error(): string {
    return this._error;
  }

  /** Insert `row`'s launch line below the active cell of the notebook that owns `selected`'s cluster. */
  insert(selected: Run, advice: IAdvice, row: IAdviceRow): void {
    let error: string | null;
    try {
      error = this._cells.insertBelow(ownerOf(selected, advice), cellText(advice, row));
    } catch (reason) {
      error = reason instanceof Error ? reason.message : String(reason);
    }
    this._error = error ?? '';
    this._changed();
  }

  private _error = '';
}
