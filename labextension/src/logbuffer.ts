/**
 * A bounded buffer of log lines with an incrementally maintained filtered
 * view: appending a line costs O(1) and re-reading the same filter only looks
 * at the lines added since, so a million lines stay cheap to follow.
 */

import type { LogLine } from './wire';

export interface ILogFilter {
  /** Ranks to show; empty shows all. */
  ranks: readonly number[];
  /** Show only stderr (and the failed ranks' errors). */
  stderrOnly: boolean;
  /** Case-insensitive text to look for; empty matches every line. */
  search: string;
}

/** Lines read between two looks at `filtered`'s `done`. */
const CHECK_EVERY = 1024;

export const ALL_LINES: ILogFilter = { ranks: [], stderrOnly: false, search: '' };

export class LogBuffer {
  constructor(readonly capacity = 1_000_000) {}

  /** Lines currently held (the oldest are dropped beyond `capacity`). */
  get size(): number {
    return this._lines.length - this._start;
  }

  /** Lines dropped so far to stay within `capacity`. */
  get dropped(): number {
    return this._dropped;
  }

  push(line: LogLine): void {
    this._lines.push(line);
    if (this.size > this.capacity) {
      // Drop in chunks so that trimming stays amortised O(1) per line.
      this._start += 1;
      this._dropped += 1;
      if (this._start >= Math.max(1024, this.capacity / 8)) {
        this._compact();
      }
    }
  }

  clear(): void {
    this._offset += this._lines.length;
    this._lines = [];
    this._start = 0;
    this._dropped = 0;
    this._cache = null;
  }

  /**
   * The lines that pass `filter`, oldest first. The returned array is reused
   * and grown on later calls with an equal filter: treat it as read-only.
   * With `done`, reading stops once it says so (checked every few hundred
   * lines): the array then holds the matches of the lines read so far, and
   * `unread` counts the others.
   */
  filtered(filter: ILogFilter, done?: () => boolean): readonly LogLine[] {
    const key = filterKey(filter);
    const base = this._offset + this._start; // absolute index of the first line held
    if (!this._cache || this._cache.key !== key || this._cache.scanned < base) {
      this._cache = { key, scanned: base, lines: [], firstAbs: [] };
    }
    const cache = this._cache;
    // Forget matches that were dropped from the front.
    let drop = 0;
    while (drop < cache.firstAbs.length && (cache.firstAbs[drop] ?? 0) < base) {
      drop++;
    }
    if (drop) {
      cache.lines.splice(0, drop);
      cache.firstAbs.splice(0, drop);
    }
    const match = matcher(filter);
    const end = this._offset + this._lines.length;
    let abs = cache.scanned;
    while (abs < end) {
      const stop = done ? Math.min(end, abs + CHECK_EVERY) : end;
      for (; abs < stop; abs++) {
        const line = this._lines[abs - this._offset];
        if (line && match(line)) {
          cache.lines.push(line);
          cache.firstAbs.push(abs);
        }
      }
      cache.scanned = abs;
      if (done?.()) {
        break;
      }
    }
    return cache.lines;
  }

  /** Lines held that the last `filtered` call has not read yet (all of them before any call). */
  get unread(): number {
    const end = this._offset + this._lines.length;
    return end - Math.max(this._cache?.scanned ?? 0, this._offset + this._start);
  }

  private _compact(): void {
    this._lines = this._lines.slice(this._start);
    this._offset += this._start;
    this._start = 0;
  }

  private _lines: LogLine[] = [];
  private _start = 0;
  private _offset = 0;
  private _dropped = 0;
  private _cache: {
    key: string;
    scanned: number;
    lines: LogLine[];
    firstAbs: number[];
  } | null = null;
}

function filterKey(filter: ILogFilter): string {
  return JSON.stringify([[...filter.ranks].sort((a, b) => a - b), filter.stderrOnly, filter.search]);
}

function matcher(filter: ILogFilter): (line: LogLine) => boolean {
  const ranks = filter.ranks.length ? new Set(filter.ranks) : null;
  const needle = filter.search.toLowerCase();
  return line =>
    (ranks === null || ranks.has(line.rank)) &&
    (!filter.stderrOnly || line.stream === 'stderr' || line.stream === 'error') &&
    (needle === '' || line.text.toLowerCase().includes(needle));
}
