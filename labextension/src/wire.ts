/**
 * Wire types shared with the Python side.
 *
 * Each interface here mirrors a JSON document that the server extension
 * (`python/jupyter_distributed/server/`) sends, field for field, with the
 * Python snake_case names kept: runs and ranks from `store.py`, events from
 * `events.py` (`to_json`). What ranks report inside them (a failure, stacks,
 * a probe's pairs) is in `wirereports.ts`, re-exported here: every wire type
 * is imported from this module.
 *
 * `tests/wire/*.json` holds one real document of each kind, written by
 * `tests/python/test_wire.py` from the Python code; `tests/ts/wire.test.ts`
 * type-checks them against these interfaces (`make wire-fixtures` rewrites them).
 */

import type { JSONObject } from '@lumino/coreutils';

import type { RankFailure, RankStacks } from './wirereports';

export type { GroupFlight, ProbePair, ProbeSummary, RankFailure, RankStacks, ThreadStack } from './wirereports';

/**
 * The version of the REST API this panel speaks (`version` in `GET runs`).
 * 2: the runs list leaves out a probe's pairs (`ProbeSummary`).
 */
export const API_VERSION = 2;

/**
 * The path of the server extension's API below the server's base URL.
 */
export const API_PATH = 'jupyter-distributed/api';

export type RunState = 'pending' | 'queued' | 'running' | 'completed' | 'failed' | 'interrupted' | 'stopped';

/** Whether a run has not ended yet: starting, waiting in a scheduler's queue, or running. */
export function isRunActive(state: RunState): boolean {
  return state === 'pending' || state === 'queued' || state === 'running';
}

export type RankState = 'starting' | 'running' | 'done' | 'failed' | 'interrupted';

export type StreamName = 'stdout' | 'stderr' | 'result' | 'display';

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
  /** The notebook's path now while the kernel that ran it lives, else the one it started with. */
  notebook: string;
  cell_id: string;
  host: string;
  kernel_pid: number | null;
  external_id: string;
  started: number;
  ended: number | null;
  message: string;
  /** global_batch, sweep (this run's swept values), probe (`ProbeSummary`), … */
  summary: JSONObject;
  /** Shared by the runs of one `--sweep` cell; "" for a cell without `--sweep`. */
  sweep_id: string;
  /** The id of the Jupyter kernel that ran it; "" when it ran outside a kernel. */
  kernel_id: string;
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
  /** `c.Distributed.straggler_threshold`: the straggler rule's one setting (`rates.ts`). */
  straggler_threshold: number;
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
  /** 'error': a line of a failed rank's error (the panel's, from its error event; never the server's). */
  stream: StreamName | 'error';
  text: string;
}

/** `GET runs/<id>/logs` */
export interface LogsReply {
  lines: LogLine[];
  next: number;
}

/** `GET runs/<id>/displays/<seq>`: the rich display (`events.DisplayEvent`) whose mark is log line `seq`. */
export interface DisplayReply {
  kind: 'display';
  run_id: string;
  rank: number;
  t: number;
  /** The compact mark the logs show, e.g. "image/png 640×480". */
  mark: string;
  /** The MIME bundle as `display()` published it (binary types base64). */
  data: JSONObject;
  metadata: JSONObject;
  display_id: string | null;
  update: boolean;
  result: boolean;
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

/** Where ranks were when their stacks were taken (`events.StacksEvent`). */
export interface StacksEvent {
  kind: 'stacks';
  run_id: string;
  t: number;
  reason: 'timeout' | 'interrupt' | 'killed' | 'straggler' | 'request' | 'launch';
  /** The diagnosis, root cause first (one line), then each group's shared stack. */
  diagnosis: string;
  ranks: Record<string, RankStacks>;
}

export type DistributedEvent = RunEvent | RankEvent | OutputEvent | MetricEvent | ErrorEvent | StacksEvent;

/** `GET runs/<id>/stacks?after=<seq>`: the run's stack snapshots, oldest first. */
export interface StacksReply {
  stacks: (StacksEvent & { seq: number })[];
  next: number;
}

/** One event of a stream message, with its sequence number. */
export interface StreamItem {
  seq: number;
  event: DistributedEvent;
}

/** The columns every batch of a node's events has: column `i` of each list is event `i`. */
interface NodeColumns {
  /** The ranks' host; "" where the store does not know it yet. */
  node: string;
  run_id: string;
  seq: number[];
  rank: number[];
  t: number[];
}

/** A node's lines of one stream. */
export interface OutputBatch extends NodeColumns {
  kind: 'output';
  stream: StreamName;
  text: string[];
}

/** A node's metric samples of one set of names: a column of values per name. */
export interface MetricBatch extends NodeColumns {
  kind: 'metric';
  values: Record<string, number[]>;
}

/** A node's ranks' state changes (their host is `node`). */
export interface RankBatch extends NodeColumns {
  kind: 'rank';
  state: RankState[];
  pid: (number | null)[];
}

/** The events of one node and kind in a delta of `stream?format=nodes` (`server/nodebatch.py`). */
export type NodeBatch = OutputBatch | MetricBatch | RankBatch;

/**
 * One message of the `stream` WebSocket: `events`, an object per event (a
 * server before batches, or a client that does not ask for them), or with
 * `format=nodes` `batches`: rows batched per node between the events sent
 * alone (a run's state, an error, stacks). Applied in order, a batch in one
 * step, lines of different batches in `seq` order.
 */
export interface StreamMessage {
  events?: StreamItem[];
  batches?: (StreamItem | NodeBatch)[];
}

/** `GET version` */
export interface VersionReply {
  /** The package version, the same for the Python and npm packages. */
  version: string;
  api_version: number;
}

/** `POST runs/<id>/cancel`, `POST clusters/<cluster_id>/stop`, `POST runs/<id>/stacks[?rank=R]` */
export interface ControlReply {
  control: {
    id: number;
    cluster_id: string;
    target: string;
    action: 'cancel' | 'stop' | 'stacks';
    t: number;
    /** Stacks of this rank only (null: every rank). */
    rank: number | null;
  };
}

/** `DELETE runs/<id>`: the finished run and all it holds are deleted (409 while it runs). */
export interface DeleteReply {
  deleted: string;
}

/** Any error of the REST API, with its HTTP status. */
export interface ErrorReply {
  message: string;
}
