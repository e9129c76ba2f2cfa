/**
 * A bounded buffer of log lines with an incrementally maintained filtered
 * view: appending a line costs O(1) and re-reading the same filter only looks
 * at the lines added since, so a million lines stay cheap to follow. A new
 * filter reads the lines held from the newest back, so that read in parts its
 * newest matches come first.
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
   * and grown on later calls with an equal filter (a new one once older
   * matches are found): treat it as read-only. With `done`, reading stops
   * once it says so (checked every few hundred lines): the array then holds
   * the matches of the lines read so far, and `unread` counts the others.
   * Lines that came since the last call are read first, then a new filter's
   * older lines, newest first.
   */
  filtered(filter: ILogFilter, done?: () => boolean): readonly LogLine[] {
    const key = filterKey(filter);
    const base = this._offset + this._start; // absolute index of the first line held
    const end = this._offset + this._lines.length;
    if (!this._cache || this._cache.key !== key || this._cache.scanned < base) {
      this._cache = { key, low: end, scanned: end, lines: [], firstAbs: [] };
    }
    const cache = this._cache;
    cache.low = Math.max(cache.low, base);
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
        return cache.lines;
      }
    }
    this._readBack(cache, base, match, done);
    return cache.lines;
  }

  /** Lines held that the last `filtered` call has not read yet (all of them before any call). */
  get unread(): number {
    const base = this._offset + this._start;
    const end = this._offset + this._lines.length;
    const cache = this._cache;
    if (!cache || cache.scanned < base) {
      return end - base;
    }
    return end - cache.scanned + Math.max(0, cache.low - base);
  }

  /** A new filter's lines older than those read, newest first, down to the oldest held (or `done`). */
  private _readBack(cache: IFilterCache, base: number, match: (line: LogLine) => boolean, done?: () => boolean): void {
    const lines: LogLine[][] = [];
    const firstAbs: number[][] = [];
    let low = cache.low;
    while (low > base) {
      const from = done ? Math.max(base, low - CHECK_EVERY) : base;
      const chunk: LogLine[] = [];
      const at: number[] = [];
      for (let abs = from; abs < low; abs++) {
        const line = this._lines[abs - this._offset];
        if (line && match(line)) {
          chunk.push(line);
          at.push(abs);
        }
      }
      lines.push(chunk);
      firstAbs.push(at);
      low = from;
      if (done?.()) {
        break;
      }
    }
    cache.low = low;
    if (lines.some(chunk => chunk.length > 0)) {
      // Chunks were read newest first: the oldest first, before the matches read before.
      cache.lines = lines.reverse().flat().concat(cache.lines);
      cache.firstAbs = firstAbs.reverse().flat().concat(cache.firstAbs);
    }
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
  private _cache: IFilterCache | null = null;
}

/** The matches of one filter: those of the lines `[low, scanned)` (absolute indexes). */
interface IFilterCache {
  key: string;
  /** The oldest line read (a new filter reads back from the newest). */
  low: number;
  /** One past the newest line read. */
  scanned: number;
  lines: LogLine[];
  /** Each match's absolute index. */
  firstAbs: number[];
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
