/**
 * What the Logs tab shows of the selected run: the filter (ranks, stderr,
 * search) and whether the view follows new lines. Kept by the model so it
 * survives switching tabs; reset when another run is selected. No DOM.
 */

import { ALL_LINES, type ILogFilter } from './logbuffer';

export class LogViewState {
  /** @param changed - called after every change (the model re-renders) */
  constructor(private readonly _changed: () => void) {}

  get filter(): ILogFilter {
    return this._filter;
  }

  /** Whether the log view follows new lines. */
  get follow(): boolean {
    return this._follow;
  }

  setFilter(filter: Partial<ILogFilter>): void {
    this._filter = { ...this._filter, ...filter };
    this._changed();
  }

  setFollow(follow: boolean): void {
    this._follow = follow;
    this._changed();
  }

  /** Another run is shown: every line again. */
  reset(): void {
    this._filter = ALL_LINES;
  }

  private _filter: ILogFilter = ALL_LINES;
  private _follow = true;
}
