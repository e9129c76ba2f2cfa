/**
 * The live state of one run, folded from the REST snapshot and the event
 * stream: ranks, log lines, throughput and other metric series, failures.
 * Pure data (no I/O, no DOM), so the model's tests can drive it directly.
 */

import { failureLines } from './failurelines';
import { LogBuffer } from './logbuffer';
import { batchLines, inSeqOrder, isItem, type StreamPart } from './nodebatch';
import { RankReports } from './rates';
import { lowerBound, SecondStats, type Series } from './secondstats';
import {
  type DistributedEvent,
  isRunActive,
  type LogLine,
  type NodeBatch,
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

/** The most points kept per metric series (the oldest are dropped). */
export const MAX_POINTS = 20_000;

/** The metric that counts samples: its rate (`rates.ts`) is the throughput. */
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

export type { Series } from './secondstats';

/** Per metric name, per rank, (t, value) points. */
export type MetricSeries = Map<string, Map<number, Series>>;

export class RunLive {
  constructor(readonly runId: string) {}

  run: Run | null = null;
  readonly ranks = new Map<number, RankLive>();
  readonly logs = new LogBuffer();
  readonly failures: RankFailure[] = [];
  /** Per rank, its `report(samples=…)` calls and its rates (`rates.ts`). */
  readonly samples = new Map<number, RankReports>();
  /** Per second, each rank's live samples/s across ranks, kept up to date for the plots. */
  readonly samplesStats = new SecondStats(second => {
    const values: number[] = [];
    for (const reports of this.samples.values()) {
      const v = reports.perSecond.get(second);
      if (v !== undefined) {
        values.push(v);
      }
    }
    return values;
  }, MAX_POINTS);
  /** Per metric name (of `metrics` and `system`), each rank's last value per second across ranks. */
  readonly metricStats = new Map<string, SecondStats>();
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

  /**
   * Fold one message's new parts (already de-duplicated, in order): events
   * one by one, a node's batch in one step. Lines go to the Logs in `seq` order.
   */
  apply(parts: readonly StreamPart[]): void {
    const lines: LogLine[] = [];
    for (const part of parts) {
      if (isItem(part)) {
        if (part.event.run_id === this.runId) {
          this._event(part.seq, part.event, lines);
        }
      } else if (part.run_id === this.runId) {
        this._batch(part, lines);
      }
    }
    for (const line of inSeqOrder(lines)) {
      this.logs.push(line);
    }
    this.version++;
  }

  private _event(seq: number, event: DistributedEvent, lines: LogLine[]): void {
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
        lines.push({ seq, rank: event.rank, t: event.t, stream: event.stream, text: event.text });
        this._alive(this._rank(event.rank), event.t);
        break;
      case 'metric':
        this._alive(this._rank(event.rank), event.t);
        for (const [name, value] of Object.entries(event.values)) {
          this._value(name, event.rank, event.t, value);
        }
        break;
      case 'error':
        // As the store does: a rank that reported an error has failed.
        this.failures.push(event.failure);
        this._rank(event.rank).state = 'failed';
        // Its traceback in the Logs, as error lines.
        for (const text of failureLines(event.failure)) {
          lines.push({ seq, rank: event.rank, t: event.t, stream: 'error', text });
        }
        break;
      case 'stacks':
        this.stacks = event;
        break;
    }
  }

  /** A node's events of one kind, in one step: the ranks' states, lines or metric columns. */
  private _batch(batch: NodeBatch, lines: LogLine[]): void {
    const { rank: ranks, t } = batch;
    if (batch.kind === 'rank') {
      for (let i = 0; i < ranks.length; i++) {
        const rank = this._rank(ranks[i] as number);
        rank.state = batch.state[i] as RankState;
        rank.host = batch.node || rank.host;
        rank.pid = batch.pid[i] ?? rank.pid;
        this._alive(rank, t[i] as number);
      }
      return;
    }
    for (let i = 0; i < ranks.length; i++) {
      this._alive(this._rank(ranks[i] as number), t[i] as number);
    }
    if (batch.kind === 'output') {
      batchLines(batch, lines);
    } else {
      for (const [name, values] of Object.entries(batch.values)) {
        for (let i = 0; i < ranks.length; i++) {
          this._value(name, ranks[i] as number, t[i] as number, values[i]);
        }
      }
    }
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

  /** One value of a metric sample. */
  private _value(name: string, rank: number, t: number, value: unknown): void {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      return;
    }
    if (name === SAMPLES_METRIC) {
      let reports = this.samples.get(rank);
      if (!reports) {
        reports = new RankReports();
        this.samples.set(rank, reports);
      }
      for (const second of reports.add(t, value)) {
        this.samplesStats.touch(second);
      }
      return;
    }
    const series = name.startsWith('sys.') ? this.system : this.metrics;
    addPoint(series, name, rank, t, value);
    let stats = this.metricStats.get(name);
    if (!stats) {
      const byRank = series.get(name) as Map<number, Series>;
      stats = new SecondStats(second => lastPerRank(byRank, second), MAX_POINTS);
      this.metricStats.set(name, stats);
    }
    stats.touch(Math.floor(t));
  }
}

/** Each rank's last value within a whole second (its points are in time order). */
function lastPerRank(byRank: ReadonlyMap<number, Series>, second: number): number[] {
  const values: number[] = [];
  for (const { x, y } of byRank.values()) {
    const i = lowerBound(x, second + 1) - 1;
    if (i >= 0 && (x[i] as number) >= second) {
      values.push(y[i] as number);
    }
  }
  return values;
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
  if (!points.x.length || t >= (points.x[points.x.length - 1] as number)) {
    points.x.push(t);
    points.y.push(value);
  } else {
    // Late (out of order): kept in time order, which the per-second statistics rely on.
    let i = lowerBound(points.x, t);
    while (points.x[i] === t) {
      i++; // after points of the same time: the later report wins
    }
    points.x.splice(i, 0, t);
    points.y.splice(i, 0, value);
  }
  if (points.x.length > MAX_POINTS) {
    points.x.splice(0, points.x.length - MAX_POINTS);
    points.y.splice(0, points.y.length - MAX_POINTS);
  }
}
