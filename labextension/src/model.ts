/**
 * The panel's model: owns all I/O (REST polling with backoff that stands by
 * while the panel is hidden, the selected run's snapshot and live event
 * stream through `selection.ts`, control actions, the saved panel state) and
 * tells views when to re-render, a few times per second at most. No DOM.
 */

import { ServerConnection } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { type ISignal, Signal } from '@lumino/signaling';

import { RunActions } from './actions';
import { AdviceCells, type INotebookCells } from './advicecells';
import { DistributedApi } from './api';
import { DEFAULT_CONFIG, type IPanelConfig, pollFrequency } from './config';
import type { ImageOpener } from './image';
import { LiveRunList } from './liverun';
import type { LogViewState } from './logstate';
import { type IStateStore, loadPanelState, savePanelState } from './panelstate';
import { type INotebookKernels, ProbeAction } from './probe';
import type { ProbePairs } from './probepairs';
import { STRAGGLER_THRESHOLD } from './rates';
import type { RunLive } from './runstate';
import { RunSelection } from './selection';
import type { ShownRanks } from './shownranks';
import type { Tab } from './tabs';
import { Throttle } from './throttle';
import type { LogLine, Run } from './wire';

export { type IStateStore, STATE_KEY } from './panelstate';

export interface IModelOptions {
  settings?: ServerConnection.ISettings;
  state?: IStateStore | null;
  /** The user's settings; `setConfig` changes them later. */
  config?: IPanelConfig;
  /** Least time between two `changed` signals, in ms. */
  throttle?: number;
  /** The clock, Unix seconds. */
  now?: () => number;
  /** The running notebook kernels, for the Probe action (none: no Probe). */
  kernels?: INotebookKernels | null;
  /** The open notebooks, for the Scaling tab's New cell (none: no button). */
  cells?: INotebookCells | null;
  /** Asks the user before Stop cluster (`confirm.ts`); none: no question. */
  confirmStop?: (cluster: string) => Promise<boolean>;
}

export class DistributedModel implements IDisposable {
  constructor(options: IModelOptions = {}) {
    const settings = options.settings ?? ServerConnection.makeSettings();
    this.api = new DistributedApi(settings);
    this._state = options.state ?? null;
    this._config = options.config ?? DEFAULT_CONFIG;
    this._throttle = new Throttle(() => this._changed.emit(), options.throttle ?? 250);
    this._selection = new RunSelection({
      api: this.api,
      WebSocket: settings.WebSocket,
      runs: () => this._runs,
      failed: message => {
        this._error = message;
      },
      soon: () => this._throttle.soon(),
      now: () => this._throttle.now()
    });
    this.image = this._selection.image;
    this.logView = this._selection.logView;
    this.shownRanks = this._selection.shownRanks;
    this.probePairs = this._selection.probePairs;
    this.actions = new RunActions(
      this.api,
      () => this.selectedRun,
      error => this._acted(error),
      id => this._forget(id),
      {
        confirmStop: options.confirmStop,
        changed: () => this._throttle.now(),
        runOf: id => {
          const run = this.live?.run;
          return run?.id === id ? run : (this._runs.find(r => r.id === id) ?? null);
        }
      }
    );
    this.now = options.now ?? (() => Date.now() / 1000);
    this._openedAt = this.now();
    this.probe = options.kernels ? new ProbeAction(options.kernels, this) : null;
    this.probe?.changed.connect(() => this._throttle.now());
    this.adviceCells = options.cells ? new AdviceCells(options.cells, () => this._throttle.now()) : null;
    this._poll = new Poll({
      name: 'jupyter-distributed:runs',
      factory: () => this.refresh(),
      frequency: pollFrequency(this._config),
      standby: () => this._hidden || 'when-hidden'
    });
    // The saved state first, so that the first list already shows the saved run.
    this.restored = this._restore().then(() => {
      if (!this._disposed) {
        void this._poll.start();
      }
    });
  }

  /** Settled once the saved panel state is applied and polling has started. */
  readonly restored: Promise<void>;

  readonly api: DistributedApi;
  /** Cancel, stop and stacks for the selected run. */
  readonly actions: RunActions;
  /** The Logs tab's filter and follow state. */
  readonly logView: LogViewState;
  /** The ranks drawn as their own lines in the many-rank plots (Ranks tab, rank picker). */
  readonly shownRanks: ShownRanks;
  /** The display image opened from the Logs. */
  readonly image: ImageOpener;
  readonly now: () => number;
  /** `%distributed probe` in the kernel of the selected run's notebook; null without kernels. */
  readonly probe: ProbeAction | null;
  /** An advised launch line into a new cell of the cluster's notebook; null without notebooks. */
  readonly adviceCells: AdviceCells | null;
  /** The pairs of the selected run's probe (the runs list leaves them out), for the Scaling tab. */
  readonly probePairs: ProbePairs;

