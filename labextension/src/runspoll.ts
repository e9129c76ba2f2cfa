/**
 * The panel's runs list and its polling: a `Poll` with backoff that stands by
 * while the panel is hidden, the list and the server's straggler threshold
 * each reply brings, and which run started since the panel opened (the model
 * selects it once). What each read leads to is the model's (`model.ts`). No DOM.
 */

import type { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';

import type { DistributedApi } from './api';
import { type IPanelConfig, pollFrequency } from './config';
import { LiveRunList } from './liverun';
import { STRAGGLER_THRESHOLD } from './rates';
import type { Run } from './wire';

export interface IRunsPollOptions {
  api: DistributedApi;
  config: IPanelConfig;
  /** When the panel opened, Unix seconds: a run started since is selected once. */
  openedAt: number;
  /** Whether the panel is hidden (the poll stands by). */
  hidden: () => boolean;
  /** What the poll runs each time: reads the list (`read`) and acts on it. */
  refresh: () => Promise<void>;
}

export class RunsPoll implements IDisposable {
  constructor(options: IRunsPollOptions) {
    this._api = options.api;
    this._openedAt = options.openedAt;
    this._poll = new Poll({
      name: 'jupyter-distributed:runs',
      factory: () => options.refresh(),
      frequency: pollFrequency(options.config),
      standby: () => options.hidden() || 'when-hidden'
    });
  }

  /** The polled runs list. */
  get runs(): readonly Run[] {
    return this._runs;
  }

  /** The polled list, with `live` (the selected run as its live stream knows it, `liverun.ts`). */
  shown(live: Run | null): readonly Run[] {
    return this._shownRuns.get(this._runs, live);
  }

  /** Whether the runs list has been read from the server at least once. */
  get loaded(): boolean {
    return this._loaded;
  }

  /** The straggler rule's threshold: the server's `c.Distributed.straggler_threshold` (`rates.ts`). */
  get stragglerThreshold(): number {
    return this._stragglerThreshold;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** Read the list (its newest `length` runs); throws what the request threw. */
  async read(length: number): Promise<void> {
    const reply = await this._api.runs(length);
    this._runs = reply.runs;
    this._stragglerThreshold = reply.straggler_threshold ?? STRAGGLER_THRESHOLD;
    this._loaded = true;
  }

  /** The newest run, if it started since the panel opened and was not given yet: to select, once. */
  started(): string | null {
    const newest = this._runs[0];
    if (newest && newest.started >= this._openedAt && !this._autoSelected.has(newest.id)) {
      this._autoSelected.add(newest.id);
      return newest.id;
    }
    return null;
  }

  /** A deleted run: out of the list. */
  forget(id: string): void {
    this._runs = this._runs.filter(run => run.id !== id);
  }

  /** Follow changed settings: the refresh interval, and the list's length (read again at once). */
  setConfig(old: IPanelConfig, config: IPanelConfig): void {
    if (old.refreshInterval !== config.refreshInterval) {
      this._poll.frequency = pollFrequency(config);
    }
    if (old.runListLength !== config.runListLength && !this._poll.isDisposed) {
      void this._poll.refresh();
    }
  }

  start(): Promise<void> {
    return this._poll.start();
  }

  /** Poll now (the poll's next tick is then counted from now). */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
  }

  private _api: DistributedApi;
  private _openedAt: number;
  private _poll: Poll;
  private _runs: Run[] = [];
  private _shownRuns = new LiveRunList();
  private _loaded = false;
  private _stragglerThreshold = STRAGGLER_THRESHOLD;
  private _autoSelected = new Set<string>();
}
