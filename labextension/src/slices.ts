/**
 * Work done in the background in short slices, each a task of its own, so that no task of the
 * page is long: `request` asks for a slice soon; each slice works until its time is up and asks
 * for the next until the work says it is over. Pure: the clock and the timer are given, so the
 * rule is tested without a DOM.
 */

/** The longest slice, in ms: well under the 50 ms of a long task. */
export const SLICE_MS = 8;

export interface ISliceHost {
  now(): number;
  /** Call `fn` after `ms`; returns a cancel. */
  later(fn: () => void, ms: number): () => void;
}

export class Slices {
  /**
   * @param work - works until `done()` says to stop; returns true once nothing is left to do
   */
  constructor(
    private readonly work: (done: () => boolean) => boolean,
    private readonly host: ISliceHost,
    private readonly sliceMs = SLICE_MS
  ) {}

  /** There is (more) work: a slice soon, in a task of its own, unless one is already due. */
  request(): void {
    if (!this._cancel && !this._stopped) {
      this._cancel = this.host.later(() => this._slice(), 0);
    }
  }

  /** No slice ever again. */
  stop(): void {
    this._stopped = true;
    this._cancel?.();
    this._cancel = null;
  }

  private _slice(): void {
    this._cancel = null;
    const deadline = this.host.now() + this.sliceMs;
    if (!this.work(() => this.host.now() >= deadline)) {
      this.request();
    }
  }

  private _cancel: (() => void) | null = null;
  private _stopped = false;
}
