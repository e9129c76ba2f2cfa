/**
 * The Logs tab's collapsed view: identical lines of several ranks within
 * 100 ms of the first shown once, labelled with the ranks (`[ranks 0-7]`), as
 * under the cell (`python/jupyter_distributed/collapse.py` owns the rule). A
 * line joins an open row with the same text and stream when its rank has no
 * later row yet, so each rank's lines keep their order. Incremental: lines
 * appended to the same array cost O(1) each. No DOM.
 */

import type { LogLine } from './wire';

/** Seconds a line may join the same line of other ranks after the first. */
export const WINDOW = 0.1;

/** Lines read between two looks at `rows`' `done`. */
const CHECK_EVERY = 256;

/** A shown row: a log line, with the ranks that wrote it when several did. */
export interface IShownLine extends LogLine {
  /** Every rank that wrote the line (sorted), when more than one did. */
  ranks?: readonly number[];
}

/** "0-3,5": sorted ranks, consecutive ones as ranges. */
export function ranksText(ranks: readonly number[]): string {
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  const parts: string[] = [];
  let i = 0;
  while (i < sorted.length) {
    let j = i;
    while (j + 1 < sorted.length && (sorted[j + 1] as number) === (sorted[j] as number) + 1) {
      j++;
    }
    parts.push(j > i ? `${sorted[i]}-${sorted[j]}` : `${sorted[i]}`);
    i = j + 1;
  }
  return parts.join(',');
}

interface IOpen {
  row: number; // index in rows
  t: number; // the first line's time
  ranks: number[];
}

/** Folds a growing array of lines into collapsed rows. */
export class LogCollapse {
  /**
   * The rows of `lines`: recomputed when `lines` is another array or lost
   * lines from its front, else only its new lines are read. The returned
   * array is reused: treat it as read-only (a row that gains a rank is a new
   * object, so that it renders again). With `done`, reading stops once it
   * says so (checked every few hundred lines): the rows are then those of
   * the lines read so far, and `caughtUp` says whether that was all of them.
   */
  rows(lines: readonly LogLine[], done?: () => boolean): readonly IShownLine[] {
    if (lines !== this._source || lines.length < this._scanned || lines[0] !== this._first) {
      this._source = lines;
      this._first = lines[0];
      this._scanned = 0;
      this._rows = [];
      this._open.clear();
      this._last = [];
    }
    const end = lines.length;
    let i = this._scanned;
    while (i < end) {
      const stop = done ? Math.min(end, i + CHECK_EVERY) : end;
      for (; i < stop; i++) {
        this._add(lines[i] as LogLine);
      }
      this._scanned = i;
      if (done?.()) {
        break;
      }
    }
    return this._rows;
  }

  /** Whether every line of the array last given to `rows` is read. */
  get caughtUp(): boolean {
    return this._source === null || this._scanned >= this._source.length;
  }

  private _add(line: LogLine): void {
    let open = this._open.get(line.stream);
    if (!open) {
      open = new Map();
      this._open.set(line.stream, open);
    }
    const last = this._last[line.rank] ?? -1;
    const same = open.get(line.text);
    if (same && same.row > last && Math.abs(line.t - same.t) < WINDOW && !same.ranks.includes(line.rank)) {
      same.ranks.push(line.rank);
      const ranks = [...same.ranks].sort((a, b) => a - b);
      this._rows[same.row] = { ...(this._rows[same.row] as IShownLine), ranks };
      this._last[line.rank] = same.row;
      return;
    }
    const row = this._rows.length;
    this._rows.push(line);
    // Deleted first, so that each map stays in the order its entries were opened (`_forget`).
    if (same) {
      open.delete(line.text);
    }
    open.set(line.text, { row, t: line.t, ranks: [line.rank] });
    this._last[line.rank] = row;
    this._forget(open, line.t);
  }

  /**
   * Rows too old to be joined no longer take room: the oldest opened first, up to the first
   * that may still be joined (amortised O(1) a line).
   */
  private _forget(open: Map<string, IOpen>, now: number): void {
    for (const [text, entry] of open) {
      if (now - entry.t < WINDOW) {
        return;
      }
      open.delete(text);
    }
  }

  private _source: readonly LogLine[] | null = null;
  private _first: LogLine | undefined = undefined;
  private _scanned = 0;
  private _rows: IShownLine[] = [];
  /** Per stream, text -> its latest row, oldest opened first. */
  private readonly _open = new Map<string, Map<string, IOpen>>();
  /** rank -> its latest row. */
  private _last: number[] = [];
}
