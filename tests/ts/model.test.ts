import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { DEFAULT_CONFIG } from '../../labextension/src/config';
import { DistributedModel, STATE_KEY } from '../../labextension/src/model';
import type { IProbeView } from '../../labextension/src/probepairs';
import type { RunLive } from '../../labextension/src/runstate';
import { API_VERSION, type NodeBatch, type ProbeSummary, type RankState, type Run } from '../../labextension/src/wire';
import {
  FakeSocket,
  fakeServer,
  type IFakeServer,
  listedProbe,
  MemoryState,
  makeProbe,
  makeRun,
  probeRun,
  settingsFor,
  sleep,
  until
} from './fakes';

let server: IFakeServer;
let model: DistributedModel | null = null;
const NOW = 1_000_000;

function open(state = new MemoryState(), interval = 20): DistributedModel {
  model = new DistributedModel({
    settings: settingsFor(server),
    state,
    config: { ...DEFAULT_CONFIG, refreshInterval: interval },
    throttle: 10,
    now: () => NOW
  });
  return model;
}

function runsRequests(): number {
  return server.requests.filter(r => new URL(r.url).pathname.endsWith('/api/runs')).length;
}

beforeEach(() => {
  server = fakeServer();
  FakeSocket.instances = [];
});

afterEach(() => {
  model?.dispose();
  model = null;
});

