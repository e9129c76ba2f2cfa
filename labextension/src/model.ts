/**
 * The panel's model: owns all I/O (REST polling with backoff that stands by
 * while the panel is hidden, the live event stream of the selected run,
 * control actions, the saved panel state) and tells views when to re-render,
 * a few times per second at most. No DOM.
 */

import { ServerConnection } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { Signal, type ISignal } from '@lumino/signaling';

import { DistributedApi } from './api';
import { ALL_LINES, type ILogFilter } from './logbuffer';
import { RunLive } from './runstate';
import { EventStream, type ISeqEvent } from './stream';
import type { Run } from './tokens';

export type Tab = 'runs' | 'ranks' | 'logs' | 'throughput';

export const TABS: readonly Tab[] = ['runs', 'ranks', 'logs', 'throughput'];

/** The key under which the panel state (selected run, tab) is saved. */
export const STATE_KEY = 'jupyter-distributed:panel';

/** Where the panel state is saved: `localStorage` in the browser. */
export type StateStorage = Pick<Storage, 'getItem' | 'setItem'>;

export interface IModelOptions {
  settings?: ServerConnection.ISettings;
  storage?: StateStorage | null;
  /** Runs-list refresh interval in ms (backs off on errors up to 30 s). */
  interval?: number;
  /** Least time between two `changed` signals, in ms. */
  throttle?: number;
  /** The clock, Unix seconds. */
  now?: () => number;
}

export class DistributedModel implements IDisposable {
  constructor(options: IModelOptions = {}) {
    const settings = options.settings ?? ServerConnection.makeSettings();
    this.api = new DistributedApi(settings);
    this._WebSocket = settings.WebSocket;
    this._storage = options.storage === undefined ? defaultStorage() : options.storage;
    this._throttle = options.throttle ?? 250;
    this.now = options.now ?? (() => Date.now() / 1000);
    this._openedAt = this.now();
    this._restore();
    const interval = options.interval ?? 2000;
    this._poll = new Poll({
      name: 'jupyter-distributed:runs',
      factory: () => this.refresh(),
      frequency: { interval, backoff: true, max: 30 * 1000 },
      standby: () => this._hidden || 'when-hidden'
    });
    void this._poll.start();
  }

  readonly api: DistributedApi;
  readonly now: () => number;

  /** Emitted (throttled) when anything the views show has changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get runs(): readonly Run[] {
    return this._runs;
  }

  /** The last error, as one line; empty when the last request succeeded. */
  get error(): string {
    return this._error;
  }

  get selectedId(): string | null {
    return this._selectedId;
  }

  get selectedRun(): Run | null {
    return this._live?.run ?? this._runs.find(r => r.id === this._selectedId) ?? null;
  }

  /** The live state of the selected run. */
  get live(): RunLive | null {
    return this._live;
  }

  get tab(): Tab {
    return this._tab;
  }

  get logFilter(): ILogFilter {
    return this._logFilter;
  }

