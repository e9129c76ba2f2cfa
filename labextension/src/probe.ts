/**
 * The panel's Probe action: `%distributed probe` run in the kernel that ran the
 * selected run, or else has its notebook open. The kernels are behind
 * `INotebookKernels` (`kernels.ts` is JupyterLab's, tests pass a fake); this
 * module finds the session, builds the line, runs it and shows the probe's
 * run. No DOM.
 */

import type { Session } from '@jupyterlab/services';
import type { JSONObject, JSONValue } from '@lumino/coreutils';
import type { IDisposable } from '@lumino/disposable';
import { type ISignal, Signal } from '@lumino/signaling';

import type { Tab } from './tabs';
import type { Run } from './wire';

/** A running session as the probe needs it (a subset of `Session.IModel`). */
export type ISessionInfo = Pick<Session.IModel, 'id' | 'path' | 'kernel'>;

/** What came back from one execution: what it printed, or one line saying why it failed. */
export type ExecuteReply = { ok: true; stdout: string } | { ok: false; error: string };

/** The running notebook kernels, as the probe uses them. */
export interface INotebookKernels {
  /** Emitted when the running sessions change. */
  readonly changed: ISignal<unknown, unknown>;
  /** The running sessions. */
  sessions(): Iterable<ISessionInfo>;
  /** Run `code` in the kernel of `session` (not stored in its history). */
  execute(session: ISessionInfo, code: string): Promise<ExecuteReply>;
}

/** What the action does once the probe has run (the panel's model). */
export interface IProbeHost {
  refresh(): Promise<void>;
  select(id: string | null): void;
  setTab(tab: Tab): void;
}

/** Why a run cannot be probed now; null when it can. */
export type ProbeBlock = 'no-notebook' | 'too-small' | 'no-kernel' | 'busy' | null;

/**
 * The session to probe `run` in: the one of the kernel that ran it (the run's
 * `kernel_id`) while that kernel lives, whatever its notebook is called now;
 * else, and for runs recorded before runs named their kernel, the one whose
 * notebook has the run's path (`sessionFor`).
 */
export function sessionOf(
  sessions: Iterable<ISessionInfo>,
  run: Pick<Run, 'kernel_id' | 'notebook'>,
  seen: ReadonlyMap<string, readonly string[]> = new Map()
): ISessionInfo | null {
  const all = Array.from(sessions);
  const byKernel = run.kernel_id ? all.find(s => s.kernel?.id === run.kernel_id) : undefined;
  return byKernel ?? sessionFor(all, run.notebook, seen);
}

/**
 * The session with a kernel whose notebook is `notebook`. A run records the
 * kernel's `JPY_SESSION_NAME`, an absolute path on the server's disk, while a
 * session's path is relative to the server's root: a session path that ends
 * the run's path matches, the longest one winning. A notebook renamed after
 * its kernel started (every "Untitled.ipynb") keeps the old name in its runs:
 * `seen` holds the paths each session (by id) has had, matched after the
 * current ones.
 */
export function sessionFor(
  sessions: Iterable<ISessionInfo>,
  notebook: string,
  seen: ReadonlyMap<string, readonly string[]> = new Map()
): ISessionInfo | null {
  const wanted = slashes(notebook);
  let best: ISessionInfo | null = null;
  let bestScore = 0;
  for (const s of sessions) {
    if (!s.kernel) {
      continue;
    }
    for (const [i, p] of [s.path, ...(seen.get(s.id) ?? [])].entries()) {
      const path = slashes(p).replace(/^\/+/, '');
      if (!path || !(wanted === path || wanted.endsWith(`/${path}`))) {
        continue;
      }
      // The current path before any earlier one, then the longest.
      const score = (i === 0 ? 1e6 : 0) + path.length;
      if (score > bestScore) {
        best = s;
        bestScore = score;
      }
    }
  }
  return best;
}

function slashes(path: string): string {
  return path.replace(/\\/g, '/');
}

/** A word for the magic's line, quoted when it has to be (as `shlex.split` reads it). */
function word(value: string): string {
  return /^[\w.,:/=+@%-]+$/.test(value) ? value : `'${value.replace(/'/g, `'"'"'`)}'`;
}

function field(data: JSONObject, name: string): JSONValue | undefined {
  return Object.hasOwn(data, name) ? data[name] : undefined;
}

function isObject(value: JSONValue | undefined): value is JSONObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The flags that start a cluster with the run's layout, from its stored spec
 * (`spec.Spec.to_json`): backend, nodes, processes per node and the
 * parallelism settings. `--env` values (masked in the store) and backend
 * options are not repeated: the run's own cluster, while it lives, is probed as it is.
 */
