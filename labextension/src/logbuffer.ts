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
    const cache = this._read(filter, done);
    this._merge(cache);
    return cache.lines;
  }

  /**
   * Read toward `filtered(filter)` as it does, until `done()` says to stop, without putting the
   * older matches found before the others (`filtered` does, once): for the background slices.
   */
  read(filter: ILogFilter, done: () => boolean): void {
    this._read(filter, done);
  }

  /**
   * The newest `limit` matches of `filter` read so far, oldest first, without putting the older
   * matches before the others (O(limit)): what to show while a new filter is being read.
   */
  newestRead(filter: ILogFilter, limit: number): readonly LogLine[] {
    const cache = this._cache;
    if (!cache || cache.key !== filterKey(filter)) {
      return [];
    }
    const out: LogLine[] = [];
    for (let i = cache.lines.length - 1; i >= 0 && out.length < limit; i--) {
      out.push(cache.lines[i] as LogLine);
    }
    for (const chunk of [...cache.older, cache.settled]) {
      for (let i = chunk.length - 1; i >= 0 && out.length < limit; i--) {
        out.push(chunk[i] as LogLine);
      }
    }
    return out.reverse();
  }

  /**
   * Put the older matches read back before the others, a chunk at a time until `done()` says to
   * stop (`filtered` would do it all at once: 60 ms for 600,000 matches on a loaded machine);
   * true once none waits.
   */
  settle(done: () => boolean): boolean {
    const cache = this._cache;
    if (!cache?.older.length) {
      return true;
    }
    while (cache.older.length) {
      append(cache.settled, cache.older.pop() as LogLine[]);
      append(cache.settledAbs, cache.olderAbs.pop() as number[]);
      if (done()) {
        return false;
      }
    }
    this._merge(cache);
    return true;
  }

  /** Whether older matches read back wait to be put before the others (by `filtered`). */
  get pending(): boolean {
    return (this._cache?.older.length ?? 0) + (this._cache?.settled.length ?? 0) > 0;
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

  private _read(filter: ILogFilter, done?: () => boolean): IFilterCache {
    const key = filterKey(filter);
    const base = this._offset + this._start; // absolute index of the first line held
    const end = this._offset + this._lines.length;
    if (!this._cache || this._cache.key !== key || this._cache.scanned < base) {
      this._cache = { key, low: end, scanned: end, lines: [], firstAbs: [], ...NONE_OLDER() };
    }
    const cache = this._cache;
    cache.low = Math.max(cache.low, base);
    // Forget matches that were dropped from the front.
    if ((cache.settledAbs[0] ?? cache.olderAbs.at(-1)?.[0] ?? base) < base) {
      this._merge(cache);
    }
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
        return cache;
      }
    }
    this._readBack(cache, base, match, done);
    return cache;
  }

  /** A new filter's lines older than those read, newest first, down to the oldest held (or `done`). */
  private _readBack(cache: IFilterCache, base: number, match: (line: LogLine) => boolean, done?: () => boolean): void {
    while (cache.low > base) {
      const from = done ? Math.max(base, cache.low - CHECK_EVERY) : base;
      const chunk: LogLine[] = [];
      const at: number[] = [];
      for (let abs = from; abs < cache.low; abs++) {
        const line = this._lines[abs - this._offset];
        if (line && match(line)) {
          chunk.push(line);
          at.push(abs);
        }
      }
      if (chunk.length) {
        cache.older.push(chunk);
        cache.olderAbs.push(at);
      }
      cache.low = from;
      if (done?.()) {
        break;
      }
    }
  }

  /** The older matches read back, oldest first, before the others, at once. */
  private _merge(cache: IFilterCache): void {
    if (cache.older.length || cache.settled.length) {
      cache.lines = oldestFirst(cache.settled, cache.older, cache.lines);
      cache.firstAbs = oldestFirst(cache.settledAbs, cache.olderAbs, cache.firstAbs);
      Object.assign(cache, NONE_OLDER());
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
  /** Matches read back and not yet put before `lines`: chunks, the newest chunk first. */
  older: LogLine[][];
  olderAbs: number[][];
  /** The oldest of them, oldest first, already taken out of `older` (`settle`). */
  settled: LogLine[];
  settledAbs: number[];
}

function NONE_OLDER(): Pick<IFilterCache, 'older' | 'olderAbs' | 'settled' | 'settledAbs'> {
  return { older: [], olderAbs: [], settled: [], settledAbs: [] };
}

function append<T>(to: T[], items: readonly T[]): void {
  for (const item of items) {
    to.push(item);
  }
}

/** `start` (reused), then `chunks` (the newest first) oldest first, then `rest`: one array. */
function oldestFirst<T>(start: T[], chunks: readonly T[][], rest: readonly T[]): T[] {
  for (let i = chunks.length - 1; i >= 0; i--) {
    append(start, chunks[i] as T[]);
  }
  append(start, rest);
  return start;
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
