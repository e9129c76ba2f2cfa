/**
 * What the Logs tab shows of the selected run: the filter (ranks, stderr,
 * search), whether identical lines of several ranks are collapsed (as under
 * the cell) or every rank's is shown, and whether the view follows new lines.
 * Kept by the model so it survives switching tabs; reset when another run is
 * selected. No DOM.
 */

import { ALL_LINES, type ILogFilter, type LogBuffer } from './logbuffer';
import { type IShownLine, LogCollapse } from './logcollapse';
import { type ISliceHost, Slices } from './slices';
import type { LogLine } from './wire';

export class LogViewState {
  /**
   * @param changed - called after every change (the model re-renders)
   * @param host - the clock and timer of `keepUp`'s slices (the page's by default)
   */
  constructor(
    private readonly _changed: () => void,
    host: ISliceHost = PAGE_TIMERS
  ) {
    this._slices = new Slices(done => (this._buffer ? this.prepare(this._buffer, done) : true), host);
  }

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

  /**
   * Read the lines that came into `buffer` toward the rows `shown` gives, until `done()` says
   * to stop; true once every line is read. The model calls it in tasks of its own as lines
   * come, whichever tab is shown, so that showing the Logs tab reads only the lines that came
   * since (its first show on a run of 160,000 lines was one task of about 200 ms: RESULTS.md).
   */
  prepare(buffer: LogBuffer, done: () => boolean): boolean {
    const lines = buffer.filtered(this._filter, done);
    if (buffer.unread > 0) {
      return false;
    }
    if (this._collapsed) {
      this._collapse.rows(lines, done);
      return this._collapse.caughtUp;
    }
    return true;
  }

  /** Lines came into `buffer` (the selected run's): `prepare` for them in slices soon. */
  keepUp(buffer: LogBuffer): void {
    this._buffer = buffer;
    this._slices.request();
  }

  /** No more slices. */
  dispose(): void {
    this._slices.stop();
    this._buffer = null;
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
    this._buffer = null;
  }

  private _filter: ILogFilter = ALL_LINES;
  private _follow = true;
  private _collapsed = true;
  private readonly _collapse = new LogCollapse();
  private readonly _slices: Slices;
  private _buffer: LogBuffer | null = null;
}

/** The page's clock and timer. */
const PAGE_TIMERS: ISliceHost = {
  now: () => performance.now(),
  later: (fn, ms) => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  }
};
