/**
 * When a live figure redraws: at most once per `interval` ms (2 a second by
 * default), never while it cannot be seen (a hidden tab or page), and once
 * more when it can be seen again if data came meanwhile. New data asks with
 * `requestSoon`: its draw is a task of its own, not part of the data's. Pure: the clock, the
 * visibility and the timer are given, so the rule is tested without a DOM.
 */

/** The least time between two redraws of one figure, in ms: at most 2 a second. */
export const REDRAW_MS = 500;

/**
 * A figure whose draw is slow waits this many times its last draw's time before the next
 * (a 120 ms draw: 1.2 s), so that live figures take at most about a tenth of the main thread
 * each on a slow or loaded machine.
 */
export const DRAW_COST_FACTOR = 10;

export interface IRedrawHost {
  now(): number;
  /** Whether the figure can be seen now. */
  visible(): boolean;
  /** Call `fn` after `ms`; returns a cancel. */
  later(fn: () => void, ms: number): () => void;
}

export class RedrawGate {
  constructor(
    private readonly draw: () => void,
    private readonly host: IRedrawHost,
    private readonly interval = REDRAW_MS
  ) {}

  /** New data: draw now if allowed, else once the interval is over or the figure is seen again. */
  request(): void {
    this._pending = true;
    this._try();
  }

  /**
   * New data, from a task that has work of its own (the stream message's handling and the
   * panel's render): as `request`, but a draw due now comes in the next task, never in this one.
   */
  requestSoon(): void {
    this._pending = true;
    if (!this._cancel && !this._stopped) {
      this._tryIn(0);
    }
  }

  /** The figure may have become visible (a tab shown, the page shown): draw what is pending. */
  shown(): void {
    this._try();
  }

  /**
   * Called by a draw that drew only a part (a figure's frame before its data): the rest is
   * drawn in the next task, not an interval later, even if the figure was scrolled out of view
   * meanwhile (a frame is never left without its figure); the part is not counted as a draw.
   */
  partial(): void {
    this._partial = true;
  }

  /** Never draw again. */
  stop(): void {
    this._stopped = true;
    this._cancel?.();
    this._cancel = null;
  }

  /** Whether data came that is not drawn yet. */
  get pending(): boolean {
    return this._pending;
  }

  /** `rest`: the rest of a partial draw, drawn even if the figure is no longer seen. */
  private _try(rest = false): void {
    if (this._stopped || !this._pending || this._cancel || !(rest || this.host.visible())) {
      return;
    }
    const wait = this._last + Math.max(this.interval, DRAW_COST_FACTOR * this._cost) - this.host.now();
    if (wait > 0) {
      this._tryIn(wait);
      return;
    }
    this._pending = false;
    const start = this.host.now();
    this._partial = false;
    this.draw();
    if (this._partial) {
      this._pending = true;
      this._tryIn(0, true);
      return;
    }
    this._last = start;
    // The first draw creates the figure (plotly's DOM): not what a live update costs.
    this._cost = this._drawn ? this.host.now() - this._last : 0;
    this._drawn = true;
  }

  private _tryIn(ms: number, rest = false): void {
    this._cancel = this.host.later(() => {
      this._cancel = null;
      this._try(rest);
    }, ms);
  }

  private _pending = false;
  private _partial = false;
  private _stopped = false;
  private _last = -Infinity;
  /** How long the last draw took (its synchronous part: most of plotly's work), in ms. */
  private _cost = 0;
  private _drawn = false;
  private _cancel: (() => void) | null = null;
}

/**
 * The x range shared by the stacked plots of one run: a zoom in one is applied to the others
 * (linked zoom), a reset (null) resets them all.
 */
export class XLink {
  /** Listen for the range others set; returns a stop. */
  subscribe(fn: (range: [number, number] | null, from: object) => void): () => void {
    this._listeners.add(fn);
    return () => this._listeners.delete(fn);
  }

  /** `from` zoomed to `range` (null: reset); every other listener follows. */
  publish(range: [number, number] | null, from: object): void {
    this.range = range;
    for (const fn of [...this._listeners]) {
      fn(range, from);
    }
  }

  /** The zoomed range, or null at the default view. */
  range: [number, number] | null = null;

  private readonly _listeners = new Set<(range: [number, number] | null, from: object) => void>();
}