describe('DistributedModel', () => {
  it('lists runs from the base URL with the token', async () => {
    server.runs = [makeRun('b', NOW - 10), makeRun('a', NOW - 20)];
    const m = open();
    await until(() => m.runs.length === 2);
    const request = server.requests[0];
    expect(request?.url).toMatch(/^http:\/\/127\.0\.0\.1:8888\/lab-base\/jupyter-distributed\/api\/runs\?limit=50/);
    expect(m.runs.map(r => r.id)).toEqual(['b', 'a']);
    expect(m.selectedId).toBeNull(); // both started before the panel opened
  });

  it('knows "no runs" only once the server has answered', async () => {
    server.runs = [];
    const m = open();
    expect(m.loaded).toBe(false); // an empty list before the first reply means nothing yet
    await until(() => m.loaded);
    expect(m.runs).toEqual([]);
  });

  it('selects the newest run started since it opened and follows its stream', async () => {
    server.runs = [makeRun('old', NOW - 100)];
    const m = open();
    await until(() => m.runs.length === 1);
    server.runs = [makeRun('new', NOW + 1), makeRun('old', NOW - 100)];
    server.details.set('new', {
      run: makeRun('new', NOW + 1),
      ranks: [
        { rank: 0, host: 'h', pid: 10, state: 'running', coords: { data_parallel: 0 }, updated: NOW, heartbeat: NOW },
        { rank: 1, host: 'h', pid: 11, state: 'running', coords: { data_parallel: 1 }, updated: NOW, heartbeat: NOW }
      ]
    });
    await until(() => m.selectedId === 'new' && m.live?.ranks.size === 2);
    const socket = FakeSocket.instances[0];
    expect(socket?.url).toBe(
      'ws://127.0.0.1:8888/lab-base/jupyter-distributed/api/stream?after=0&run=new&format=nodes&token=secret'
    );
    expect(m.live?.ranks.get(1)?.coords.data_parallel).toBe(1);
  });

  it("shows the selected run's end in the runs list as soon as its stream says so", async () => {
    server.runs = [makeRun('r1', NOW - 10)];
    server.details.set('r1', { run: makeRun('r1', NOW - 10), ranks: [] });
    const m = open(new MemoryState(), 60_000); // no second poll within the test
    await until(() => m.runs.length === 1);
    m.select('r1');
    await until(() => m.live?.run !== null && FakeSocket.instances.length === 1);
    const socket = FakeSocket.instances[0] as FakeSocket;
    socket.open();
    socket.deliver([{ seq: 1, event: { kind: 'run', run_id: 'r1', t: NOW, state: 'completed', message: '' } }]);
    expect(m.selectedRun?.state).toBe('completed');
    expect(m.runs[0]?.state).toBe('completed'); // the list row agrees with the header
    expect(m.runs[0]?.ended).toBe(NOW);
  });

  it('folds stream events once each and resumes after the last seq on reconnect', async () => {
    const m = open();
    m.select('r1');
    const first = FakeSocket.instances[0] as FakeSocket;
    first.open();
    const line = (seq: number, text: string) => ({
      seq,
      event: { kind: 'output' as const, run_id: 'r1', rank: 0, t: NOW, stream: 'stdout' as const, text }
    });
    first.deliver([line(1, 'a'), line(2, '<b>bold</b>')]);
    first.deliver([line(2, '<b>bold</b>'), line(3, 'c')]); // seq 2 again: ignored
    expect(m.live?.logs.filtered({ ranks: [], stderrOnly: false, search: '' }).map(l => l.text)).toEqual([
      'a',
      '<b>bold</b>',
      'c'
    ]);
    first.close();
    await until(() => FakeSocket.instances.length === 2, 3000);
    expect(FakeSocket.instances[1]?.url).toContain('after=3&run=r1');
  });

  it('applies a delta of rows batched per node: every rank its state and lines, once each, in seq order', async () => {
    const m = open();
    m.select('r1');
    const socket = FakeSocket.instances[0] as FakeSocket;
    socket.open();
    const ranksOf = (node: number) => Array.from({ length: 8 }, (_, i) => node * 8 + i);
    const states = (node: number, first: number, state: RankState): NodeBatch => ({
      kind: 'rank',
      node: `node${node}`,
      run_id: 'r1',
      seq: ranksOf(node).map(r => first + (r % 8)),
      rank: ranksOf(node),
      t: ranksOf(node).map(() => NOW),
      state: ranksOf(node).map(() => state),
      pid: ranksOf(node).map(r => 100 + r)
    });
    // Each node's lines: one per rank, interleaved in seq with the other node's.
    const lines = (node: number, first: number): NodeBatch => ({
      kind: 'output',
      node: `node${node}`,
      run_id: 'r1',
      stream: 'stdout',
      seq: ranksOf(node).map(r => first + 2 * (r % 8) + node),
      rank: ranksOf(node),
      t: ranksOf(node).map(() => NOW + 1),
      text: ranksOf(node).map(r => `line of rank ${r}`)
    });
    socket.deliverMessage({ batches: [states(0, 1, 'running'), states(1, 9, 'running'), lines(0, 17), lines(1, 17)] });
    // A reconnect's first delta brings seqs 17-32 again, then each node's ranks done (33-48).
    socket.deliverMessage({ batches: [lines(0, 17), lines(1, 17), states(0, 33, 'done'), states(1, 41, 'done')] });
    const live = m.live as RunLive;
    expect(live.ranks.size).toBe(16);
    for (let rank = 0; rank < 16; rank++) {
      const shown = live.ranks.get(rank);
      expect([shown?.state, shown?.host, shown?.pid]).toEqual(['done', `node${Math.floor(rank / 8)}`, 100 + rank]);
    }
    const shown = live.logs.filtered({ ranks: [], stderrOnly: false, search: '' });
    expect(shown.map(l => l.seq)).toEqual(Array.from({ length: 16 }, (_, i) => 17 + i));
    expect(shown.map(l => l.text).sort()).toEqual(Array.from({ length: 16 }, (_, r) => `line of rank ${r}`).sort());
    expect(shown.every(l => l.text === `line of rank ${l.rank}`)).toBe(true);
    socket.close();
    await until(() => FakeSocket.instances.length === 2, 3000);
    expect(FakeSocket.instances[1]?.url).toContain('after=48&run=r1');
  });

  it('throttles change signals while events pour in', async () => {
    const m = open(new MemoryState(), 10_000);
    m.select('r1');
    const socket = FakeSocket.instances[0] as FakeSocket;
    let emitted = 0;
    m.changed.connect(() => emitted++);
    for (let seq = 1; seq <= 500; seq++) {
      socket.deliver([
        { seq, event: { kind: 'metric', run_id: 'r1', rank: seq % 4, t: NOW + seq / 100, values: { samples: 8 } } }
      ]);
    }
    await sleep(40);
    expect(emitted).toBeGreaterThanOrEqual(1);
    expect(emitted).toBeLessThanOrEqual(4);
    expect(m.live?.samples.size).toBe(4);
  });

  it("takes the straggler rule's threshold from the server's one setting", async () => {
    server.stragglerThreshold = 0.3;
    const m = open();
    expect(m.stragglerThreshold).toBe(0.8); // before the server answered: the default
    await until(() => m.loaded);
    expect(m.stragglerThreshold).toBe(0.3);
  });

  it('saves the selected run and tab, and restores them in a new model', async () => {
    const storage = new MemoryState();
    server.runs = [makeRun('keep', NOW - 50)];
    server.details.set('keep', { run: makeRun('keep', NOW - 50, { state: 'completed' }), ranks: [] });
    const m = open(storage);
    await m.restored;
    m.select('keep');
    m.setTab('logs');
    m.dispose();
    expect(storage.items.get(STATE_KEY)).toEqual({ run: 'keep', tab: 'logs' });
    const again = open(storage);
    await again.restored;
    expect(again.tab).toBe('logs');
    expect(again.selectedId).toBe('keep');
    await until(() => again.live?.run?.state === 'completed');
  });

  it('follows a changed setting: the list length and the refresh interval', async () => {
    server.runs = [makeRun('a', NOW - 10)];
    const m = open(new MemoryState(), 5000);
    await until(() => runsRequests() === 1);
    m.setConfig({ ...m.config, runListLength: 7, refreshInterval: 10 });
    await until(() => runsRequests() >= 4); // 10 ms now, not 5 s
    const last = server.requests.filter(r => new URL(r.url).pathname.endsWith('/api/runs')).pop();
    expect(new URL(last?.url ?? '').searchParams.get('limit')).toBe('7');
  });

  it('stands by while hidden and resumes when shown', async () => {
    const m = open(new MemoryState(), 10);
    await until(() => runsRequests() >= 2);
    m.setHidden(true);
    await sleep(100); // a tick already under way may still finish
    const before = runsRequests();
    await sleep(100);
    expect(runsRequests()).toBe(before);
    m.setHidden(false);
    await until(() => runsRequests() > before);
  });

  it('shows a one-line error and backs off when the server fails', async () => {
    // Lumino's backoff draws each wait at random between the interval and 3× the last one:
    // the middle of that range each time, so the count below does not hang on a lucky draw.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.5);
    try {
      server.failWith = 500;
      const m = open(new MemoryState(), 10);
      await until(() => m.error !== '');
      expect(m.error).toBe('GET runs failed: the store is locked');
      await sleep(200);
      // Backoff: far fewer than the 20 requests a fixed 10 ms interval would make.
      expect(runsRequests()).toBeLessThan(12);
    } finally {
      server.failWith = null;
      random.mockRestore();
    }
  });

  it('refuses a server that speaks another API version', async () => {
    server.version = API_VERSION - 1;
    const m = open();
    await until(() => m.error !== '');
    expect(m.error).toContain(`API version ${API_VERSION - 1}, this panel ${API_VERSION}`);
  });

  it('sends cancel and stop to the selected run and its cluster', async () => {
    server.details.set('r9', { run: makeRun('r9', NOW), ranks: [] });
    const m = open();
    m.select('r9');
    await until(() => m.live?.run !== null);
    await m.actions.cancel();
    await m.actions.stopCluster();
    await m.actions.requestStacks();
    await m.actions.requestStacks(1);
    const posts = server.requests
      .filter(r => r.method === 'POST')
      .map(r => {
        const url = new URL(r.url);
        const rank = url.searchParams.get('rank');
        return rank === null ? url.pathname : `${url.pathname} rank=${rank}`;
      });
    expect(posts).toEqual([
      '/lab-base/jupyter-distributed/api/runs/r9/cancel',
      '/lab-base/jupyter-distributed/api/clusters/c-r9/stop',
      '/lab-base/jupyter-distributed/api/runs/r9/stacks',
      '/lab-base/jupyter-distributed/api/runs/r9/stacks rank=1'
    ]);
  });

  it('deletes the selected finished run, and says why a running one is refused', async () => {
    server.runs = [makeRun('r2', NOW, { state: 'running' }), makeRun('r1', NOW - 10, { state: 'completed' })];
    server.details.set('r1', { run: server.runs[1] as Run, ranks: [] });
    server.details.set('r2', { run: server.runs[0] as Run, ranks: [] });
    const m = open();
    await m.refresh();
    m.select('r2');
    await until(() => m.live?.run !== null);
    await m.actions.delete();
    expect(m.error).toBe('DELETE runs/r2 failed: run r2 is running; stop it (or wait for its end) to delete it');
    expect(m.runs.map(r => r.id)).toEqual(['r2', 'r1']);
    m.select('r1');
    await until(() => m.live?.run !== null);
    await m.actions.delete();
    expect(m.error).toBe('');
    expect(m.selectedRun).toBeNull();
    expect(m.runs.map(r => r.id)).toEqual(['r2']);
    const deletes = server.requests.filter(r => r.method === 'DELETE').map(r => new URL(r.url).pathname);
    expect(deletes).toEqual(['/lab-base/jupyter-distributed/api/runs/r2', '/lab-base/jupyter-distributed/api/runs/r1']);
  });

  it('keeps the latest stacks of the run from the stream', async () => {
    const m = open();
    m.select('r1');
    const socket = FakeSocket.instances[0] as FakeSocket;
    socket.open();
    const stacks = (seq: number, diagnosis: string) => ({
      seq,
      event: { kind: 'stacks' as const, run_id: 'r1', t: NOW, reason: 'request' as const, diagnosis, ranks: {} }
    });
    socket.deliver([stacks(1, 'rank 1 waits in torch.distributed.barrier (cell line 3)')]);
    socket.deliver([stacks(2, 'ranks 0, 1 are at cell line 4: time.sleep(1)')]);
    expect(m.live?.stacks?.diagnosis).toBe('ranks 0, 1 are at cell line 4: time.sleep(1)');
  });
});

