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
   * object, so that it renders again).
   */
  rows(lines: readonly LogLine[]): readonly IShownLine[] {
    if (lines !== this._source || lines.length < this._scanned || lines[0] !== this._first) {
      this._source = lines;
      this._first = lines[0];
      this._scanned = 0;
      this._rows = [];
      this._open.clear();
      this._last.clear();
    }
    for (let i = this._scanned; i < lines.length; i++) {
      this._add(lines[i] as LogLine);
    }
    this._scanned = lines.length;
    return this._rows;
  }

  private _add(line: LogLine): void {
    const key = `${line.stream}\u0000${line.text}`;
    const last = this._last.get(line.rank) ?? -1;
    const open = this._open.get(key);
    if (open && open.row > last && Math.abs(line.t - open.t) < WINDOW && !open.ranks.includes(line.rank)) {
      open.ranks.push(line.rank);
      const ranks = [...open.ranks].sort((a, b) => a - b);
      this._rows[open.row] = { ...(this._rows[open.row] as IShownLine), ranks };
      this._last.set(line.rank, open.row);
      return;
    }
    const row = this._rows.length;
    this._rows.push(line);
    this._open.set(key, { row, t: line.t, ranks: [line.rank] });
    this._last.set(line.rank, row);
    if (this._open.size > 4096) {
      this._forget(line.t);
    }
  }

  /** Rows too old to be joined no longer take room. */
  private _forget(now: number): void {
    for (const [key, open] of this._open) {
      if (now - open.t >= WINDOW) {
        this._open.delete(key);
      }
    }
  }

  private _source: readonly LogLine[] | null = null;
  private _first: LogLine | undefined = undefined;
  private _scanned = 0;
  private _rows: IShownLine[] = [];
  private readonly _open = new Map<string, IOpen>(); // stream + text -> its latest row
  private readonly _last = new Map<number, number>(); // rank -> its latest row
}