  /** Emitted (throttled) when anything the views show has changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The polled runs list, with the selected run's state as its live stream knows it (`liverun.ts`). */
  get runs(): readonly Run[] {
    return this._shownRuns.get(this._runs, this.live?.run ?? null);
  }

  /** Whether the runs list has been read from the server at least once. */
  get loaded(): boolean {
    return this._loaded;
  }

  /** The last error, as one line; empty when the last request succeeded. */
  get error(): string {
    return this._error;
  }

  get selectedId(): string | null {
    return this._selection.id;
  }

  get selectedRun(): Run | null {
    return this.live?.run ?? this._runs.find(r => r.id === this.selectedId) ?? null;
  }

  /** The live state of the selected run. */
  get live(): RunLive | null {
    return this._selection.live;
  }

  get tab(): Tab {
    return this._tab;
  }

  /** The straggler rule's threshold: the server's `c.Distributed.straggler_threshold` (`rates.ts`). */
  get stragglerThreshold(): number {
    return this._stragglerThreshold;
  }

  /** The user's settings in effect. */
  get config(): IPanelConfig {
    return this._config;
  }

  /** Follow changed settings: the refresh interval and list length at once, the rest on the next render. */
  setConfig(config: IPanelConfig): void {
    const old = this._config;
    this._config = config;
    if (old.refreshInterval !== config.refreshInterval) {
      this._poll.frequency = pollFrequency(config);
    }
    if (old.runListLength !== config.runListLength && !this._disposed) {
      void this._poll.refresh();
    }
    this._throttle.now();
  }

  /** Open the image of a display's log line of the selected run (from the history). */
  openImage(line: LogLine): Promise<void> {
    return this._selection.openImage(line);
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
      this._throttle.now();
    }
  }

  /** Show one run: its ranks snapshot, then every event of it through the live stream. */
  select(id: string | null): void {
    if (this._selection.select(id)) {
      this._save();
      this._throttle.now();
    }
  }

  /** Refresh the runs list (the poll calls this); selects a run started since the panel opened. */
  async refresh(): Promise<void> {
    try {
      const reply = await this.api.runs(this._config.runListLength);
      this._runs = reply.runs;
      this._stragglerThreshold = reply.straggler_threshold ?? STRAGGLER_THRESHOLD;
      this._loaded = true;
      this._error = '';
    } catch (error) {
      this._error = (error as Error).message;
      this._throttle.soon();
      throw error; // Let the poll back off.
    }
    const newest = this._runs[0];
    if (newest && newest.started >= this._openedAt && !this._autoSelected.has(newest.id)) {
      this._autoSelected.add(newest.id);
      this.select(newest.id);
    } else if (this.selectedId !== null && !this.live?.run) {
      this.select(this.selectedId);
    }
    await this._selection.refreshed();
    this._throttle.soon();
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._poll.dispose();
    this.actions.dispose();
    this.probe?.dispose();
    this._selection.dispose();
    this._throttle.stop();
    Signal.clearData(this);
  }

  /** A deleted run: out of the list and no longer selected. */
  private _forget(id: string): void {
    this._runs = this._runs.filter(run => run.id !== id);
    if (this.selectedId === id) {
      this.select(null);
    }
  }

  /** After a control action: its error (or none) shown, the list refreshed. */
  private async _acted(error: string): Promise<void> {
    this._error = error;
    await this._poll.refresh();
    this._throttle.soon();
  }

  private async _restore(): Promise<void> {
    const saved = await loadPanelState(this._state);
    // A choice the user made before the state arrived wins.
    if (saved.tab && this._tab === 'runs') {
      this._tab = saved.tab;
    }
    if (saved.run) {
      this._selection.restore(saved.run); // Loaded once the runs list arrives.
    }
    this._throttle.now();
  }

  private _save(): void {
    savePanelState(this._state, { run: this.selectedId, tab: this._tab });
  }

  private _runs: Run[] = [];
  private _shownRuns = new LiveRunList();
  private _loaded = false;
  private _error = '';
  /** The selected run and its I/O. */
  private _selection: RunSelection;
  private _tab: Tab = 'runs';
  private _hidden = false;
  private _disposed = false;
  private _openedAt: number;
  private _autoSelected = new Set<string>();
  private _poll: Poll;
  private _state: IStateStore | null;
  private _config: IPanelConfig;
  private _stragglerThreshold = STRAGGLER_THRESHOLD;
  private _changed = new Signal<this, void>(this);
  /** Signals views: `soon()` (throttled) when data changed, `now()` for user actions. */
  private _throttle: Throttle;
}
