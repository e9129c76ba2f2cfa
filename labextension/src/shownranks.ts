/**
 * The ranks the user asked to see as their own lines in the many-rank view
 * (above `BAND_RANKS` ranks the plots show the total, the band and the
 * stragglers): added from the Ranks tab's tiles or the Throughput tab's rank
 * picker, removed one by one or all at once. One set for the selected run,
 * emptied when another run is selected. No DOM.
 */

import { parseRanks } from './manyranks';

/** The most ranks shown as their own lines at once: a figure of a few traces stays fast. */
export const MAX_SHOWN = 32;

export class ShownRanks {
  /** @param changed - called after each change (the panel re-renders) */
  constructor(private readonly _changed: () => void = () => undefined) {}

  /** The ranks shown, in ascending order. */
  get ranks(): readonly number[] {
    return this._sorted;
  }

  /** The ranks shown, as a set (what `rankTraces` takes). */
  get set(): ReadonlySet<number> {
    return this._ranks;
  }

  /** Changes with every change of the set: a figure's redraw key. */
  get key(): string {
    return this._sorted.join(',');
  }

  has(rank: number): boolean {
    return this._ranks.has(rank);
  }

  /** Whether another rank can be added (at most `MAX_SHOWN`). */
  get full(): boolean {
    return this._ranks.size >= MAX_SHOWN;
  }

  /** Show `rank` if it is not shown, else stop showing it (a tile's Plot button). */
  toggle(rank: number): void {
    if (this._ranks.has(rank)) {
      this._ranks.delete(rank);
    } else if (!this.full) {
      this._ranks.add(rank);
    } else {
      return;
    }
    this._update();
  }

  /**
   * Show the ranks named in `text` ("3, 17 40-42") as well; what is not a rank is skipped.
   * Returns how many were added (none past `MAX_SHOWN`).
   */
  add(text: string): number {
    let added = 0;
    for (const rank of parseRanks(text, MAX_SHOWN)) {
      if (!this.full && !this._ranks.has(rank)) {
        this._ranks.add(rank);
        added++;
      }
    }
    if (added) {
      this._update();
    }
    return added;
  }

  remove(rank: number): void {
    if (this._ranks.delete(rank)) {
      this._update();
    }
  }

  clear(): void {
    if (this._ranks.size) {
      this._ranks.clear();
      this._update();
    }
  }

  /** The set belongs to one run: selecting another empties it. */
  forRun(runId: string | null): void {
    if (runId !== this._runId) {
      this._runId = runId;
      this._ranks.clear();
      this._sorted = [];
    }
  }

  private _update(): void {
    this._sorted = [...this._ranks].sort((a, b) => a - b);
    this._changed();
  }

  private _runId: string | null = null;
  private readonly _ranks = new Set<number>();
  private _sorted: number[] = [];
}
