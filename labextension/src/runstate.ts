/**
 * The live state of one run, folded from the REST snapshot and the event
 * stream: ranks, log lines, throughput and other metric series, failures.
 * Pure data (no I/O, no DOM), so the model's tests can drive it directly.
 */

import { LogBuffer } from './logbuffer';
import type { ISeqEvent } from './stream';
import {
  isRunActive,
  type RankCoords,
  type RankFailure,
  type RankState,
  type Run,
  type RunReply,
  type RunState,
  type StacksEvent
} from './wire';

/** How long a running rank may go without a heartbeat before it is marked stalled. */
export const STALL_SECONDS = 5;

/** A rank below this fraction of its peers' median samples/s is a straggler. */
export const STRAGGLER_FRACTION = 0.5;

/** The window over which a rank's current samples/s is averaged. */
export const RATE_WINDOW_SECONDS = 5;

/** The most points kept per metric series (the oldest are dropped). */
export const MAX_POINTS = 20_000;

/** The metric that counts samples: its per-second sum is the throughput. */
export const SAMPLES_METRIC = 'samples';

export interface RankLive {
  rank: number;
  host: string;
  pid: number | null;
  state: RankState;
  coords: RankCoords;
  /** Unix time of the last sign of life (heartbeat, metric, output, state change). */
  heartbeat: number | null;
}

export interface Series {
  x: number[];
  y: number[];
}

/** Per metric name, per rank, (t, value) points. */
export type MetricSeries = Map<string, Map<number, Series>>;

export class RunLive {
  constructor(readonly runId: string) {}

  run: Run | null = null;
  readonly ranks = new Map<number, RankLive>();
  readonly logs = new LogBuffer();
  readonly failures: RankFailure[] = [];
  /** Per rank, per whole second (Unix), samples reported in that second. */
  readonly samples = new Map<number, Map<number, number>>();
  /** Reported metrics other than `samples` and the `sys.*` system samples. */
  readonly metrics: MetricSeries = new Map();
  /** `sys.*` system samples (CPU percent, RSS in MB, GPU where present). */
  readonly system: MetricSeries = new Map();
  /** The latest stacks of the run's ranks (on request, a timeout, before a kill). */
  stacks: StacksEvent | null = null;
  /** Bumped on every change; views compare it to skip work. */
  version = 0;

  /** Apply `GET runs/<id>`: the run record and each rank's last known state. */
  setSnapshot(reply: RunReply): void {
    this.run = reply.run;
    for (const info of reply.ranks) {
      const known = this.ranks.get(info.rank);
      this.ranks.set(info.rank, {
        rank: info.rank,
        host: info.host || known?.host || '',
        pid: info.pid ?? known?.pid ?? null,
        // The stream may already be ahead of the snapshot.
        state: known && (known.heartbeat ?? 0) > (info.updated ?? 0) ? known.state : info.state,
        coords: info.coords ?? {},
        heartbeat: Math.max(known?.heartbeat ?? 0, info.heartbeat ?? info.updated ?? 0) || null
      });
    }
    this.version++;
  }

  /** Fold a batch of stream events (already de-duplicated, in order). */
  apply(items: readonly ISeqEvent[]): void {
    for (const { seq, event } of items) {
      if (event.run_id !== this.runId) {
        continue;
      }
      switch (event.kind) {
        case 'run':
          this._setRunState(event.state, event.t, event.message);
          break;
        case 'rank': {
          const rank = this._rank(event.rank);
          rank.state = event.state;
          rank.host = event.host || rank.host;
          rank.pid = event.pid ?? rank.pid;
          this._alive(rank, event.t);
          break;
        }
        case 'output':
          this.logs.push({ seq, rank: event.rank, t: event.t, stream: event.stream, text: event.text });
          this._alive(this._rank(event.rank), event.t);
          break;
        case 'metric':
          this._metric(event.rank, event.t, event.values);
          break;
        case 'error':
          // As the store does: a rank that reported an error has failed.
          this.failures.push(event.failure);
          this._rank(event.rank).state = 'failed';
          break;
        case 'stacks':
          this.stacks = event;
          break;
      }
    }
    this.version++;
  }

  private _setRunState(state: RunState, t: number, message: string): void {
    if (this.run) {
      this.run = {
        ...this.run,
        state,
        message: message || this.run.message,
        ended: isRunActive(state) ? null : t
      };
    }
  }

  private _rank(rank: number): RankLive {
    let live = this.ranks.get(rank);
    if (!live) {
      live = { rank, host: '', pid: null, state: 'starting', coords: {}, heartbeat: null };
      this.ranks.set(rank, live);
    }
    return live;
  }

  private _alive(rank: RankLive, t: number): void {
    if (rank.heartbeat === null || t > rank.heartbeat) {
      rank.heartbeat = t;
    }
  }

  private _metric(rank: number, t: number, values: Record<string, number>): void {
    this._alive(this._rank(rank), t);
    for (const [name, value] of Object.entries(values)) {
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        continue;
      }
      if (name === SAMPLES_METRIC) {
        let perSecond = this.samples.get(rank);
        if (!perSecond) {
          perSecond = new Map();
          this.samples.set(rank, perSecond);
        }
        const second = Math.floor(t);
        perSecond.set(second, (perSecond.get(second) ?? 0) + value);
        if (perSecond.size > MAX_POINTS) {
          perSecond.delete(perSecond.keys().next().value as number);
        }
        continue;
      }
      addPoint(name.startsWith('sys.') ? this.system : this.metrics, name, rank, t, value);
    }
  }
}

function addPoint(series: MetricSeries, name: string, rank: number, t: number, value: number): void {
  let byRank = series.get(name);
  if (!byRank) {
    byRank = new Map();
    series.set(name, byRank);
  }
  let points = byRank.get(rank);
  if (!points) {
    points = { x: [], y: [] };
    byRank.set(rank, points);
  }
  points.x.push(t);
  points.y.push(value);
  if (points.x.length > MAX_POINTS) {
    points.x.splice(0, points.x.length - MAX_POINTS);
    points.y.splice(0, points.y.length - MAX_POINTS);
  }
}