export function layoutFlags(run: Run): string[] {
  const layout = field(run.spec, 'layout');
  if (!isObject(layout)) {
    return [];
  }
  const flags: string[] = [];
  const add = (flag: string, value: JSONValue | undefined): void => {
    if (typeof value === 'string' || typeof value === 'number') {
      flags.push(flag, word(String(value)));
    }
  };
  add('--backend', field(run.spec, 'backend') ?? run.backend);
  add('--nodes', field(layout, 'nodes'));
  add('--procs-per-node', field(layout, 'procs_per_node'));
  const strategy = field(layout, 'strategy');
  if (strategy !== 'none') {
    add('--strategy', strategy);
  }
  const mp = field(layout, 'model_parallel');
  if (isObject(mp)) {
    for (const name of ['partitions', 'microbatches', 'pipeline', 'placement', 'optimize', 'tensor_parallel']) {
      add(`--${name.replace('_', '-')}`, field(mp, name));
    }
  }
  if (strategy === 'parameter-server') {
    add('--parameter-servers', field(layout, 'parameter_servers'));
  }
  const dist = field(layout, 'dist_backend');
  if (dist !== 'auto') {
    add('--dist-backend', dist);
  }
  return flags;
}

/**
 * The line the Probe action runs: a quick probe of the run's cluster while it
 * lives in the kernel (`--cluster`), else of a cluster with the run's layout.
 */
export function probeCommand(run: Run): string {
  const words = ['%distributed', 'probe', '--quick'];
  if (run.cluster_id) {
    words.push('--cluster', word(run.cluster_id));
  }
  return [...words, ...layoutFlags(run)].join(' ');
}

/** The probe's run id from what `%distributed probe` printed (`probe RUN: …`). */
export function probeRunId(stdout: string): string | null {
  return /^probe (\S+):/m.exec(stdout)?.[1] ?? null;
}

/**
 * The Probe action's state: which run is being probed and the last error.
 * Emits `changed` when either changes or the running sessions do.
 */
export class ProbeAction implements IDisposable {
  constructor(
    private readonly _kernels: INotebookKernels,
    private readonly _host: IProbeHost
  ) {
    this._remember();
    _kernels.changed.connect(this._onSessions, this);
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The run being probed now, if any. */
  get probing(): string | null {
    return this._probing;
  }

  /** The last probe's error, as one line; empty when it succeeded. */
  get error(): string {
    return this._error;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Why `run` cannot be probed now, or null. */
  blocked(run: Run): ProbeBlock {
    if (!run.notebook) {
      return 'no-notebook';
    }
    if (run.world_size < 2) {
      return 'too-small';
    }
    if (!this._session(run)) {
      return 'no-kernel';
    }
    return this._probing !== null ? 'busy' : null;
  }

  /** Probe `run` in its notebook's kernel; then show the probe's run in the Scaling tab. */
  async probe(run: Run): Promise<void> {
    const session = this.blocked(run) === null ? this._session(run) : null;
    if (!session) {
      return;
    }
    this._probing = run.id;
    this._error = '';
    this._emit();
    let reply: ExecuteReply;
    try {
      reply = await this._kernels.execute(session, probeCommand(run));
    } catch (error) {
      reply = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    if (this._disposed) {
      return;
    }
    this._probing = null;
    if (reply.ok) {
      await this._host.refresh().catch(() => undefined); // Its error shows as the list's.
      const id = probeRunId(reply.stdout);
      if (id && !this._disposed) {
        this._host.select(id);
        this._host.setTab('scaling');
      }
    } else {
      this._error = oneLine(reply.error);
    }
    this._emit();
  }

  dispose(): void {
    if (!this._disposed) {
      this._disposed = true;
      Signal.clearData(this);
    }
  }

  private _session(run: Run): ISessionInfo | null {
    return sessionOf(this._kernels.sessions(), run, this._seen);
  }

  private _onSessions(): void {
    this._remember();
    this._emit();
  }

  /** Keep every path each running session has had, so that a renamed notebook is still found. */
  private _remember(): void {
    const seen = new Map<string, string[]>();
    for (const s of this._kernels.sessions()) {
      const paths = this._seen.get(s.id) ?? [];
      seen.set(s.id, paths.includes(s.path) ? paths : [...paths, s.path]);
    }
    this._seen = seen;
  }

  private _emit(): void {
    this._changed.emit();
  }

  private _seen = new Map<string, string[]>();
  private _probing: string | null = null;
  private _error = '';
  private _disposed = false;
  private readonly _changed = new Signal<this, void>(this);
}

/** The first non-empty line, without terminal colours. */
export function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes from IPython's tracebacks
  const plain = text.replace(/\u001b\[[0-9;]*m/g, '');
  return (
    plain
      .split('\n')
      .map(l => l.trim())
      .find(l => l) ?? ''
  );
}
