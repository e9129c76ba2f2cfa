import { describe, expect, it } from 'vitest';

import { acrossRanks, lastSeconds } from '../../labextension/src/derive';
import { rankColor } from '../../labextension/src/palette';
import { metricReady, metricTraces, samplesReady, samplesTraces } from '../../labextension/src/plotdata';
import { RankReports, totalRate } from '../../labextension/src/rates';
import { MAX_POINTS, RunLive, type Series } from '../../labextension/src/runstate';
import { lowerBound, SecondStats } from '../../labextension/src/secondstats';
import type { DistributedEvent } from '../../labextension/src/wire';

const T = 2_000_000;

/** A small deterministic random number generator (tests must not depend on Math.random). */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

function metric(rank: number, t: number, values: Record<string, number>): DistributedEvent {
  return { kind: 'metric', run_id: 'r', rank, t, values };
}

/** 40 ranks reporting `loss` (the second) and 1 sample in each of `seconds` seconds. */
function everySecond(seconds: number): DistributedEvent[] {
  const events: DistributedEvent[] = [];
  for (let s = 0; s < seconds; s++) {
    for (let rank = 0; rank < 40; rank++) {
      events.push(metric(rank, T + s + 0.5, { loss: s, samples: 1 }));
    }
  }
  return events;
}

function fold(live: RunLive, events: DistributedEvent[], seq = 0): void {
  live.apply(events.map((event, i) => ({ seq: seq + i + 1, event })));
}

