/**
 * When the model tells views to re-render: soon and at most once per interval
 * for data (events may arrive thousands of times a second), at once for user
 * actions.
 */

export class Throttle {
  /** `fire` is called at most once per `interval` ms by `soon`, and by `now` at once. */
  constructor(
    private readonly fire: () => void,
    private readonly interval: number
  ) {}

  /** Fire soon, at most once per interval. */
  soon(): void {
    if (this._timer !== null || this._stopped) {
      return;
    }
    const wait = Math.max(0, this._last + this.interval - performanceNow());
    this._timer = setTimeout(() => {
      this._timer = null;
      this._last = performanceNow();
      this.fire();
    }, wait);
  }

  /** Fire at once (a pending `soon` is folded into it). */
  now(): void {
    if (this._stopped) {
      return;
    }
    this._cancel();
    this._last = performanceNow();
    this.fire();
  }

  /** Never fire again. */
  stop(): void {
    this._stopped = true;
    this._cancel();
  }

  private _cancel(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _last = -Infinity;
  private _stopped = false;
}

function performanceNow(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}
