import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it } from 'vitest';
import { acrossRanks, lastSeconds, rankGroups, throughputSeries, tileHasStacks } from '../../labextension/src/derive';
import { LogBuffer } from '../../labextension/src/logbuffer';
import { parseRanks } from '../../labextension/src/logtoolbar';
import { rankColor } from '../../labextension/src/palette';
import { metricUnit } from '../../labextension/src/plotdata';
import { gpuText } from '../../labextension/src/ranktile';
import { median } from '../../labextension/src/rates';
import { RunLive } from '../../labextension/src/runstate';
import type { DistributedEvent } from '../../labextension/src/wire';
import { makeRun } from './fakes';

const T = 2_000_000;

function liveWith(events: DistributedEvent[]): RunLive {
  const live = new RunLive('r');
  live.setSnapshot({ run: makeRun('r', T), ranks: [] });
  live.apply(events.map((event, i) => ({ seq: i + 1, event })));
  return live;
}

function rankEvent(rank: number, host: string, t = T): DistributedEvent {
  return { kind: 'rank', run_id: 'r', rank, t, state: 'running', host, pid: 100 + rank };
}

function samples(rank: number, t: number, n: number): DistributedEvent {
  return { kind: 'metric', run_id: 'r', rank, t, values: { samples: n } };
}

describe('rank tiles', () => {
  it('offer Stacks only while the run is running, and not for a rank that failed', () => {
    const live = liveWith([
      rankEvent(0, 'a'),
      rankEvent(1, 'a', T + 9),
      rankEvent(2, 'a', T + 9),
      { kind: 'error', run_id: 'r', rank: 2, t: T, failure: { rank: 2 } as never }
    ]);
    const tiles = rankGroups(live, T + 10).flatMap(g => g.tiles);
    const offered = (run = live.run) => tiles.filter(t => tileHasStacks(run, t)).map(t => t.rank);
    expect(tiles.map(t => t.state)).toEqual(['stalled', 'running', 'failed']);
    expect(offered()).toEqual([0, 1]); // a stalled rank is the one to look at
    expect(offered(makeRun('r', T, { state: 'completed' }))).toEqual([]);
    expect(offered(null)).toEqual([]);
  });

  it('groups ranks by host and marks a rank without heartbeat for over 5 s as stalled', () => {
    const live = liveWith([rankEvent(0, 'b'), rankEvent(1, 'a'), rankEvent(2, 'b'), samples(0, T + 9, 1)]);
    const groups = rankGroups(live, T + 10);
    expect(groups.map(g => [g.host, g.tiles.map(t => t.rank)])).toEqual([
      ['a', [1]],
      ['b', [0, 2]]
    ]);
    const states = Object.fromEntries(groups.flatMap(g => g.tiles).map(t => [t.rank, t.state]));
    expect(states).toEqual({ 0: 'running', 1: 'stalled', 2: 'stalled' });
  });

  it('does not call ranks of a finished run stalled', () => {
    const live = liveWith([rankEvent(0, 'a'), { kind: 'run', run_id: 'r', t: T + 1, state: 'completed', message: '' }]);
    expect(rankGroups(live, T + 60)[0]?.tiles[0]?.state).toBe('running');
    expect(live.run?.ended).toBe(T + 1);
  });

  it('marks a rank far below its peers median throughput as a straggler', () => {
    const events: DistributedEvent[] = [];
    for (let s = 0; s < 5; s++) {
      events.push(samples(0, T + s, 100), samples(1, T + s, 96), samples(2, T + s, 104), samples(3, T + s, 20));
    }
    const tiles = rankGroups(liveWith(events), T + 5).flatMap(g => g.tiles);
    expect(tiles.map(t => t.straggler)).toEqual([false, false, false, true]);
    expect(tiles[0]?.samplesPerSec).toBe(100);
    expect(tiles.map(t => t.color)).toEqual([0, 1, 2, 3].map(rankColor));
    // The threshold is the user's setting: at 0.99 of the median, rank 1 (96 vs 98) lags too.
    const strict = rankGroups(liveWith(events), T + 5, 0.99).flatMap(g => g.tiles);
    expect(strict.map(t => t.straggler)).toEqual([false, true, false, true]);
  });

  it("shows each rank's last progress (its tqdm bar or report(progress=...))", () => {
    const progress = (rank: number, t: number, p: number): DistributedEvent => ({
      kind: 'metric',
      run_id: 'r',
      rank,
      t,
      values: { progress: p }
    });
    const live = liveWith([rankEvent(0, 'a'), rankEvent(1, 'a'), progress(0, T + 1, 0.4), progress(0, T + 2, 1)]);
    const tiles = rankGroups(live, T + 3).flatMap(g => g.tiles);
    expect(tiles.map(t => t.progress)).toEqual([1, null]);
  });

  it("shows each rank's last GPU memory and use where NVML sampled them, none without a GPU", () => {
    const gpu = (rank: number, t: number, mb: number, util: number): DistributedEvent => ({
      kind: 'metric',
      run_id: 'r',
      rank,
      t,
      values: { 'sys.rss_mb': 100, 'sys.gpu_mem_mb': mb, 'sys.gpu_util': util }
    });
    const live = liveWith([rankEvent(0, 'a'), rankEvent(1, 'a'), gpu(0, T + 1, 256, 10), gpu(0, T + 2, 512.4, 37)]);
    const tiles = rankGroups(live, T + 3).flatMap(g => g.tiles);
    expect(tiles.map(t => [t.gpuMemMb, t.gpuUtil])).toEqual([
      [512.4, 37],
      [null, null]
    ]);
    const trans = nullTranslator.load('jupyter_distributed');
    expect(tiles.map(t => gpuText(t, trans))).toEqual(['GPU 512\u00a0MiB · 37\u00a0%', '']);
    // the system plots have a GPU memory (MiB) and a GPU % series, one trace per rank
    expect([...live.system.keys()].sort()).toEqual(['sys.gpu_mem_mb', 'sys.gpu_util', 'sys.rss_mb']);
    expect([metricUnit('sys.gpu_mem_mb'), metricUnit('sys.gpu_util')]).toEqual(['MiB', 'GPU %']);
  });

  it('keeps the last seconds of every series in the plot window', () => {
    const a = { x: [0, 1, 2, 3, 4], y: [1, 2, 3, 4, 5] };
    const b = { x: [3, 5], y: [7, 8] };
    expect(lastSeconds([a, b], 2)).toEqual([{ x: [3, 4], y: [4, 5] }, b]);
    expect(lastSeconds([a, b], 0)).toEqual([a, b]);
  });

  it('takes coordinates from the snapshot', () => {
    const live = new RunLive('r');
    live.setSnapshot({
      run: makeRun('r', T),
      ranks: [
        {
          rank: 3,
          host: 'n1',
          pid: 7,
          state: 'running',
          coords: { data_parallel: 1, pipeline_stage: 0, tensor_parallel: 1, role: 'worker', node_rank: 1 },
          updated: T,
          heartbeat: T
        }
      ]
    });
    const tile = rankGroups(live, T)[0]?.tiles[0];
    expect([tile?.dp, tile?.pp, tile?.tp, tile?.role, tile?.pid]).toEqual([1, 0, 1, 'worker', 7]);
  });
});