describe('per-second statistics across ranks', () => {
  it('finds where a value goes in sorted values', () => {
    expect(lowerBound([], 3)).toBe(0);
    expect(lowerBound([1, 2, 2, 5], 2)).toBe(1);
    expect(lowerBound([1, 2, 2, 5], 3)).toBe(3);
    expect(lowerBound([1, 2, 2, 5], 9)).toBe(4);
  });

  it('computes min, median, max and sum of each second, again only for changed seconds', () => {
    const values = new Map<number, number[]>([
      [10, [3, 1, 2]],
      [11, [4, 8]]
    ]);
    const asked: number[] = [];
    const stats = new SecondStats(second => {
      asked.push(second);
      return values.get(second) ?? [];
    });
    stats.touch(11);
    stats.touch(10);
    stats.touch(10);
    expect(stats.last).toBe(11);
    expect(stats.read(10)).toEqual({
      min: { x: [0, 1], y: [1, 4] },
      median: { x: [0, 1], y: [2, 6] },
      max: { x: [0, 1], y: [3, 8] },
      sum: { x: [0, 1], y: [6, 12] },
      mean: { x: [0, 1], y: [2, 6] }
    });
    expect(asked).toEqual([10, 11]);
    values.set(11, [4, 8, 0]);
    stats.touch(11);
    expect(stats.read(10, 11).median).toEqual({ x: [1], y: [4] }); // from second 11 on
    expect(asked).toEqual([10, 11, 11]); // second 10 was not computed again
    values.set(9, [7]);
    stats.touch(9); // late: goes before the others
    expect(stats.read(0).sum).toEqual({ x: [9, 10, 11], y: [7, 6, 12] });
  });

  it('catches up in slices: at least one second each, as many as the slice allows', () => {
    const asked: number[] = [];
    const stats = new SecondStats(second => {
      asked.push(second);
      return [second];
    });
    for (let s = 0; s < 10; s++) {
      stats.touch(s);
    }
    expect(stats.catchUp(() => true)).toBe(false); // one second, then the slice is over
    expect(asked).toEqual([0]);
    let budget = 3;
    expect(stats.catchUp(() => --budget < 0)).toBe(false);
    expect(asked).toEqual([0, 1, 2, 3, 4]);
    expect(stats.catchUp(() => false)).toBe(true);
    expect(stats.catchUp(() => true)).toBe(true); // nothing left: nothing computed
    expect(asked).toHaveLength(10);
    expect(stats.read(0).sum).toEqual({ x: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], y: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] });
    expect(asked).toHaveLength(10); // read computes nothing again
  });

  it("says when a plot's statistics are ready: only the plots that show them wait", () => {
    const live = new RunLive('r');
    const events = everySecond(5);
    events.push(metric(0, T, { lr: 0.1 })); // one rank: plotted per rank, no statistics
    fold(live, events);
    expect(samplesReady(live, () => true)).toBe(false);
    expect(samplesReady(live, () => false)).toBe(true);
    expect(metricReady(live, 'loss', () => true)).toBe(false);
    expect(metricReady(live, 'loss', () => false)).toBe(true);
    expect(metricReady(live, 'lr', () => true)).toBe(true);
    expect(metricReady(live, 'unknown', () => true)).toBe(true);
    const [total] = samplesTraces(live, T, 0);
    // 1 sample/s on each of 40 ranks; the first second has one report each, so no rate yet.
    expect(total?.series).toEqual({ x: [1, 2, 3, 4], y: [40, 40, 40, 40] });
  });

  it('keeps at most its capacity of seconds, the newest', () => {
    const stats = new SecondStats(second => [second], 3);
    for (let s = 0; s < 10; s++) {
      stats.touch(s);
    }
    expect(stats.read(0).max).toEqual({ x: [7, 8, 9], y: [7, 8, 9] });
  });

  it('gives the same lines as a full pass over every rank, however points arrive', () => {
    const random = rng(7);
    const live = new RunLive('r');
    const events: DistributedEvent[] = [];
    for (let i = 0; i < 3000; i++) {
      // 40 ranks, 30 s, a few late points.
      const t = T + random() * 30 - (random() < 0.05 ? 5 : 0);
      events.push(metric(Math.floor(random() * 40), t, { loss: random(), samples: 8 + Math.floor(random() * 8) }));
    }
    for (let i = 0; i < events.length; i += 250) {
      fold(live, events.slice(i, i + 250), i);
      metricTraces(live, 'loss', T, 0); // read in between: only changed seconds are computed again
      samplesTraces(live, T, 0);
    }
    const byRank = live.metrics.get('loss') as Map<number, Series>;
    for (const s of byRank.values()) {
      expect([...s.x]).toEqual([...s.x].sort((a, b) => a - b)); // kept in time order
    }
    const full = acrossRanks(byRank, T);
    const [min, max, median] = metricTraces(live, 'loss', T, 0);
    expect(max?.series).toEqual(full.max);
    expect(median?.series).toEqual(full.median);
    expect(min?.series).toEqual(full.min);

    // samples/s: the total is the mean rank's live rate × the data-parallel degree (40 ranks),
    // the same as from each rank's reports given in time order.
    const [total] = samplesTraces(live, T, 0);
    const inOrder = new Map<number, RankReports>();
    for (const e of [...events].sort((a, b) => a.t - b.t)) {
      if (e.kind === 'metric') {
        const reports = inOrder.get(e.rank) ?? new RankReports();
        reports.add(e.t, e.values.samples ?? 0);
        inOrder.set(e.rank, reports);
      }
    }
    const bySecond = new Map<number, number[]>();
    for (const reports of inOrder.values()) {
      for (const [s, v] of reports.perSecond) {
        bySecond.set(s - T, [...(bySecond.get(s - T) ?? []), v]);
      }
    }
    const seconds = [...bySecond.keys()].sort((a, b) => a - b);
    expect(total?.series.x).toEqual(seconds);
    const want = seconds.map(s => totalRate(bySecond.get(s) ?? [], 40));
    expect(total?.series.y.every((y, i) => Math.abs(y - (want[i] as number)) < 1e-9 * y)).toBe(true);
  });

  it('shows the plot window: the last seconds only', () => {
    const live = new RunLive('r');
    const events = everySecond(100);
    fold(live, events);
    const [, max] = metricTraces(live, 'loss', T, 10); // the band's lower edge, then its upper
    expect(max?.series.x).toEqual([89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99]); // seconds 89..99
    const [total] = samplesTraces(live, T, 10);
    expect(total?.series.y).toEqual(new Array(11).fill(40)); // seconds 89..99
    expect(lastSeconds([total?.series as Series], 10)).toEqual([total?.series]);
  });

  it('keeps per-rank lines for few ranks, within the window', () => {
    const live = new RunLive('r');
    fold(live, [metric(1, T + 1, { loss: 1 }), metric(0, T + 2, { loss: 2 }), metric(0, T + 0.5, { loss: 0.5 })]);
    expect(metricTraces(live, 'loss', T, 0)).toEqual([
      { name: 'rank 0', series: { x: [0.5, 2], y: [0.5, 2] }, color: rankColor(0) },
      { name: 'rank 1', series: { x: [1], y: [1] }, color: rankColor(1) }
    ]);
    expect(metricTraces(live, 'loss', T, 1).map(t => t.series.x)).toEqual([[2], [1]]);
    expect(MAX_POINTS).toBeGreaterThan(1000);
  });
});
