/**
 * The run the panel shows, for the model: its I/O (its ranks snapshot, `GET runs/<id>`, then every
 * event of it through the live stream, folded into its `RunLive`; its probe's pairs when the runs
 * list has them without them) and what the views keep of it (the Logs' filter, the ranks shown,
 * an opened image), reset when another run is selected. No DOM.
 */

import type { DistributedApi } from './api';
import { ImageOpener } from './image';
import { LogViewState } from './logstate';
import { ProbePairs } from './probepairs';
import { RunLive } from './runstate';
import { ShownRanks } from './shownranks';
import { EventStream, type StreamPart } from './stream';
import { isRunActive, type LogLine, type Run } from './wire';

/** What the selection uses of the model. */
export interface ISelectionHost {
  api: DistributedApi;
  WebSocket: typeof WebSocket;
  /** The runs list as last read. */
  runs: () => readonly Run[];
  /** A request failed: its message, as one line. */
  failed: (message: string) => void;
  /** Data changed: re-render soon (throttled). */
  soon: () => void;
  /** The user changed something: re-render now. */
  now: () => void;
}

export class RunSelection {
  constructor(private readonly _host: ISelectionHost) {
    this.image = new ImageOpener(_host.now);
    this.logView = new LogViewState(_host.now, undefined, _host.soon);
    this.shownRanks = new ShownRanks(_host.now);
    this.probePairs = new ProbePairs(id => _host.api.run(id), _host.soon);
  }

  /** The Logs tab's filter and follow state. */
  readonly logView: LogViewState;
  /** The ranks drawn as their own lines in the many-rank plots (Ranks tab, rank picker). */
  readonly shownRanks: ShownRanks;
  /** The display image opened from the Logs. */
  readonly image: ImageOpener;
  /** The pairs of the selected run's probe (the runs list leaves them out), for the Scaling tab. */
  readonly probePairs: ProbePairs;

  get id(): string | null {
    return this._id;
  }

  /** The live state of the selected run. */
  get live(): RunLive | null {
    return this._live;
  }

  /** Show one run (none: null); false when it is already shown. */
  select(id: string | null): boolean {
    if (id === this._id && (id === null || this._live)) {
      return false;
    }
    const host = this._host;
    this._stream?.dispose();
    this._stream = null;
    this._id = id;
    this._live = id === null ? null : new RunLive(id);
    this.logView.reset();
    this.shownRanks.forRun(id);
    this.image.close();
    this._opening = id !== null;
    if (id !== null) {
      const live = this._live as RunLive;
      void this._open(live);
      const stream = new EventStream({
        url: after => host.api.streamUrl(id, after),
        WebSocket: host.WebSocket
      });
      stream.received.connect(this._onEvents, this);
      this._stream = stream;
    }
    return true;
  }

  /** Open the image of a display's log line of the selected run (from the history). */
  async openImage(line: LogLine): Promise<void> {
    if (this._id !== null) {
      await this.image.open(this._host.api, this._id, line);
    }
  }

  /** The saved run, selected (and loaded) once the runs list arrives; unless one is selected already. */
  restore(id: string): void {
    if (this._id === null) {
      this._id = id;
    }
  }

  /** After the runs list is read: the snapshot again while the run is active, its probe's pairs. */
  async refreshed(): Promise<void> {
    const live = this._live;
    if (live?.run && isRunActive(live.run.state)) {
      await this._loadRun(live);
    }
    if (!this._opening) {
      this._followProbe();
    }
  }

  dispose(): void {
    this._stream?.dispose();
    this._stream = null;
    this.logView.dispose();
  }

  /** A new selection's first snapshot, then its probe's pairs if the snapshot did not bring them. */
  private async _open(live: RunLive): Promise<void> {
    await this._loadRun(live);
    if (live === this._live) {
      this._opening = false;
      this._followProbe();
    }
  }

  /** Fetch the pairs of the selected run's probe when the list has it without them. */
  private _followProbe(): void {
    this.probePairs.follow(this._host.runs().find(r => r.id === this._id) ?? null);
  }

  private async _loadRun(live: RunLive): Promise<void> {
    const host = this._host;
    try {
      const reply = await host.api.run(live.runId);
      if (live === this._live) {
        live.setSnapshot(reply);
        this.probePairs.offer(reply.run);
        host.soon();
      }
    } catch (error) {
      host.failed((error as Error).message);
      host.soon();
    }
  }

  private _onEvents(_: EventStream, items: StreamPart[]): void {
    this._live?.apply(items);
    if (this._live) {
      this.logView.keepUp(this._live.logs);
    }
    this._host.soon();
  }

  private _id: string | null = null;
  private _live: RunLive | null = null;
  /** The selected run's first snapshot is under way (it may bring its probe's pairs). */
  private _opening = false;
  private _stream: EventStream | null = null;
}