describe('throughput', () => {
  it('gives each rank its live rate per second and the total as mean rank × replicas, separating sys.* and other metrics', () => {
    const live = liveWith([
      samples(0, T + 0.2, 10),
      samples(0, T + 0.7, 10),
      samples(1, T + 0.5, 5),
      samples(1, T + 1.5, 5),
      { kind: 'metric', run_id: 'r', rank: 0, t: T + 1, values: { 'sys.cpu_percent': 50, loss: 0.5 } }
    ]);
    const { perRank, total } = throughputSeries(live, T);
    expect(perRank.get(0)).toEqual({ x: [0], y: [20] }); // 10 samples in 0.5 s
    expect(perRank.get(1)).toEqual({ x: [1], y: [5] }); // one report in second 0: no rate yet
    expect(total).toEqual({ x: [0, 1], y: [40, 10] }); // 2 replicas (no coordinates: one per rank)
    expect([...live.metrics.keys()]).toEqual(['loss']);
    expect([...live.system.keys()]).toEqual(['sys.cpu_percent']);
  });

  it('summarises many ranks as min, median and max per second', () => {
    const byRank = new Map([
      [0, { x: [T + 0.1, T + 1.2], y: [10, 20] }],
      [1, { x: [T + 0.5], y: [30] }],
      [2, { x: [T + 0.9, T + 1.9], y: [50, 40] }]
    ]);
    const { min, median: mid, max } = acrossRanks(byRank, T);
    expect(min).toEqual({ x: [0, 1], y: [10, 20] });
    expect(mid.y).toEqual([30, 30]);
    expect(max.y).toEqual([50, 40]);
  });

  it('does not count a partial first or last second as a whole one', () => {
    // 32 samples every 50 ms from .75 s to 3.25 s: 640/s on the tile and on every point of the
    // plot (per-second bins said 160 for the first second and 320 for the last).
    const events: DistributedEvent[] = [];
    for (let k = 0; k <= 50; k++) {
      events.push(samples(0, T + 0.75 + 0.05 * k, 32));
    }
    const live = liveWith([rankEvent(0, 'a'), ...events]);
    const { perRank } = throughputSeries(live, T);
    expect(perRank.get(0)?.x).toEqual([0, 1, 2, 3]);
    expect(perRank.get(0)?.y.every(v => Math.abs(v - 640) < 1e-6)).toBe(true);
    expect(rankGroups(live, T + 3.3)[0]?.tiles[0]?.samplesPerSec).toBeCloseTo(640, 6);
    expect(median([3, 1, 2, 10])).toBe(2.5);
  });

  it('shows first report to last once the run ended, and counts the replicas the coordinates name', () => {
    const live = liveWith([samples(0, T, 0), samples(0, T + 1, 100), samples(0, T + 10, 10)]);
    expect(rankGroups(live, T + 10)[0]?.tiles[0]?.samplesPerSec).toBeCloseTo(10 / 9, 9); // live: from the report at T + 1
    live.apply([{ seq: 9, event: { kind: 'run', run_id: 'r', t: T + 11, state: 'completed', message: '' } }]);
    expect(rankGroups(live, T + 20)[0]?.tiles[0]?.samplesPerSec).toBe(11); // 110 in 10 s
    // Two pipeline stages of one replica report the same samples: the total counts one.
    const pipeline = new RunLive('r');
    const coords = (rank: number) => ({ data_parallel: 0, pipeline_stage: rank, tensor_parallel: 0 });
    pipeline.setSnapshot({
      run: makeRun('r', T),
      ranks: [0, 1].map(rank => ({
        rank,
        host: 'a',
        pid: 1,
        state: 'running' as const,
        coords: coords(rank),
        updated: T,
        heartbeat: T
      }))
    });
    pipeline.apply(
      [0, 1]
        .flatMap(rank => [samples(rank, T + 0.5, 8), samples(rank, T + 0.75, 8)])
        .map((event, i) => ({ seq: i + 1, event }))
    );
    expect(throughputSeries(pipeline, T).total).toEqual({ x: [0], y: [32] });
  });
});

