/**
 * Wire types of what ranks report inside the run and event documents of
 * `wire.ts` (which re-exports them: import them from there): the failure an
 * error event carries (`errors.RankFailure.to_json`), the stacks of a hang
 * (`protocol.stacks`, torch's flight recorder from `protocol.flight`), and a
 * probe's measurements (`probe.assemble`, a probe run's `summary.probe`).
 * Python's snake_case names kept, field for field.
 */

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
  /** The number of the signal that killed the rank (`errors.RankFailure.signal`). */
  signal: number | null;
  kind: 'exception' | 'exit' | 'timeout' | 'interrupted';
  /** Who sent the signal, when known ("the out-of-memory killer (RSS … of … when killed)"). */
  cause?: string;
  /** Lines after the traceback (a CUDA out-of-memory error's memory picture). */
  notes?: string[];
  /** The rank's last lines of output before it died. */
  last_lines?: string[];
}

/** One thread of a rank (`protocol.stacks.ThreadStack`); frames outermost first. */
export interface ThreadStack {
  name: string;
  main: boolean;
  /** [file, line, function, module, source line] */
  frames: [string, number, string, string, string][];
}

/** One process group in torch's flight recorder on one rank (`protocol.flight.GroupFlight`);
 * sequence ids are -1 when none (or unknown). */
export interface GroupFlight {
  group: string;
  enqueued: number;
  started: number;
  completed: number;
  /** collectives still active: [sequence id, op, input sizes] */
  active: [number, string, number[][]][];
}

/** Every thread of one rank (`protocol.stacks.RankStacks`). */
export interface RankStacks {
  rank: number;
  threads: ThreadStack[];
  stage: string;
  /** channel: its I/O thread answered; faulthandler: a signal dump (the GIL was held); none */
  source: 'channel' | 'faulthandler' | 'none';
  error: string;
  /** torch's flight recorder per process group; absent when the rank had none */
  flight?: GroupFlight[];
}

/** One pair of ranks that `%distributed probe` measured (`probe.assemble`). */
export interface ProbePair {
  a: number;
  b: number;
  link: 'intra' | 'inter';
  latency_us: number;
  bandwidth_gbs: number;
  median_latency_us: number;
  median_bandwidth_gbs: number;
}

/**
 * `summary.probe` of a run of `%distributed probe` (`probe.assemble`).
 * `GET runs/<id>` has `pairs`, one per pair of ranks (32,640 at 256 ranks:
 * megabytes); `GET runs`, which the panel polls, leaves them out and gives
 * their number, `pair_count`.
 */
export interface ProbeSummary {
  run_id: string;
  library: string;
  world_size: number;
  /** By rank. */
  hosts: string[];
  /** By link: intra, inter. */
  groups: { [link: string]: { pairs: number; latency_us: number; bandwidth_gbs: number; min_bandwidth_gbs: number } };
  allreduce: { bytes: number; seconds: number; algbw_gbs: number; busbw_gbs: number }[];
  rank_seconds: number;
  seconds: number;
  /** `GET runs/<id>` only. */
  pairs?: ProbePair[];
  /** `GET runs` only. */
  pair_count?: number;
}
