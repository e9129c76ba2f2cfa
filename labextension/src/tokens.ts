/**
 * Wire types shared with the Python side.
 *
 * Each interface here mirrors a JSON document that the server extension
 * (`python/jupyter_distributed/server/`) sends, field for field, with the
 * Python snake_case names kept: runs and ranks from `store.py`, events from
 * `events.py` (`to_json`), failures from `errors.py` (`RankFailure.to_json`).
 */

import type { JSONObject } from '@lumino/coreutils';

/**
 * The version of the REST API this panel speaks (`version` in `GET runs`).
 */
export const API_VERSION = 1;

/**
 * The path of the server extension's API below the server's base URL.
 */
export const API_PATH = 'jupyter-distributed/api';

export type RunState = 'pending' | 'running' | 'completed' | 'failed' | 'interrupted' | 'stopped';

export type RankState = 'starting' | 'running' | 'done' | 'failed' | 'interrupted' | 'exited';

export type StreamName = 'stdout' | 'stderr' | 'result';

/**
 * One run: a cell executed on a cluster, or one training job. Times are Unix seconds.
 */
export interface Run {
  id: string;
  backend: string;
  world_size: number;
  ranks: number[];
  state: RunState;
  cluster_id: string;
  spec: JSONObject;
  source: string;
  notebook: string;
  cell_id: string;
  host: string;
  kernel_pid: number | null;
  external_id: string;
  started: number;
  ended: number | null;
  message: string;
  summary: JSONObject;
}

/**
 * Where a rank sits in the parallel layout (`spec.RankCoords` plus host and pid).
 */
export interface RankCoords {
  rank?: number;
  local_rank?: number;
  node_rank?: number;
  data_parallel?: number;
  pipeline_stage?: number;
  tensor_parallel?: number;
  role?: string;
  host?: string;
  pid?: number | null;
}

export interface RankInfo {
  rank: number;
  host: string;
  pid: number | null;
  state: RankState;
  coords: RankCoords;
  updated: number | null;
  heartbeat: number | null;
}

/** `GET runs` */
export interface RunsReply {
  runs: Run[];
  version: number;
  /** The store's last event seq when the list was read: a stream cursor. */
  last_seq: number;
}

/** `GET runs/<id>` */
export interface RunReply {
  run: Run;
  ranks: RankInfo[];
}

export interface LogLine {
  seq: number;
  rank: number;
  t: number;
  stream: StreamName;
  text: string;
}

/** `GET runs/<id>/logs` */
export interface LogsReply {
  lines: LogLine[];
  next: number;
}

export interface MetricSample {
  seq: number;
  rank: number;
  t: number;
  values: Record<string, number>;
}

/** `GET runs/<id>/metrics` */
export interface MetricsReply {
  samples: MetricSample[];
  next: number;
}

/** `errors.RankFailure.to_json` */
export interface RankFailure {
  rank: number;
  t: number;
  host: string;
  pid: number | null;
  ename: string;
  evalue: string;
  traceback: string[];
  exit_code: number | null;
  signal: string | null;
  kind: string;
}

export interface RunEvent {
  kind: 'run';
  run_id: string;
  t: number;
  state: RunState;
  message: string;
}

export interface RankEvent {
  kind: 'rank';
  run_id: string;
  rank: number;
  t: number;
  state: RankState;
  host: string;
  pid: number | null;
}

export interface OutputEvent {
  kind: 'output';
  run_id: string;
  rank: number;
  t: number;
  stream: StreamName;
  text: string;
}

export interface MetricEvent {
  kind: 'metric';
  run_id: string;
  rank: number;
  t: number;
  values: Record<string, number>;
}

export interface ErrorEvent {
  kind: 'error';
  run_id: string;
  rank: number;
  t: number;
  failure: RankFailure;
}

export type DistributedEvent = RunEvent | RankEvent | OutputEvent | MetricEvent | ErrorEvent;

/** One message of the `stream` WebSocket. */
export interface StreamMessage {
  events: { seq: number; event: DistributedEvent }[];
}
