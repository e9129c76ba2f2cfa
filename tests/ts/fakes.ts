/**
 * Test doubles for the browser I/O the model uses: a fake server behind
 * `fetch` and a fake `WebSocket`, handed in through JupyterLab's server settings.
 */

import { ServerConnection } from '@jupyterlab/services';

import type { JSONObject, ReadonlyPartialJSONValue } from '@lumino/coreutils';

import { RunLive } from '../../labextension/src/runstate';
import {
  API_VERSION,
  type DisplayReply,
  type DistributedEvent,
  isRunActive,
  type ProbePair,
  type ProbeSummary,
  type Run,
  type RunReply,
  type StreamMessage
} from '../../labextension/src/wire';

export function makeRun(id: string, started: number, extra: Partial<Run> = {}): Run {
  return {
    id,
    backend: 'local',
    world_size: 2,
    ranks: [0, 1],
    state: 'running',
    cluster_id: `c-${id}`,
    spec: {},
    source: 'print(rank)',
    notebook: 'demo.ipynb',
    cell_id: 'cell-1',
    host: 'localhost',
    kernel_pid: 42,
    external_id: '',
    started,
    ended: null,
    message: '',
    summary: {},
    sweep_id: '',
    kernel_id: '',
    ...extra
  };
}

/** What `%distributed probe` stores for `n` ranks on one host: every pair (`probe.assemble`). */
export function makeProbe(runId: string, n: number, seconds = 1): ProbeSummary {
  const pairs: ProbePair[] = [];
  for (let a = 0; a < n; a++) {
    for (let b = a + 1; b < n; b++) {
      const bw = a + b;
      pairs.push({
        a,
        b,
        link: 'intra',
        latency_us: 2,
        bandwidth_gbs: bw,
        median_latency_us: 2,
        median_bandwidth_gbs: bw
      });
    }
  }
  const intra = { pairs: pairs.length, latency_us: 2, bandwidth_gbs: 1, min_bandwidth_gbs: 1 };
  const hosts = Array<string>(n).fill('h');
  return {
    run_id: runId,
    library: 'gloo',
    world_size: n,
    hosts,
    groups: { intra },
    allreduce: [],
    rank_seconds: 1,
    seconds,
    pairs
  };
}

/** The probe as `GET runs` has it: its pairs counted, not sent. */
export function listedProbe(probe: ProbeSummary): ProbeSummary {
  const { pairs, ...rest } = probe;
  return { ...rest, pair_count: pairs?.length ?? 0 };
}

/** A finished run of `%distributed probe` whose summary holds `probe`. */
export function probeRun(id: string, started: number, probe: ProbeSummary | null): Run {
  const summary: JSONObject = probe ? { probe: probe as unknown as JSONObject } : {};
  return makeRun(id, started, { state: 'completed', summary });
}

