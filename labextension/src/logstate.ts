/**
 * What the Logs tab shows of the selected run: the filter (ranks, stderr,
 * search), whether identical lines of several ranks are collapsed (as under
 * the cell) or every rank's is shown, and whether the view follows new lines.
 * Kept by the model so it survives switching tabs; reset when another run is
 * selected. The lines are read in background slices (`slices.ts`): as they
 * come, and all of them again after a filter change, newest first. No DOM.
 */

import { ALL_LINES, type ILogFilter, type LogBuffer } from './logbuffer';
import { type IShownLine, LogCollapse } from './logcollapse';
import { type ISliceHost, SLICE_MS, Slices } from './slices';
import type { LogLine } from './wire';

/** Rows shown while a new filter is read: its newest matches read so far. */
const SHOWN_WHILE_READING = 10_000;

export class LogViewState {
  /**
   * @param changed - called after every change (the model re-renders)
   * @param host - the clock and timer of the slices (the page's by default)
   * @param progressed - called after each slice (the model re-renders soon)
   */
  constructor(
    private readonly _changed: () => void,
    private readonly _host: ISliceHost = PAGE_TIMERS,
    progressed: () => void = () => undefined
  ) {
    this._slices = new Slices(done => {
      const over = this._buffer ? this.prepare(this._buffer, done) : true;
      progressed();
      return over;
    }, _host);
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
   * The rows the Logs tab shows of `buffer` (the selected run's) now, reading at most a slice's
   * time here: after a filter change, the newest matches read so far, as they are until every
   * line is read and collapsed; the rest is read in slices, and `progressed` says when.
   */
  rows(buffer: LogBuffer): readonly IShownLine[] {
    this._buffer = buffer;
    const deadline = this._host.now() + SLICE_MS;
    const done = (): boolean => this._host.now() >= deadline;
    buffer.read(this._filter, done);
    if (buffer.unread > 0 || buffer.pending) {
      this._slices.request();
      return buffer.newestRead(this._filter, SHOWN_WHILE_READING);
    }
    const lines = buffer.filtered(this._filter);
    if (!this._collapsed) {
      return lines;
    }
    const collapsed = this._collapse.rows(lines, done);
    if (this._collapse.caughtUp) {
      return collapsed;
    }
    this._slices.request();
    return lines;
  }

  /**
   * Read the lines that came into `buffer` toward the rows `shown` gives, until `done()` says
   * to stop; true once every line is read. The model calls it in tasks of its own as lines
   * come, whichever tab is shown, so that showing the Logs tab reads only the lines that came
   * since (its first show on a run of 160,000 lines was one task of about 200 ms: RESULTS.md).
   */
  prepare(buffer: LogBuffer, done: () => boolean): boolean {
    buffer.read(this._filter, done);
    if (buffer.unread > 0) {
      return false;
    }
    if (!buffer.settle(done)) {
      return false;
    }
    if (this._collapsed) {
      this._collapse.rows(buffer.filtered(this._filter), done);
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

  /** A new filter: read in slices, its newest matches first (`rows`). */
  setFilter(filter: Partial<ILogFilter>): void {
    this._filter = { ...this._filter, ...filter };
    this._slices.request();
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
