/**
 * One costly piece of work per animation frame. Plots ask to be drawn here
 * instead of drawing at once, so that three plots whose data changed together
 * are drawn in three frames (three short tasks) rather than in one long one,
 * each in a task of its own after the frame's paint (not inside the frame,
 * where the panel's own render and the page's layout already take their time).
 */

/** Work for one frame; when it returns a promise, the next work waits until it settles. */
export type Work = () => unknown;

export class FrameQueue {
  /** `requestFrame` runs a callback once the next frame is painted (in a page: after `requestAnimationFrame`). */
  constructor(private readonly requestFrame: (callback: () => void) => void = defaultRequestFrame) {}

  /** Works waiting for their frame. */
  get pending(): number {
    return this._queue.size;
  }

  /**
   * Run `work` in a coming frame, after the works asked for before it, one per frame. A `key`
   * that is already waiting keeps its place and runs the newest `work` given for it.
   */
  request(key: object, work: Work): void {
    this._queue.set(key, work);
    this._schedule();
  }

  /** Forget the work waiting for `key`, if any (a plot that is gone). */
  cancel(key: object): void {
    this._queue.delete(key);
  }

  private _schedule(): void {
    if (this._scheduled || this._running || this._queue.size === 0) {
      return;
    }
    this._scheduled = true;
    this.requestFrame(() => {
      this._scheduled = false;
      this._runOne();
    });
  }

  private _runOne(): void {
    const next = this._queue.entries().next();
    if (next.done) {
      return;
    }
    const [key, work] = next.value;
    this._queue.delete(key);
    this._running = true;
    let result: unknown;
    try {
      result = work();
    } catch (error) {
      this._done();
      throw error;
    }
    if (result instanceof Promise) {
      // The next work waits until this one is over (work that ends asynchronously).
      result.then(
        () => this._done(),
        () => this._done()
      );
    } else {
      this._done();
    }
  }

  private _done(): void {
    this._running = false;
    this._schedule();
  }

  private _queue = new Map<object, Work>();
  private _scheduled = false;
  private _running = false;
}

function defaultRequestFrame(callback: () => void): void {
  if (typeof requestAnimationFrame === 'function') {
    requestAnimationFrame(() => setTimeout(callback, 0));
  } else {
    setTimeout(callback, 16);
  }
}