describe('log buffer', () => {
  const line = (seq: number, rank: number, text: string, stream: 'stdout' | 'stderr' = 'stdout') => ({
    seq,
    rank,
    t: T,
    stream,
    text
  });

  it('filters by rank, stream and text, extending the result as lines arrive', () => {
    const buffer = new LogBuffer();
    buffer.push(line(1, 0, 'loss 1'));
    buffer.push(line(2, 1, 'Warning: slow', 'stderr'));
    const filter = { ranks: [1], stderrOnly: true, search: 'WARN' };
    expect(buffer.filtered(filter).map(l => l.seq)).toEqual([2]);
    buffer.push(line(3, 1, 'another warning', 'stderr'));
    buffer.push(line(4, 0, 'warning on 0', 'stderr'));
    expect(buffer.filtered(filter).map(l => l.seq)).toEqual([2, 3]);
    expect(buffer.filtered({ ranks: [], stderrOnly: false, search: '' }).length).toBe(4);
  });

  it('keeps at most its capacity, dropping the oldest lines', () => {
    const buffer = new LogBuffer(1000);
    const all = { ranks: [], stderrOnly: false, search: '' };
    for (let seq = 1; seq <= 5000; seq++) {
      buffer.push(line(seq, 0, `line ${seq}`));
      if (seq % 700 === 0) {
        buffer.filtered(all);
      }
    }
    const kept = buffer.filtered(all);
    expect(kept.length).toBe(1000);
    expect(kept[0]?.seq).toBe(4001);
    expect(buffer.dropped).toBe(4000);
  });

  it('parses rank lists', () => {
    expect(parseRanks('0, 2-4')).toEqual([0, 2, 3, 4]);
    expect(parseRanks('')).toEqual([]);
    expect(parseRanks('x')).toBeNull();
  });
});