export class FakeSocket {
  static instances: FakeSocket[] = [];
  readyState = 0;
  onopen: (() => void) | null = null;
  onmessage: ((m: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;

  constructor(readonly url: string) {
    FakeSocket.instances.push(this);
  }

  open(): void {
    this.readyState = 1;
    this.onopen?.();
  }

  send(): void {
    // The model never sends: the cursor travels in the URL.
  }

  deliver(events: { seq: number; event: DistributedEvent }[]): void {
    this.onmessage?.({ data: JSON.stringify({ events }) });
  }

  /** A whole message, e.g. rows batched per node (`format=nodes`). */
  deliverMessage(message: StreamMessage): void {
    this.onmessage?.({ data: JSON.stringify(message) });
  }

  close(): void {
    this.readyState = 3;
    this.onclose?.();
  }
}

export interface IFakeServer {
  runs: Run[];
  details: Map<string, RunReply>;
  /** Recorded displays by "run/seq". */
  displays: Map<string, DisplayReply>;
  requests: { method: string; url: string }[];
  failWith: number | null;
  version: number;
  /** `c.Distributed.straggler_threshold`, as `GET runs` says it. */
  stragglerThreshold?: number;
  /** Whether a cancel or a stop ends the runs it names at once (as a kernel that is not stuck does). */
  endsRuns: boolean;
}

export function fakeServer(): IFakeServer {
  return {
    runs: [],
    details: new Map(),
    displays: new Map(),
    requests: [],
    failWith: null,
    version: API_VERSION,
    endsRuns: true
  };
}

/** The runs a cancel of run `id` or a stop of cluster `cluster` ends: 'interrupted' from now on. */
function endRuns(server: IFakeServer, id: string, cluster: string): void {
  const runs = [...server.runs, ...[...server.details.values()].map(d => d.run)];
  for (const run of runs) {
    if ((run.id === id || (cluster && run.cluster_id === cluster)) && isRunActive(run.state)) {
      run.state = 'interrupted';
    }
  }
}

export function settingsFor(server: IFakeServer): ServerConnection.ISettings {
  const fetchFake = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? input : new Request(String(input), init);
    const url = new URL(request.url);
    server.requests.push({ method: request.method, url: request.url });
    if (server.failWith !== null) {
      return json({ message: 'the store is locked' }, server.failWith);
    }
    const path = url.pathname.replace(/^\/lab-base\/jupyter-distributed\/api\//, '');
    if (path === 'runs') {
      return json({
        runs: server.runs,
        version: server.version,
        last_seq: 0,
        straggler_threshold: server.stragglerThreshold ?? 0.8
      });
    }
    const detail = /^runs\/([^/]+)$/.exec(path);
    if (detail && request.method === 'DELETE') {
      const id = decodeURIComponent(detail[1] ?? '');
      const run = server.runs.find(r => r.id === id);
      if (!run) {
        return json({ message: `no run '${id}' in the history` }, 404);
      }
      if (['pending', 'queued', 'running'].includes(run.state)) {
        return json({ message: `run ${id} is ${run.state}; stop it (or wait for its end) to delete it` }, 409);
      }
      server.runs = server.runs.filter(r => r.id !== id);
      server.details.delete(id);
      return json({ deleted: id });
    }
    if (detail) {
      const reply = server.details.get(decodeURIComponent(detail[1] ?? ''));
      return reply ? json(reply) : json({ message: 'no such run' }, 404);
    }
    const display = /^runs\/([^/]+)\/displays\/(\d+)$/.exec(path);
    if (display) {
      const reply = server.displays.get(`${decodeURIComponent(display[1] ?? '')}/${display[2]}`);
      return reply ? json(reply) : json({ message: `no display ${display[2]}` }, 404);
    }
    const control = /^(?:runs\/([^/]+)\/cancel|clusters\/([^/]+)\/stop)$/.exec(path);
    if (control) {
      if (server.endsRuns) {
        endRuns(server, decodeURIComponent(control[1] ?? ''), decodeURIComponent(control[2] ?? ''));
      }
      return json({ control: {} }, 202);
    }
    return json({ message: `unknown path ${path}` }, 404);
  };
  return ServerConnection.makeSettings({
    baseUrl: 'http://127.0.0.1:8888/lab-base/',
    wsUrl: 'ws://127.0.0.1:8888/lab-base/',
    token: 'secret',
    appendToken: true,
    fetch: fetchFake as typeof fetch,
    WebSocket: FakeSocket as unknown as typeof WebSocket
  });
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' }
  });
}

/** Resolve after `ms` milliseconds of real time. */
export function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** Wait until `check` holds, polling every few ms; fails after `ms`. */
export async function until(check: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) {
      throw new Error('condition not reached');
    }
    await sleep(5);
  }
}

/** An in-memory `IStateDB` (the part the model uses). */
export class MemoryState {
  items = new Map<string, ReadonlyPartialJSONValue>();
  async fetch(id: string): Promise<ReadonlyPartialJSONValue | undefined> {
    return this.items.get(id);
  }
  async save(id: string, value: ReadonlyPartialJSONValue): Promise<void> {
    this.items.set(id, value);
  }
}

/** The live state of a run of `ranks` ranks on one host, each with 4 reports of samples and loss. */
export function liveOf(ranks: number, t0 = 2_000_000): RunLive {
  const live = new RunLive('r');
  const events: DistributedEvent[] = [];
  for (let rank = 0; rank < ranks; rank++) {
    events.push({ kind: 'rank', run_id: 'r', rank, t: t0, state: 'running', host: 'a', pid: rank + 1 });
    for (let k = 0; k < 4; k++) {
      events.push({ kind: 'metric', run_id: 'r', rank, t: t0 + k * 0.5, values: { samples: 8, loss: 1 / (k + 1) } });
    }
  }
  live.apply(events.map((event, i) => ({ seq: i + 1, event })));
  return live;
}
