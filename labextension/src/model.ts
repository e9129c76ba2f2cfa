/**
 * The panel's model: owns all I/O (the runs list's REST polling through
 * `runspoll.ts`, the selected run's snapshot and live event stream through
 * `selection.ts`, control actions, the saved panel state) and tells views when
 * to re-render, a few times per second at most. No DOM.
 */

import { ServerConnection } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { type ISignal, Signal } from '@lumino/signaling';

import { RunActions } from './actions';
import { AdviceCells, type INotebookCells } from './advicecells';
import { DistributedApi } from './api';
import { DEFAULT_CONFIG, type IPanelConfig } from './config';
import type { ImageOpener } from './image';
import type { LogViewState } from './logstate';
import { type IStateStore, PanelState } from './panelstate';
import { type INotebookKernels, ProbeAction } from './probe';
import type { ProbePairs } from './probepairs';
import { RunsPoll } from './runspoll';
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
    this._config = options.config ?? DEFAULT_CONFIG;
    this._throttle = new Throttle(() => this._changed.emit(), options.throttle ?? 250);
    this._panel = new PanelState(options.state ?? null, () => this.selectedId);
    this._selection = new RunSelection({
      api: this.api,
      WebSocket: settings.WebSocket,
      runs: () => this._list.runs,
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
          return run?.id === id ? run : (this._list.runs.find(r => r.id === id) ?? null);
        }
      }
    );
    this.now = options.now ?? (() => Date.now() / 1000);
    const openedAt = this.now();
    this.probe = options.kernels ? new ProbeAction(options.kernels, this) : null;
    this.probe?.changed.connect(() => this._throttle.now());
    this.adviceCells = options.cells ? new AdviceCells(options.cells, () => this._throttle.now()) : null;
    this._list = new RunsPoll({
      api: this.api,
      config: this._config,
      openedAt,
      hidden: () => this._hidden,
      refresh: () => this.refresh()
    });
    // The saved state first, so that the first list already shows the saved run.
    this.restored = this._restore().then(() => {
      if (!this._disposed) {
        void this._list.start();
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
    return this._list.shown(this.live?.run ?? null);
  }

  /** Whether the runs list has been read from the server at least once. */
  get loaded(): boolean {
    return this._list.loaded;
  }

  /** The last error, as one line; empty when the last request succeeded. */
  get error(): string {
    return this._error;
  }

  get selectedId(): string | null {
    return this._selection.id;
  }

  get selectedRun(): Run | null {
    return this.live?.run ?? this._list.runs.find(r => r.id === this.selectedId) ?? null;
  }

  /** The live state of the selected run. */
  get live(): RunLive | null {
    return this._selection.live;
  }

  get tab(): Tab {
    return this._panel.tab;
  }

  /** The straggler rule's threshold: the server's `c.Distributed.straggler_threshold` (`rates.ts`). */
  get stragglerThreshold(): number {
    return this._list.stragglerThreshold;
  }

  /** The user's settings in effect. */
  get config(): IPanelConfig {
    return this._config;
  }

  /** Follow changed settings: the refresh interval and list length at once, the rest on the next render. */
  setConfig(config: IPanelConfig): void {
    const old = this._config;
    this._config = config;
    this._list.setConfig(old, config);
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
      void this._list.refresh();
    }
  }

  setTab(tab: Tab): void {
    if (this._panel.setTab(tab)) {
      this._throttle.now();
    }
  }

  /** Show one run: its ranks snapshot, then every event of it through the live stream. */
  select(id: string | null): void {
    if (this._selection.select(id)) {
      this._panel.save();
      this._throttle.now();
    }
  }

  /** Refresh the runs list (the poll calls this); selects a run started since the panel opened. */
  async refresh(): Promise<void> {
    try {
      await this._list.read(this._config.runListLength);
      this._error = '';
    } catch (error) {
      this._error = (error as Error).message;
      this._throttle.soon();
      throw error; // Let the poll back off.
    }
    const started = this._list.started();
    if (started !== null) {
      this.select(started);
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
    this._list.dispose();
    this.actions.dispose();
    this.probe?.dispose();
    this._selection.dispose();
    this._throttle.stop();
    Signal.clearData(this);
  }

  /** A deleted run: out of the list and no longer selected. */
  private _forget(id: string): void {
    this._list.forget(id);
    if (this.selectedId === id) {
      this.select(null);
    }
  }

  /** After a control action: its error (or none) shown, the list refreshed. */
  private async _acted(error: string): Promise<void> {
    this._error = error;
    await this._list.refresh();
    this._throttle.soon();
  }

  private async _restore(): Promise<void> {
    await this._panel.restore(run => this._selection.restore(run)); // Loaded once the runs list arrives.
    this._throttle.now();
  }

  /** The runs list and its polling. */
  private _list: RunsPoll;
  private _error = '';
  /** The selected run and its I/O. */
  private _selection: RunSelection;
  /** The tab and the saved panel state. */
  private _panel: PanelState;
  private _hidden = false;
  private _disposed = false;
  private _config: IPanelConfig;
  private _changed = new Signal<this, void>(this);
  /** Signals views: `soon()` (throttled) when data changed, `now()` for user actions. */
  private _throttle: Throttle;
}