  /** Whether the log view follows new lines. */
  get followLogs(): boolean {
    return this._followLogs;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The panel is hidden (stand by) or shown (refresh now). */
  setHidden(hidden: boolean): void {
    this._hidden = hidden;
    if (!hidden) {
      void this._poll.refresh();
    }
  }

  setTab(tab: Tab): void {
    if (tab !== this._tab) {
      this._tab = tab;
      this._save();
      this._emitNow();
    }
  }

  setLogFilter(filter: Partial<ILogFilter>): void {
    this._logFilter = { ...this._logFilter, ...filter };
    this._emitNow();
  }

  setFollowLogs(follow: boolean): void {
    this._followLogs = follow;
    this._emitNow();
  }

  /** Show one run: its ranks snapshot, then every event of it through the live stream. */
  select(id: string | null): void {
    if (id === this._selectedId && (id === null || this._live)) {
      return;
    }
    this._stream?.dispose();
    this._stream = null;
    this._selectedId = id;
    this._live = id === null ? null : new RunLive(id);
    this._logFilter = ALL_LINES;
    this._save();
    if (id !== null) {
      const live = this._live as RunLive;
      void this._loadRun(live);
      const stream = new EventStream({
        url: after => this.api.streamUrl(id, after),
        WebSocket: this._WebSocket
      });
      stream.received.connect(this._onEvents, this);
      this._stream = stream;
    }
    this._emitNow();
  }

  /** Refresh the runs list (the poll calls this); selects a run started since the panel opened. */
  async refresh(): Promise<void> {
    try {
      const reply = await this.api.runs();
      this._runs = reply.runs;
      this._error = '';
    } catch (error) {
      this._error = (error as Error).message;
      this._emit();
      throw error; // Let the poll back off.
    }
    const newest = this._runs[0];
    if (newest && newest.started >= this._openedAt && !this._autoSelected.has(newest.id)) {
      this._autoSelected.add(newest.id);
      this.select(newest.id);
    } else if (this._selectedId !== null && !this._live?.run) {
      this.select(this._selectedId);
    }
    const live = this._live;
    if (live?.run && (live.run.state === 'running' || live.run.state === 'pending')) {
      await this._loadRun(live);
    }
    this._emit();
  }

  async cancel(): Promise<void> {
    await this._act(run => this.api.cancel(run.id));
  }

  async stopCluster(): Promise<void> {
    await this._act(run => this.api.stopCluster(run.cluster_id));
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._poll.dispose();
    this._stream?.dispose();
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    Signal.clearData(this);
  }

  private async _act(action: (run: Run) => Promise<void>): Promise<void> {
    const run = this.selectedRun;
    if (!run) {
      return;
    }
    try {
      await action(run);
      this._error = '';
    } catch (error) {
      this._error = (error as Error).message;
    }
    await this._poll.refresh();
    this._emit();
  }

  private async _loadRun(live: RunLive): Promise<void> {
    try {
      const reply = await this.api.run(live.runId);
      if (live === this._live) {
        live.setSnapshot(reply);
        this._emit();
      }
    } catch (error) {
      this._error = (error as Error).message;
      this._emit();
    }
  }

  private _onEvents(_: EventStream, items: ISeqEvent[]): void {
    this._live?.apply(items);
    this._emit();
  }

  /** Signal views soon, at most once per throttle interval. */
  private _emit(): void {
    if (this._timer !== null || this._disposed) {
      return;
    }
    const wait = Math.max(0, this._lastEmit + this._throttle - performanceNow());
    this._timer = setTimeout(() => {
      this._timer = null;
      this._lastEmit = performanceNow();
      this._changed.emit();
    }, wait);
  }

  /** Signal views at once (user actions). */
  private _emitNow(): void {
    if (this._disposed) {
      return;
    }
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    this._lastEmit = performanceNow();
    this._changed.emit();
  }

  private _restore(): void {
    let saved: { run?: unknown; tab?: unknown } = {};
    try {
      saved = JSON.parse(this._storage?.getItem(STATE_KEY) ?? '{}') as typeof saved;
    } catch {
      saved = {};
    }
    if (typeof saved.tab === 'string' && (TABS as readonly string[]).includes(saved.tab)) {
      this._tab = saved.tab as Tab;
    }
    if (typeof saved.run === 'string') {
      this._selectedId = saved.run; // Loaded once the runs list arrives.
    }
  }

  private _save(): void {
    try {
      this._storage?.setItem(STATE_KEY, JSON.stringify({ run: this._selectedId, tab: this._tab }));
    } catch {
      // Storage full or disabled: the state just does not survive a reload.
    }
  }

  private _runs: Run[] = [];
  private _error = '';
  private _selectedId: string | null = null;
  private _live: RunLive | null = null;
  private _tab: Tab = 'runs';
  private _logFilter: ILogFilter = ALL_LINES;
  private _followLogs = true;
  private _hidden = false;
  private _disposed = false;
  private _openedAt: number;
  private _autoSelected = new Set<string>();
  private _stream: EventStream | null = null;
  private _poll: Poll;
  private _WebSocket: typeof WebSocket;
  private _storage: StateStorage | null;
  private _throttle: number;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _lastEmit = -Infinity;
  private _changed = new Signal<this, void>(this);
}

function performanceNow(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

function defaultStorage(): StateStorage | null {
  try {
    return typeof localStorage !== 'undefined' ? localStorage : null;
  } catch {
    return null;
  }
}