describe('the pairs of the selected run’s probe', () => {
  const other = makeRun('other', NOW - 20, { state: 'completed' });

  /** How many times `GET runs/<id>` was asked for. */
  function runRequests(id: string): number {
    return server.requests.filter(r => new URL(r.url).pathname.endsWith(`/api/runs/${id}`)).length;
  }

  /** The probe run `p` (null: not probed yet) as the list has it, and as `GET runs/p` has it unless it fails. */
  function probed(probe: ProbeSummary | null, fails = false): void {
    server.runs = [probeRun('p', NOW - 10, probe && listedProbe(probe)), other];
    server.details.set('other', { run: other, ranks: [] });
    if (fails) {
      server.details.delete('p');
    } else {
      server.details.set('p', { run: probeRun('p', NOW - 10, probe), ranks: [] });
    }
  }

  /** What the Scaling tab shows of the listed probe. */
  function shown(m: DistributedModel): IProbeView | null {
    return m.probePairs.view(m.runs.find(r => r.id === 'p') as Run);
  }

  it('takes them from the selected run’s snapshot: no second fetch, none on the next polls', async () => {
    probed(makeProbe('p', 3));
    const m = open();
    await until(() => m.runs.length === 2);
    expect(shown(m)?.pairs).toBeNull(); // the list has none: "loading the pairs…"
    expect(shown(m)?.probe.groups.intra?.pairs).toBe(3); // the table has what it needs
    m.select('p');
    await until(() => shown(m)?.pairs?.length === 3);
    await sleep(100); // five polls
    expect(runRequests('p')).toBe(1);
  });

  it('fetches them once when the probe arrives in the list, and again when it changes', async () => {
    probed(null);
    const m = open();
    m.select('p');
    await until(() => m.live?.run !== null && m.runs.length === 2);
    expect(shown(m)).toBeNull(); // no probe yet
    probed(makeProbe('p', 3, 1));
    await until(() => shown(m)?.pairs?.length === 3);
    await sleep(100);
    expect(runRequests('p')).toBe(2); // the snapshot, then the pairs once
    probed(makeProbe('p', 4, 2)); // probed again
    await until(() => shown(m)?.pairs?.length === 6);
    await sleep(100);
    expect(runRequests('p')).toBe(3);
    expect(m.error).toBe('');
  });

  it('shows a failed fetch and tries again when the probe changes or the run is selected again', async () => {
    probed(null);
    const m = open();
    m.select('p');
    await until(() => m.live?.run !== null && m.runs.length === 2);
    probed(makeProbe('p', 3, 1), true);
    await until(() => Boolean(shown(m)?.error));
    expect(shown(m)?.error).toBe('GET runs/p failed: no such run');
    expect(shown(m)?.pairs).toBeNull();
    await sleep(100);
    expect(runRequests('p')).toBe(2); // not again on every poll
    expect(m.error).toBe(''); // the rest of the panel goes on

    probed(makeProbe('p', 4, 2)); // a new probe
    await until(() => shown(m)?.pairs?.length === 6);
    expect(runRequests('p')).toBe(3);

    probed(makeProbe('p', 2, 3), true);
    await until(() => Boolean(shown(m)?.error));
    probed(makeProbe('p', 2, 3));
    m.select('other');
    m.select('p');
    await until(() => shown(m)?.pairs?.length === 1);
    expect(shown(m)?.error).toBe('');
  });
});
