/**
 * What the Logs tab shows of the selected run: the filter (ranks, stderr,
 * search), whether identical lines of several ranks are collapsed (as under
 * the cell) or every rank's is shown, and whether the view follows new lines.
 * Kept by the model so it survives switching tabs; reset when another run is
 * selected. No DOM.
 */

import { ALL_LINES, type ILogFilter } from './logbuffer';
import { type IShownLine, LogCollapse } from './logcollapse';
import type { LogLine } from './wire';

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

  /** Whether identical lines of several ranks show once, as `[ranks 0-7]`. */
  get collapsed(): boolean {
    return this._collapsed;
  }

  setCollapsed(collapsed: boolean): void {
    this._collapsed = collapsed;
    this._changed();
  }

  /** The rows to show of the lines that pass the filter: collapsed, or as they are. */
  shown(lines: readonly LogLine[]): readonly IShownLine[] {
    return this._collapsed ? this._collapse.rows(lines) : lines;
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
  private _collapsed = true;
  private readonly _collapse = new LogCollapse();
}
